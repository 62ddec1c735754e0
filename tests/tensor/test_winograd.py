"""Winograd's F(4×4, 3×3) convolution (``hpvm.backends.tensor.winograd``): the kernels
against a float64 direct convolution on every size, padding, bias, residual and relu; the
prepared chains that take it (and those that do not) against the unprepared graph; the
models that run it against eager PyTorch; its scratch memory on several threads."""

from __future__ import annotations

import threading
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip(
    "torch", reason="the tensor back end runs on PyTorch (pip install 'hpvm[tensor]')"
)
import torch.nn.functional as F  # noqa: E402
from tensor_programs import run_unprepared  # noqa: E402
from test_prepared import _layouts, _plan_run, _rng_arrays, _root  # noqa: E402

import hpvm.tensor  # noqa: E402
from hpvm.backends import get_backend  # noqa: E402
from hpvm.backends.tensor import prepared, winograd  # noqa: E402
from hpvm.tensor import models  # noqa: E402
from hpvm.tensor.leaves import OpCall, Operand  # noqa: E402

P, L, C = (lambda i: Operand("param", i)), (lambda i: Operand("local", i)), (lambda v: Operand("const", v))

#: The kernels' error against exact arithmetic, as a fraction of a bound on the output's
#: size (the largest input times the largest sum of one output channel's |weights|, plus
#: the largest |bias| and |residual|): at most 1.3e-6 over 400 random cases; eight times that.
BOUND_FRACTION = 1e-5


def _bound(x: Any, w: Any, *others: Any) -> float:
    return float(x.abs().max() * w.abs().sum(dim=(1, 2, 3)).max() + sum(o.abs().max() for o in others))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3),
    c=st.integers(1, 9),
    k=st.integers(1, 9),
    h=st.integers(1, 14),
    w=st.integers(1, 14),
    vpad=st.integers(0, 2),
    hpad=st.integers(0, 2),
    bias=st.booleans(),
    residual=st.sampled_from([None, "nchw", "channels_last"]),
    relu=st.booleans(),
    channels_last=st.booleans(),
    grouped=st.booleans(),
    seed=st.integers(0, 999),
)
def test_the_kernels_compute_the_convolution_on_every_size_and_padding(
    n: int,
    c: int,
    k: int,
    h: int,
    w: int,
    vpad: int,
    hpad: int,
    bias: bool,
    residual: str | None,
    relu: bool,
    channels_last: bool,
    grouped: bool,
    seed: int,
) -> None:
    """Sizes that are not multiples of the 4×4 tile (the last tiles read zeros past the
    input and write only the rows and columns inside the output), any padding, the input
    and residual in either layout; the 36 products as oneDNN's grouped convolution
    (``prepare_weight``) or by ``torch.bmm`` (``transform_weight``)."""
    assume(h + 2 * vpad >= 3 and w + 2 * hpad >= 3)
    oh, ow = h + 2 * vpad - 2, w + 2 * hpad - 2
    x, wt, b, other = (
        torch.from_numpy(a) for a in _rng_arrays([(n, c, h, w), (k, c, 3, 3), (k,), (n, k, oh, ow)], seed)
    )
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    if residual == "channels_last":
        other = other.contiguous(memory_format=torch.channels_last)
    expected = F.conv2d(x.double(), wt.double(), b.double() if bias else None, padding=(vpad, hpad))
    if residual:
        expected = expected + other.double()
    if relu:
        expected = expected.relu()
    weight = winograd.prepare_weight(wt, x.shape, vpad, hpad) if grouped else winograd.transform_weight(wt)
    y = winograd.conv3x3(x, weight, b if bias else None, vpad, hpad, other if residual else None, relu)
    assert y.shape == (n, k, oh, ow) and y.dtype == torch.float32
    assert y.is_contiguous(memory_format=torch.channels_last)
    bound = _bound(x, wt, *([b] if bias else []), *([other] if residual else []))
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=0, atol=BOUND_FRACTION * bound)


def test_the_weight_transform_is_exact_for_an_identity_kernel() -> None:
    """A kernel with one 1 at its centre is the identity: Winograd's result is the input,
    to float32 rounding of the transforms."""
    wt = torch.zeros(4, 4, 3, 3)
    for i in range(4):
        wt[i, i, 1, 1] = 1.0
    x = torch.from_numpy(_rng_arrays([(2, 4, 9, 7)], 1)[0])
    for weight in (winograd.prepare_weight(wt, x.shape, 1, 1), winograd.transform_weight(wt)):
        y = winograd.conv3x3(x, weight, None, 1, 1, None, False)
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=0, atol=2e-6 * float(x.abs().max()))


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN (torch with mkldnn)")
def test_on_onednn_the_36_products_are_one_grouped_convolution_not_bmm() -> None:
    """``prepare_weight`` packs the 36 matrices of ``U`` as one grouped 1×1 convolution's
    weight for the input's tile count, and ``conv3x3`` then never calls ``torch.bmm``."""
    wt, x = (torch.from_numpy(a) for a in _rng_arrays([(5, 3, 3, 3), (2, 3, 10, 9)], 4))
    weight = winograd.prepare_weight(wt, x.shape, 1, 1)
    assert tuple(weight.shape) == (36 * 5, 3, 1, 1)
    assert winograd.tile_count(x.shape, 1, 1) == 2 * 3 * 3
    with mock.patch.object(torch, "bmm", side_effect=AssertionError("bmm called")):
        y = winograd.conv3x3(x, weight, None, 1, 1, None, False)
    np.testing.assert_allclose(
        y.numpy(), F.conv2d(x, wt, padding=1).numpy(), rtol=0, atol=BOUND_FRACTION * _bound(x, wt)
    )


@pytest.mark.parametrize(
    ("channels_in", "channels_out", "out_shape", "expected"),
    [
        (64, 64, (8, 64, 32, 32), True),  # ResNet-18's first stage, batch 8
        (256, 256, (8, 256, 8, 8), True),
        (512, 512, (8, 512, 4, 4), True),  # ResNet-18's last stage, batch 8: 8 tiles
        (512, 512, (4, 512, 4, 4), False),  # 4 tiles for 512 channels: reading U is the time
        (256, 256, (2, 256, 4, 4), False),  # 2 tiles for 256
        (256, 256, (4, 256, 4, 4), True),
        (512, 512, (16, 512, 4, 4), True),  # VGG-16's, batch 16: 16 tiles
        (512, 512, (16, 512, 2, 2), False),  # a 2×2 output fills a quarter of a tile
        (32, 64, (8, 64, 32, 32), False),  # too few input channels
        (3, 64, (8, 64, 32, 32), False),  # a first layer
    ],
)
def test_the_rule_takes_the_shapes_it_was_measured_to_win_on(
    channels_in: int, channels_out: int, out_shape: tuple[int, ...], expected: bool
) -> None:
    assert winograd.wins(channels_in, channels_out, out_shape) is expected
    with mock.patch.object(winograd, "ENABLED", False):
        assert not winograd.wins(channels_in, channels_out, out_shape)


def test_a_call_outside_inference_mode_after_one_inside_it() -> None:
    """The scratch matrices a call under ``torch.inference_mode`` makes are written again by
    the next call, made outside it (the back end's own calls run inside; a user's direct
    call, or a thread of another library, may not)."""
    wt, x = (torch.from_numpy(a) for a in _rng_arrays([(4, 3, 3, 3), (1, 3, 40, 40)], 2))
    u = winograd.prepare_weight(wt, x.shape, 1, 1)
    expected = F.conv2d(x, wt, padding=1)

    def fresh_thread_call(inference: bool, out: list) -> None:  # a thread: scratch of its own
        with torch.inference_mode(inference):
            out.append(winograd.conv3x3(x, u, None, 1, 1, None, False))
        with torch.inference_mode(not inference):
            out.append(winograd.conv3x3(x, u, None, 1, 1, None, False))

    for inference in (True, False):
        results: list = []
        t = threading.Thread(target=fresh_thread_call, args=(inference, results))
        t.start()
        t.join()
        assert len(results) == 2
        for y in results:
            np.testing.assert_allclose(
                y.numpy(), expected.numpy(), rtol=0, atol=BOUND_FRACTION * _bound(x, wt)
            )


# -- prepared chains --------------------------------------------------------------------------

onednn_only = pytest.mark.skipif(not prepared.onednn_available(), reason="needs oneDNN (torch with mkldnn)")


def _wide_conv(
    residual: str | None = None,
    activation: str | None = "relu",
    batchnorm: bool = False,
    pool: bool = False,
    stride: int = 1,
    channels: int = 64,
) -> tuple[Any, list[Any]]:
    """conv 3×3 (``channels`` → ``channels``, padding 1) → add bias → [batchnorm] → [add
    residual: a full tensor or one value per channel] → [activation] → [max pool 2×2], on
    a 2 × ``channels`` × 8 × 8 input: a ResNet block's second convolution, scaled down."""
    calls = [
        OpCall("convolution", (P(0), P(1), C(1), C(1), C(stride), C(stride)), 1),
        OpCall("add", (L(0), P(2)), 2),
    ]
    ranks: list[int | None] = [4, 4, 1]
    side = 8 // stride
    shapes: list[Any] = [(2, channels, 8, 8), (channels, channels, 3, 3), (channels,)]
    extra: list[Any] = []
    if batchnorm:
        calls.append(OpCall("batchnorm", (L(1), P(3), P(4), P(5), P(6), C(1e-3)), 3))
        ranks += [1] * 4
        rng = np.random.default_rng(3)
        extra = [(rng.random(channels) + 0.5).astype(np.float32), *_rng_arrays([(channels,)] * 2, 4)]
        extra.append((rng.random(channels) + 0.5).astype(np.float32))
    if residual is not None:
        calls.append(OpCall("add", (L(len(calls) - 1), P(len(ranks))), 4))
        ranks.append(4)
        shapes_other = (2, channels, side, side) if residual == "full" else (1, channels, 1, 1)
    if activation == "clipped_relu":
        calls.append(OpCall(activation, (L(len(calls) - 1), C(0.0), C(6.0)), 5))
    elif activation is not None:
        calls.append(OpCall(activation, (L(len(calls) - 1),), 5))
    if pool:
        calls.append(OpCall("pool_max", (L(len(calls) - 1), C(2), C(2), C(0), C(0), C(2), C(2)), 6))
    args = _rng_arrays(shapes, 5)
    args[1] *= np.float32((2 / (9 * channels)) ** 0.5)  # He's scale: outputs of the input's size
    args += extra
    if residual is not None:
        args += _rng_arrays([shapes_other], 6)
    return _root(ranks, calls, [L(len(calls) - 1)], [4]), args


def _close(result: np.ndarray, expected: np.ndarray) -> None:
    """Winograd's rounding: a fraction of the output's size (``BOUND_FRACTION``), not of
    each element."""
    np.testing.assert_allclose(
        result, expected, rtol=0, atol=BOUND_FRACTION * 10 * float(np.abs(expected).max())
    )


@onednn_only
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        dict(activation=None),
        dict(batchnorm=True),
        dict(residual="full"),
        dict(residual="full", activation="tanh"),
        dict(residual="per-channel"),
        dict(activation="sigmoid", pool=True),
        dict(activation="clipped_relu"),
    ],
    ids=[
        "relu",
        "none",
        "batchnorm",
        "residual",
        "residual-tanh",
        "residual-broadcast",
        "sigmoid-pool",
        "relu6",
    ],
)
def test_a_wide_3x3_convolution_runs_by_winograd_and_matches_the_unprepared_graph(
    kwargs: dict[str, Any],
) -> None:
    root, args = _wide_conv(**kwargs)
    expected = run_unprepared(root, args)[0]
    _close(_plan_run(root, args, (1,))[0], expected)
    assert _layouts(root) == {prepared.WINOGRAD}
    _close(_plan_run(root, args, (1,))[0], expected)  # the kept transformed weight


@onednn_only
@pytest.mark.parametrize("kwargs", [dict(stride=2), dict(channels=32)], ids=["stride-2", "too-few-channels"])
def test_other_3x3_convolutions_do_not_run_by_winograd(kwargs: dict[str, Any]) -> None:
    root, args = _wide_conv(**kwargs)
    np.testing.assert_allclose(
        _plan_run(root, args, (1,))[0], run_unprepared(root, args)[0], rtol=1e-4, atol=1e-5
    )
    assert prepared.WINOGRAD not in _layouts(root)


@onednn_only
def test_with_winograd_turned_off_the_chain_runs_on_onednn() -> None:
    with mock.patch.object(winograd, "ENABLED", False):
        root, args = _wide_conv()
        out = _plan_run(root, args, (1,))[0]
        assert _layouts(root) == {prepared.BLOCKED}  # an 8×8 output (``BLOCKED_MAX_PIXELS``)
    np.testing.assert_allclose(out, run_unprepared(root, args)[0], rtol=1e-4, atol=1e-5)


@onednn_only
def test_launches_on_several_threads_each_get_their_own_scratch() -> None:
    """Two host threads running the same prepared chain at once, on inputs of two sizes
    (the scratch matrices differ), each get their own input's result."""
    root, args = _wide_conv(residual="full")
    plan = get_backend("tensor").plan(root)
    inputs = [args, [args[0][:1], *args[1:-1], args[-1][:1]]]
    expected = [run_unprepared(root, a)[0] for a in inputs]
    failures: list[str] = []

    def work(which: int) -> None:
        with torch.inference_mode():
            tensors = [torch.from_numpy(a) for a in inputs[which]]
            for _ in range(20):
                out = plan.graph.run(*tensors, (1,))[0].numpy()
                if np.abs(out - expected[which]).max() > BOUND_FRACTION * 10 * np.abs(expected[which]).max():
                    failures.append(f"thread {which}")

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert _layouts(root) == {prepared.WINOGRAD}


# -- models -----------------------------------------------------------------------------------


@onednn_only
@pytest.mark.parametrize("name", ["resnet18", "vgg16"])
def test_models_run_their_wide_3x3_convolutions_by_winograd_and_match_pytorch(name: str) -> None:
    model = models.MODELS[name]()
    x = model.example_input(2, seed=1)
    program = hpvm.tensor.from_torch(model, x)
    with torch.inference_mode():
        reference = model(x).numpy()
    for enabled in (True, False):
        with mock.patch.object(winograd, "ENABLED", enabled):
            out = program(x, target="tensor")
        assert float(np.abs(out - reference).max() / np.abs(reference).max()) < 1e-4
    assert prepared.WINOGRAD in _layouts(program.root)
