"""examples/c/lenet/lenet.cpp — HPVM's LeNet written in HPVM-C — against PyTorch: from the
weights, images and labels lenet_data.py writes in HPVM's file format, the program's
probabilities match PyTorch's, and computeAccuracy3 reports the accuracy the labels were
chosen to give (87.5 % and 37.5 % on the two batches of 8, 62.5 % in all)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, compiled_program, needs_clang

from hpvm.ir.bodies import TensorBody
from hpvm.ir.types import ArrayType, ScalarType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from example_modules import load  # noqa: E402
from markers import needs_backend  # noqa: E402

pytestmark = [needs_clang, pytest.mark.usefixtures("clean_runtime")]
LENET = EXAMPLES / "lenet" / "lenet.cpp"
TARGETS = ["interp", pytest.param("tensor", marks=needs_backend("tensor"))]
TENSOR, MATRIX, CHANNELS = (ArrayType(ScalarType("f32"), rank) for rank in (4, 2, 1))
BATCH = 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """(folder, what PyTorch computed): the default 16 images, 6 of them labelled wrong."""
    pytest.importorskip("torch", reason="the reference is PyTorch's")
    folder = tmp_path_factory.mktemp("lenet_mnist")
    written = load("c/lenet/lenet_data").write(folder)
    # the classes must not hang on float rounding: each image's top two are well apart
    top2 = np.sort(written.probabilities, axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0]).min() > 1e-4
    return folder, written


program = compiled_program(LENET)


def test_one_tensor_leaf_per_layer_operation(program):
    (root,) = program.roots
    assert [p.name for p in root.params][:3] == ["input", "conv2d_1_w", "conv2d_1_b"]
    # dense weights are mul's (K, M), their biases (M,): HPVM's (1, 1, K, M) and (1, M, 1, 1)
    assert [p.type for p in root.params] == [TENSOR] * 5 + [MATRIX, CHANNELS] * 2
    ops = []
    for node in root.graph.nodes:
        leaf = node.function
        assert isinstance(leaf.body, TensorBody) and leaf.hint == "tensor"
        (call,) = leaf.body.calls
        ops.append(call.op)
    conv = ["convolution", "add", "tanh", "pool_max"]
    dense = ["mul", "add", "tanh"]
    assert ops == conv * 2 + dense * 2 + ["softmax"]


@pytest.mark.parametrize("target", TARGETS)
def test_lenet_matches_pytorch(program, data, target, tmp_path, monkeypatch, capfd):
    folder, written = data
    monkeypatch.chdir(tmp_path)  # computeAccuracy3 writes final_accuracy here, as HPVM's does
    out = tmp_path / "probabilities.bin"
    assert program.run([str(folder), str(out)], target=target) == 0
    got = np.fromfile(out, np.float32).reshape(written.probabilities.shape)
    np.testing.assert_allclose(got, written.probabilities, rtol=1e-4, atol=1e-7)

    right = written.probabilities.argmax(axis=1) == written.labels
    per_batch = [100.0 * right[k : k + BATCH].mean() for k in range(0, right.size, BATCH)]
    assert per_batch == [87.5, 37.5]  # the labels lenet_data.py chose
    printed = capfd.readouterr().out
    assert [line for line in printed.splitlines() if "Accuracy" in line] == [
        "****** Accuracy = 87.500000 ",
        "****** Accuracy = 37.500000 ",
        " **** Final Accuracy = 62.500000 ",
    ]
    assert printed.count(f"batch_dim = {BATCH}, num_classes = 10 ") == 2
    assert (tmp_path / "final_accuracy").read_text() == "62.500000"


def test_the_files_are_hpvms_layout(data):
    """Sizes as lenet_mnist.cpp reads them; the labels are uint32, 10 of 16 PyTorch's class."""
    folder, written = data
    extents = {
        "conv2d_1_w": 32 * 1 * 5 * 5,
        "conv2d_1_b": 32,
        "conv2d_2_w": 64 * 32 * 5 * 5,
        "conv2d_2_b": 64,
        "dense_1_w": 3136 * 1024,
        "dense_1_b": 1024,
        "dense_2_w": 1024 * 10,
        "dense_2_b": 10,
        "test_input": 16 * 28 * 28,
    }
    for name, count in extents.items():
        assert (folder / f"{name}.bin").stat().st_size == 4 * count, name
    labels = np.fromfile(folder / "test_labels.bin", np.uint32)
    np.testing.assert_array_equal(labels, written.labels)
    assert np.count_nonzero(written.probabilities.argmax(axis=1) == labels) == 10
