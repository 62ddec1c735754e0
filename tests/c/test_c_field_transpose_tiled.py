"""NVIDIA's coalesced transpose written as HPVM's benchmarks write a tiled kernel
(``programs/transpose_tiled.cc``, C++: a grid of tiles rounded up to whole tiles, an
allocation node for the padded shared tile, a TILE x TILE leaf that loads under the bounds
guard, meets at ``__hpvm__barrier`` and stores the transposed element under the guard, a
``std::vector`` host checking every element). Run through this stop's changes: the grid's
``(width + TILE - 1) / TILE`` divides numbers >= 0, so it runs as C means it; the
interpreter runs the leaf's checked clone (instrumented for races, a barrier leaf), and
with the tile allocated without its padding it names the instance, its tile and the C line
as ``cpu``'s checked mode does; a bind written twice is named by both C lines and C's port
numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm import c
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

PROGRAM = Path(__file__).parent / "programs" / "transpose_tiled.cc"
SOURCE = PROGRAM.read_text()

program = compiled_program(PROGRAM)


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("size", [["37", "21"], ["8", "8"], ["16", "40"], ["1", "1"], ["5", "1"]])
def test_the_program_transposes_and_checks_itself(program, capfd, target: str, size: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert program.run(size, target=target) == 0
    assert capfd.readouterr().out.strip() == f"transpose {size[0]}x{size[1]}: 0 wrong"


def test_checked_mode_gives_the_same_transpose(program, capfd, checked) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["37", "21"], target="cpu") == 0
    assert capfd.readouterr().out.strip() == "transpose 37x21: 0 wrong"


@pytest.fixture(scope="module")
def unpadded():  # type: ignore[no-untyped-def]
    """The tile indexed with the article's padding, allocated without it."""
    return c.compile(PROGRAM, defines=["ALLOC_PAD=0"])


def _overrun(message: str) -> None:
    """Thread (tx, ty) stores at ty * 9 + tx: past the 64 floats for ty = 7, tx >= 1."""
    found = re.search(
        r"node transpose_root/grid\[\d, \d\]/tile\[(\d), (\d)\] \(leaf 'transpose_tile', ", message
    )
    assert found and int(found.group(2)) == 7 and int(found.group(1)) >= 1, message
    assert f"a write of 4 bytes at {PROGRAMS}/transpose_tiled.cc:{line_of(SOURCE, 'load')} " in message
    assert "falls outside 'tile'" in message, message
    # the byte offset the named instance had, and the unpadded tile's bytes
    tx, ty = int(found.group(1)), int(found.group(2))
    assert f"'tile': at byte offset {4 * (ty * 9 + tx)} of its {4 * 64} bytes" in message, message


def test_the_interpreter_names_the_overrun_of_the_unpadded_tile(unpadded) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hpvm.OutOfBoundsError) as raised:
        unpadded.run(["16", "16"], target="interp")
    _overrun(str(raised.value))


def test_checked_mode_names_it_the_same_way(unpadded) -> None:  # type: ignore[no-untyped-def]
    previous = cpu.configure(checked=True)
    try:
        with pytest.raises(hpvm.OutOfBoundsError) as raised:
            unpadded.run(["16", "16"], target="cpu")
    finally:
        cpu.configure(**previous)
    _overrun(str(raised.value))
    assert str(raised.value).endswith(" bytes (checked mode)")


def test_a_bind_written_again_after_the_loop_names_both_lines_and_cs_ports(write_c) -> None:  # type: ignore[no-untyped-def]
    """``width`` is C's parameter 4 of the tile leaf (the graph's 2: two pointer and size
    pairs before it are one port each); the loop's call and the one after it print alike."""
    loop = "  for (int p = 0; p < 6; p++) __hpvm__bindIn(tile, p, p, 0);\n"
    source = SOURCE.replace(loop, loop + "  __hpvm__bindIn(tile, 4, 4, 0);  // @again\n")
    path = write_c(source, "transpose_tiled.cc")
    again, first = line_of(source, "again"), source[: source.index(loop)].count("\n") + 1
    with fails(
        c.HPVMCError,
        f"{path}:{again}: ",
        f"input bind 4 -> tile.4 ({path}:{again}): input 4 ('width') of 'tile' is already fed by "
        f"input bind 4 -> tile.4 ({path}:{first})",
    ):
        c.compile(path, include_dirs=[str(PROGRAM.parent)])
