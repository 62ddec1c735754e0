"""WrapperAPI: matched operations inside one leaf run as one layer call on the tensor back end."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.tensor.wrapper import lower
from hpvm.ir.graph import ChildGraph, InputBind, InternalFunction, Node, OutputBind, Param
from hpvm.ir.types import ArrayType, f32
from hpvm.tensor.leaves import OpCall, Operand, make_tensor_leaf, parse_tensor_leaf

torch = pytest.importorskip("torch", reason="the layer calls run on PyTorch (pip install 'hpvm[tensor]')")

from tensor_programs import (  # noqa: E402 — after the importorskip
    T4,
    lenet_inputs,
    lenet_like,
    run,
    run_unprepared,
    unprepared_plan,
)

TOL = dict(rtol=1e-4, atol=1e-5)
P, L, C = (lambda i: Operand("param", i)), (lambda i: Operand("local", i)), (lambda v: Operand("const", v))


def _root_of(leaf, args):  # type: ignore[no-untyped-def]
    """A root with one node running ``leaf`` on root inputs bound in order."""
    params = [Param(f"a{i}", ArrayType(f32, a.ndim)) for i, a in enumerate(args)]
    node = Node("layer", leaf, ())
    graph = ChildGraph(
        nodes=[node],
        in_binds=[InputBind(i, node, i) for i in range(len(args))],
        out_binds=[OutputBind(node, 0, 0)],
    )
    return InternalFunction(f"root_{leaf.name}", params, graph=graph)


def _conv_leaf(activation: str | None, pool: str | None, full_bias: bool):  # type: ignore[no-untyped-def]
    params = [
        Param("x", ArrayType(f32, 4)),
        Param("w", ArrayType(f32, 4)),
        Param("b", ArrayType(f32, 4 if full_bias else 1)),
    ]
    calls = [OpCall("convolution", (P(0), P(1), C(1), C(1), C(1), C(1)), 2), OpCall("add", (L(0), P(2)), 3)]
    if activation == "clipped_relu":
        calls.append(OpCall(activation, (L(len(calls) - 1), C(-0.5), C(0.5)), 4))
    elif activation is not None:
        calls.append(OpCall(activation, (L(len(calls) - 1),), 4))
    if pool is not None:
        calls.append(OpCall(pool, (L(len(calls) - 1), C(2), C(2), C(1), C(1), C(2), C(2)), 5))
    name = f"conv_{activation}_{pool}_{'full' if full_bias else 'bias'}"
    return make_tensor_leaf(name, params, [ArrayType(f32, 4)], calls, [L(len(calls) - 1)], hpvm.TENSOR_TARGET)


@pytest.mark.parametrize("activation", [None, "relu", "clipped_relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("pool", [None, "pool_max", "pool_min", "pool_mean"])
def test_conv_layer_matches_interp(activation: str | None, pool: str | None) -> None:
    rng = np.random.default_rng(0)
    for full_bias in (False, True):
        leaf = _conv_leaf(activation, pool, full_bias)
        steps = lower(parse_tensor_leaf(leaf))
        assert [(s.kind, s.name) for s in steps] == [("layer", "conv_layer")]
        assert steps[0].ops == parse_tensor_leaf(leaf).ops
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        b = rng.standard_normal((2, 4, 6, 6) if full_bias else (4,)).astype(np.float32)
        root = _root_of(leaf, (x, w, b))
        plan = get_backend("tensor").plan(root)
        assert [s.name for _, s in plan.steps()] == ["conv_layer"]
        assert "_conv_layer(" in unprepared_plan(root).source
        # one prepared call (rewrite.fold_layers): a 1-D bias as the bias, a full one as a residual add
        assert plan.graph.prepared == [steps[0].ops]
        expected = run(root, (x, w, b), "interp")[0]
        np.testing.assert_allclose(run(root, (x, w, b), "tensor")[0], expected, **TOL)
        np.testing.assert_allclose(run_unprepared(root, (x, w, b))[0], expected, **TOL)


@pytest.mark.parametrize("bounds", [(), (-0.25,)], ids=["no-bounds", "lower-bound-only"])
def test_a_clipped_relu_with_bounds_left_out_clips_to_their_defaults(bounds: tuple[float, ...]) -> None:
    """``clipped_relu(x)`` and ``clipped_relu(x, lo)`` (``hi`` defaults to 6, ``lo`` to 0) in
    a layer: the layer call, the prepared call and interp read the same bounds."""
    params = [Param("x", ArrayType(f32, 4)), Param("w", ArrayType(f32, 4)), Param("b", ArrayType(f32, 1))]
    calls = [
        OpCall("convolution", (P(0), P(1), C(1), C(1), C(1), C(1)), 2),
        OpCall("add", (L(0), P(2)), 3),
        OpCall("clipped_relu", (L(1), *map(C, bounds)), 4),
    ]
    leaf = make_tensor_leaf(
        f"conv_clip{len(bounds)}", params, [ArrayType(f32, 4)], calls, [L(2)], hpvm.TENSOR_TARGET
    )
    assert [s.name for s in lower(parse_tensor_leaf(leaf))] == ["conv_layer"]
    rng = np.random.default_rng(2)
    args = tuple(rng.standard_normal(s).astype(np.float32) * 4 for s in ((2, 3, 6, 6), (4, 3, 3, 3), (4,)))
    root = _root_of(leaf, args)
    expected = run(root, args, "interp")[0]
    lo = bounds[0] if bounds else 0.0
    assert expected.min() == np.float32(lo) and expected.max() == np.float32(6.0)  # both bounds reached
    np.testing.assert_allclose(run(root, args, "tensor")[0], expected, **TOL)
    np.testing.assert_allclose(run_unprepared(root, args)[0], expected, **TOL)


@pytest.mark.parametrize("activation", [None, "relu", "tanh"])
@pytest.mark.parametrize("bias_shape", [(5,), (3, 5)])
def test_fc_layer_matches_interp(activation: str | None, bias_shape: tuple[int, ...]) -> None:
    params = [
        Param("x", ArrayType(f32, 4)),
        Param("w", ArrayType(f32, 2)),
        Param("b", ArrayType(f32, len(bias_shape))),
    ]
    calls = [OpCall("mul", (P(0), P(1)), 1), OpCall("add", (L(0), P(2)), 2)]
    if activation:
        calls.append(OpCall(activation, (L(1),), 3))
    leaf = make_tensor_leaf(
        f"fc_{activation}", params, [ArrayType(f32, 2)], calls, [L(len(calls) - 1)], hpvm.TENSOR_TARGET
    )
    rng = np.random.default_rng(1)
    args = (
        rng.standard_normal((3, 2, 2, 2)).astype(np.float32),
        rng.standard_normal((8, 5)).astype(np.float32),
        rng.standard_normal(bias_shape).astype(np.float32),
    )
    root = _root_of(leaf, args)
    plan = get_backend("tensor").plan(root)
    assert [s.name for _, s in plan.steps()] == ["fc_layer"]
    assert plan.graph.prepared == ([tuple(c.op for c in calls)] if len(bias_shape) == 1 else [])
    expected = run(root, args, "interp")[0]
    np.testing.assert_allclose(run(root, args, "tensor")[0], expected, **TOL)
    np.testing.assert_allclose(run_unprepared(root, args)[0], expected, **TOL)


def test_fused_lenet_runs_as_two_layer_calls_and_matches_interp() -> None:
    fused = hpvm.tensor.fuse(lenet_like)
    plan = get_backend("tensor").plan(fused)
    assert [(path, s.kind, s.name, s.ops) for path, s in plan.steps()] == [
        ("conv_bias4_relu4_maxpool", "layer", "conv_layer", ("convolution", "add", "relu", "pool_max")),
        ("fc_bias2_tanh2", "layer", "fc_layer", ("mul", "add", "tanh")),
        ("softmax2", "op", "softmax", ("softmax",)),
    ]
    args = lenet_inputs()
    np.testing.assert_allclose(run(fused, args, "tensor")[0], run(lenet_like, args, "interp")[0], **TOL)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "b"))
def used_twice(x: T4, w: T4, b: hpvm.f32[:]) -> tuple[T4, T4]:
    y = hpvm.tensor.convolution(x, w, 1, 1, 1, 1)
    z = hpvm.tensor.add(y, b)
    r = hpvm.tensor.relu(z)
    return r, z


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "b"))
def bias_first(x: T4, w: T4, b: hpvm.f32[:]) -> T4:
    y = hpvm.tensor.convolution(x, w, 1, 1, 1, 1)
    return hpvm.tensor.add(b, y)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "b"))
def grouped(x: T4, w: T4, b: hpvm.f32[:]) -> T4:
    y = hpvm.tensor.group_convolution(x, w, 1, 1, 1, 1, 1)
    return hpvm.tensor.add(y, b)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "b"))
def interleaved(x: T4, w: T4, b: hpvm.f32[:]) -> T4:
    y = hpvm.tensor.convolution(x, w, 1, 1, 1, 1)
    t = hpvm.tensor.relu(x)
    z = hpvm.tensor.add(y, b)
    return hpvm.tensor.add(z, t)


def test_runs_that_would_hide_a_value_or_change_meaning_stay_separate() -> None:
    # z is returned too: conv + add still form a layer, but the relu stays its own call
    assert [s.name for s in lower(parse_tensor_leaf(used_twice))] == ["conv_layer", "relu"]
    # the conv result is add's second operand (a 1-D first operand broadcasts differently)
    assert [s.name for s in lower(parse_tensor_leaf(bias_first))] == ["convolution", "add"]
    # group_convolution is not in the seed's patterns
    assert [s.name for s in lower(parse_tensor_leaf(grouped))] == ["group_convolution", "add"]
    # operations must be consecutive
    assert [s.name for s in lower(parse_tensor_leaf(interleaved))] == ["convolution", "relu", "add", "add"]


def test_torch_layer_functions_equal_their_operations() -> None:
    from hpvm.backends.tensor import layers as L
    from hpvm.ir.tensorops import torch_impl as T

    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.standard_normal((2, 3, 7, 7)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal(4).astype(np.float32))
    with torch.inference_mode():
        got = L.conv_layer(x, w, 0, 1, 2, 1, b, "clipped_relu", 0.0, 1.0, "pool_min", 2, 3, 1, 0, 1, 2)
        want = T.pool_min(
            T.clipped_relu(T.add(T.convolution(x, w, 0, 1, 2, 1), b), 0.0, 1.0), 2, 3, 1, 0, 1, 2
        )
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)


NO_LOWER_BOUND = float("-inf")


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def clip_above(x: T4) -> T4:
    return hpvm.tensor.clipped_relu(x, NO_LOWER_BOUND, 0.5)


def test_non_finite_constants_survive_code_generation() -> None:
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(1, 1, 4, 4)
    root = _root_of(clip_above, (x,))
    assert 'float("-inf")' in get_backend("tensor").plan(root).source
    np.testing.assert_array_equal(run(root, (x,), "tensor")[0], np.minimum(x, 0.5))
    np.testing.assert_array_equal(run(root, (x,), "interp")[0], np.minimum(x, 0.5))
