"""The race detector on LLVM leaves (``llvm_native/instrument.py`` feeding ``races.py``).

LLVM leaves run through the JIT; with the detector on, ``interp`` runs an instrumented clone
whose loads, stores and atomics on the leaf's arrays are recorded into the same tables as
Python leaves' accesses. Race-free leaves (a vector add in LLVM form, HPVM-C's vector add
and histogram) are not reported; a shared plain update, a plain store against an atomic and
a read across a missing barrier are, with both instances, the array, the index and the
instructions (the ``.c`` line for HPVM-C); two atomics and a barrier-separated exchange are
not; nor is the plain load a compare-and-swap loop starts with. test_races.py's property, on
the same leaf exported to LLVM (barriers, a 2-D grid, atomics): a race is reported iff two
instances conflict in one barrier phase, the first one in the interpreter's order. (The
OmpSs-2 taskloop's ``sum += i``: tests/llvm/test_llvm_par_foreign.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import hpvm
import hpvm.backends.interp as interp
from hpvm import c, llvm
from hpvm.ir.bodies import LLVMBody as llvm_body

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "c"))
from hpvmc_helpers import EXAMPLES, line_of, needs_clang  # noqa: E402
from test_races import first_race, plans  # noqa: E402

from running import replicated_root, run_tracked  # noqa: E402

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@pytest.fixture
def touches(monkeypatch) -> list[int]:
    """The kinds of the element accesses LLVM leaves' recorders check, in order (so that a
    race-free run shows it was checked, not skipped)."""
    from hpvm.backends.interp.races import NativeLeafRecorder

    seen: list[int] = []
    touch = NativeLeafRecorder.touch

    def spy(self, addr: int, kind: int, view) -> None:  # type: ignore[no-untyped-def]
        seen.append(kind)
        touch(self, addr, kind, view)

    monkeypatch.setattr(NativeLeafRecorder, "touch", spy)
    return seen


DECLS = """
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.x(ptr)
declare i32 @llvm.hpvm.atomic.add(ptr, i32)
declare void @llvm.hpvm.barrier()
"""


def _program(leaf: str, arrays: int) -> str:
    """``leaf`` (``define {} @leaf(ptr %a, i64 %ab, ...)``, ``arrays`` arrays) under a root
    replicating it ``n`` times (the root's last parameter)."""
    params = ", ".join(f"ptr %p{k}, i64 %b{k}" for k in range(arrays))
    binds = "\n".join(
        f"  call void @llvm.hpvm.bind.input(ptr %w, i32 {k}, i32 {k}, i1 false)" for k in range(2 * arrays)
    )
    root = f"""
define {{}} @root({params}, i64 %n) {{
entry:
  %w = call ptr @llvm.hpvm.createNode1D(ptr @leaf, i64 %n)
{binds}
  ret {{}} undef
}}
"""
    return DECLS + leaf + root


def _run(text: str, *arrays: np.ndarray, n: int) -> None:
    """Launch ``text``'s root over ``arrays`` (as the bytes its ports are: indices in
    messages count bytes) and ``n`` instances."""
    root = llvm.from_hpvm_ir(text)
    args = [a.view(np.uint8) for a in arrays]
    for a in arrays:
        hpvm.track_memory(a)
    try:
        hpvm.wait(hpvm.launch(root, (*args, n), target="interp"))
        for a in arrays:
            hpvm.request_memory(a)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)


def _race(text: str, *arrays: np.ndarray, n: int) -> str:
    with pytest.raises(hpvm.DataRaceError) as info:
        _run(text, *arrays, n=n)
    return str(info.value)


VADD = """
define {} @leaf(ptr "in" %a, i64 %ab, ptr "in" %b, i64 %bb, ptr "in" "out" %c, i64 %cb) {
entry:
  %h = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %pa = getelementptr float, ptr %a, i64 %i
  %pb = getelementptr float, ptr %b, i64 %i
  %pc = getelementptr float, ptr %c, i64 %i
  %va = load float, ptr %pa, align 4
  %vb = load float, ptr %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr %pc, align 4
  ret {} zeroinitializer
}
"""


def test_a_race_free_vector_add_in_llvm_form_is_not_reported(touches: list[int]) -> None:
    a, b, out = np.arange(6, dtype=np.float32), np.full(6, 10, np.float32), np.zeros(6, np.float32)
    _run(_program(VADD, 3), a, b, out, n=6)
    np.testing.assert_array_equal(out, a + b)
    assert (
        touches
        == [0] * 8
        + [1] * 4
        + [0] * 8
        + [1] * 4
        + [0] * 8
        + [1] * 4
        + [0] * 8
        + [1] * 4
        + [0] * 8
        + [1] * 4
        + [0] * 8
        + [1] * 4
    )  # per instance: a's and b's 4 bytes read, c's written


def test_every_instance_adding_into_one_element_is_reported() -> None:
    # c[0] += a[i]: the vector add's store to element 0 in every instance
    text = _program(
        VADD.replace("%pc = getelementptr float, ptr %c, i64 %i", "%pc = getelementptr float, ptr %c, i64 0"),
        3,
    )
    message = _race(text, np.ones(4, np.float32), np.ones(4, np.float32), np.zeros(4, np.float32), n=4)
    assert message == (
        "node root/w[1] (leaf 'leaf', <llvm>:10) at `store float %s, ptr %pc, align 4`: data race: "
        "writes array 'c' (root argument 'p2') at index [0], which node root/w[0] (leaf 'leaf', "
        "<llvm>:10) at `store float %s, ptr %pc, align 4` wrote; the instances of node root/w run "
        "concurrently, and no hpvm.barrier() separates these accesses. Make each instance touch its own "
        "elements, update shared elements with hpvm.atomic_*, or separate the accesses with hpvm.barrier()"
    )


# Even instances access c[0] with ATOMIC, odd ones with OTHER (the same atomic or a plain store).
MIXED = """
define {} @leaf(ptr "in" "out" %c, i64 %cb) {
entry:
  %h = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %bit = and i64 %i, 1
  %odd = icmp ne i64 %bit, 0
  br i1 %odd, label %other, label %atomic
atomic:
  ATOMIC
  br label %done
other:
  OTHER
  br label %done
done:
  ret {} zeroinitializer
}
"""
# (each atomic spelling, and c[0] after 5 instances of it)
ATOMICS = [
    ("%old = atomicrmw add ptr %c, i32 1 seq_cst, align 4", 5),
    ("%old = call i32 @llvm.hpvm.atomic.add(ptr %c, i32 1)", 5),
    ("%old = cmpxchg ptr %c, i32 0, i32 9 seq_cst seq_cst, align 4", 9),
    ("store atomic i32 3, ptr %c release, align 4", 3),
    ("%old = load atomic i32, ptr %c acquire, align 4", 0),
]
SPELLINGS = ["atomicrmw", "hpvm.atomic", "cmpxchg", "store atomic", "load atomic"]


def _mixed(atomic: str, other: str) -> str:
    return _program(MIXED.replace("ATOMIC", atomic).replace("OTHER", other.replace("%old", "%o")), 1)


@pytest.mark.parametrize(("atomic", "after"), ATOMICS, ids=SPELLINGS)
def test_two_atomics_on_one_element_are_not_a_race(atomic: str, after: int, touches: list[int]) -> None:
    count = np.zeros(2, np.int32)
    _run(_mixed(atomic, atomic), count, n=5)
    assert count.tolist() == [after, 0]
    assert touches == [2] * 4 * 5  # c's 4 bytes, atomically, in each of the 5 instances


@pytest.mark.parametrize(("atomic", "after"), ATOMICS, ids=SPELLINGS)
def test_a_plain_store_against_an_atomic_is_a_race(atomic: str, after: int) -> None:
    message = _race(_mixed(atomic, "store i32 7, ptr %c, align 4"), np.zeros(2, np.int32), n=5)
    assert message.startswith(
        "node root/w[1] (leaf 'leaf', <llvm>:10) at `store i32 7, ptr %c, align 4`: data race: writes "
        f"array 'c' (root argument 'p0') at index [0], which node root/w[0] (leaf 'leaf', <llvm>:10) at "
        f"`{atomic}` atomically updated; "
    )
    assert message.endswith(
        "An atomic is ordered only with other atomics: update the element with hpvm.atomic_* in both "
        "places, or order the accesses"
    )


# A float atomic add as compilers write it: a plain load, then a compare-and-swap loop.
CAS_LOOP = """
define {} @leaf(ptr "in" "out" %c, i64 %cb) {
entry:
  %first = load i32, ptr %c, align 4
  br label %loop
loop:
  %seen = phi i32 [ %first, %entry ], [ %now, %loop ]
  %f = bitcast i32 %seen to float
  %g = fadd float %f, 1.5
  %new = bitcast float %g to i32
  %pair = cmpxchg ptr %c, i32 %seen, i32 %new seq_cst seq_cst, align 4
  %now = extractvalue { i32, i1 } %pair, 0
  %ok = extractvalue { i32, i1 } %pair, 1
  br i1 %ok, label %done, label %loop
done:
  ret {} zeroinitializer
}
"""


def test_the_load_a_compare_and_swap_loop_starts_with_is_part_of_the_atomic(touches: list[int]) -> None:
    c = np.zeros(1, np.float32)
    _run(_program(CAS_LOOP, 1), c, n=4)
    assert c.tolist() == [6.0]
    assert touches == [2] * 4 * 2 * 4  # per instance: the load and the cmpxchg, 4 bytes each
    # the same load feeding anything else is a plain read, racing with the others' cmpxchg
    racy = CAS_LOOP.replace("[ %first, %entry ]", "[ 0, %entry ]").replace(
        "%g = fadd float %f, 1.5",
        "%g0 = fadd float %f, 1.5\n  %fi = bitcast i32 %first to float\n  %g = fadd float %g0, %fi",
    )
    message = _race(_program(racy, 1), np.zeros(1, np.float32), n=4)
    assert "at `%first = load i32, ptr %c, align 4`: data race: reads array 'c'" in message


# Each instance writes buf[i], (a barrier), reads buf[(i + 1) % n] into out[i].
ROTATE = """
define {} @leaf(ptr "in" "out" %buf, i64 %bb, ptr "in" "out" %out, i64 %ob) {
entry:
  %h = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %n = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %h)
  %w = getelementptr i64, ptr %buf, i64 %i
  %v = mul i64 %i, 3
  store i64 %v, ptr %w, align 8
  BARRIER
  %j0 = add i64 %i, 1
  %j = urem i64 %j0, %n
  %r = getelementptr i64, ptr %buf, i64 %j
  %got = load i64, ptr %r, align 8
  %o = getelementptr i64, ptr %out, i64 %i
  store i64 %got, ptr %o, align 8
  ret {} zeroinitializer
}
"""


def test_a_barrier_orders_the_phases_of_an_llvm_leaf(touches: list[int]) -> None:
    buf, out = np.zeros(4, np.int64), np.zeros(4, np.int64)
    _run(_program(ROTATE.replace("BARRIER", "call void @llvm.hpvm.barrier()"), 2), buf, out, n=4)
    assert out.tolist() == [3, 6, 9, 0]
    # phase 1: each instance writes its buf[i]; phase 2: reads buf[i + 1], writes out[i] (in
    # whichever order of instances the clone's lowering runs a phase: coroutines instance by
    # instance, work-item loops statement by statement)
    assert touches[: 8 * 4] == [1] * 8 * 4
    assert sorted(touches[8 * 4 :]) == [0] * 8 * 4 + [1] * 8 * 4


def test_without_the_barrier_the_exchange_is_a_race() -> None:
    # (a barrier elsewhere keeps the leaf a coroutine leaf: its instances still run in lockstep)
    text = _program(
        ROTATE.replace("BARRIER", "").replace("ret {}", "call void @llvm.hpvm.barrier()\n  ret {}"), 2
    )
    message = _race(text, np.zeros(4, np.int64), np.zeros(4, np.int64), n=4)
    store, load = "`store i64 %v, ptr %w, align 8`", "`%got = load i64, ptr %r, align 8`"
    # (instance 1's store of buf[1] and instance 0's load of it: which of the two the
    # detector meets second is the order the clone's lowering runs them in)
    assert message.startswith(
        (
            f"node root/w[1] (leaf 'leaf', <llvm>:10) at {store}: data race: writes array 'buf' (root "
            f"argument 'p0') at index [8], which node root/w[0] (leaf 'leaf', <llvm>:10) at {load} read; ",
            f"node root/w[0] (leaf 'leaf', <llvm>:10) at {load}: data race: reads array 'buf' (root "
            f"argument 'p0') at index [8], which node root/w[1] (leaf 'leaf', <llvm>:10) at {store} wrote; ",
        )
    ), message
    assert "the instances of node root/w run concurrently" in message


def test_the_detector_off_runs_the_plain_clone(touches: list[int]) -> None:
    text = _mixed(ATOMICS[0][0], "store i32 7, ptr %c, align 4")
    previous = interp.configure(races=False)
    try:
        count = np.zeros(2, np.int32)
        _run(text, count, n=5)
    finally:
        interp.configure(**previous)
    assert count.tolist() == [8, 0]  # 7 stored by instance 3, then instance 4's atomic add
    assert touches == []


# A single-instance leaf under a replicated internal node: its parent's instances race.
NESTED = """
declare ptr @llvm.hpvm.createNode(ptr)
define {} @leaf(ptr "in" "out" %c, i64 %cb) {
entry:
  store i32 7, ptr %c, align 4
  ret {} zeroinitializer
}
define {} @mid(ptr %p0, i64 %b0) {
entry:
  %w = call ptr @llvm.hpvm.createNode(ptr @leaf)
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  ret {} undef
}
define {} @root(ptr %p0, i64 %b0, i64 %n) {
entry:
  %w = call ptr @llvm.hpvm.createNode1D(ptr @mid, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


def test_instances_of_a_replicated_parent_race_through_an_llvm_leaf(touches: list[int]) -> None:
    _run(DECLS + NESTED, np.zeros(2, np.int32), n=1)  # one instance of everything: nothing recorded
    assert touches == []
    message = _race(DECLS + NESTED, np.zeros(2, np.int32), n=3)
    assert touches == [1] * 5  # parent instance 0 stores 4 bytes; 1 races at its first byte
    assert message == (
        "node root/w[1]/w (leaf 'leaf', <llvm>:11) at `store i32 7, ptr %c, align 4`: data race: writes "
        "array 'c' (root argument 'p0') at index [0], which node root/w[0]/w (leaf 'leaf', <llvm>:11) at "
        "`store i32 7, ptr %c, align 4` wrote; they are in different instances of node root/w, which run "
        "concurrently (hpvm.barrier() orders only the instances of one leaf within one parent instance). "
        "Make each instance of 'w' touch its own elements, or update shared elements with hpvm.atomic_*"
    )


# -- HPVM-C ---------------------------------------------------------------------------------

RACY_C = """#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
typedef struct __attribute__((__packed__)) {
  int *a; size_t bytes_a; int *sum; size_t bytes_sum; long n;
} RootIn;
void add(int *a, size_t bytes_a, int *sum, size_t bytes_sum) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, sum, 1, sum);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  int v = a[i];
  sum[0] += v;  // @race
  __hpvm__return(0);
}
void root(int *a, size_t bytes_a, int *sum, size_t bytes_sum, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, sum, 1, sum);
  void *node = __hpvm__createNodeND(1, add, n);
  __hpvm__bindIn(node, 0, 0, 0);
  __hpvm__bindIn(node, 1, 1, 0);
  __hpvm__bindIn(node, 2, 2, 0);
  __hpvm__bindIn(node, 3, 3, 0);
}
int main(void) { return 0; }
"""


@needs_clang
@pytest.mark.parametrize(("example", "args"), [("vector_add.c", ["64"]), ("histogram.c", [])])
def test_race_free_hpvm_c_programs_are_not_reported(
    example: str, args: list[str], capfd, touches: list[int]
) -> None:
    program = c.compile(EXAMPLES / example)
    assert program.run(args, target="interp") == 0
    assert " 0 wrong" in capfd.readouterr().out
    assert touches  # checked, and found race-free


@needs_clang
def test_an_hpvm_c_race_names_the_c_line(tmp_path: Path) -> None:
    path = tmp_path / "racy.c"
    path.write_text(RACY_C)
    (root,) = c.compile(path).roots
    a, total = np.arange(1, 5, dtype=np.int32), np.zeros(1, np.int32)
    for array in (a, total):
        hpvm.track_memory(array)
    try:
        with pytest.raises(hpvm.DataRaceError) as info:
            hpvm.wait(hpvm.launch(root, (a.view(np.uint8), total.view(np.uint8), 4), target="interp"))
    finally:
        for array in (a, total):
            hpvm.untrack_memory(array)
    line = line_of(RACY_C, "race")
    message = str(info.value)
    assert message.startswith(f"node root/node[1] (leaf 'add', {path}:{line}): data race: ")
    assert (
        f"array 'sum' (root argument 'sum') at index [0], which node root/node[0] (leaf 'add', {path}:{line}) "
        in message
    )


def test_a_leaf_the_instrumentation_breaks_is_a_compile_error_saying_so(monkeypatch) -> None:
    from hpvm.backends.llvm_native import instrument

    monkeypatch.setattr(instrument, "_CACHE", {})
    monkeypatch.setattr(
        instrument, "_instrument", lambda fn, module: instrument.Instrumented(llvm_body("broken", fn), ())
    )
    with pytest.raises(hpvm.CompileError) as info:
        _run(_program(VADD, 3), *(np.zeros(4, np.float32) for _ in range(3)), n=4)
    message = str(info.value)
    assert message.startswith(
        "leaf 'leaf' (<llvm>:10): interp's race detector could not instrument its LLVM to record its "
        "accesses (its LLVM module is not valid LLVM IR: "
    )
    assert message.endswith("run it with the detector off: hpvm.backends.interp.configure(races=False)")


# -- the definition, as a property (test_races.py's, on the same leaf in LLVM form) -----------


@hpvm.leaf(ins=("plan", "data", "seen"), outs=("data", "seen"))
def planned_llvm(plan: hpvm.i64[:, :, :, :], data: hpvm.i64[:], seen: hpvm.i64[:]):
    node = hpvm.get_node()
    flat = hpvm.get_node_instance_id_x(node) * hpvm.get_num_node_instances_y(node)
    flat += hpvm.get_node_instance_id_y(node)
    acc = 0
    for phase in range(plan.shape[1]):
        for k in range(plan.shape[2]):
            e = plan[flat, phase, k, 0]
            kind = plan[flat, phase, k, 1]
            if kind == 0:
                acc = acc + data[e]
            elif kind == 1:
                data[e] = flat
            else:
                hpvm.atomic_add(data, e, 1)
        hpvm.barrier()
    seen[flat] = acc  # (so that LLVM keeps the reads)


_PLANNED: list = []


def _planned_root():  # type: ignore[no-untyped-def]
    """``planned_llvm`` under a 2-D replicated root, exported to LLVM and imported back (once)."""
    if not _PLANNED:
        root = llvm.from_hpvm_ir(llvm.to_hpvm_ir(replicated_root(planned_llvm, 2)))
        _PLANNED.append(root)
    return _PLANNED[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plans())
def test_an_llvm_leaf_races_iff_two_instances_conflict_in_one_phase(case) -> None:  # type: ignore[no-untyped-def]
    nx, ny, plan = case
    expected = first_race(plan, ny)
    root = _planned_root()
    data, seen = np.zeros(9, np.int64), np.zeros(nx * ny, np.int64)
    args = (plan, data, seen, nx, ny)
    if expected is None:
        run_tracked(root, args, "interp")
        return
    (x, y), e, kind, (ox, oy), old_kind = expected
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(root, args, "interp")
    verb = ("reads", "writes", "atomically updates")[kind]
    past = ("read", "wrote", "atomically updated")[old_kind]
    message = str(info.value)
    assert message.startswith(f"node root_of_planned_llvm/planned_llvm[{x}, {y}] (leaf 'planned_llvm', ")
    assert f"data race: {verb} array 'data' (root argument 'data') at index [{e}], which " in message
    assert f"which node root_of_planned_llvm/planned_llvm[{ox}, {oy}] (leaf 'planned_llvm', " in message
    assert f" {past}; " in message
