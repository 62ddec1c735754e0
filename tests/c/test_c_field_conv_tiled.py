"""A 3x3 convolution with a shared tile and halo cells, written as HPVM's benchmarks write a
tiled kernel (``programs/conv_tiled.cc`` with ``conv_weights.h``, C++: a grid of blocks
rounded up to whole blocks, an allocation node for the tile, a BLOCK_X x BLOCK_Y leaf — 16 x 4,
not square — whose instances load the tile in a strided loop whose trip count depends on the
instance, meet at ``__hpvm__barrier``, and compute their pixel under the bounds guard; a
``std::vector`` host checking every pixel). Run through this stop's change: the leaf's group
has constant extents, so on ``cpu`` it runs the copy of its work-item loops compiled for
16 x 4 (``llvm_native/wispecial.py``) — for other block shapes too — and gives the host's
sums, as the interpreter and checked mode do; with the halo forgotten in the allocation,
the interpreter and checked mode name the first instance that writes past the tile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from hpvm.backends import get_backend

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

PROGRAM = Path(__file__).parent / "programs" / "conv_tiled.cc"
SOURCE = PROGRAM.read_text()
SIZES = [["45", "19"], ["16", "4"], ["1", "1"], ["33", "7"], ["17", "5"]]

program = compiled_program(PROGRAM)


def _graph_code(compiled) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(get_backend("cpu").prepare(compiled.roots[0]).gen.sources)


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("size", SIZES, ids="x".join)
def test_the_program_convolves_and_checks_itself(program, capfd, target: str, size: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert program.run(size, target=target) == 0
    assert capfd.readouterr().out.strip() == f"conv {size[0]}x{size[1]}: 0 wrong"


def test_on_cpu_the_block_runs_work_item_loops_compiled_for_16_by_4(program) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["45", "19"], target="cpu") == 0
    assert "_group_k16x4x1(" in _graph_code(program)


@pytest.mark.parametrize("block", [(8, 2), (4, 8), (32, 1)])
def test_other_block_shapes_run_their_own_copies(capfd, block: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    bx, by = block
    compiled = c.compile(PROGRAM, defines=[f"BLOCK_X={bx}", f"BLOCK_Y={by}"])
    assert compiled.run(["45", "19"], target="cpu") == 0
    assert capfd.readouterr().out.strip() == "conv 45x19: 0 wrong"
    assert f"_group_k{bx}x{by}x1(" in _graph_code(compiled)


def test_checked_mode_gives_the_same_sums(program, capfd, checked) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["45", "19"], target="cpu") == 0
    assert capfd.readouterr().out.strip() == "conv 45x19: 0 wrong"


@pytest.fixture(scope="module")
def haloless():  # type: ignore[no-untyped-def]
    """The tile indexed with its halo, allocated without it (64 of its 108 cells)."""
    return c.compile(PROGRAM, defines=["ALLOC_CELLS=BLOCK_X*BLOCK_Y"])


def _overrun(message: str) -> None:
    """Every instance writes cell ly * 16 + lx first (< 64), then 64 further on: the first
    instance, row-major, already writes past the 64 cells on its second trip."""
    assert re.search(r"node conv_root/grid\[0, 0\]/conv\[0, 0\] \(leaf 'conv_block', ", message), message
    assert f"a write of 4 bytes at {PROGRAMS}/conv_tiled.cc:{line_of(SOURCE, 'store')} " in message
    assert "falls outside 'tile'" in message, message


def test_the_interpreter_names_the_overrun_of_the_haloless_tile(haloless) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hpvm.OutOfBoundsError) as raised:
        haloless.run(["16", "4"], target="interp")
    _overrun(str(raised.value))


def test_checked_mode_names_it_the_same_way(haloless, checked) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hpvm.OutOfBoundsError) as raised:
        haloless.run(["16", "4"], target="cpu")
    _overrun(str(raised.value))
