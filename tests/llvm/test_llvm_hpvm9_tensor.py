"""A VGG block as HPVM's GenHPVM writes the HPVM IR of its DNN benchmarks
(``hpvm9/vgg_block_tensor.ll``, LLVM 9 text): one node function per tensor operation,
each taking its tensors as ``(i8*, i64)`` pairs and calling one ``llvm.hpvm.tensor.*``
intrinsic, hinted through ``!hpvm_hint_cudnn``, returning a packed ``{ i8*, i64 }`` with a
size of 0; a root binding the weights and chaining the layers with ``createEdge``; a
``main`` launching it.

``llvm.from_hpvm_ir`` types those byte-array ports as tensors (``llvm/tensorports.py``, as
the C front end does for HPVM-C), so the imported graph runs from Python with NumPy arrays
in HPVM's layouts — biases ``(1, C, 1, 1)``, the dense weight ``(K, M)``, its bias ``(M,)``.
On ``tensor`` both ``conv → add → relu`` chains become prepared calls with HPVM's 4-D biases
as biases, and both 64-channel convolutions run by Winograd's F(4×4, 3×3). A convolution
given filters of the wrong width is refused naming its node and the ``.ll`` line of its
``llvm.hpvm.tensor.convolution`` call; a weight bound both as a dense matrix and as filters
is an import error at the ``.ll`` line of the bind that uses it the second way."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.bodies import TensorBody
from hpvm.ir.tensorops import np_conv

torch = pytest.importorskip(
    "torch", reason="the tensor back end runs on PyTorch (pip install 'hpvm[tensor]')"
)

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

BLOCK = Path(__file__).parent / "hpvm9" / "vgg_block_tensor.ll"
TEXT = BLOCK.read_text()
CHANNELS, SIDE, CLASSES, BATCH = 64, 16, 10, 2


def _line(pattern: str) -> int:
    """The 1-based line of the text that matches ``pattern``."""
    (k,) = [k for k, text in enumerate(TEXT.splitlines(), 1) if re.search(pattern, text)]
    return k


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(TEXT, file=str(BLOCK))


def _model(filters_in2: int = CHANNELS, seed: int = 3) -> list[np.ndarray]:
    """The root's arguments: images, then each layer's weights in HPVM's layouts."""
    rng = np.random.default_rng(seed)
    scale = (2 / (9 * CHANNELS)) ** 0.5
    arrays = [
        rng.standard_normal((BATCH, CHANNELS, SIDE, SIDE)),
        rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * scale,
        rng.standard_normal((1, CHANNELS, 1, 1)) * 0.1,
        rng.standard_normal((CHANNELS, filters_in2, 3, 3)) * scale,
        rng.standard_normal((1, CHANNELS, 1, 1)) * 0.1,
        rng.standard_normal((CHANNELS * (SIDE // 2) ** 2, CLASSES)) / 32,
        rng.standard_normal(CLASSES) * 0.1,
    ]
    return [a.astype(np.float32) for a in arrays]


def _numpy(args: list[np.ndarray]) -> np.ndarray:
    """The block in float64: two 3×3 convolutions (padding 1) with biases and relus, a 2×2
    max pool, the dense layer, softmax."""
    x, w1, b1, w2, b2, dw, db = (a.astype(np.float64) for a in args)

    def conv(t: np.ndarray, w: np.ndarray) -> np.ndarray:  # (3×3, padding 1, in float64: t is)
        return np_conv(t, w, 1, 1, 1, 1)

    y = np.maximum(conv(x, w1) + b1, 0.0)
    y = np.maximum(conv(y, w2) + b2, 0.0)
    n, k, h, w = y.shape
    y = y.reshape(n, k, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    z = y.reshape(n, -1) @ dw + db
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _launch(root, args: list[np.ndarray], target: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    for a in args:
        hpvm.track_memory(a)
    (out,) = hpvm.wait(hpvm.launch(root, tuple(args), target=target))
    return np.asarray(out)


def test_it_imports_as_genhpvm_wrote_it_with_tensor_ports(root):
    ops = []
    for node in root.graph.nodes:
        assert isinstance(node.function.body, TensorBody) and node.function.hint == "tensor"
        ops += [call.op for call in node.function.body.calls]
    assert ops == [
        "convolution",
        "add",
        "relu",
        "convolution",
        "add",
        "relu",
        "pool_max",
        "mul",
        "add",
        "softmax",
    ]
    assert [str(p.type) for p in root.params] == ["f32[:, :, :, :]"] * 5 + ["f32[:, :]", "f32[:]"]
    assert [str(t) for t in root.out_types] == ["f32[:, :]"]
    # each operation keeps the line of its call in the text
    assert [c.line for n in root.graph.nodes for c in n.function.body.calls][3] == _line(
        r"define .*@var_3_node_cloned"
    ) + 2


@pytest.mark.parametrize("target", ["interp", "tensor"])
def test_the_probabilities_are_numpys(root, target: str):
    args = _model()
    expected = _numpy(args)
    np.testing.assert_allclose(_launch(root, args, target), expected, rtol=1e-4, atol=1e-5)
    assert np.abs(expected - expected.mean()).max() > 0.05  # the classes differ: a real check


def test_on_tensor_hpvms_biases_fold_and_the_convolutions_run_by_winograd(root):
    from hpvm.backends import get_backend
    from hpvm.backends.tensor import prepared

    _launch(root, _model(), "tensor")
    plan = get_backend("tensor").plan(root)
    assert plan.graph.prepared == [
        ("convolution", "add", "relu"),
        ("convolution", "add", "relu", "pool_max"),
        ("mul", "add"),
    ]
    calls = [v for v in plan.graph.run.__globals__.values() if isinstance(v, prepared.Prepared)]
    convolutions = [call for call in calls if call.spec.kind == "conv"]
    assert [call.spec.channel_bias for call in convolutions] == [True, True]
    if prepared.onednn_available():
        assert [{key[2] for key in call._cache} for call in convolutions] == [{prepared.WINOGRAD}] * 2


@pytest.mark.parametrize("target", ["interp", "tensor"])
def test_filters_of_the_wrong_width_are_refused_at_the_calls_line(root, target: str):
    args = _model(filters_in2=32)
    line = _line(r"define .*@var_3_node_cloned") + 2
    with pytest.raises(hpvm.TensorShapeError) as info:
        _launch(root, args, target)
    message = str(info.value)
    assert "var_3_node_cloned" in message and f"vgg_block_tensor.ll:{line}" in message, message
    assert "convolution" in message and "32" in message and "64" in message, message


def test_a_weight_bound_as_a_matrix_and_as_filters_is_an_import_error_at_the_bind():
    text = TEXT.replace(
        "bind.input(i8* %var_3_node_cloned.node, i32 6, i32 2",
        "bind.input(i8* %var_3_node_cloned.node, i32 10, i32 2",
    ).replace(
        "bind.input(i8* %var_3_node_cloned.node, i32 7, i32 3",
        "bind.input(i8* %var_3_node_cloned.node, i32 11, i32 3",
    )
    assert text != TEXT
    # (found at its second use: the dense layer's bind, after the convolution took it as filters)
    line = next(
        k for k, t in enumerate(text.splitlines(), 1) if "%var_7_node_cloned.node, i32 10, i32 2" in t
    )
    with pytest.raises(llvm.LLVMImportError) as info:
        llvm.from_hpvm_ir(text, file=str(BLOCK))
    message = str(info.value)
    assert f"vgg_block_tensor.ll:{line}" in message and "dense_1_w" in message, message
    assert "used both as" in message and "pass two tensors" in message, message
