"""Groups run at once: a block may wait for what another group's block writes, and groups
that wait on each other forever end in ``HBIRDeadlockError`` naming them and their lines,
never in a hang (``hpvm/hbir/concurrent.py``, ``waits.py``)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hbir_programs import EXAMPLES

from hpvm import hbir
from hpvm.errors import OutOfBoundsError
from hpvm.hbir import HBIRCheckError, HBIRDeadlockError
from hpvm.hbir import ast as A
from hpvm.hbir.concurrent import ABORT_JOIN_S, _abort
from hpvm.hbir.parser import parse as parse_tree
from hpvm.hbir.waits import wait_loops
from markers import fails

TARGETS = ["interp", "cpu"]

MACHINE = """target { memory g[1] { size 1K; width 4B; }; tile t[2][2]; }
config {
    group ping[1][2] { tile target.t[x][y]; };
    group pong[1][2] { tile target.t[x+1][y]; };
}
data { n = 4; out C : int[n] { } }
"""


def program(code: str, name: str = "p.hbir") -> hbir.HBIRProgram:
    return hbir.parse(MACHINE + code, name)


def line_of(text: str, fragment: str) -> int:
    hits = [n for n, line in enumerate((MACHINE + text).splitlines(), 1) if fragment in line]
    assert len(hits) == 1, hits
    return hits[0]


HANDSHAKE = EXAMPLES / "handshake.hbir"
A_IN = np.array([5, 7, 0, 0])


@pytest.mark.parametrize("target", TARGETS)
def test_a_flag_one_group_sets_is_seen_by_a_group_that_waits_for_it(target: str) -> None:
    """ping comes first in the program but waits for pong, which then waits for ping."""
    p = hbir.load(HANDSHAKE)
    out = p.run({"A": A_IN}, target=target)
    assert out["C"].tolist() == [19, 14, 20, 0]
    assert p.globals_after == {"turn": 2}


DEADLOCK = """code {
    int turn = 0;
    config.ping[0][0] {
        while (turn != 1) { }
        turn = 2;
    }
    config.pong[0][0] {
        C[0] = 5;
        while (turn != 2) { }
        turn = 1;
    }
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_groups_that_wait_on_each_other_end_in_an_error_naming_groups_and_lines(target: str) -> None:
    ping, pong = line_of(DEADLOCK, "turn != 1"), line_of(DEADLOCK, "turn != 2")
    with fails(
        HBIRDeadlockError,
        f"p.hbir:{ping}: group 'ping' (line 3) waits forever: its tile ping[0][0] (tile target.t[0][0]) "
        f"spins in the loop at line {ping}",
        f"p.hbir:{pong}: group 'pong' (line 4) waits forever: its tile pong[0][0] (tile target.t[1][0])",
        "every group still running ('ping', 'pong') waits too",
    ) as info:
        program(DEADLOCK).run({}, target=target)
    assert len(info.value.problems) == 2


def test_a_group_that_computes_for_long_is_not_taken_for_stuck() -> None:
    """pong computes in locals only (no shared write for a long while) before it sets the
    flag; the watchdog sees a running tile outside any wait loop and keeps waiting."""
    code = """code {
    int flag = 0;
    config.ping[0][0] { while (flag == 0) { } C[0] = 1; }
    config.pong[0][0] {
        int s = 0;
        for (int i = 0; i < 200000; i++) { s = (s + i) % 7; }
        C[1] = s;
        flag = 1;
    }
}
"""
    out = program(code).run({}, target="interp")
    assert out["C"].tolist() == [1, _mod_sum(200000), 0, 0]


def _mod_sum(n: int) -> int:
    s = 0
    for i in range(n):
        s = (s + i) % 7
    return s


def test_a_group_that_fails_ends_the_run_with_its_error_not_a_hang() -> None:
    code = """code {
    int flag = 0;
    config.ping[0][0] { while (flag == 0) { } }
    config.pong[0][0] { C[n + 3] = 1; flag = 1; }
}
"""
    with pytest.raises(OutOfBoundsError, match="p.hbir"):
        program(code).run({}, target="interp")


def test_an_abort_flag_lost_to_a_racing_atomic_read_is_raised_again() -> None:
    # The interp's atomic_add(flag, 0) is a locked read and write; the host's store of 1
    # can land between them and be overwritten with the 0 read before (CI failed so: the
    # failing group's abort was lost and the run ended in a deadlock error instead).
    wait = np.zeros((2, 3), np.int64)
    lost = threading.Event()

    def group() -> None:
        while wait[1, 0] == 0:
            time.sleep(0.001)
        wait[1, 0] = 0  # the write-back of a read that came just before the store
        lost.set()
        while wait[1, 0] == 0:
            time.sleep(0.001)

    t = threading.Thread(target=group, daemon=True)
    t.start()
    start = time.monotonic()
    _abort(wait, {"g": t})
    assert lost.is_set() and not t.is_alive()
    assert time.monotonic() - start < ABORT_JOIN_S / 2


def test_wait_loops_run_only_where_groups_can_run_at_once() -> None:
    line = next(n for n, text in enumerate(HANDSHAKE.read_text().splitlines(), 1) if "turn != 1" in text)
    with fails(HBIRCheckError, f"handshake.hbir:{line}: this loop waits for another group",
               "target 'opencl' cannot", "run it with target='cpu' or 'interp'"):  # fmt: skip
        hbir.load(HANDSHAKE).run({"A": A_IN}, target="opencl")


def test_programs_without_wait_loops_keep_one_graph_in_program_order() -> None:
    code = "code { config.ping[0][0] { C[0] = 1; } config.pong[0][0] { C[1] = C[0] + 1; } }"
    p = program(code)
    assert "hbir_wait" not in [q.name for q in p.to_hpvm().params]
    assert p.run({}, target="cpu")["C"].tolist() == [1, 2, 0, 0]


def _loops(body: str) -> list[int]:
    tree = parse_tree(MACHINE + "code { int flag = 0;\nconfig.ping[x][y] {\n" + body + "\n} }", "w.hbir")
    code = tree.segment(A.Code)
    block = [i for i in code.items if isinstance(i, A.Block)][0]  # type: ignore[union-attr]
    first = len(MACHINE.splitlines()) + 2  # the block's first line
    return [loop.line - first for loop in wait_loops(block.body, {"flag", "C"})]


@pytest.mark.parametrize(
    ("body", "waits"),
    [
        ("while (flag == 0) { }", [1]),
        ("while (C[1] != 3) { int k = 2; }", [1]),  # locals of its own are fine
        ("for (int i = 0; flag == 0; i++) { }", [1]),  # its step changes nothing it reads
        ("int i = 0;\nwhile (i < 3) { i++; }", []),  # reads no shared memory
        ("while (flag == 0) { flag = 1; }", []),  # writes what it reads
        ("while (flag == 0) { C[0] = 1; }", []),  # writes shared memory
        ("int i = 0;\nwhile (flag == 0 && i < 9) { i++; }", []),  # a bounded wait
        ("while (flag == 0) { bsg_finish(); }", []),  # leaves the block
        ("if (x == 0) {\nwhile (flag == 0) { }\n}", [2]),  # nested
    ],
)
def test_which_loops_wait(body: str, waits: list[int]) -> None:
    assert _loops(body) == waits


def test_the_watchdog_rows_of_a_waiting_program_are_kept_by_every_block() -> None:
    """Every block of a program with wait loops marks its tiles running (the watchdog must
    see a group that computes without waiting)."""
    p = hbir.load(HANDSHAKE)
    root = p.to_hpvm()
    leaves = [n.function for n in root.graph.nodes]
    assert all("hbir_wait" in [q.name for q in leaf.params] for leaf in leaves)


NESTED = """target { tile t[4][4]; }
config {
    group grid[2] { group row[4] { tile target.t[grid.x][row.x]; }; };
    group late[2][4] { tile target.t[x + 2][y]; };
}
data { out C : int[8] { } }
code {
    int go = 0;
    config.row[x] {
        while (go == 0) { }
        C[grid.x * 4 + x] = go + grid.x;
    }
    config.late[0][0] { go = GO; }
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_nested_group_waits_for_a_later_group(target: str) -> None:
    out = hbir.parse(NESTED.replace("GO", "5"), "n.hbir").run({}, target=target)
    assert out["C"].tolist() == [5] * 4 + [6] * 4


def test_a_nested_group_that_waits_for_nothing_names_its_tile_and_the_finished_group() -> None:
    with fails(HBIRDeadlockError, "n.hbir:10: group 'row' (line 3) waits forever: its tile grid[0].row[0] "
               "(tile target.t[0][0]) spins in the loop at line 10", "(finished: 'late')"):  # fmt: skip
        hbir.parse(NESTED.replace("GO", "0"), "n.hbir").run({}, target="interp")


def test_a_deadlock_is_the_error_seen_even_when_its_groups_are_slow_to_stop(monkeypatch) -> None:
    # A machine too loaded for the groups to return within the join's bound: their arrays
    # are still in use, but what the user sees is the deadlock, not that they are.
    from hpvm.hbir import concurrent

    monkeypatch.setattr(concurrent, "ABORT_JOIN_S", 0.0)
    with pytest.raises(HBIRDeadlockError, match="waits forever"):
        hbir.parse(NESTED.replace("GO", "0"), "n.hbir").run({}, target="interp")
    # and the groups still stop: no thread is left spinning once the caller has moved on
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(t.name.startswith("hbir group") for t in threading.enumerate()):
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("hbir group")]
