"""The runnable examples in ``examples/``: each computes what its NumPy reference computes.

The examples are scripts, not a package, so they are imported by path. Each is exercised
through its ``run()`` at a small size (the interpreter runs leaves as Python, one call per
instance), through ``main()`` for its command line and its pass / fail exit status, and
``vector_add.py`` once as a real subprocess, the way a user starts it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from example_modules import EXAMPLES, load

# ---------------------------------------------------------------------------------------
# run(): the graph's result against the reference, at small sizes


def test_vector_add():
    result, reference = load("vector_add").run(n=257, seed=1)
    np.testing.assert_allclose(result, reference, rtol=1e-6)


def test_sgemm_rectangular():
    result, reference = load("sgemm").run(m=16, n=24, k=5, tile=8, alpha=2.0, beta=-1.0, seed=2)
    assert result.shape == (16, 24)
    np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-4)


def test_sgemm_rejects_partial_tiles():
    with pytest.raises(ValueError, match=r"multiples of the tile \(8\).*m=12"):
        load("sgemm").run(m=12, n=16, k=4, tile=8)


def test_stencil():
    result, reference = load("stencil").run(rows=9, cols=13, steps=3, seed=3)
    np.testing.assert_allclose(result, reference, rtol=1e-6, atol=1e-7)
    # Boundaries are copied, the interior changed.
    initial = load("stencil").initial_grid(9, 13, 3)
    np.testing.assert_array_equal(result[0], initial[0])
    assert not np.array_equal(result[1:-1, 1:-1], initial[1:-1, 1:-1])


def test_histogram_exact():
    bins, reference = load("histogram").run(n=1500, nbins=10, seed=4)
    assert bins.dtype == np.int32
    np.testing.assert_array_equal(bins, reference)
    assert bins.sum() == 1500


def test_reduction_exact():
    partials, reference = load("reduction").run(n=256, block=16, seed=5)
    assert partials.shape == (16,)
    np.testing.assert_array_equal(partials, reference)
    # The tree's order of additions aside, the partials are the blocks' sums.
    blocks = load("reduction").make_data(256, 5).reshape(16, 16)
    np.testing.assert_allclose(partials, blocks.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, block", [(100, 16), (96, 24)])
def test_reduction_rejects_bad_blocks(n, block):
    with pytest.raises(ValueError, match="block"):
        load("reduction").run(n=n, block=block)


def test_edge_detection_reuses_slots():
    # 4 frames through 2 slots: frames 2 and 3 reuse the buffers of frames 0 and 1.
    edges, reference = load("edge_detection").run(frames=4, size=20, in_flight=2, seed=6)
    assert edges.shape == (4, 20, 20)
    np.testing.assert_array_equal(edges, reference)
    assert 0 < edges.sum() < edges.size / 2  # some edges, not everything
    assert not np.array_equal(edges[0], edges[3])  # the shapes move


# ---------------------------------------------------------------------------------------
# main(): the command lines, their output, and the exit status when results disagree

SMALL_ARGS = {
    "vector_add": ["--n", "100"],
    "sgemm": ["--m", "8", "--n", "8", "--k", "4", "--tile", "4"],
    "stencil": ["--rows", "8", "--cols", "8", "--steps", "2"],
    "histogram": ["--n", "300", "--bins", "8"],
    "reduction": ["--n", "64", "--block", "16"],
    "edge_detection": ["--frames", "2", "--size", "12"],
}


@pytest.mark.parametrize("name", sorted(SMALL_ARGS))
def test_main_passes(name, tmp_path, capsys):
    args = SMALL_ARGS[name] + (["--out", str(tmp_path)] if name == "edge_detection" else [])
    assert load(name).main(args) == 0
    assert "match" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(SMALL_ARGS))
def test_main_fails_on_mismatch(name, tmp_path, monkeypatch, capsys):
    module = load(name)
    real_run = module.run

    def wrong_run(*args, **kwargs):
        result, reference = real_run(*args, **kwargs)
        result = result.copy()
        result.flat[0] += 1  # one element off: main must notice
        return result, reference

    monkeypatch.setattr(module, "run", wrong_run)
    args = SMALL_ARGS[name] + (["--out", str(tmp_path)] if name == "edge_detection" else [])
    assert module.main(args) == 1
    assert "MISMATCH" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, args", [("sgemm", ["--m", "10", "--tile", "4"]), ("reduction", ["--block", "12"])]
)
def test_main_rejects_bad_sizes(name, args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load(name).main(args)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_edge_detection_writes_pictures(tmp_path, capsys):
    out = tmp_path / "frames"
    assert (
        load("edge_detection").main(["--frames", "3", "--size", "16", "--in-flight", "2", "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    frames = sorted(p.name for p in out.glob("frame_*.png"))
    assert frames == ["frame_000.png", "frame_001.png", "frame_002.png"]
    from PIL import Image

    with Image.open(out / "frame_000.png") as picture:
        assert picture.width > 2 * picture.height  # input | edges, side by side
    assert (out / "pipeline.svg").stat().st_size > 0
    assert str(out) in printed and "pipeline.svg" in printed


# ---------------------------------------------------------------------------------------
# The script entry point


def test_vector_add_script():
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "vector_add.py"), "--n", "64"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "matches NumPy" in done.stdout
