"""Sparse matrix-vector products in the JDS format, written as parboil's spmv is for HPVM:
two programs.

``programs/spmv_jds`` (three files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, the root's argument struct in include/spmv.h; a DEVICE leaf in the CUDA
convention with indirect reads and an indirect, permuted write, in a wrapper replicated
BLOCK times, itself replicated over the groups). The host builds the matrix, converts it
to JDS and checks the product against CSR itself; the tests run it on cpu and interp, at
sizes that are and are not multiples of a group, and with no nonzeros at all.

``programs/spmv`` (five files: the graph in spmv_graph.cpp, the packed ``RootIn`` in
spmv.h, the host's CSR matrix and its JDS form in jds.h / jds.cpp, the driver in main.cpp
with ``std::vector`` and ``<chrono>``) runs as parboil's driver does: the matrix built and
tracked once, then one ``__hpvm__launch`` + ``__hpvm__wait`` per iteration (50 by default)
with the same argument struct over the same tracked memory. Each iteration's x is the
last y scaled to a largest element of 1 (the power method), written into x's tracked
memory after ``llvm_hpvm_request_mem``, so that every launch computes something new; the
host checks each y against its own CSR product, and the tests check the JDS arrays the
host built (exactly) and every iteration's largest element and the last y (within float
rounding) against the same computation in NumPy, from the same matrix (the host's LCG).

Replays. The leaf walks its warp's diagonals in a loop whose bound it reads from
``sh_zcnt``: its run is not bounded by what the host sees (``ir/llvmbounded.py``: a loop
that leaves on a value read from memory), so no launch runs quick and none is recorded — every one of the
program's launches takes the full path (a worker's). With the root's verdict overridden
(its loop does run at most ``max_row_length`` times), launches 3 on are replayed, and a
record replayed ``plan.HOT_REPLAYS`` times gets native calls of the root's compiled
function (the struct's ``int dim`` is read as the ``i32`` port's ``np.int32``,
``c/argstruct.py``: read as a Python ``int``, which the port converted on every launch, it
kept ``CPUBackend.direct`` from giving a direct call, and the record replayed through its
runner, with no native call).

A forgotten edge guard (the leaf built with ``-DSPMV_FORGET_GUARD``): the last group's
instances past ``dim`` would read ``perm[ix]`` past its end, at the global index ``ix = gx
* gridx + lx``, which the bounds pre-check reads (``affine.GLOBAL``): every target,
unchecked ``cpu`` included, refuses the launch before the node runs, naming the node, the
leaf, spmv_graph.cpp's line and ``perm``. (Before it did, ``interp`` and checked ``cpu``
named the read as an instance made it — and ``interp`` with race detection first named the
data race the read's stand-in value (0) then caused in ``dst_vector``, until the race
detector was made to yield to the leaf's own error, ``llvm_native/run.py``.)"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import (
    assert_refused_at_the_global_index,
    group_hierarchy,
    line_of,
    named_file,
    needs_clang,
    needs_llvm_leaves,
    run_apart,
)

from hpvm import c
from hpvm.backends.replays import ReplayRecords
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import fastpath, plan, quick
from running import every_run_quick, spy_direct_calls

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "spmv_jds"  # (fixed paths: zig's cache finds them)


@pytest.fixture(scope="module")
def program():
    return c.compile([FOLDER / "main.cc", FOLDER / "kernel.cc"], include_dirs=[str(FOLDER / "include")])


def test_the_graph_is_read_as_parboil_writes_it(program):
    (root,) = program.roots
    (wrapper,) = root.graph.nodes
    assert wrapper.function.name == "spmvLvl1"
    (leaf,) = wrapper.function.graph.nodes
    # each (pointer, bytes) pair is one array port; dim is a scalar
    names = [p.name for p in leaf.function.params]
    assert leaf.function.name == "spmv_jds"
    assert names == [
        "dst_vector",
        "d_data",
        "d_index",
        "d_perm",
        "x_vec",
        "dim",
        "jds_ptr_int",
        "sh_zcnt_int",
    ]
    assert [p.name for p in root.params][-1] == "dim_X1"


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (["1000", "12"], "cpu"),  # 16 groups, rows not a multiple of a warp
        (["64", "5"], "cpu"),  # one group exactly
        (["5", "0"], "cpu"),  # no nonzero: one empty diagonal list
        (["77", "3"], "interp"),
    ],
)
def test_the_program_runs_and_checks_itself(program, capfd, argv, target):
    assert program.run(argv, target=target) == 0
    out = capfd.readouterr().out
    assert out.startswith(f"spmv {argv[0]} rows, ") and out.endswith(": 0 wrong\n")


# --- programs/spmv: parboil's driver, launched once per iteration -------------------------

SPMV = Path(__file__).parent / "programs" / "spmv"  # (fixed paths: zig's cache finds them)
SPMV_SOURCES = [SPMV / "main.cpp", SPMV / "jds.cpp", SPMV / "spmv_graph.cpp"]
GRAPH = (SPMV / "spmv_graph.cpp").read_text()
WARP, GROUP, SEED = 32, 64, 1517


@pytest.fixture(scope="module")
def spmv():
    return c.compile(SPMV_SOURCES)


# --- the reference: the host's matrix, its JDS form and the power method in NumPy ---------


class Jds:
    """The program's matrix (``random_csr``'s LCG) in CSR and JDS form (``to_jds``)."""

    def __init__(self, rows: int, max_row_length: int):
        seed = SEED

        def draw() -> int:
            nonlocal seed
            seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
            return seed >> 16

        self.rows = rows
        self.csr: list[list[tuple[int, np.float32]]] = []
        for _ in range(rows):
            row = []
            for _ in range(draw() % (max_row_length + 1)):
                column = draw() % rows
                row.append((column, np.float32(1 + draw() % 64) / np.float32(64)))
            self.csr.append(row)
        lengths = [len(row) for row in self.csr]
        self.perm = sorted(range(rows), key=lambda r: -lengths[r])  # (stable: ties in row order)
        warps = (rows + WARP - 1) // WARP
        self.sh_zcnt = [lengths[self.perm[w * WARP]] for w in range(warps)]
        self.diagonals = self.sh_zcnt[0]
        data: list[np.float32] = []
        indices: list[int] = []
        self.jds_ptr = []
        for k in range(self.diagonals):
            walking = sum(1 for count in self.sh_zcnt if count > k)
            self.jds_ptr.append(len(data))
            for i in range(min(walking * WARP, rows)):
                row = self.csr[self.perm[i]]
                column, value = row[k] if k < len(row) else (0, np.float32(0))
                data.append(value)
                indices.append(column)
        self.nonzeros = sum(lengths)
        self.data = np.array(data, dtype=np.float32)
        self.indices = np.array(indices, dtype=np.int64)
        if not self.jds_ptr:  # (no nonzeros: the host keeps one slot to track)
            self.jds_ptr = [0]

    def product(self, x: np.ndarray) -> np.ndarray:
        """y = A * x as the leaf computes it: each sorted row's sum in float32, diagonal
        after diagonal, written to the row it came from."""
        positions = np.arange(self.rows)
        bounds = np.array(self.sh_zcnt)[positions // WARP]
        sums = np.zeros(self.rows, dtype=np.float32)
        for k in range(self.diagonals):
            walking = positions[bounds > k]
            slots = self.jds_ptr[k] + walking
            sums[walking] += self.data[slots] * x[self.indices[slots]]
        y = np.empty(self.rows, dtype=np.float32)
        y[self.perm] = sums
        return y

    def power_method(self, iterations: int) -> tuple[list[np.float32], np.ndarray]:
        """Each iteration's largest element of y, and the last y (main.cpp's loop)."""
        x = np.ones(self.rows, dtype=np.float32)
        lambdas = []
        for _ in range(iterations):
            y = self.product(x)
            top = max(np.float32(0), y.max())
            lambdas.append(top)
            x = y / (top if top > 0 else np.float32(1))
        return lambdas, y


def parse(out: str) -> dict:
    """The program's output, line by line (its format is checked as it is read)."""
    lines = out.splitlines()
    head = re.fullmatch(r"spmv (\d+) rows, (\d+) nonzeros, (\d+) diagonals", lines[0])
    assert head is not None, out
    words = {}
    for line, name in zip(lines[1:4], ("sh_zcnt", "jds_ptr", "perm")):
        assert line.startswith(f"{name}:"), out
        words[name] = [int(w) for w in line.split()[1:]]
    iterations = []
    for line in lines[4:-3]:
        it = re.fullmatch(r"iteration (\d+): lambda (\S+), (\d+) wrong", line)
        assert it is not None and int(it[1]) == len(iterations), line
        iterations.append((np.float32(it[2]), int(it[3])))
    assert lines[-3].startswith("y:"), out
    tail = re.fullmatch(r"(\d+) launches: (\d+) wrong", lines[-2])
    assert tail is not None and re.fullmatch(r"time: [\d.]+ ms", lines[-1]), out
    assert int(tail[1]) == len(iterations)
    return {
        "rows": int(head[1]),
        "nonzeros": int(head[2]),
        "diagonals": int(head[3]),
        **words,
        "lambdas": [v for v, _ in iterations],
        "wrong": [w for _, w in iterations] + [int(tail[2])],
        "y": np.array([np.float32(w) for w in lines[-3].split()[1:]], dtype=np.float32),
    }


def run_spmv(program, capfd, rows: int, max_row_length: int, iterations: int, target: str) -> dict:
    """Run the program; check its output against the reference; what it printed."""
    assert program.run([str(rows), str(max_row_length), str(iterations)], target=target) == 0
    got = parse(capfd.readouterr().out)
    want = Jds(rows, max_row_length)
    assert (got["rows"], got["nonzeros"], got["diagonals"]) == (rows, want.nonzeros, want.diagonals)
    # the host's JDS form, exactly
    assert (got["sh_zcnt"], got["jds_ptr"], got["perm"]) == (want.sh_zcnt, want.jds_ptr, want.perm)
    assert set(got["wrong"]) == {0}  # (the host's own check of every launch)
    lambdas, y = want.power_method(iterations)
    # (float32 sums in the leaf's order; clang may fuse a multiply-add the reference rounds)
    np.testing.assert_allclose(got["lambdas"], lambdas, rtol=1e-4)
    np.testing.assert_allclose(got["y"], y, rtol=1e-4, atol=1e-6)
    return got


# --- tests --------------------------------------------------------------------------------


def test_the_parboil_driver_graph_is_read_as_written(spmv):
    (root,) = spmv.roots
    _, row = group_hierarchy(root, ("spmvRoot", "spmvLvl1", "spmv_jds"))
    # each (pointer, bytes) pair is one array port; dim the one scalar, an int
    assert [(p.name, str(p.type)) for p in row.function.params] == [
        ("dst_vector", "u8[:]"),
        ("data", "u8[:]"),
        ("indices", "u8[:]"),
        ("perm", "u8[:]"),
        ("x_vec", "u8[:]"),
        ("dim", "i32"),
        ("jds_ptr", "u8[:]"),
        ("sh_zcnt", "u8[:]"),
    ]
    ins = ("dst_vector", "data", "indices", "perm", "x_vec", "jds_ptr", "sh_zcnt")
    assert (row.function.ins, row.function.outs) == (ins, ("dst_vector",))


@pytest.mark.parametrize(
    ("rows", "max_row_length", "iterations"),
    [
        (100, 6, 50),  # parboil's 50 iterations; the last group and warp part full
        (64, 8, 5),  # one group exactly, two whole warps
        (1000, 12, 8),  # 16 groups, 32 warps
        (33, 3, 4),  # one row past a warp
        (1, 0, 3),  # no nonzero: y = 0, x kept
    ],
)
def test_every_iteration_is_the_numpy_product_and_takes_the_full_path(
    spmv, full_path, capfd, rows, max_row_length, iterations
):
    run_spmv(spmv, capfd, rows, max_row_length, iterations, "cpu")
    # the leaf's loop reads its bound from sh_zcnt: never quick, never recorded, never replayed
    assert "leaf 'spmv_jds'" in quick.bounded_graph(spmv.roots[0])
    assert "has a loop" in quick.bounded_graph(spmv.roots[0])
    assert full_path[0] == iterations


def test_on_interp_the_iterations_are_the_same(spmv, capfd):
    run_spmv(spmv, capfd, 77, 5, 3, "interp")


def test_checked_mode_changes_no_product(spmv, checked, capfd):
    run_spmv(spmv, capfd, 150, 9, 4, "cpu")


# --- native calls: the root's compiled function called past Numba's dispatcher ---------


@pytest.fixture
def hot_after_two(monkeypatch):
    """New plans get the compiled replay, and a record its native calls after two replays
    (``tests/runtime/test_native_call.py``'s fixture); every record the runtimes drop is
    kept (the host's first ``llvm_hpvm_untrack_mem`` drops them, ``__hpvm__cleanup`` after
    it), and each record made hot is settled on all threads and spied on: its dispatcher
    calls count themselves in ``calls``, which a native call leaves alone."""
    monkeypatch.setattr(fastpath, "ENABLED", True)
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    dropped: list = []
    drop = ReplayRecords._drop_replays

    def keeping(self):
        dropped.extend(self.replays.values())
        drop(self)

    monkeypatch.setattr(ReplayRecords, "_drop_replays", keeping)
    calls: list[str] = []
    hot = fastpath.hot

    def settled_and_spied(record, args):
        runs = record.runs  # (all threads for good: a loaded machine does not pick one)
        runs.probes = quick.ONE_THREAD_PROBES
        runs.plain, runs.one, runs.every = True, 1.0, 1e-9
        hot(record, args)
        spy_direct_calls(record, calls)

    monkeypatch.setattr(fastpath, "hot", settled_and_spied)
    return dropped, calls


def test_a_hot_record_of_the_llvm_leaf_gets_native_calls(spmv, monkeypatch, hot_after_two, full_path, capfd):
    """The root declared bounded (its loop runs at most max_row_length times; the static
    check refuses a loop whose bound is read from memory): launch 1 is timed, 2 recorded, 3 and 4 replayed — the second
    replay makes the record hot —, and the rest are native calls, with the same products."""
    program = spmv
    (root,) = program.roots
    every_run_quick(monkeypatch, root)
    monkeypatch.setitem(quick._BOUNDED, root, None)
    dropped, calls = hot_after_two
    run_spmv(program, capfd, 100, 6, 50, "cpu")
    assert full_path[0] == 2
    (record,) = {id(r): r for r in dropped if r.root is root}.values()
    if not fastpath.built():  # (the Python replay makes no native calls)
        pytest.skip(f"no native calls without the compiled replay: {fastpath.REASON}")
    assert record.hits >= plan.HOT_REPLAYS
    assert record.entry is not None, "no direct call: the record replays through its runner"
    assert record.native is not None
    assert calls == []  # (launches 5 to 50: every one a native call)


# --- a forgotten guard ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unguarded():
    """What the program built with ``-DSPMV_FORGET_GUARD`` raises, 100 rows (two groups: the
    second's instances 36 to 63 are rows 100 to 127), on ``interp`` without race detection,
    on ``interp`` with it (its default), on ``cpu`` checked and on ``cpu`` unchecked — in a
    process of its own, as a write the checks missed would corrupt it: each one's exception
    class and message."""
    script = (
        "import sys, hpvm, hpvm.backends.cpu as cpu, hpvm.backends.interp as interp\n"
        "from hpvm import c\n"
        "program = c.compile(sys.argv[1:], defines=['SPMV_FORGET_GUARD'])\n"
        "for name, target, races, checked in [('interp', 'interp', False, False),\n"
        "        ('interp with races', 'interp', True, False), ('cpu checked', 'cpu', True, True),\n"
        "        ('cpu', 'cpu', True, False)]:\n"
        "    interp.configure(races=races)\n"
        "    cpu.configure(checked=checked)\n"
        "    try:\n"
        "        print(name, 'returned', program.run(['100', '6', '2'], target=target))\n"
        "    except hpvm.HPVMError as e:\n"
        "        print(name, 'raised', type(e).__name__ + ':', str(e).replace(chr(10), ' '))\n"
    )
    out = run_apart(script, *map(str, SPMV_SOURCES), timeout=300)
    return dict(re.findall(r"^(.+?) raised (\w+: .*)$", out, flags=re.M))


def test_a_forgotten_guard_is_refused_before_the_leaf_runs_naming_the_leaf_its_line_and_perm(unguarded):
    """Every instance reads ``perm[ix]`` at the global index ``ix = gx * gridx + lx`` (the
    CUDA convention's ``blockIdx.x * blockDim.x + threadIdx.x``): the pre-check sees that 2
    groups of 64 reach byte 511 of the 400-byte ``perm`` and refuses the launch before the
    node runs, on every target — unchecked ``cpu`` included, which read past ``perm`` and
    wrote where the stray value pointed until the pre-check read the global index (before,
    ``interp`` and checked ``cpu`` named the read as the instance made it). The race the
    read's stand-in value would have caused on ``interp`` never happens."""
    store = line_of(GRAPH, "store")
    graph = SPMV_SOURCES[2]
    assert_refused_at_the_global_index(
        unguarded,
        rf"'rowNode' \({named_file(graph)}:\d+\)",
        "spmv_jds",
        "perm",
        "spmvLvl1",
        graph,
        str(store),
    )


def test_bad_command_lines_of_the_driver_are_refused(spmv, capfd):
    for argv in ([], ["0"], ["5", "-1"], ["5", "4", "0"], ["1", "2", "3", "4"]):
        assert spmv.run(argv, target="cpu") == 1
        assert capfd.readouterr().err.startswith("Usage: spmv rows [max_row_length [iterations]]\n")
