"""``unit_stride_dimension``: which instance id an LLVM leaf's array accesses move along
with unit stride (the cpu back end runs that id's loop innermost); ``every_instance_accesses``:
the bytes every instance certainly loads or stores (the bounds pre-check) — on hand-written
LLVM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.backends.llvm_native.access import every_instance_accesses
from hpvm.backends.llvm_native.stride import unit_stride_dimension
from hpvm.ir.bodies import LLVMBody

MODULE = """
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.y(ptr)

define {} @f(ptr %a, i64 %a.size, i64 %n) {
entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %h)
  %r = mul i64 ROW, %n
  %i = add i64 %r, COL
  %o = shl nsw i64 %i, SCALE
  %p = getelementptr inbounds i8, ptr %a, i64 %o
  store float 0.0, ptr %p
  ret {} zeroinitializer
}
"""


def _dimension(row: str, col: str, scale: int = 2, combine: str = "add") -> int | None:
    text = MODULE.replace("ROW", row).replace("COL", col).replace("SCALE", str(scale))
    text = text.replace("%i = add i64", f"%i = {combine} i64")
    return unit_stride_dimension(LLVMBody(text, "f"))


@pytest.mark.parametrize(("row", "col", "want"), [("%y", "%x", 0), ("%x", "%y", 1)])
def test_the_id_added_last_is_unit_stride(row, col, want):
    assert _dimension(row, col) == want


def test_or_disjoint_is_an_add_but_plain_or_is_not():
    assert _dimension("%y", "%x", combine="or disjoint") == 0
    assert _dimension("%y", "%x", combine="or") is None


def test_a_byte_index_scaled_past_an_element_size_is_no_answer():
    assert _dimension("%y", "%x", scale=7) is None


def test_both_ids_scaled_is_no_answer():
    text = MODULE.replace("ROW", "%y").replace("COL", "%x").replace("SCALE", "2")
    text = text.replace("%i = add i64 %r, %x", "%s = mul i64 %x, %n\n  %i = add i64 %r, %s")
    assert unit_stride_dimension(LLVMBody(text, "f")) is None


@pytest.mark.parametrize("optnone", [False, True], ids=["extract", "clang-O0"])
@pytest.mark.parametrize(("row", "col", "want"), [("%y", "%x", 0), ("%x", "%y", 1)])
def test_values_kept_in_locals_are_read_after_sroa(row, col, want, optnone):
    # -O0's form, and llvm.extract's leaves': the pointer and the index pass through
    # one-slot locals, which the first reading cannot follow. clang -O0 marks the function
    # optnone, which every LLVM pass skips: set aside for the second reading.
    text = MODULE.replace("ROW", row).replace("COL", col).replace("SCALE", "2")
    if optnone:
        text = text.replace("i64 %n) {", "i64 %n) #0 {") + "attributes #0 = { noinline nounwind optnone }\n"
    text = text.replace(
        "  %p = getelementptr inbounds i8, ptr %a, i64 %o",
        "  %slot = alloca ptr, align 8\n  %at = alloca i64, align 8\n  store ptr %a, ptr %slot\n"
        "  store i64 %o, ptr %at\n  %a2 = load ptr, ptr %slot\n  %o2 = load i64, ptr %at\n"
        "  %p = getelementptr inbounds i8, ptr %a2, i64 %o2",
    )
    assert unit_stride_dimension(LLVMBody(text, "f")) == want


def test_unreadable_module_is_no_answer():
    assert unit_stride_dimension(LLVMBody("not llvm", "f")) is None
    valid = MODULE.replace("ROW", "%y").replace("COL", "%x").replace("SCALE", "2")
    assert unit_stride_dimension(LLVMBody(valid, "f")) == 0
    assert unit_stride_dimension(LLVMBody(valid, "g")) is None  # no such function


# -- every_instance_accesses: the bytes every instance touches (the bounds pre-check) -------

DECLARES = """
declare ptr @llvm.hpvm.getNode()
declare ptr @llvm.hpvm.getParentNode(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.y(ptr)
"""


def _facts(body: str, params: str = "ptr %a, i64 %a.size, ptr %b, i64 %b.size, i64 %n") -> set[tuple]:
    text = (
        f"{DECLARES}\ndefine {{}} @f({params}) {{\nentry:\n  %h = call ptr @llvm.hpvm.getNode()\n"
        f"  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)\n{body}\n}}\n"
    )
    return {
        (f.argument, "xyz"[f.dim], f.stride, f.first, f.last, f.limit)
        for f in every_instance_accesses(LLVMBody(text, "f"))
    }


I64 = 2**63 - 1


def test_element_indexing_with_an_offset():
    body = """
  %i = add nsw i64 %x, 1
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %v = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %b, i64 %x
  store float %v, ptr %pb, align 4
  ret {} zeroinitializer"""
    assert _facts(body) == {(0, "x", 4, 4, 7, (I64 - 4) // 4), (2, "x", 4, 0, 3, I64 // 4)}


def test_an_int_id_holds_below_two_to_the_31():
    """``int i = id`` truncates: the address is 4*id only while id fits in an i32 (instcombine
    writes the sign extension as ``ashr (shl v, 32), 32``, and ``4*(i + 1)`` as ``ashr (shl v,
    32) + 2^32, 30``; clang without instcombine as trunc + sext)."""
    shl = """
  %s = shl i64 %x, 32
  %i = ashr exact i64 %s, 32
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  %t = add i64 %s, 4294967296
  %o = ashr exact i64 %t, 30
  %q = getelementptr inbounds i8, ptr %b, i64 %o
  store float 0.0, ptr %q
  ret {} zeroinitializer"""
    trunc = """
  %t = trunc i64 %x to i32
  %u = add nsw i32 %t, 1
  %i = sext i32 %u to i64
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  ret {} zeroinitializer"""
    assert _facts(shl) == {(0, "x", 4, 0, 3, 2**31 - 1), (2, "x", 4, 4, 7, 2**31 - 2)}  # (b[i + 1]: -O1)
    assert _facts(trunc) == {(0, "x", 4, 4, 7, 2**31 - 2)}


def test_byte_addressing_nested_getelementptrs_and_array_types():
    body = """
  %o = shl nsw i64 %x, 3
  %p = getelementptr inbounds i8, ptr %a, i64 %o
  %q = getelementptr inbounds i8, ptr %p, i64 4
  store i32 1, ptr %q
  %r = getelementptr inbounds [4 x float], ptr %b, i64 %x, i64 2
  %v = load <2 x float>, ptr %r
  ret {} zeroinitializer"""
    assert _facts(body) == {(0, "x", 8, 4, 7, (I64 - 4) // 8), (2, "x", 16, 8, 15, (I64 - 8) // 16)}


def test_an_access_in_a_block_every_call_runs_after_a_loop_is_a_fact():
    """``float s = 0; for (k < n) s += a[x*n + k]; b[x] = s;``: the loop's own loads are at
    a phi (no fact), the store after it runs in every call (its block is on every path to
    the return), as does the loop's body, at least once: b's store is a fact; so is one in
    a block after a diamond, where both paths meet again."""
    loop = """  br label %body
body:
  %k = phi i64 [ 0, %entry ], [ %k1, %body ]
  %s = phi float [ 0.0, %entry ], [ %s1, %body ]
  %r = mul i64 %x, %n
  %i = add i64 %r, %k
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %v = load float, ptr %pa
  %s1 = fadd float %s, %v
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %body, label %done
done:
  %pb = getelementptr inbounds float, ptr %b, i64 %x
  store float %s1, ptr %pb
  ret {} zeroinitializer"""
    diamond = """  %c = icmp slt i64 %n, 4
  br i1 %c, label %small, label %large
small:
  br label %join
large:
  br label %join
join:
  %pb = getelementptr inbounds float, ptr %b, i64 %x
  store float 1.0, ptr %pb
  ret {} zeroinitializer"""
    assert _facts(loop) == {(2, "x", 4, 0, 3, I64 // 4)}
    assert _facts(diamond) == {(2, "x", 4, 0, 3, I64 // 4)}


def test_an_access_after_a_path_that_ends_the_call_is_no_fact():
    """``if (x >= n) abort(); b[x] = 0;`` (``unreachable`` after the call) or ``if (x >= n)
    return;``: the store's block is not on every path to an end of the call."""
    aborts = """  %past = icmp sge i64 %x, %n
  br i1 %past, label %stop, label %go
stop:
  call void @abort()
  unreachable
go:
  %pb = getelementptr inbounds float, ptr %b, i64 %x
  store float 0.0, ptr %pb
  ret {} zeroinitializer"""
    returns = aborts.replace("  call void @abort()\n  unreachable", "  ret {} zeroinitializer")
    assert _facts(aborts + "\n}\ndeclare void @abort()\ndefine void @g() {\n  ret void") == set()
    assert _facts(returns) == set()


@pytest.mark.parametrize(
    "body",
    [
        # guarded: the access is not in a block every call runs
        """  %in = icmp slt i64 %x, %n
  br i1 %in, label %then, label %done
then:
  %p = getelementptr inbounds float, ptr %a, i64 %x
  store float 0.0, ptr %p
  br label %done
done:
  ret {} zeroinitializer""",
        # the parent's id, not the node's own
        """  %up = call ptr @llvm.hpvm.getParentNode(ptr %h)
  %px = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %up)
  %p = getelementptr inbounds float, ptr %a, i64 %px
  store float 0.0, ptr %p
  ret {} zeroinitializer""",
        # scaled by a parameter, and two ids in one index
        """  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %h)
  %r = mul i64 %y, %n
  %i = add i64 %r, %x
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  %j = add i64 %y, %x
  %q = getelementptr inbounds float, ptr %b, i64 %j
  store float 0.0, ptr %q
  ret {} zeroinitializer""",
        # a struct field, a decreasing index, a select
        """  %p = getelementptr inbounds { i32, float }, ptr %a, i64 %x, i32 1
  store float 0.0, ptr %p
  %d = sub i64 7, %x
  %q = getelementptr inbounds float, ptr %b, i64 %d
  store float 0.0, ptr %q
  %c = icmp eq i64 %n, 0
  %s = select i1 %c, i64 %x, i64 0
  %r = getelementptr inbounds float, ptr %b, i64 %s
  store float 0.0, ptr %r
  ret {} zeroinitializer""",
    ],
    ids=["guarded", "parent-id", "scaled-by-a-parameter", "struct-decreasing-select"],
)
def test_accesses_not_certain_or_not_linear_give_no_fact(body):
    assert _facts(body) == set()


def test_an_unreadable_function_gives_no_fact():
    assert every_instance_accesses(LLVMBody("not llvm", "f")) == ()


_OPS = st.one_of(
    st.tuples(st.sampled_from(["add", "sub", "mul"]), st.integers(-(2**40), 2**40)),
    st.tuples(st.sampled_from(["shl", "ashr", "lshr"]), st.integers(0, 40)),
    st.tuples(st.sampled_from(["trunc", "sext", "zext"]), st.just(0)),
)


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


@settings(max_examples=200, deadline=None)
@given(st.lists(_OPS, max_size=6), st.integers(0, 2**63 - 1))
def test_a_fact_is_exact_for_every_id_up_to_its_limit(ops, probe):
    """Random integer arithmetic on the id (wrapping: no ``nsw``; shifts right of either
    kind), 32- and 64-bit: where the
    analysis gives a fact, the address LLVM computes is ``stride*id + first`` for every id up
    to ``limit`` (checked at 0, the limit and a random id below it)."""
    lines, name, bits, steps = [], "%x", 64, []
    for k, (op, c) in enumerate(ops):
        new = f"%v{k}"
        if op in ("add", "sub", "mul"):
            lines.append(f"  {new} = {op} i{bits} {name}, {c}")
        elif op in ("shl", "ashr", "lshr"):
            if c >= bits:
                continue
            lines.append(f"  {new} = {op} i{bits} {name}, {c}")
        elif op == "trunc" and bits == 64:
            lines.append(f"  {new} = trunc i64 {name} to i32")
        elif op in ("sext", "zext") and bits == 32:
            lines.append(f"  {new} = {op} i32 {name} to i64")
        else:
            continue
        steps.append((op, c, bits))
        bits = 32 if op == "trunc" else 64 if op in ("sext", "zext") else bits
        name = new
    if bits == 32:
        lines.append(f"  %w = sext i32 {name} to i64")
        steps.append(("sext", 0, 32))
        name = "%w"
    body = "\n".join(
        [
            *lines,
            f"  %p = getelementptr inbounds i8, ptr %a, i64 {name}",
            "  store i8 0, ptr %p",
            "  ret {} zeroinitializer",
        ]
    )
    facts = _facts(body)
    assert len(facts) <= 1

    def llvm_value(x: int) -> int:
        v = x
        for op, c, width in steps:
            if op == "add":
                v = _wrap(v + c, width)
            elif op == "sub":
                v = _wrap(v - c, width)
            elif op == "mul":
                v = _wrap(v * c, width)
            elif op == "shl":
                v = _wrap(v << c, width)
            elif op == "ashr":
                v >>= c
            elif op == "lshr":
                v = _wrap((v & ((1 << width) - 1)) >> c, width)
            elif op == "trunc":
                v = _wrap(v, 32)
            elif op == "zext":
                v &= 0xFFFFFFFF
        return v  # (sext keeps the signed value)

    for _, _, stride, first, last, limit in facts:
        assert stride > 0 and last == first
        for x in {0, limit, probe % (limit + 1)}:
            assert llvm_value(x) == stride * x + first, (x, steps)
    if all(op in ("add", "sub") for op, _, _ in steps):
        assert facts, "an id plus 64-bit constants is a fact"
