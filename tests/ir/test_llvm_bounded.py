"""``ir/llvmbounded.py``: whether an LLVM leaf's run is bounded (the runtime runs only such
leaves on the launching thread, ``runtime/quick.py``), on hand-written LLVM. It must never
accept a loop whose number of turns depends on what memory holds (however it is written: a
back edge, a self loop, a loop entered from a branch, a switch, a counter stepped on a test
of an element, an inner loop bounded by an element), a call of anything but an LLVM
intrinsic or hpvm's queries and atomics, or code it cannot read; and it should accept
straight-line code, branches, and loops whose exits test what the host determines (scalars,
instance ids, addresses, constants), with branches on memory inside a turn."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.ir.bodies import LLVMBody
from hpvm.ir.llvmbounded import llvm_fixed_work, llvm_unbounded_reason

DECLARES = """
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.x(ptr)
declare i32 @llvm.hpvm.atomic.add(ptr, i32)
declare void @llvm.hpvm.barrier()
declare ptr @llvm.hpvm.malloc(i64)
declare float @llvm.fmuladd.f32(float, float, float)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @helper(ptr)
declare float @cosf(float)
declare double @sqrt(double)
"""


def _reason(body: str) -> str | None:
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{body}\n}}\n"
    return llvm_unbounded_reason(LLVMBody(text, "f"), "leaf 'f'")


STRAIGHT = """entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %c = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %h)
  %p = getelementptr inbounds float, ptr %a, i64 %x
  %v = load float, ptr %p
  %w = call float @llvm.fmuladd.f32(float %v, float 2.0, float 1.0)
  store float %w, ptr %p
  %old = call i32 @llvm.hpvm.atomic.add(ptr %a, i32 1)
  call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %p, i64 16, i1 false)
  ret {} zeroinitializer"""

DIAMOND = """entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %in = icmp slt i64 %x, %n
  br i1 %in, label %body, label %done
body:
  %p = getelementptr inbounds float, ptr %a, i64 %x
  store float 1.0, ptr %p
  br label %done
done:
  ret {} zeroinitializer"""

# A guard written so that the later block comes first in the text: still acyclic.
BACKWARD_ACYCLIC = """entry:
  %c = icmp slt i64 %n, 4
  br i1 %c, label %last, label %first
last:
  ret {} zeroinitializer
first:
  store float 1.0, ptr %a
  br label %last"""

LOOP = """entry:
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %head ]
  %p = getelementptr inbounds float, ptr %a, i64 %k
  store float 0.0, ptr %p
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

# A loop whose back edge goes forward in the text (blocks out of order); its test reads %n.
LOOP_OUT_OF_ORDER = """entry:
  br label %second
first:
  %more = icmp slt i64 %n, 3
  br i1 %more, label %second, label %done
second:
  store float 0.0, ptr %a
  br label %first
done:
  ret {} zeroinitializer"""

# Clang's -O1 form of `for (y..) for (x < n) if (a[x] > 0) a[x] = 0;` over a pointer: nested
# loops on the instance id and %n, a branch on an element inside the inner turn, a pointer
# induction variable tested against an end address, a memcpy of %n bytes.
NESTED = """entry:
  %h = call ptr @llvm.hpvm.getNode()
  %id = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %end = getelementptr inbounds float, ptr %a, i64 %n
  br label %outer
outer:
  %y = phi i64 [ 0, %entry ], [ %y1, %outer.latch ]
  br label %inner
inner:
  %p = phi ptr [ %a, %outer ], [ %p1, %inner.latch ]
  %v = load float, ptr %p
  %pos = fcmp ogt float %v, 0.0
  br i1 %pos, label %clear, label %inner.latch
clear:
  store float 0.0, ptr %p
  br label %inner.latch
inner.latch:
  %p1 = getelementptr inbounds float, ptr %p, i64 1
  %again = icmp ne ptr %p1, %end
  br i1 %again, label %inner, label %outer.latch
outer.latch:
  %y1 = add nuw i64 %y, 1
  %rows = icmp ult i64 %y1, %id
  br i1 %rows, label %outer, label %done
done:
  call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %fp, i64 %n, i1 false)
  ret {} zeroinitializer"""

# A value that only a branch on an element chooses, merged before the loop: its bound.
MERGED_BOUND = """entry:
  %v = load i64, ptr %a
  %big = icmp sgt i64 %v, 0
  br i1 %big, label %twice, label %once
twice:
  %n2 = shl i64 %n, 1
  br label %head
once:
  br label %head
head:
  %k = phi i64 [ 0, %twice ], [ 0, %once ], [ %k1, %head ]
  %bound = phi i64 [ %n2, %twice ], [ %n, %once ], [ %bound, %head ]
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %bound
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

SPIN = """entry:
  br label %wait
wait:
  %v = load volatile i32, ptr %a
  %z = icmp eq i32 %v, 0
  br i1 %z, label %wait, label %done
done:
  ret {} zeroinitializer"""

SWITCH_LOOP = """entry:
  br label %s
s:
  %v = load i32, ptr %a
  switch i32 %v, label %done [ i32 1, label %s ]
done:
  ret {} zeroinitializer"""

# `for (k = 0; k < a[0]; k++)`: the bound is an element.
LOADED_BOUND = """entry:
  %m = load i64, ptr %a
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %head ]
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %m
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

# `while (k < n) k += a[k] > 0 ? 1 : 2;` written with branches: the test reads %n, but the
# step is chosen by an element (the phi's two different values on paths the branch picks).
STEP_BY_ELEMENT = """entry:
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %kk, %back ]
  %p = getelementptr inbounds i64, ptr %a, i64 %k
  %v = load i64, ptr %p
  %pos = icmp sgt i64 %v, 0
  br i1 %pos, label %one, label %two
one:
  %k1 = add i64 %k, 1
  br label %test
two:
  %k2 = add i64 %k, 2
  br label %test
test:
  %kk = phi i64 [ %k1, %one ], [ %k2, %two ]
  %more = icmp slt i64 %kk, %n
  br i1 %more, label %back, label %done
back:
  br label %head
done:
  ret {} zeroinitializer"""

# `for (k < n) { if (a[k] == 7) break; }`: an exit taken on an element.
BREAK_ON_ELEMENT = """entry:
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %latch ]
  %p = getelementptr inbounds i64, ptr %a, i64 %k
  %v = load i64, ptr %p
  %seven = icmp eq i64 %v, 7
  br i1 %seven, label %done, label %latch
latch:
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

# `while (1) { if (a[0]) { if (k >= n) break; k++; } }`: the exit's test reads only k and n,
# but a turn that skips it (a[0] == 0) never leaves.
EXIT_SKIPPED_BY_ELEMENT = """entry:
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k, %head ], [ %k1, %step ]
  %v = load i64, ptr %a
  %set = icmp ne i64 %v, 0
  br i1 %set, label %test, label %head
test:
  %past = icmp sge i64 %k, %n
  br i1 %past, label %done, label %step
step:
  %k1 = add i64 %k, 1
  br label %head
done:
  ret {} zeroinitializer"""

# An inner loop bounded by an element inside an outer loop bounded by %n.
INNER_LOADED = """entry:
  br label %outer
outer:
  %y = phi i64 [ 0, %entry ], [ %y1, %outer.latch ]
  %p = getelementptr inbounds i64, ptr %a, i64 %y
  %m = load i64, ptr %p
  br label %inner
inner:
  %x = phi i64 [ 0, %outer ], [ %x1, %inner ]
  %x1 = add i64 %x, 1
  %more = icmp slt i64 %x1, %m
  br i1 %more, label %inner, label %outer.latch
outer.latch:
  %y1 = add i64 %y, 1
  %rows = icmp slt i64 %y1, %n
  br i1 %rows, label %outer, label %done
done:
  ret {} zeroinitializer"""

# A counter kept in memory (unoptimized code): its test reads a load, which SROA makes a phi.
ALLOCA_COUNTER = """entry:
  %slot = alloca i64
  store i64 0, ptr %slot
  br label %head
head:
  %k = load i64, ptr %slot
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %slot
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

# The same counter, its slot's address stored into the array: it escapes, SROA leaves it in
# memory (another instance could write it), and its test still reads a load.
ESCAPED_COUNTER = ALLOCA_COUNTER.replace(
    "store i64 0, ptr %slot\n", "store i64 0, ptr %slot\n  store ptr %slot, ptr %a\n"
)
assert ESCAPED_COUNTER != ALLOCA_COUNTER

# A bound read from the array into a slot, as unoptimized code keeps a local: promoted, the
# slot's load is the array's load again.
SLOT_OF_AN_ELEMENT = """entry:
  %bound = alloca i64
  %slot = alloca i64
  %m = load i64, ptr %a
  store i64 %m, ptr %bound
  store i64 0, ptr %slot
  br label %head
head:
  %k = load i64, ptr %slot
  %k1 = add i64 %k, 1
  store i64 %k1, ptr %slot
  %b = load i64, ptr %bound
  %more = icmp slt i64 %k1, %b
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

FOREVER = """entry:
  br label %self
self:
  store float 0.0, ptr %a
  br label %self"""

# An atomic's old value as the loop's bound.
ATOMIC_BOUND = """entry:
  %m = call i32 @llvm.hpvm.atomic.add(ptr %a, i32 1)
  %m64 = sext i32 %m to i64
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %head ]
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %m64
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""


@pytest.mark.parametrize(
    "body",
    [STRAIGHT, DIAMOND, BACKWARD_ACYCLIC, LOOP, LOOP_OUT_OF_ORDER, NESTED, ALLOCA_COUNTER],
    ids=["straight", "diamond", "backward", "loop", "out-of-order", "nested", "alloca"],
)
def test_straight_line_code_branches_and_loops_the_host_bounds_are_bounded(body):
    assert _reason(body) is None


SIZED_MEMCPY = """entry:
  call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %fp, i64 %n, i1 false)
  ret {} zeroinitializer"""


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        (STRAIGHT, True),
        (DIAMOND, True),
        (BACKWARD_ACYCLIC, True),
        (LOOP, False),
        (NESTED, False),
        (SIZED_MEMCPY, False),
    ],
    ids=["straight", "diamond", "backward", "loop", "nested", "sized-memcpy"],
)
def test_fixed_work_is_straight_line_code_without_a_memory_call_of_a_scalar_length(body, fixed):
    """``llvm_fixed_work`` (``quick.work_params``): the scalars' values cannot change how
    much such a leaf does, so they stay out of its run key — a loop's bound or a copy's
    length would."""
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{body}\n}}\n"
    assert llvm_fixed_work(LLVMBody(text, "f")) is fixed


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (SPIN, "has a loop that leaves on a value read from memory (block 'wait')"),
        (SWITCH_LOOP, "has a loop that leaves on a value read from memory (block 's')"),
        (LOADED_BOUND, "has a loop that leaves on a value read from memory (block 'head')"),
        (MERGED_BOUND, "has a loop that leaves on a value read from memory (block 'head')"),
        (STEP_BY_ELEMENT, "has a loop that leaves on a value read from memory (block 'test')"),
        (BREAK_ON_ELEMENT, "has a loop that leaves on a value read from memory (block 'head')"),
        (EXIT_SKIPPED_BY_ELEMENT, "has a loop that leaves on a value read from memory (block 'test')"),
        (INNER_LOADED, "has a loop that leaves on a value read from memory (block 'inner')"),
        (ESCAPED_COUNTER, "has a loop that leaves on a value read from memory (block 'head')"),
        (SLOT_OF_AN_ELEMENT, "has a loop that leaves on a value read from memory (block 'head')"),
        (ATOMIC_BOUND, "has a loop that leaves on a value read from memory (block 'head')"),
        (FOREVER, "has a loop without an exit (block 'self')"),
    ],
    ids=[
        "spin",
        "switch",
        "loaded-bound",
        "merged-bound",
        "step-by-element",
        "break",
        "exit-skipped",
        "inner-loaded",
        "escaped-slot",
        "slot-of-an-element",
        "atomic",
        "forever",
    ],
)
def test_a_loop_whose_turns_memory_decides_is_refused(body, why):
    assert _reason(body) == f"leaf 'f' {why}"


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ("call void @helper(ptr %a)", "calls 'helper'"),
        ("call void %fp(ptr %a)", "calls through a pointer"),
        ('call void asm sideeffect "pause", ""()', "calls through a pointer or inline assembly"),
        ("call void @llvm.hpvm.barrier()", "calls 'llvm.hpvm.barrier'"),
        ("%m = call ptr @llvm.hpvm.malloc(i64 64)", "calls 'llvm.hpvm.malloc'"),
        (
            "%m = load i64, ptr %a\n  call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %fp, i64 %m, i1 false)",
            "calls 'llvm.memcpy.p0.p0.i64' with a length read from memory",
        ),
    ],
)
def test_calls_other_than_intrinsics_queries_and_atomics_are_refused(call, why):
    reason = _reason(f"entry:\n  {call}\n  ret {{}} zeroinitializer")
    assert reason is not None and reason.startswith("leaf 'f' ") and why in reason


def test_c_math_functions_are_bounded_and_pure():
    """``cosf`` of an element is bounded (MRI-Q's kernel); a loop to ``sqrt(n)`` is one the
    host determines, and a loop to ``sqrt`` of an element is not."""
    body = """entry:
  %v = load float, ptr %a
  %c = call float @cosf(float %v)
  store float %c, ptr %a
  %nf = sitofp i64 %n to double
  %r = call double @sqrt(double %nf)
  %m = fptosi double %r to i64
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %head ]
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %m
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""
    assert _reason(body) is None
    loaded = body.replace("%nf = sitofp i64 %n to double", "%nf = fpext float %v to double")
    assert _reason(loaded) == "leaf 'f' has a loop that leaves on a value read from memory (block 'head')"


def test_unreadable_code_is_refused():
    assert llvm_unbounded_reason(LLVMBody("not llvm", "f"), "leaf 'f'") is not None
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a) {{\n{STRAIGHT.replace('%n', '0')}\n}}\n"
    assert llvm_unbounded_reason(LLVMBody(text, "g"), "leaf 'g'") is not None  # no such function
    declared = DECLARES + "declare {} @f(ptr)\n"
    assert "no LLVM body" in llvm_unbounded_reason(LLVMBody(declared, "f"), "leaf 'f'")


BODIES = {
    name: value
    for name, value in globals().items()
    if name.isupper() and isinstance(value, str) and value.startswith("entry:")
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_every_hand_written_body_is_valid_llvm(name):
    """The verdicts above are about code LLVM accepts (its verifier: phis naming the real
    predecessors, definitions dominating uses)."""
    import llvmlite.binding as llvm

    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{BODIES[name]}\n}}\n"
    llvm.parse_assembly(text).verify()


# -- generated loop nests: the verdict is exactly "no loop's turns depend on memory" -----


@dataclass(frozen=True)
class Loop:
    """``for (k = 0; k < bound; k += step) { [if (a[k] == 7) break;] body }``: ``bound`` is
    ``n``, a constant, an element (``a[0]``) or the enclosing loop's counter; ``step`` 1, or
    1 or 2 chosen by an element."""

    bound: str
    step_by_element: bool
    breaks_on_element: bool
    body: tuple


@dataclass(frozen=True)
class If:
    """``if (cond) then else other``: ``cond`` tests ``n`` or an element."""

    on_element: bool
    then: tuple
    other: tuple


def _statements(depth: int) -> st.SearchStrategy:
    store = st.just("store")
    if depth == 0:
        return st.lists(store, max_size=1).map(tuple)
    inner = _statements(depth - 1)
    loop = st.builds(
        Loop, st.sampled_from(["n", "const", "element", "outer"]), st.booleans(), st.booleans(), inner
    )
    branch = st.builds(If, st.booleans(), inner, inner)
    return st.lists(st.one_of(store, loop, branch), max_size=3).map(tuple)


def _bounded(statements: tuple, counter_varies: bool = False) -> bool:
    """The truth for a generated nest: every loop's turns fixed by ``n`` and constants
    (``counter_varies``: whether the enclosing loop's counter is read from memory; outside
    loops, "the counter" is ``n``)."""
    for s in statements:
        if isinstance(s, Loop):
            bound_varies = s.bound == "element" or (s.bound == "outer" and counter_varies)
            if bound_varies or s.step_by_element or s.breaks_on_element:
                return False
            if not _bounded(s.body, False):
                return False
        elif isinstance(s, If) and not (
            _bounded(s.then, counter_varies) and _bounded(s.other, counter_varies)
        ):
            return False
    return True


class _Emitter:
    """LLVM text of a generated nest, in SSA form (each loop's counter a phi)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.block = "entry"
        self.names = 0

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")
        self.block = name

    def emit(self, statements: tuple, counter: str) -> None:
        for s in statements:
            if s == "store":
                self.lines.append(f"  store i64 {counter}, ptr %a")
            elif isinstance(s, If):
                self._branch(s, counter)
            else:
                self._loop(s, counter)

    def _element(self) -> str:
        v = "%" + self.fresh("v")
        self.lines.append(f"  {v} = load i64, ptr %a")
        return v

    def _branch(self, s: If, counter: str) -> None:
        then, other, join = (self.fresh(x) for x in ("then", "else", "join"))
        subject = self._element() if s.on_element else "%n"
        c = "%" + self.fresh("c")
        self.lines.append(f"  {c} = icmp slt i64 {subject}, 3")
        self.lines.append(f"  br i1 {c}, label %{then}, label %{other}")
        for name, body in ((then, s.then), (other, s.other)):
            self.label(name)
            self.emit(body, counter)
            self.lines.append(f"  br label %{join}")
        self.label(join)

    def _loop(self, s: Loop, counter: str) -> None:
        bound = {"n": "%n", "const": "5", "outer": counter}.get(s.bound) or self._element()
        head, latch, done = (self.fresh(x) for x in ("head", "latch", "done"))
        k, following = "%" + self.fresh("k"), "%" + self.fresh("next")
        before = self.block
        self.lines.append(f"  br label %{head}")
        self.label(head)
        self.lines.append(f"  {k} = phi i64 [ 0, %{before} ], [ {following}, %{latch} ]")
        if s.breaks_on_element:
            go_on = self.fresh("on")
            c = "%" + self.fresh("c")
            self.lines.append(f"  {c} = icmp eq i64 {self._element()}, 7")
            self.lines.append(f"  br i1 {c}, label %{done}, label %{go_on}")
            self.label(go_on)
        self.emit(s.body, k)
        if s.step_by_element:
            one, two = self.fresh("one"), self.fresh("two")
            c = "%" + self.fresh("c")
            self.lines.append(f"  {c} = icmp sgt i64 {self._element()}, 0")
            self.lines.append(f"  br i1 {c}, label %{one}, label %{two}")
            for name, step in ((one, 1), (two, 2)):
                self.label(name)
                self.lines.append(f"  %{name}.k = add i64 {k}, {step}")
                self.lines.append(f"  br label %{latch}")
            self.label(latch)
            self.lines.append(f"  {following} = phi i64 [ %{one}.k, %{one} ], [ %{two}.k, %{two} ]")
        else:
            self.lines.append(f"  br label %{latch}")
            self.label(latch)
            self.lines.append(f"  {following} = add i64 {k}, 1")
        c = "%" + self.fresh("c")
        self.lines.append(f"  {c} = icmp slt i64 {following}, {bound}")
        self.lines.append(f"  br i1 {c}, label %{head}, label %{done}")
        self.label(done)


@settings(max_examples=100, deadline=None)
@given(_statements(3))
def test_a_generated_loop_nest_is_bounded_exactly_when_no_loop_reads_memory_for_its_turns(statements):
    import llvmlite.binding as llvm

    emitter = _Emitter()
    emitter.emit(statements, "%n")
    body = "entry:\n" + "\n".join(emitter.lines) + "\n  ret {} zeroinitializer"
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{body}\n}}\n"
    llvm.parse_assembly(text).verify()
    reason = _reason(body)
    assert (reason is None) == _bounded(statements), f"{reason}\n{body}"


# A leaf as clang -O0 writes it: `optnone`, its arguments and its counter in slots, the
# counter an `int` (for (int k = 0; k < n; k++) a[k] = 0.0f).
CLANG_O0 = """
define {} @f(ptr %a, i64 %a.size, i32 %n) #0 {
entry:
  %a.addr = alloca ptr, align 8
  %n.addr = alloca i32, align 4
  %k = alloca i32, align 4
  store ptr %a, ptr %a.addr, align 8
  store i32 %n, ptr %n.addr, align 4
  store i32 0, ptr %k, align 4
  br label %for.cond
for.cond:
  %0 = load i32, ptr %k, align 4
  %1 = load i32, ptr %n.addr, align 4
  %cmp = icmp slt i32 %0, %1
  br i1 %cmp, label %for.body, label %for.end
for.body:
  %2 = load ptr, ptr %a.addr, align 8
  %3 = load i32, ptr %k, align 4
  %idx = sext i32 %3 to i64
  %p = getelementptr inbounds float, ptr %2, i64 %idx
  store float 0.000000e+00, ptr %p, align 4
  br label %for.inc
for.inc:
  %4 = load i32, ptr %k, align 4
  %inc = add nsw i32 %4, 1
  store i32 %inc, ptr %k, align 4
  br label %for.cond
for.end:
  ret {} zeroinitializer
}

attributes #0 = { noinline nounwind optnone }
"""


def test_unoptimized_code_s_counters_in_slots_are_read_as_the_values_they_hold():
    """``clang -O0``'s leaf: every local in a slot, and ``optnone``, which makes LLVM's
    passes skip the function; read after SROA, its loop leaves on ``k < n`` (a scalar the
    host gives); the same loop stopping at an element it reads is still refused."""
    assert llvm_unbounded_reason(LLVMBody(CLANG_O0, "f"), "leaf 'f'") is None
    by_element = CLANG_O0.replace("%1 = load i32, ptr %n.addr, align 4", "%1 = load i32, ptr %a, align 4")
    why = llvm_unbounded_reason(LLVMBody(by_element, "f"), "leaf 'f'")
    assert why == "leaf 'f' has a loop that leaves on a value read from memory (block 'for.cond')"


@pytest.mark.parametrize(
    ("body", "reason", "fixed"),
    [(STRAIGHT, None, True), (LOOP, None, False), (SPIN, "has a loop", False)],
    ids=["straight", "loop", "spin"],
)
def test_the_answers_are_stored_and_a_later_process_reads_them_without_parsing(
    body, reason, fixed, tmp_path, monkeypatch
):
    """Both answers come from one reading of the module, kept in hpvm's cache
    (``llvm-bounded/``): a later process — each ``hpvm c run`` — reads them instead."""
    from hpvm.ir import llvmbounded

    leaf = LLVMBody(f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{body}\n}}\n", "f")
    answers = []
    for later in (False, True):
        monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(llvmbounded, "_ANSWERS", {})  # (a new process)
        if later:
            monkeypatch.setattr(llvmbounded, "_analysed", lambda body: pytest.fail("read the module again"))
        answers.append((llvm_unbounded_reason(leaf, "leaf 'f'"), llvm_fixed_work(leaf)))
        assert len(list((tmp_path / "llvm-bounded").glob("*.json"))) == 1
    assert answers[0] == answers[1]
    got_reason, got_fixed = answers[1]
    assert got_fixed is fixed
    assert (got_reason is None) if reason is None else got_reason.startswith(f"leaf 'f' {reason}")
