"""VGG-16's last stage as HPVM's DNN benchmarks write their models (``programs/vgg_tail.cpp``:
vgg16_cifar10's src.cc style, one file — a leaf per tensor operation, a root wiring
(pointer, size) pairs, a packed ``RootIn``, a host reading the weights with
``readTrainedWeights`` and one launch per batch of ``readInputBatch``).

What it checks: the graph as written; the probabilities against NumPy (float64, the same
files) on ``tensor`` and ``interp``, in batches of 2 and of 1; and on ``tensor`` the rule of
Winograd's F(4×4, 3×3) at its boundary (``winograd.CHANNELS_PER_TILE``): the two 128-channel
convolutions of 4×4 images run by Winograd in batches of 2 (2 tiles, one per 64 channels),
with the 36 products as one oneDNN grouped convolution, and by oneDNN's direct blocked
kernel in batches of 1."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, write_tensor_files

import hpvm
from hpvm import c
from hpvm.ir.tensorops import np_conv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import needs_backend  # noqa: E402

pytestmark = [needs_clang, pytest.mark.usefixtures("clean_runtime")]

SOURCE = Path(__file__).parent / "programs" / "vgg_tail.cpp"  # (a fixed path: zig's cache finds it)
CHANNELS, SIDE, CLASSES, IMAGES = 128, 4, 10, 4
OPS = ["convolution", "add", "relu", "convolution", "add", "relu", "pool_max", "mul", "add", "softmax"]
TARGETS = ["interp", pytest.param("tensor", marks=needs_backend("tensor"))]


@pytest.fixture(scope="module")
def program():
    return c.compile([SOURCE])


def write_model(folder: Path, seed: int = 5) -> dict[str, np.ndarray]:
    """The files main reads, in HPVM's layouts (biases (1, C, 1, 1), the dense weight (1, 1,
    in, out)); He-scaled filters, so that the values stay of the input's size."""
    rng = np.random.default_rng(seed)
    scale = (2 / (9 * CHANNELS)) ** 0.5
    arrays = {
        "test_input": rng.standard_normal((IMAGES, CHANNELS, SIDE, SIDE)),
        "conv2d_1_w": rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * scale,
        "conv2d_1_b": rng.standard_normal((1, CHANNELS, 1, 1)) * 0.1,
        "conv2d_2_w": rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * scale,
        "conv2d_2_b": rng.standard_normal((1, CHANNELS, 1, 1)) * 0.1,
        "dense_1_w": rng.standard_normal((1, 1, CHANNELS * 4, CLASSES)) / 8,
        "dense_1_b": rng.standard_normal((1, CLASSES, 1, 1)) * 0.1,
    }
    return write_tensor_files(folder, arrays)


def numpy_tail(a: dict[str, np.ndarray]) -> np.ndarray:
    """The graph in float64: relu(conv + b) twice, 2×2 max pooling, the flattened (NCHW)
    image times the dense weight + bias, softmax: (images, CLASSES)."""
    y = a["test_input"].astype(np.float64)
    for k in (1, 2):
        y = np.maximum(np_conv(y, a[f"conv2d_{k}_w"], 1, 1, 1, 1) + a[f"conv2d_{k}_b"], 0.0)
    n, ch, h, w = y.shape
    y = y.reshape(n, ch, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    z = y.reshape(n, -1) @ a["dense_1_w"][0, 0] + a["dense_1_b"].reshape(1, -1)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_graph_is_read_as_written(program):
    (root,) = program.roots
    assert [p.name for p in root.params] == [
        "input", "conv2d_1_w", "conv2d_1_b", "conv2d_2_w", "conv2d_2_b", "dense_1_w", "dense_1_b",
    ]  # fmt: skip
    assert [call.op for node in root.graph.nodes for call in node.function.body.calls] == OPS


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("batch", [2, 1])
def test_the_probabilities_are_numpys(program, target, batch, tmp_path, capfd):
    arrays = write_model(tmp_path)
    out = tmp_path / "out.bin"
    assert program.run([str(tmp_path), str(out), str(batch)], target=target) == 0
    assert f"vgg_tail: {IMAGES} images, {IMAGES // batch} batches of {batch}" in capfd.readouterr().out
    got = np.fromfile(out, np.float32).reshape(IMAGES, CLASSES)
    expected = numpy_tail(arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert np.abs(expected - expected.mean()).max() > 0.05  # the classes differ: a real check


@needs_backend("tensor")
def test_on_tensor_the_convolutions_run_by_winograd_from_one_tile_per_64_channels(program, tmp_path):
    from hpvm.backends import get_backend
    from hpvm.backends.tensor import prepared

    if not prepared.onednn_available():
        pytest.skip("Winograd runs on oneDNN only (torch with mkldnn)")
    arrays = write_model(tmp_path)
    (root,) = program.roots
    ranks = [p.type.rank for p in root.params]  # the dense weight (in, out), its bias (C,)
    weights = [
        a.reshape(-1) if r == 1 else a[0, 0] if r == 2 else a
        for a, r in zip(list(arrays.values())[1:], ranks[1:])
    ]
    hpvm.init()
    for a in weights:
        hpvm.track_memory(a)
    expected = numpy_tail(arrays)
    for batch in (2, 1):
        images = np.ascontiguousarray(arrays["test_input"][:batch])
        hpvm.track_memory(images)
        (got,) = hpvm.wait(hpvm.launch(root, (images, *weights), target="tensor"))
        np.testing.assert_allclose(
            np.asarray(got).reshape(batch, CLASSES), expected[:batch], rtol=1e-4, atol=1e-5
        )
    plan = get_backend("tensor").plan(root)
    calls = [v for v in plan.graph.run.__globals__.values() if isinstance(v, prepared.Prepared)]
    convolutions = [call for call in calls if call.spec.kind == "conv"]
    assert len(convolutions) == 2
    for call in convolutions:  # the derived weights, keyed (versions, input shape, layout, ...)
        by_batch = {key[1][0]: (key[2], derived) for key, (derived, _) in call._cache.items()}
        assert by_batch[2][0] == prepared.WINOGRAD and by_batch[1][0] == prepared.BLOCKED
        assert by_batch[2][1].dim() == 4  # the 36 products' weight as one grouped convolution's
