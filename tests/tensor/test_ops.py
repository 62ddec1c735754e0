"""hpvm.tensor operations: NumPy reference vs torch.nn.functional, torch dispatch, validation
errors, and tensor leaves on the interpreter (its checked views must not break them)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.tensor import ops

torch = pytest.importorskip(
    "torch", reason="the tensor tests compare with PyTorch (pip install 'hpvm[tensor]')"
)
F = torch.nn.functional

TOL = dict(rtol=1e-5, atol=1e-5)


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a)


def _both(name: str, args: tuple, expected: torch.Tensor) -> None:
    """The NumPy reference and the torch dispatch both match ``expected``."""
    fn = ops.FUNCTIONS[name]
    got_np = fn(*args)
    assert isinstance(got_np, np.ndarray) and got_np.dtype == np.float32
    np.testing.assert_allclose(got_np, expected.numpy(), **TOL)
    got_t = fn(*(_t(a) if isinstance(a, np.ndarray) else a for a in args))
    assert isinstance(got_t, torch.Tensor)
    np.testing.assert_allclose(got_t.numpy(), expected.numpy(), **TOL)


conv_cases = st.fixed_dictionaries(
    {
        "n": st.integers(1, 2),
        "groups": st.integers(1, 3),
        "cg": st.integers(1, 3),
        "kg": st.integers(1, 3),
        "h": st.integers(3, 9),
        "w": st.integers(3, 9),
        "r": st.integers(1, 3),
        "s": st.integers(1, 3),
        "vpad": st.integers(0, 2),
        "hpad": st.integers(0, 2),
        "vstride": st.integers(1, 3),
        "hstride": st.integers(1, 3),
        "seed": st.integers(0, 2**16),
    }
)


@settings(max_examples=30, deadline=None)
@given(conv_cases)
def test_convolution_matches_torch(c: dict) -> None:
    rng = np.random.default_rng(c["seed"])
    g = c["groups"]
    x = _rand(rng, c["n"], c["cg"] * g, c["h"], c["w"])
    w = _rand(rng, c["kg"] * g, c["cg"], c["r"], c["s"])
    pads, strides = (c["vpad"], c["hpad"]), (c["vstride"], c["hstride"])
    expected = F.conv2d(_t(x), _t(w), None, strides, pads, 1, g)
    if g == 1:
        _both("convolution", (x, w, *pads, *strides), expected)
    _both("group_convolution", (x, w, *pads, *strides, g), expected)


pool_cases = st.fixed_dictionaries(
    {
        "h": st.integers(2, 9),
        "w": st.integers(2, 9),
        "wh": st.integers(1, 3),
        "ww": st.integers(1, 3),
        "vstride": st.integers(1, 3),
        "hstride": st.integers(1, 3),
        "pad": st.booleans(),
        "seed": st.integers(0, 2**16),
    }
)


@settings(max_examples=30, deadline=None)
@given(pool_cases)
def test_pooling_matches_torch(c: dict) -> None:
    rng = np.random.default_rng(c["seed"])
    wh, ww = min(c["wh"], c["h"]), min(c["ww"], c["w"])
    vpad, hpad = (wh // 2, ww // 2) if c["pad"] else (0, 0)
    x = _rand(rng, 2, 3, c["h"], c["w"])
    args = (x, wh, ww, vpad, hpad, c["vstride"], c["hstride"])
    k, s, p = (wh, ww), (c["vstride"], c["hstride"]), (vpad, hpad)
    _both("pool_max", args, F.max_pool2d(_t(x), k, s, p))
    _both("pool_min", args, -F.max_pool2d(-_t(x), k, s, p))
    _both("pool_mean", args, F.avg_pool2d(_t(x), k, s, p, False, True))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**16))
def test_mul_flattens_like_flatten_linear(n: int, c: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = _rand(rng, n, c, 2, 3)
    w = _rand(rng, c * 6, m)
    _both("mul", (x, w), F.linear(torch.flatten(_t(x), 1), _t(w).T))
    x2 = _rand(rng, n, c)
    w2 = _rand(rng, c, m)
    _both("mul", (x2, w2), _t(x2) @ _t(w2))


def test_add_broadcasts_bias_per_channel_and_per_column() -> None:
    rng = np.random.default_rng(0)
    x, b = _rand(rng, 2, 3, 4, 5), _rand(rng, 3)
    _both("add", (x, b), _t(x) + _t(b).view(1, 3, 1, 1))
    same = _rand(rng, 2, 3, 4, 5)
    _both("add", (x, same), _t(x) + _t(same))
    y, c = _rand(rng, 4, 7), _rand(rng, 7)
    _both("add", (y, c), _t(y) + _t(c))


def test_add_numpy_broadcastable_operand() -> None:
    rng = np.random.default_rng(1)
    x, b = _rand(rng, 2, 3, 4, 5), _rand(rng, 1, 3, 1, 1)
    _both("add", (x, b), _t(x) + _t(b))


def test_activations_and_softmax() -> None:
    rng = np.random.default_rng(2)
    x = _rand(rng, 2, 3, 4, 5) * 4
    _both("relu", (x,), F.relu(_t(x)))
    _both("clipped_relu", (x,), F.relu6(_t(x)))
    _both("clipped_relu", (x, -1.0, 0.5), F.hardtanh(_t(x), -1.0, 0.5))
    _both("tanh", (x,), torch.tanh(_t(x)))
    _both("sigmoid", (x,), torch.sigmoid(_t(x)))
    logits = _rand(rng, 5, 10) * 10
    _both("softmax", (logits,), F.softmax(_t(logits), dim=1))


@pytest.mark.parametrize("shape", [(2, 4, 5, 6), (3, 4)])
def test_batchnorm_matches_torch_inference(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = _rand(rng, *shape)
    gamma, beta, mean = _rand(rng, 4), _rand(rng, 4), _rand(rng, 4)
    var = np.abs(_rand(rng, 4)) + 0.5
    expected = F.batch_norm(_t(x), _t(mean), _t(var), _t(gamma), _t(beta), False, 0.0, 1e-5)
    _both("batchnorm", (x, gamma, beta, mean, var, 1e-5), expected)


# -- validation ------------------------------------------------------------------------


X4 = np.zeros((2, 3, 8, 8), np.float32)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda: hpvm.tensor.convolution(X4[0], np.zeros((4, 3, 3, 3), np.float32), 0, 0, 1, 1),
            r"convolution: operand 'x' has shape \(3, 8, 8\) \(3-D\); it must be 4-D",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 2, 3, 3), np.float32), 0, 0, 1, 1),
            r"w has shape \(4, 2, 3, 3\) but x has 3 channels",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 3, 3, 3), np.float32), -1, 0, 1, 1),
            r"'vpad' is -1; it must be >= 0",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 3, 3, 3), np.float32), 0, 0, 0, 1),
            r"'vstride' is 0; it must be >= 1",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 3, 9, 3), np.float32), 0, 0, 1, 1),
            r"filter height \(R\) 9 is larger than the padded input",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 3, 3, 3), np.float32), 1.5, 0, 1, 1),
            r"'vpad' must be an integer, not float",
        ),
        (
            lambda: hpvm.tensor.group_convolution(X4, np.zeros((4, 1, 3, 3), np.float32), 0, 0, 1, 1, 2),
            r"3 channels .* not divisible by groups=2",
        ),
        (
            lambda: hpvm.tensor.convolution(X4, np.zeros((4, 3, 3, 3), np.float64), 0, 0, 1, 1),
            r"'w' has dtype float64 but 'x' has float32",
        ),
        (
            lambda: hpvm.tensor.convolution(
                X4.astype(np.int32), np.zeros((4, 3, 3, 3), np.int32), 0, 0, 1, 1
            ),
            r"dtype int32; tensors are floating point",
        ),
        (lambda: hpvm.tensor.convolution([1.0], X4, 0, 0, 1, 1), r"operand 'x' must be a tensor .* not list"),
        (
            lambda: hpvm.tensor.add(X4, np.zeros(4, np.float32)),
            r"bias 'b' has shape \(4,\) .* b must be \(3,\)",
        ),
        (lambda: hpvm.tensor.add(X4, np.zeros((2, 5), np.float32)), r"do not broadcast"),
        (
            lambda: hpvm.tensor.mul(X4, np.zeros((100, 10), np.float32)),
            r"flattens to \(2, 192\) but w has shape \(100, 10\); w must be \(192, M\)",
        ),
        (
            lambda: hpvm.tensor.mul(X4, np.zeros((192,), np.float32)),
            r"operand 'w' has shape \(192,\) \(1-D\)",
        ),
        (
            lambda: hpvm.tensor.softmax(X4),
            r"softmax: operand 'x' has shape \(2, 3, 8, 8\) \(4-D\); it must be 2-D",
        ),
        (lambda: hpvm.tensor.clipped_relu(X4, 6.0, 0.0), r"lo=6.0 is greater than hi=0.0"),
        (
            lambda: hpvm.tensor.batchnorm(X4, *[np.zeros(4, np.float32)] * 4, 1e-5),
            r"operand 'gamma' has shape \(4,\); it must be \(3,\)",
        ),
        (lambda: hpvm.tensor.batchnorm(X4, *[np.zeros(3, np.float32)] * 4, -1.0), r"epsilon is -1.0"),
        (lambda: hpvm.tensor.pool_max(X4, 2, 2, 2, 0, 2, 2), r"vpad=2 is more than half the window \(2\)"),
        (
            lambda: hpvm.tensor.pool_mean(X4, 9, 2, 0, 0, 1, 1),
            r"window height \(wh\) 9 is larger than the padded input",
        ),
        (lambda: hpvm.tensor.pool_min(X4, 0, 2, 0, 0, 1, 1), r"'wh' is 0; it must be >= 1"),
        (
            lambda: hpvm.tensor.add(torch.zeros(3), np.zeros(3, np.float32)),
            r"mix NumPy arrays and torch tensors",
        ),
    ],
)
def test_validation_errors(call, pattern: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hpvm.TensorShapeError, match=pattern):
        call()


def test_tensor_shape_error_is_exported_and_an_hpvm_error() -> None:
    assert hpvm.tensor.TensorShapeError is hpvm.TensorShapeError
    assert issubclass(hpvm.TensorShapeError, hpvm.HPVMError)


def test_importing_hpvm_tensor_does_not_import_torch() -> None:
    code = "import sys, numpy as np, hpvm; hpvm.tensor.relu(np.zeros(3, np.float32)); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- tensor leaves on the interpreter ----------------------------------------------------


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def conv_leaf(x: hpvm.f32[:, :, :, :], w: hpvm.f32[:, :, :, :]) -> hpvm.f32[:, :, :, :]:
    return hpvm.tensor.convolution(x, w, 1, 1, 1, 1)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def bias_relu_pool(x: hpvm.f32[:, :, :, :], b: hpvm.f32[:]) -> hpvm.f32[:, :, :, :]:
    y = hpvm.tensor.add(x, b)
    z = hpvm.tensor.relu(y)
    return hpvm.tensor.pool_max(z, 2, 2, 0, 0, 2, 2)


@hpvm.internal()
def small_net(x: hpvm.f32[:, :, :, :], w: hpvm.f32[:, :, :, :], b: hpvm.f32[:]):
    c = hpvm.create_node(conv_leaf)
    p = hpvm.create_node(bias_relu_pool)
    hpvm.bind_in(c, 0, 0)
    hpvm.bind_in(c, 1, 1)
    hpvm.edge(c, p, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(p, 2, 1)
    hpvm.bind_out(p, 0, 0)


def _net_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return _rand(rng, 2, 3, 8, 8), _rand(rng, 4, 3, 3, 3), _rand(rng, 4)


def test_tensor_leaves_verify_and_run_on_interp() -> None:
    hpvm.verify(small_net)
    x, w, b = _net_inputs()
    hpvm.init()
    try:
        for a in (x, w, b):
            hpvm.track_memory(a)
        (out,) = hpvm.wait(hpvm.launch(small_net, (x, w, b), target="interp"))
    finally:
        hpvm.cleanup()
    expected = F.max_pool2d(F.relu(F.conv2d(_t(x), _t(w), _t(b), 1, 1)), 2, 2)
    assert type(out) is np.ndarray and out.dtype == np.float32
    np.testing.assert_allclose(out, expected.numpy(), **TOL)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def bad_conv_leaf(x: hpvm.f32[:, :, :, :], w: hpvm.f32[:, :, :, :]) -> hpvm.f32[:, :, :, :]:
    return hpvm.tensor.convolution(x, w, 1, 1, 1, 1)


@hpvm.internal()
def bad_net(x: hpvm.f32[:, :, :, :], w: hpvm.f32[:, :, :, :]):
    c = hpvm.create_node(bad_conv_leaf)
    hpvm.bind_in(c, 0, 0)
    hpvm.bind_in(c, 1, 1)
    hpvm.bind_out(c, 0, 0)


def test_shape_error_on_interp_names_the_node_and_line() -> None:
    x = np.zeros((1, 3, 8, 8), np.float32)
    w = np.zeros((4, 5, 3, 3), np.float32)
    hpvm.init()
    try:
        for a in (x, w):
            hpvm.track_memory(a)
        handle = hpvm.launch(bad_net, (x, w), target="interp")
        with pytest.raises(
            hpvm.TensorShapeError,
            match=r"node bad_net/bad_conv_leaf \(leaf 'bad_conv_leaf', .*test_ops.py:\d+\): hpvm.tensor.convolution: w has shape",
        ):
            hpvm.wait(handle)
    finally:
        hpvm.cleanup()
