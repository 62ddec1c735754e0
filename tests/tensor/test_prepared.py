"""Prepared layers (``rewrite.fold_layers``, ``prepared.Prepared``) and in-place operations
(``rewrite.in_place``): the rewritten graph computes what the unrewritten one does (float32
tolerance: batch-norm folding and oneDNN's kernels round differently), the rewrites apply
only where they keep the graph's meaning, and folded weights are made again exactly when the
memory tracker says a weight array changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends import get_backend
from hpvm.ir.graph import ChildGraph, InputBind, InternalFunction, Node, OutputBind, Param
from hpvm.ir.types import ArrayType, f32, i64
from hpvm.tensor.leaves import OpCall, Operand, make_tensor_leaf

torch = pytest.importorskip(
    "torch", reason="the tensor back end runs on PyTorch (pip install 'hpvm[tensor]')"
)

from tensor_programs import everything, everything_inputs, run, run_unprepared, unprepared_plan  # noqa: E402

from hpvm.backends.tensor import prepared  # noqa: E402 — after the importorskip

TOL = dict(rtol=1e-4, atol=1e-5)
P, L, C = (lambda i: Operand("param", i)), (lambda i: Operand("local", i)), (lambda v: Operand("const", v))
_ROOTS = iter(range(1 << 30))


def _root(
    ranks: Sequence[int | None], calls: list[OpCall], returns: Sequence[Operand], out_ranks: Sequence[int]
):  # type: ignore[no-untyped-def]
    """A root with one tensor leaf (``calls``) whose parameters are the root's, bound in order;
    ``None`` in ``ranks`` is an i64 scalar parameter."""
    params = [Param(f"p{i}", ArrayType(f32, r) if r else i64) for i, r in enumerate(ranks)]
    k = next(_ROOTS)
    leaf = make_tensor_leaf(
        f"leaf{k}", params, [ArrayType(f32, r) for r in out_ranks], calls, list(returns), hpvm.TENSOR_TARGET
    )
    node = Node("layer", leaf, ())
    graph = ChildGraph(
        nodes=[node],
        in_binds=[InputBind(i, node, i) for i in range(len(ranks))],
        out_binds=[OutputBind(node, p, p) for p in range(len(out_ranks))],
    )
    return InternalFunction(f"root{k}", params, graph=graph)


def _rng_arrays(shapes: Sequence[Any], seed: int = 0) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else s for s in shapes]


def _bn_stats(k: int, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    f = np.float32
    return [
        (rng.random(k) + 0.5).astype(f),  # gamma
        rng.standard_normal(k).astype(f),  # beta
        (rng.standard_normal(k) * 0.1).astype(f),  # mean
        (rng.random(k) + 0.5).astype(f),  # variance
    ]


def _plan_run(root: Any, args: Sequence[Any], versions: Any = None) -> tuple[Any, ...]:
    """Run the back end's (prepared) plan of ``root`` directly, outside a runtime."""
    plan = get_backend("tensor").plan(root)
    with torch.inference_mode():
        inputs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
        extra = (versions,) if plan.graph.weights else ()
        return tuple(o.numpy() for o in plan.graph.run(*inputs, *extra))


# -- batch-norm folding -------------------------------------------------------------------

CONV_BN = [
    OpCall("convolution", (P(0), P(1), C(1), C(1), C(1), C(1)), 1),
    OpCall("batchnorm", (L(0), P(2), P(3), P(4), P(5), C(1e-3)), 2),
    OpCall("clipped_relu", (L(1), C(0.0), C(6.0)), 3),
    OpCall("pool_mean", (L(2), C(2), C(2), C(0), C(0), C(2), C(2)), 4),
]


def _conv_bn_args(seed: int = 0) -> list[Any]:
    return [*_rng_arrays([(2, 3, 8, 8), (5, 3, 3, 3)], seed), *_bn_stats(5)]


def test_batchnorm_folds_into_the_convolution_and_matches_the_unfolded_graph() -> None:
    root = _root([4, 4, 1, 1, 1, 1], CONV_BN, [L(3)], [4])
    args = _conv_bn_args()
    plan = get_backend("tensor").plan(root)
    assert plan.graph.prepared == [("convolution", "batchnorm", "clipped_relu", "pool_mean")]
    assert plan.graph.weights == [1, 2, 3, 4, 5]
    assert "_batchnorm(" in unprepared_plan(root).source and "_batchnorm(" not in plan.source
    expected = run(root, args, "interp")[0]
    np.testing.assert_allclose(run(root, args, "tensor")[0], expected, **TOL)
    np.testing.assert_allclose(run_unprepared(root, args)[0], expected, **TOL)


def test_an_imported_conv_batchnorm_relu6_is_one_prepared_call_across_three_nodes() -> None:
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU6()).eval()
    with torch.no_grad():
        bn = model[1]
        bn.running_mean.uniform_(-0.2, 0.2), bn.running_var.uniform_(0.5, 2.0), bn.weight.uniform_(0.5, 2)
    x = torch.rand(2, 3, 8, 8)
    program = hpvm.tensor.from_torch(model, x)
    assert program.node_count == 3  # no fusion pattern: the rewrite works across the nodes
    plan = get_backend("tensor").plan(program.root)
    assert plan.graph.prepared == [("convolution", "batchnorm", "clipped_relu")]
    with torch.inference_mode():
        reference = model(x).numpy()
    for fused in (True, False):
        np.testing.assert_allclose(program(x, target="tensor", fused=fused), reference, **TOL)


# -- where the rewrites must not apply ----------------------------------------------------


def _computed_gamma() -> tuple[list[int | None], list[OpCall], list[Operand], list[int], list[Any]]:
    calls = [
        OpCall("relu", (P(2),), 1),  # γ is computed in the graph: not a root array
        OpCall("convolution", (P(0), P(1), C(1), C(1), C(1), C(1)), 2),
        OpCall("batchnorm", (L(1), L(0), P(3), P(4), P(5), C(1e-5)), 3),
    ]
    return [4, 4, 1, 1, 1, 1], calls, [L(2)], [4], _conv_bn_args()


def _read_twice() -> tuple[list[int | None], list[OpCall], list[Operand], list[int], list[Any]]:
    calls = CONV_BN[:2]  # the convolution's result is also returned: the batchnorm stays
    return [4, 4, 1, 1, 1, 1], calls, [L(1), L(0)], [4, 4], _conv_bn_args()


def _computed_weight() -> tuple[list[int | None], list[OpCall], list[Operand], list[int], list[Any]]:
    calls = [OpCall("tanh", (P(1),), 1), OpCall("convolution", (P(0), L(0), C(1), C(1), C(1), C(1)), 2)]
    return [4, 4], calls, [L(1)], [4], _rng_arrays([(2, 3, 8, 8), (5, 3, 3, 3)])


def _scalar_padding() -> tuple[list[int | None], list[OpCall], list[Operand], list[int], list[Any]]:
    calls = [OpCall("convolution", (P(0), P(1), P(2), P(2), C(1), C(1)), 1), OpCall("relu", (L(0),), 2)]
    return [4, 4, None], calls, [L(1)], [4], [*_rng_arrays([(2, 3, 8, 8), (5, 3, 3, 3)]), np.int64(1)]


@pytest.mark.parametrize(
    "case, prepared_ops",
    [
        (_computed_gamma, [("convolution",)]),
        (_read_twice, [("convolution",)]),
        (_computed_weight, []),
        (_scalar_padding, []),
    ],
    ids=["statistics-computed", "conv-result-read-twice", "weight-computed", "padding-a-parameter"],
)
def test_a_chain_stops_where_folding_would_change_the_meaning(case: Any, prepared_ops: list[Any]) -> None:
    ranks, calls, returns, out_ranks, args = case()
    root = _root(ranks, calls, returns, out_ranks)
    assert get_backend("tensor").plan(root).graph.prepared == prepared_ops
    expected = run(root, args, "interp")
    for got, want in zip(run(root, args, "tensor"), expected):
        np.testing.assert_allclose(got, want, **TOL)


def test_layers_inside_a_child_graph_are_not_prepared() -> None:
    # The child graph's inputs are not the launch's arrays: only the root's dense head is.
    plan = get_backend("tensor").plan(everything)
    assert plan.graph.prepared == [("mul", "add", "relu")]
    args = everything_inputs()
    np.testing.assert_allclose(run(everything, args, "tensor")[0], run(everything, args, "interp")[0], **TOL)


# -- in-place operations ------------------------------------------------------------------


def test_an_activation_runs_in_place_only_on_a_fresh_value_nothing_else_reads() -> None:
    calls = [
        OpCall("relu", (P(0),), 1),  # a root input: never written
        OpCall("add", (L(0), P(1)), 2),  # fresh, read once: in place
        OpCall("tanh", (L(1),), 3),  # fresh, read once: in place
        OpCall("sigmoid", (L(2),), 4),  # its input is also returned: not in place
    ]
    root = _root([2, 1], calls, [L(3), L(2)], [2, 2])
    x, b = _rng_arrays([(3, 4), (4,)])
    source = get_backend("tensor").plan(root).source
    assert "_relu(a0)" in source and "_add_(" in source and "_tanh_(" in source and "_sigmoid(" in source
    x_before = x.copy()
    got = run(root, (x, b), "tensor")
    np.testing.assert_array_equal(x, x_before)
    for g, e in zip(got, run(root, (x, b), "interp")):
        np.testing.assert_allclose(g, e, **TOL)


# -- folded weights follow the memory tracker's versions ----------------------------------


def test_folded_weights_are_kept_between_launches_and_made_again_after_a_declared_write() -> None:
    root = _root([4, 4, 1, 1, 1, 1], CONV_BN, [L(3)], [4])
    args = _conv_bn_args()
    derived = []
    original = prepared.Prepared._derive

    def counting(self: Any, *a: Any) -> Any:
        derived.append(1)
        return original(self, *a)

    hpvm.init()
    try:
        for a in args:
            hpvm.track_memory(a)
        with mock.patch.object(prepared.Prepared, "_derive", counting):
            first = hpvm.wait(hpvm.launch(root, tuple(args), target="tensor"))[0]
            for _ in range(3):  # the tensor back end does not write its arguments: same versions
                np.testing.assert_array_equal(
                    hpvm.wait(hpvm.launch(root, tuple(args), target="tensor"))[0], first
                )
            assert len(derived) == 1
            args[2] *= 2.0  # γ changes on the host, which says so
            hpvm.mark_host_modified(args[2])
            changed = hpvm.wait(hpvm.launch(root, tuple(args), target="tensor"))[0]
            assert len(derived) == 2
    finally:
        hpvm.cleanup()
    np.testing.assert_allclose(changed, run(root, args, "interp")[0], **TOL)
    assert not np.allclose(changed, first)


def test_without_versions_the_weights_are_derived_on_every_call() -> None:
    root = _root([4, 4, 1, 1, 1, 1], CONV_BN, [L(3)], [4])
    args = _conv_bn_args()
    first = _plan_run(root, args)[0]
    args[2] *= 2.0  # no runtime, no tracker: nothing to declare, and nothing is kept
    np.testing.assert_allclose(_plan_run(root, args)[0], run_unprepared(root, args)[0], **TOL)
    assert not np.allclose(first, _plan_run(root, args)[0])


# -- properties over shapes, strides, padding, groups, layouts ----------------------------

ACTIVATION = st.sampled_from([None, "relu", "clipped_relu", "tanh", "sigmoid"])
POOL = st.sampled_from([None, ("pool_max", 2, 2, 0, 0, 2, 2), ("pool_mean", 3, 3, 1, 1, 2, 2), ("pool_min", 2, 1, 0, 0, 1, 1)])  # fmt: skip


@st.composite
def conv_chains(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    groups, cg, kg = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    vpad, hpad = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    vstride, hstride = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    assume(h + 2 * vpad >= kh and w + 2 * hpad >= kw)
    oh, ow = (h + 2 * vpad - kh) // vstride + 1, (w + 2 * hpad - kw) // hstride + 1
    bias, batchnorm, activation, pool = draw(st.booleans()), draw(st.booleans()), draw(ACTIVATION), draw(POOL)
    if pool is not None:
        assume(oh + 2 * pool[3] >= pool[1] and ow + 2 * pool[4] >= pool[2])
    n, c, k = draw(st.integers(1, 3)), groups * cg, groups * kg
    op = "group_convolution" if groups > 1 else "convolution"
    extra = (C(groups),) if groups > 1 else ()
    calls = [OpCall(op, (P(0), P(1), C(vpad), C(hpad), C(vstride), C(hstride), *extra), 1)]
    ranks: list[int | None] = [4, 4]
    args: list[Any] = _rng_arrays([(n, c, h, w), (k, cg, kh, kw)], draw(st.integers(0, 99)))
    if bias:
        calls.append(OpCall("add", (L(len(calls) - 1), P(len(ranks))), 2))
        ranks.append(1)
        args += _rng_arrays([(k,)], 7)
    if batchnorm:
        stats = tuple(P(len(ranks) + i) for i in range(4))
        calls.append(OpCall("batchnorm", (L(len(calls) - 1), *stats, C(1e-5)), 3))
        ranks += [1] * 4
        args += _bn_stats(k)
    residual = draw(st.sampled_from([None, "nchw", "channels_last", "per-channel"]))
    if residual is not None:  # a residual add: oneDNN's post-op when laid out as its result
        calls.append(OpCall("add", (L(len(calls) - 1), P(len(ranks))), 4))
        ranks.append(4)
        (other,) = _rng_arrays([(n, oh, ow, k) if residual == "channels_last" else (n, k, oh, ow)], 8)
        if residual == "channels_last":  # NCHW indexing over NHWC memory
            other = other.transpose(0, 3, 1, 2)
        args.append(other[:1, :, :1, :1].copy() if residual == "per-channel" else other)
    if activation == "clipped_relu":
        calls.append(OpCall(activation, (L(len(calls) - 1), C(-0.5), C(0.75)), 5))
    elif activation is not None:
        calls.append(OpCall(activation, (L(len(calls) - 1),), 5))
    if pool is not None:
        calls.append(OpCall(pool[0], (L(len(calls) - 1), *map(C, pool[1:])), 6))
    return _root(ranks, calls, [L(len(calls) - 1)], [4]), args


@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "plain"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=conv_chains())
def test_a_prepared_convolution_chain_matches_the_unprepared_graph(onednn: bool, chain: Any) -> None:
    root, args = chain
    with mock.patch.object(prepared, "onednn_available", lambda: onednn):
        plan = get_backend("tensor").plan(root)
    assert len(plan.graph.prepared) == 1  # the whole chain: one call
    expected = run_unprepared(root, args)[0]
    np.testing.assert_allclose(_plan_run(root, args)[0], expected, **TOL)
    np.testing.assert_allclose(_plan_run(root, args, (1,))[0], expected, **TOL)  # derived, kept
    np.testing.assert_allclose(_plan_run(root, args, (1,))[0], expected, **TOL)  # and reused


@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "plain"])
@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 4),
    shape=st.sampled_from([(6,), (2, 3), (1, 2, 3)]),
    out=st.integers(1, 7),
    bias=st.booleans(),
    activation=ACTIVATION,
    seed=st.integers(0, 99),
)
def test_a_prepared_dense_chain_matches_the_unprepared_graph(
    onednn: bool, n: int, shape: tuple[int, ...], out: int, bias: bool, activation: str | None, seed: int
) -> None:
    features = int(np.prod(shape))
    rank = 2 if len(shape) == 1 else 4
    x_shape = (n, *shape) + (1,) * (0 if rank == 2 else 3 - len(shape))
    calls = [OpCall("mul", (P(0), P(1)), 1)]
    ranks: list[int | None] = [rank, 2]
    args = _rng_arrays([x_shape, (features, out)], seed)
    if bias:
        calls.append(OpCall("add", (L(0), P(2)), 2))
        ranks.append(1)
        args += _rng_arrays([(out,)], seed + 1)
    if activation == "clipped_relu":
        calls.append(OpCall(activation, (L(len(calls) - 1), C(-0.5), C(0.75)), 3))
    elif activation is not None:
        calls.append(OpCall(activation, (L(len(calls) - 1),), 3))
    root = _root(ranks, calls, [L(len(calls) - 1)], [2])
    with mock.patch.object(prepared, "onednn_available", lambda: onednn):
        assert get_backend("tensor").plan(root).graph.prepared == [tuple(c.op for c in calls)]
    np.testing.assert_allclose(_plan_run(root, args, (1,))[0], run_unprepared(root, args)[0], **TOL)


def test_a_channels_last_result_comes_back_as_a_c_contiguous_array() -> None:
    root = _root([4, 4, 1, 1, 1, 1], CONV_BN[:3], [L(2)], [4])  # a prepared call's result, returned
    out = run(root, _conv_bn_args(), "tensor")[0]
    assert out.flags.c_contiguous
    np.testing.assert_allclose(out, run(root, _conv_bn_args(), "interp")[0], **TOL)


# -- the layout each prepared convolution runs in ------------------------------------------


def _layouts(root: Any) -> set[str]:
    """The weight layouts the prepared calls of ``root``'s plan derived (``prepared.PLAIN``…)."""
    plan = get_backend("tensor").plan(root)
    calls = [v for v in plan.graph.run.__globals__.values() if isinstance(v, prepared.Prepared)]
    assert calls
    return {key[2] for call in calls for key in call._cache}


def _small_conv(
    kernel: int = 3,
    groups: int = 1,
    activation: str | None = "relu",
    hw: int = 4,
    residual: bool = False,
    pool: bool = True,
) -> tuple[Any, list[Any]]:
    """conv (``kernel``², padding keeping the size) → add bias → [add residual] → [activation]
    → [max pool 2×2], on a 2 × 8 × ``hw`` × ``hw`` input: VGG-16's last layers (AlexNet's
    without the pooling), scaled down."""
    op = "group_convolution" if groups > 1 else "convolution"
    pad = kernel // 2
    calls = [
        OpCall(op, (P(0), P(1), C(pad), C(pad), C(1), C(1), *((C(groups),) if groups > 1 else ())), 1),
        OpCall("add", (L(0), P(2)), 2),
    ]
    ranks: list[int | None] = [4, 4, 1]
    shapes: list[Any] = [(2, 8, hw, hw), (16, 8 // groups, kernel, kernel), (16,)]
    if residual:
        calls.append(OpCall("add", (L(1), P(3)), 3))
        ranks.append(4)
        shapes.append((2, 16, hw, hw))
    if activation is not None:
        calls.append(OpCall(activation, (L(len(calls) - 1),), 4))
    if pool:
        calls.append(OpCall("pool_max", (L(len(calls) - 1), C(2), C(2), C(0), C(0), C(2), C(2)), 5))
    return _root(ranks, calls, [L(len(calls) - 1)], [4]), _rng_arrays(shapes, 5)


@pytest.mark.skipif(
    not (prepared.onednn_available() and prepared.blocked_available()),
    reason="needs oneDNN's prepacked convolution (torch with mkldnn)",
)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        dict(activation=None),
        dict(residual=True),
        dict(residual=True, activation="tanh"),
        dict(activation="tanh", pool=False),
        dict(activation="sigmoid", pool=False),
        dict(activation="relu", pool=False),
    ],
    ids=[
        "relu",
        "no-activation",
        "residual-relu",
        "residual-tanh",
        "tanh-unpooled",
        "sigmoid-unpooled",
        "relu-unpooled",
    ],
)
def test_a_small_3x3_convolution_runs_blocked_and_matches_channels_last(kwargs: dict[str, Any]) -> None:
    root, args = _small_conv(**kwargs)
    expected = run_unprepared(root, args)[0]
    blocked = _plan_run(root, args, (1,))[0]
    assert _layouts(root) == {prepared.BLOCKED}
    with mock.patch.object(prepared, "BLOCKED_MAX_PIXELS", 0):  # the same chain, channels_last
        root_cl, _ = _small_conv(**kwargs)
        channels_last = _plan_run(root_cl, args, (1,))[0]
        assert _layouts(root_cl) == {prepared.CHANNELS_LAST}
    np.testing.assert_allclose(blocked, expected, **TOL)
    np.testing.assert_allclose(channels_last, expected, **TOL)
    np.testing.assert_allclose(_plan_run(root, args, (1,))[0], blocked, **TOL)  # the kept context


@pytest.mark.skipif(not prepared.onednn_available(), reason="needs oneDNN (torch with mkldnn)")
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel=1),
        dict(groups=2),
        dict(activation="tanh"),
        dict(activation="sigmoid"),
        dict(hw=10),
        dict(hw=10, residual=True),
        dict(hw=10, activation="tanh", pool=False),
    ],
    ids=[
        "1x1",
        "grouped",
        "tanh-pooled",
        "sigmoid-pooled",
        "large-output",
        "large-output-residual",
        "large-output-tanh",
    ],
)
def test_other_convolutions_stay_channels_last(kwargs: dict[str, Any]) -> None:
    root, args = _small_conv(**kwargs)
    np.testing.assert_allclose(_plan_run(root, args, (1,))[0], run_unprepared(root, args)[0], **TOL)
    assert _layouts(root) == {prepared.CHANNELS_LAST}


@pytest.mark.skipif(not prepared.onednn_available(), reason="needs oneDNN (torch with mkldnn)")
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_without_the_prepacked_op_a_small_convolution_runs_channels_last(activation: str) -> None:
    """A torch without ``mkldnn_prepacked`` (a private op): the chain that would run
    blocked runs ``channels_last`` instead, with the same result."""
    with mock.patch.object(prepared, "blocked_available", lambda: False):
        root, args = _small_conv(activation=activation, pool=False)
        out = _plan_run(root, args, (1,))[0]
        assert _layouts(root) == {prepared.CHANNELS_LAST}
    np.testing.assert_allclose(out, run_unprepared(root, args)[0], **TOL)


# -- HPVM's (1, K, 1, 1) bias layout ------------------------------------------------------

CONV_BIAS4_BN = [
    OpCall("convolution", (P(0), P(1), C(1), C(1), C(1), C(1)), 1),
    OpCall("add", (L(0), P(2)), 2),
    OpCall("batchnorm", (L(1), P(3), P(4), P(5), P(6), C(1e-3)), 3),
    OpCall("relu", (L(2),), 4),
]


@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "plain"])
@pytest.mark.parametrize("operand", ["per-channel", "full"])
def test_a_4d_bias_folds_when_it_is_one_value_per_channel_and_runs_unfolded_otherwise(
    onednn: bool, operand: str
) -> None:
    """HPVM's benchmarks pass biases as (1, K, 1, 1) tensors: an ``add`` of a 4-D root array
    right after the convolution is the chain's bias (batch-norm folded after it) when the
    array has that shape; any other shape (here the result's own) runs operation by
    operation, with the same values as the unprepared graph."""
    shape = (1, 5, 1, 1) if operand == "per-channel" else (2, 5, 8, 8)
    args = [*_rng_arrays([(2, 3, 8, 8), (5, 3, 3, 3), shape], 4), *_bn_stats(5)]
    with mock.patch.object(prepared, "onednn_available", lambda: onednn):
        root = _root([4, 4, 4, 1, 1, 1, 1], CONV_BIAS4_BN, [L(3)], [4])
        plan = get_backend("tensor").plan(root)
        assert plan.graph.prepared == [("convolution", "add", "batchnorm", "relu")]
        (call,) = [v for v in plan.graph.run.__globals__.values() if isinstance(v, prepared.Prepared)]
        assert call.spec.channel_bias and call.spec.bias
        expected = run_unprepared(root, args)[0]
        with mock.patch.object(
            prepared.Prepared, "_unfolded", autospec=True, side_effect=prepared.Prepared._unfolded
        ) as unfolded:
            np.testing.assert_allclose(_plan_run(root, args, (1,))[0], expected, **TOL)
            np.testing.assert_allclose(_plan_run(root, args, (1,))[0], expected, **TOL)
        assert unfolded.called is (operand == "full")
    np.testing.assert_allclose(run(root, args, "tensor")[0], run(root, args, "interp")[0], **TOL)
