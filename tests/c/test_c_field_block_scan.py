"""Blelloch's work-efficient block scan (GPU Gems 3, chapter 39) written as HPVM's benchmarks
write a shared-memory kernel (``programs/block_scan``: kernel.cc, main.cc, include/scan.h;
C++ with ``std::vector`` and ``std::exclusive_scan``): a grid of blocks rounded up, an
allocation node for the block's 2 * BLOCK ints, a leaf replicated BLOCK times that sweeps up
and down the tree with ``__hpvm__barrier`` between levels (uniform loops, ``if (tid < d)``
inside) and writes the block's total. Run through this stop's changes: the leaf's group has
a constant extent, so on ``cpu`` it runs the copy of its work-item loops compiled for it
(``wispecial.py``), for 64 instances and for other ``-D BLOCK`` sizes, with the host's sums,
as on ``interp`` and in checked mode; with the totals left out of the leaf's outputs, the
interpreter and checked mode refuse their write at its C line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from hpvm.backends import get_backend
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

FOLDER = Path(__file__).parent / "programs" / "block_scan"
KERNEL = FOLDER / "kernel.cc"


def _compile(*defines: str):  # type: ignore[no-untyped-def]
    return c.compile(
        [FOLDER / "main.cc", KERNEL], include_dirs=[str(FOLDER / "include")], defines=list(defines)
    )


@pytest.fixture(scope="module")
def program():  # type: ignore[no-untyped-def]
    return _compile()


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("n", [1000, 128, 1, 257])
def test_the_program_scans_and_checks_itself(program, capfd, target: str, n: int) -> None:  # type: ignore[no-untyped-def]
    assert program.run([str(n)], target=target) == 0
    assert capfd.readouterr().out.strip() == f"scan {n}: {-(-n // 128)} blocks, 0 wrong"


def test_checked_mode_gives_the_same_sums(program, capfd, checked) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["1000"], target="cpu") == 0
    assert capfd.readouterr().out.strip() == "scan 1000: 8 blocks, 0 wrong"


@pytest.mark.parametrize("block", [64, 32, 128])
def test_on_cpu_each_block_size_runs_its_own_copy(capfd, block: int) -> None:  # type: ignore[no-untyped-def]
    compiled = _compile(f"BLOCK={block}")
    assert compiled.run(["1000"], target="cpu") == 0
    assert capfd.readouterr().out.strip() == f"scan 1000: {-(-1000 // (2 * block))} blocks, 0 wrong"
    assert f"_group_k{block}x1x1(" in "\n".join(get_backend("cpu").prepare(compiled.roots[0]).gen.sources)


@pytest.mark.parametrize("mode", ["interp", "checked"])
def test_a_total_written_but_not_declared_is_refused_at_its_line(
    mode: str, request: pytest.FixtureRequest
) -> None:
    if mode == "checked":
        request.getfixturevalue("checked")
    line = line_of(KERNEL.read_text(), "total")
    with fails(
        hpvm.IllegalWriteError,
        "node scan_root/grid[0]/scan[0] (leaf 'scan_block', ",
        f"a write of 4 bytes at {PROGRAMS}/block_scan/kernel.cc:{line} writes 'sums', which the "
        "leaf's outs do not declare",
    ):
        _compile("DECLARE_SUMS=0").run(["300"], target="interp" if mode == "interp" else "cpu")
