"""An iterative kernel launched from ``main`` as HPVM's Parboil ports write one
(``programs/heat_sweeps.cc``, C++ with ``std::vector``): two buffers tracked once, one
``__hpvm__launch`` + ``__hpvm__wait`` of the same graph per sweep, the host swapping the
pointers in the argument struct; a wrapper node over 8x8 blocks with a bounds guard. Run
through this stop's change: from the third sweep on, each launch is a replay — the C host
hands the tracked buffers' own views, so the two argument orders are two records, and the
replay holds them with tokens and calls the compiled entry itself (the struct's ``long``s
are Python ints for ``i64`` ports, its ``float`` a Python float for an ``f32`` port: that
one is converted, so the replay calls the runner) — and the program, checking every point
against its own loop, sees the same plate as on ``interp``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "heat_sweeps.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.mark.parametrize(("size", "sweeps"), [((37, 19), 12), ((64, 40), 20), ((9, 3), 5)])
def test_the_sweeps_are_replayed_and_the_plate_is_right(program, full_path, size, sweeps):
    assert program.run([str(size[0]), str(size[1]), str(sweeps)]) == 0
    assert full_path[0] <= 4  # (each order: a first run on a worker, a second recorded)


def test_on_interp_the_plate_is_the_same(program):
    assert program.run(["13", "11", "4"], target="interp") == 0
