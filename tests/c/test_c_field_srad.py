"""Rodinia's SRAD (speckle reducing anisotropic diffusion, srad_v2) written as HPVM's ports of
its CUDA benchmarks write one (``programs/srad``: the packed ``RootIn`` and the root's
declaration in srad.h; the graph in srad_graph.cpp — a CPU root with two 2-D leaves over the
image, x the column, the coefficients' leaf handing the update its size over an all-to-all
edge —; the host in main.cpp with ``std::vector`` images, ``std::exp`` and ``std::stol``).
Each iteration the host reads the image (``llvm_hpvm_request_mem``), measures the speckle over
its top-left quarter as ``q0sqr`` and launches one step with it, waiting at once; then it
runs the same steps on its own arrays and counts the pixels that differ (floats, the same
operations in the same order: equal means exactly equal).

Every launch passes a new ``q0sqr`` — a float the host computes from the last step. The
leaves have no loop, so it is no work (``quick.work_params``: only ``cols`` and ``rows``, the
nodes' sizes, are), and a replay's key holds its type only (``LaunchPlan.neutral``): after
the first, compiling launch and the second, recorded one, every step is replayed with its
own ``q0sqr``. (Two things kept it from that before: every value in the replay key, and the
coefficients array ``C`` — a pointer port of its own, its size travelling over the edge —
cut from its tracked region as a new slice per launch, ``c/argstruct.py``'s ``region``.)

With ``-D SRAD_SOUTH=(i + 1)`` (or a clamp to ``rows``, one row too far) the coefficients' leaf forgets to clamp its south neighbour,
as a port that drops the CUDA kernel's edge test does: the last row reads a row past ``J``.
The index ``(i + 1) * cols + j`` has a run-time stride, which the bounds pre-check reads
(``affine.py``'s scaled terms: the id times ``cols``, and ``cols`` alone) and refuses the
launch with, before anything runs, on ``cpu`` and ``interp`` alike, naming the bytes the
instances reach with ``cols``'s value. (Before, it had no fact for a run-time stride:
unchecked ``cpu`` read past the image, and the host counted 28 wrong pixels.)"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm import c
from hpvm.runtime import plan, quick
from markers import fails
from running import full_path_launches

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

FOLDER = Path(__file__).parent / "programs" / "srad"  # (a fixed path: zig's cache finds it)
SOURCES = [FOLDER / "main.cpp", FOLDER / "srad_graph.cpp"]
GRAPH = (FOLDER / "srad_graph.cpp").read_text()
LAMBDA = np.float32(0.5)

program = compiled_program(SOURCES)


@pytest.fixture(scope="module")
def unclamped():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES, defines=["SRAD_SOUTH=(i + 1)"])


# --- a reference of our own: NumPy, float32 ---------------------------------------------------


def lcg_image(rows: int, cols: int) -> np.ndarray:
    """The host's image before ``exp``: its LCG from seed 2026, 15 bits over 32768."""
    state, pixels = 2026, []
    for _ in range(rows * cols):
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        pixels.append(((state >> 16) & 0x7FFF) / 32768.0)
    return np.array(pixels, np.float32).reshape(rows, cols)


def speckle(image: np.ndarray) -> np.float32:
    """The host's q0sqr over the top-left quarter: its float sums, element by element in
    row order (as the C loop adds them)."""
    rows, cols = image.shape
    region = image[: rows // 2, : cols // 2].ravel()
    total, squares = np.float32(0), np.float32(0)
    for t in region:
        total, squares = total + t, squares + t * t
    size = np.float32(region.size)
    mean = total / size
    return (squares / size - mean * mean) / (mean * mean)


def srad(rows: int, cols: int, iterations: int) -> tuple[np.ndarray, float]:
    """The steps, vectorized: the image after them and the last q0sqr."""
    J = np.exp(lcg_image(rows, cols))
    q0sqr = np.float32(0)
    for _ in range(iterations):
        q0sqr = speckle(J)
        north, south = J[np.r_[0, : rows - 1]], J[np.r_[1:rows, rows - 1]]
        west, east = J[:, np.r_[0, : cols - 1]], J[:, np.r_[1:cols, cols - 1]]
        n, s, w, e = north - J, south - J, west - J, east - J
        g2 = (n * n + s * s + w * w + e * e) / (J * J)
        ell = (n + s + w + e) / J
        num = np.float32(0.5) * g2 - np.float32(1 / 16) * (ell * ell)
        den = np.float32(1) + np.float32(0.25) * ell
        den = (num / (den * den) - q0sqr) / (q0sqr * (np.float32(1) + q0sqr))
        coefficient = np.clip(np.float32(1) / (np.float32(1) + den), 0, 1).astype(np.float32)
        c_south = coefficient[np.r_[1:rows, rows - 1]]
        c_east = coefficient[:, np.r_[1:cols, cols - 1]]
        d = coefficient * n + c_south * s + coefficient * w + c_east * e
        J = J + np.float32(0.25) * LAMBDA * d
    return J, float(q0sqr)


def run(program, capfd, rows: int, cols: int, iterations: int, target: str = "cpu") -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """One run: the host found every pixel equal to its own loop's; its q0sqr and sum."""
    assert program.run([str(rows), str(cols), str(iterations)], target=target) == 0
    out = capfd.readouterr().out.strip()
    found = re.fullmatch(
        rf"srad {rows}x{cols}, {iterations} iterations: q0sqr (\S+), sum (\S+), 0 wrong", out
    )
    assert found, out
    return float(found.group(1)), float(found.group(2))


# --- tests -------------------------------------------------------------------------------------


def test_the_graph_is_read_as_the_program_writes_it(program) -> None:  # type: ignore[no-untyped-def]
    (root,) = program.roots
    first, second = root.graph.nodes
    assert [n.function.name for n in (first, second)] == ["sradCoefficients", "sradUpdate"]
    assert [[str(s) for s in n.sizes] for n in (first, second)] == [["cols", "rows"]] * 2
    names = [p.name for p in root.params]
    # (C is a pointer port of its own: its size is the edge's, so ``bytesC`` stays a scalar)
    assert names == ["J", "dN", "dS", "dW", "dE", "C", "bytesC", "cols", "rows", "q0sqr", "lambda_"]
    assert str(root.params[5].type) == "u8[*]"
    assert quick.work_params(root) == {names.index("cols"), names.index("rows")}
    assert quick.bounded_graph(root) is None


@pytest.mark.parametrize(
    ("rows", "cols", "iterations"), [(128, 128, 10), (7, 5, 3), (33, 65, 20), (4, 4, 1), (9, 3, 0)]
)
def test_every_pixel_is_the_host_s_own_and_numpy_s(
    program, capfd, rows: int, cols: int, iterations: int
) -> None:  # type: ignore[no-untyped-def]
    q0sqr, total = run(program, capfd, rows, cols, iterations)
    J, want_q0sqr = srad(rows, cols, iterations)
    # (np.exp and std::exp may round a pixel differently: the same steps, not the same bits)
    assert math.isclose(total, float(J.astype(np.float64).sum()), rel_tol=1e-6)
    assert math.isclose(q0sqr, want_q0sqr, rel_tol=1e-3, abs_tol=1e-9)


def test_on_interp_the_steps_are_the_same(program, capfd) -> None:  # type: ignore[no-untyped-def]
    assert run(program, capfd, 12, 10, 4, "interp") == run(program, capfd, 12, 10, 4, "cpu")


def test_each_step_s_new_q0sqr_is_replayed(program, monkeypatch, capfd) -> None:  # type: ignore[no-untyped-def]
    """50 launches, each with the q0sqr the host measured after the last: two take the full
    path (the first compiles on a worker; the second, quick, is recorded), 48 are replayed —
    each with its own q0sqr, or the host's comparison would find pixels that differ."""
    full_path = full_path_launches(monkeypatch)
    run(program, capfd, 64, 48, 50)
    assert full_path[0] == 2, f"{full_path[0]} of 50 launches took the full path"
    (root,) = program.roots
    names = [p.name for p in root.params]
    assert plan.plan_for(root, "cpu").neutral == {names.index(n) for n in ("bytesC", "q0sqr", "lambda_")}


@pytest.mark.parametrize(("target", "checked"), [("cpu", False), ("cpu", True), ("interp", False)])
def test_an_unclamped_south_neighbour_is_refused_before_it_runs(
    unclamped, target: str, checked: bool
) -> None:  # type: ignore[no-untyped-def]
    """The read of ``J[(i + 1) * cols + j]``: over 8 columns and 16 rows the instances reach
    bytes 32 to 543 of the 512 — refused by the pre-check, checked mode or not."""
    rows, cols = 16, 8
    previous = cpu.configure(checked=checked)
    try:
        with fails(
            hpvm.OutOfBoundsError,
            "every instance of leaf 'sradCoefficients' accesses bytes 4*x + 4*cols + 4*cols*y to",
            f"of 'J' (input of 'sradRoot', {rows * cols * 4} bytes long) "
            f"({PROGRAMS}/srad/srad_graph.cpp:{line_of(GRAPH, 'south')})",
            f"(x < {cols}, y < {rows}, cols = {cols}) that is bytes {4 * cols} to {4 * cols * (rows + 1) - 1}",
            "past its end",
        ):
            unclamped.run([str(rows), str(cols), "2"], target=target)
    finally:
        cpu.configure(**previous)


def test_a_bad_command_line_is_the_program_s_usage(program) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["1"]) == 2


@pytest.fixture(scope="module")
def clamped_one_too_far():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES, defines=["SRAD_SOUTH=(i + 1 < rows ? i + 1 : rows)"])


@pytest.mark.parametrize(("target", "checked"), [("cpu", False), ("interp", False)])
def test_a_clamp_one_row_too_far_is_refused_before_it_runs(
    clamped_one_too_far, target: str, checked: bool
) -> None:  # type: ignore[no-untyped-def]
    """The south neighbour clamped to ``rows`` instead of ``rows - 1``: clang writes it
    ``llvm.smin(i + 1, rows)``, a fact per arm — ``J[(i + 1) * cols + j]`` for the rows with
    ``i + 1 <= rows``, every one of them — and the last row's reaches a row past ``J``."""
    rows, cols = 16, 8
    previous = cpu.configure(checked=checked)
    try:
        with fails(
            hpvm.OutOfBoundsError,
            "every instance of leaf 'sradCoefficients' that takes the path below accesses bytes "
            "4*x + 4*cols + 4*cols*y to",
            f"(x < {cols}, y < {rows}, cols = {cols}, rows = {rows}; the path: y - rows + 1 <= 0) "
            f"that is bytes {4 * cols} to {4 * cols * (rows + 1) - 1}",
            "or correct the test on the path (a guard or a clamp) that lets them through",
        ):
            clamped_one_too_far.run([str(rows), str(cols), "2"], target=target)
    finally:
        cpu.configure(**previous)
