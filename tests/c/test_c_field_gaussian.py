"""Rodinia's Gaussian elimination written as HPVM's ports of its CUDA benchmarks write one
(``programs/gaussian``: the packed ``RootIn`` and the root's declaration in gaussian.h; the
graph in gaussian_graph.cpp — a CPU root with a grid node per CUDA kernel, each replicating
its block's threads, every thread finding its global index from its parent's id and its own
and returning early past the rows it covers; Fan2 with x the row, as Rodinia writes it —; the
host in main.cpp with ``std::vector`` matrices and ``std::exp``). One launch per column ``t``,
waiting at once (Rodinia's ``ForwardSub``), then the back substitution on the host; then the
same elimination on the host's own copies, every multiplier, matrix entry and right-hand side
compared (floats, the same operations in the same order: equal means exactly equal).

The grids are Rodinia's: whole blocks over the matrix whatever ``t`` is, so ``t`` — new every
launch — is no work (``quick.work_params``: only the grids' sizes are), and after the first,
compiling launch and the second, recorded one every column is a replay with its own ``t``.

With ``-D FAN2_ROWS=(size - t)`` Fan2's row guard lets one row too many through, the
off-by-one a port makes: the last row's instances would read and write a row past the
matrices. The accesses sit under the guards, which the bounds pre-check reads as ranges of
the global ids (``affine.clipped``), so the launch is refused before it runs on every
target (docs/llvm.md, "Guarded accesses"). Before, only checked ``cpu`` and ``interp``
stopped it, at run time; unchecked ``cpu`` wrote past ``a`` and ``m`` until glibc aborted
the process."""

from __future__ import annotations

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

FOLDER = Path(__file__).parent / "programs" / "gaussian"  # (a fixed path: zig's cache finds it)
SOURCES = [FOLDER / "main.cpp", FOLDER / "gaussian_graph.cpp"]
GRAPH = (FOLDER / "gaussian_graph.cpp").read_text()
BLOCK_XY = 4

program = compiled_program(SOURCES)


@pytest.fixture(scope="module")
def one_row_too_many():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES, defines=["FAN2_ROWS=(size - t)"])


def matrix(size: int) -> np.ndarray:
    """Rodinia's -s matrix: 10 * exp(-0.01 * |i - j|), in float32 as the host makes it."""
    i = np.arange(size)
    return (
        np.float32(10) * np.exp(np.float32(-0.01) * np.abs(i[:, None] - i[None, :]).astype(np.float32))
    ).astype(np.float32)


def run(program, capfd, size: int, target: str = "cpu") -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """One run: the host found every entry equal to its own loop's; the sum of the solution
    and its largest residual."""
    assert program.run([str(size)], target=target) == 0
    out = capfd.readouterr().out.strip()
    found = re.fullmatch(rf"gaussian {size}: sum of x (\S+), residual (\S+), 0 wrong", out)
    assert found, out
    return float(found.group(1)), float(found.group(2))


# --- tests -------------------------------------------------------------------------------------


def test_the_graph_is_read_as_the_program_writes_it(program) -> None:  # type: ignore[no-untyped-def]
    (root,) = program.roots
    grids = root.graph.nodes
    assert [(g.function.name, [str(s) for s in g.sizes]) for g in grids] == [
        ("fan1Grid", ["blocks"]),
        ("fan2Grid", ["gridXY", "gridXY"]),
    ]
    threads = [g.function.graph.nodes[0] for g in grids]
    assert [(t.function.name, [str(s) for s in t.sizes]) for t in threads] == [
        ("fan1", ["512"]),
        ("fan2", [str(BLOCK_XY)] * 2),
    ]
    names = [p.name for p in root.params]
    # (m is a pointer port of its own: its size is the edge's, so ``bytesM`` stays a scalar)
    assert names == ["m", "bytesM", "a", "b", "size", "t", "blocks", "gridXY"]
    assert quick.work_params(root) == {names.index("blocks"), names.index("gridXY")}


@pytest.mark.parametrize("size", [64, 7, 1, 2, 130, 513])
def test_the_solution_is_numpy_s_and_every_entry_the_host_s(program, capfd, size: int) -> None:  # type: ignore[no-untyped-def]
    total, residual = run(program, capfd, size)
    a = matrix(size).astype(np.float64)
    x = np.linalg.solve(a, np.ones(size))
    assert total == pytest.approx(float(x.sum()), rel=1e-4)
    assert residual < 1e-4  # max |A x - 1| with the host's float32 x


def test_on_interp_the_elimination_is_the_same(program, capfd) -> None:  # type: ignore[no-untyped-def]
    assert run(program, capfd, 9, "interp") == run(program, capfd, 9, "cpu")


def test_each_column_s_new_t_is_replayed(program, monkeypatch, capfd) -> None:  # type: ignore[no-untyped-def]
    """63 launches, each with its own t: two take the full path (the first compiles on a
    worker; the second, quick, is recorded), 61 are replayed — each with its own t, or the
    host's comparison would find entries that differ."""
    full_path = full_path_launches(monkeypatch)
    run(program, capfd, 64)
    assert full_path[0] == 2, f"{full_path[0]} of 63 launches took the full path"
    (root,) = program.roots
    names = [p.name for p in root.params]
    assert plan.plan_for(root, "cpu").neutral == {names.index(n) for n in ("bytesM", "size", "t")}


@pytest.mark.parametrize(("target", "checked"), [("cpu", False), ("cpu", True), ("interp", False)])
def test_one_row_too_many_is_refused_before_it_runs(one_row_too_many, target: str, checked: bool) -> None:  # type: ignore[no-untyped-def]
    """``xidx < size - t``: at t = 0 the instances with xidx = size - 1 would update row
    ``size``, one past the matrices — the multiplier ``m[size * (xidx + 1 + t) + t]`` at byte
    4 * size * size + 4 * t of m's 4 * size * size. The accesses are under Fan2's two
    guards, which the bounds pre-check reads as the ids' ranges (xidx <= size - t - 1, yidx
    <= size - t - 1): refused before anything runs, unchecked cpu included (which wrote past
    the matrices until glibc stopped the process)."""
    size = 10
    previous = cpu.configure(checked=checked)
    try:
        with fails(
            hpvm.OutOfBoundsError,
            "every instance of leaf 'fan2' that takes the path below accesses bytes "
            "4*size + 4*size*t + 4*t + 4*size*(parent.x*instances.x + x) to",
            f"of 'm' (input of 'fan2Grid', {4 * size * size} bytes long) "
            f"({PROGRAMS}/gaussian/gaussian_graph.cpp:{line_of(GRAPH, 'fan2')})",
            f"size = {size}, t = 0; the path: (parent.x*instances.x + x) - size + t + 1 <= 0 and "
            "(parent.y*instances.y + y) - size + t + 1 <= 0)",
            f"that is bytes {4 * size} to {4 * size * size + 3}: some instances would index past its end",
            "or correct the test on the path (a guard or a clamp) that lets them through",
        ):
            one_row_too_many.run([str(size)], target=target)
    finally:
        cpu.configure(**previous)


def test_a_bad_command_line_is_the_program_s_usage(program) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["0"]) == 2
