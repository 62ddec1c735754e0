"""A ResNet basic block with its classifier, written as HPVM's DNN benchmarks write their
models (``programs/resnet_block``: resnet18_cifar10's style, in four files). One leaf per
tensor operation (layers.cpp: hinted ``TENSOR_TARGET``, the result returned with a size of
0), a root wiring each tensor as a (pointer, size) pair with edges from the previous layer
and binds for the weights — the block's input bound a second time into the shortcut's
``add`` (graph.cpp) —, a packed ``RootIn`` (resnet_block.h), and a host reading the weights
with ``readTrainedWeights`` from a ``std::vector`` table and the images batch by batch with
``readInputBatch``, one launch per batch over the same ``RootIn`` (main.cpp).

What it checks: the graph as written; the probabilities against NumPy (float64, the same
files) on ``tensor`` and ``interp``; on ``tensor``, the two ``conv → add → batchnorm →
[add] → relu`` chains become two prepared calls across the nodes, and both convolutions
(64 channels, 16×16) run by Winograd's F(4×4, 3×3) (``backends/tensor/winograd.py``);
and a shortcut of the wrong width (the second convolution built with 32 filters) is
refused naming the add's node, its ``.cpp`` line and both shapes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, write_tensor_files

import hpvm
from hpvm import c
from hpvm.ir.bodies import TensorBody
from hpvm.ir.tensorops import np_conv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails, needs_backend  # noqa: E402

pytestmark = [needs_clang, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "resnet_block"  # (fixed paths: zig's cache finds them)
SOURCES = [FOLDER / "main.cpp", FOLDER / "layers.cpp", FOLDER / "graph.cpp"]
LAYERS = (FOLDER / "layers.cpp").read_text()
CHANNELS, SIDE, CLASSES, IMAGES, BATCH = 64, 16, 10, 4, 2
TARGETS = ["interp", pytest.param("tensor", marks=needs_backend("tensor"))]
OPS = [
    "convolution", "add", "batchnorm", "relu",
    "convolution", "add", "batchnorm", "add", "relu",
    "pool_mean", "mul", "add", "softmax",
]  # fmt: skip


@pytest.fixture(scope="module")
def program():
    return c.compile(SOURCES)


def write_model(folder: Path, filters2: int = CHANNELS, seed: int = 11) -> dict[str, np.ndarray]:
    """The weight files main.cpp reads, in HPVM's layouts (biases and statistics (1, C, 1,
    1), the dense weight (1, 1, in, out)), and the images: He-scaled filters, so that the
    block's values stay of the input's size."""
    rng = np.random.default_rng(seed)

    def stats(k: int) -> dict[str, np.ndarray]:
        return {
            "gamma": rng.uniform(0.5, 1.5, (1, k, 1, 1)),
            "beta": rng.standard_normal((1, k, 1, 1)) * 0.1,
            "mean": rng.standard_normal((1, k, 1, 1)) * 0.1,
            "variance": rng.uniform(0.5, 2.0, (1, k, 1, 1)),
        }

    scale = (2 / (9 * CHANNELS)) ** 0.5
    arrays = {
        "test_input": rng.standard_normal((IMAGES, CHANNELS, SIDE, SIDE)),
        "conv2d_1_w": rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * scale,
        "conv2d_1_b": rng.standard_normal((1, CHANNELS, 1, 1)) * 0.1,
        **{f"bn_1_{k}": v for k, v in stats(CHANNELS).items()},
        "conv2d_2_w": rng.standard_normal((filters2, CHANNELS, 3, 3)) * scale,
        "conv2d_2_b": rng.standard_normal((1, filters2, 1, 1)) * 0.1,
        **{f"bn_2_{k}": v for k, v in stats(filters2).items()},
        "dense_1_w": rng.standard_normal((1, 1, CHANNELS, CLASSES)) / 8,
        "dense_1_b": rng.standard_normal((1, CLASSES, 1, 1)) * 0.1,
    }
    return write_tensor_files(folder, arrays)


def numpy_block(a: dict[str, np.ndarray]) -> np.ndarray:
    """The graph in float64: relu(bn(conv(x) + b)), relu(bn(conv(·) + b) + x), the mean over
    the image, dense + bias, softmax; (images, CLASSES, 1, 1) as HPVM returns it."""
    x = a["test_input"].astype(np.float64)

    def conv(t: np.ndarray, w: np.ndarray) -> np.ndarray:  # (3×3, padding 1, in float64: t is)
        return np_conv(t, w, 1, 1, 1, 1)

    def bn(t: np.ndarray, k: int) -> np.ndarray:
        g, be, m, var = (a[f"bn_{k}_{s}"].astype(np.float64) for s in ("gamma", "beta", "mean", "variance"))
        return (t - m) / np.sqrt(var + 0.001) * g + be

    y = np.maximum(bn(conv(x, a["conv2d_1_w"]) + a["conv2d_1_b"], 1), 0.0)
    y = np.maximum(bn(conv(y, a["conv2d_2_w"]) + a["conv2d_2_b"], 2) + x, 0.0)
    z = y.mean(axis=(2, 3)) @ a["dense_1_w"][0, 0] + a["dense_1_b"].reshape(1, -1)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(-1, CLASSES, 1, 1)


def test_the_graph_is_read_as_written(program):
    (root,) = program.roots
    assert len(root.params) == 15  # the input and 14 weights; their sizes are not ports
    assert [n.name for n in root.graph.nodes] == [f"var_{k}" for k in range(13)]
    ops = []
    for node in root.graph.nodes:
        assert isinstance(node.function.body, TensorBody) and node.function.hint == "tensor"
        ops += [call.op for call in node.function.body.calls]
    assert ops == OPS
    # the shortcut's add reads the root's input (port 0) besides var_6's result
    shortcut = root.graph.nodes[7]
    assert {(b.ip, b.ic) for b in root.graph.in_binds if b.dst is shortcut} == {(0, 1)}


@pytest.mark.parametrize("target", TARGETS)
def test_the_probabilities_are_numpys(program, target, tmp_path, capfd):
    arrays = write_model(tmp_path)
    out = tmp_path / "out.bin"
    assert program.run([str(tmp_path), str(out)], target=target) == 0
    assert "resnet_block: 4 images, 2 batches" in capfd.readouterr().out
    got = np.fromfile(out, np.float32).reshape(IMAGES, CLASSES, 1, 1)
    expected = numpy_block(arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert np.abs(expected - expected.mean()).max() > 0.05  # the classes differ: a real check


@needs_backend("tensor")
def test_on_tensor_the_two_chains_are_prepared_and_their_convolutions_run_by_winograd(program, tmp_path):
    from hpvm.backends import get_backend
    from hpvm.backends.tensor import prepared

    arrays = write_model(tmp_path)
    (root,) = program.roots
    # the ports' ranks: biases of an add (1, C, 1, 1) as written, batchnorm's statistics
    # and the dense bias (C,), the dense weight (in, out), as HPVM-C's tensor ports take them
    ranks = [p.type.rank for p in root.params]
    files = [np.ascontiguousarray(arrays["test_input"][:BATCH]), *list(arrays.values())[1:]]
    args = [a.reshape(-1) if r == 1 else a[0, 0] if r == 2 else a for a, r in zip(files, ranks)]
    hpvm.init()
    for a in args:
        hpvm.track_memory(a)
    (got,) = hpvm.wait(hpvm.launch(root, tuple(args), target="tensor"))
    np.testing.assert_allclose(
        np.asarray(got).reshape(BATCH, CLASSES), numpy_block(arrays)[:BATCH, :, 0, 0], rtol=1e-4, atol=1e-5
    )
    plan = get_backend("tensor").plan(root)
    assert plan.graph.prepared == [
        ("convolution", "add", "batchnorm", "relu"),
        ("convolution", "add", "batchnorm", "add", "relu", "pool_mean"),
        ("mul", "add"),
    ]  # HPVM's (1, C, 1, 1) biases folded as biases (``Spec.channel_bias``)
    calls = [v for v in plan.graph.run.__globals__.values() if isinstance(v, prepared.Prepared)]
    convolutions = [call for call in calls if call.spec.kind == "conv"]
    assert len(convolutions) == 2 and all(call.spec.channel_bias for call in convolutions)
    if prepared.onednn_available():
        assert [{key[2] for key in call._cache} for call in convolutions] == [{prepared.WINOGRAD}] * 2


@pytest.fixture(scope="module")
def narrow_shortcut():
    return c.compile(SOURCES, defines=["RESNET_BLOCK_FILTERS2=32"])


@pytest.mark.parametrize("target", TARGETS)
def test_a_shortcut_of_the_wrong_width_is_refused_at_its_add(narrow_shortcut, target, tmp_path):
    write_model(tmp_path, filters2=32)
    line = line_of(LAYERS, "shortcut")
    with fails(hpvm.TensorShapeError, "var_7", f"layers.cpp:{line}", "add", "32", "64"):
        narrow_shortcut.run([str(tmp_path), str(tmp_path / "out.bin")], target=target)
