"""Affine forms of several instance ids (``llvm_native/affine.py``) and the facts
``access.py``'s ``affine_accesses`` reads from LLVM leaves with them: the range of a form
over a box of ids against brute force, and — on random integer arithmetic that may wrap —
a fact is exact at every instance of every box where its conditions hold — with scaled
terms (an id times an integer argument, ``a[i * cols + j]``) too, for any argument value."""

from __future__ import annotations

import itertools

from hypothesis import event, given, settings
from hypothesis import strategies as st

from hpvm.backends.llvm_native.access import affine_accesses, every_instance_accesses
from hpvm.backends.llvm_native.affine import ALONE, EQ, GLOBAL, LE, clipped, holds, product, span
from hpvm.ir.bodies import LLVMBody

# A box: per level (0: the leaf's node, 1: its parent, 2: the grandparent), its sizes.
_BOXES = st.lists(st.lists(st.integers(1, 5), min_size=0, max_size=3), min_size=1, max_size=3)


def _points(box: list[list[int]]):
    """Every (level, dim) -> id assignment of the box."""
    keys = [(level, dim) for level, sizes in enumerate(box) for dim in range(len(sizes))]
    for ids in itertools.product(*(range(box[level][dim]) for level, dim in keys)):
        yield dict(zip(keys, ids, strict=True))


def _form(point: dict, terms, scaled, values) -> int:
    """``sum(k * id)`` over ``terms`` and ``scaled`` (their arguments' ``values``) at ``point``
    (an id it lacks is 0: a dimension past a level's sizes)."""
    plain = sum(k * point.get((level, dim), 0) for level, dim, k in terms)
    return plain + sum(
        k * product(args, values) * (1 if level == ALONE else point.get((level, dim), 0))
        for level, dim, k, args in scaled
    )


def _plain_terms(levels: int, k: st.SearchStrategy) -> st.SearchStrategy:
    """Up to three terms of distinct ids over ``levels`` levels, coefficients drawn from ``k``."""
    return st.lists(
        st.tuples(st.integers(0, levels - 1), st.integers(0, 2), k), max_size=3, unique_by=lambda t: t[:2]
    )


@settings(max_examples=300, deadline=None)
@given(_BOXES, st.data())
def test_the_span_is_the_least_and_greatest_value_over_the_box(box, data):
    levels = len(box)
    terms = data.draw(
        st.lists(
            st.tuples(st.integers(0, levels - 1), st.integers(0, 2), st.integers(-(10**6), 10**6)),
            max_size=5,
            unique_by=lambda t: t[:2],
        )
    )
    c_low = data.draw(st.integers(-(10**6), 10**6))
    c_high = c_low + data.draw(st.integers(0, 100))
    values = [
        sum(k * point.get((level, dim), 0) for level, dim, k in terms) for point in _points(box)
    ]  # (a dimension past a level's sizes: id 0, extent 1)
    assert span(terms, c_low, c_high, box) == (c_low + min(values), c_high + max(values))


def _scaled_terms(levels: int) -> st.SearchStrategy:
    """Scaled terms over ``levels`` levels: an id or none (``ALONE``) times 1 to 3 of three
    arguments (a repeat squares one)."""
    args = st.lists(st.integers(0, 2), min_size=1, max_size=3).map(lambda a: tuple(sorted(a)))
    return st.lists(
        st.one_of(
            st.tuples(st.integers(0, levels - 1), st.integers(0, 2), st.integers(-50, 50), args),
            st.tuples(st.just(ALONE), st.just(0), st.integers(-50, 50), args),
        ),
        max_size=4,
    )


@settings(max_examples=300, deadline=None)
@given(_BOXES, st.data())
def test_a_span_with_scaled_terms_is_the_least_and_greatest_value_over_the_box(box, data):
    """Plain terms, ids times arguments (the same id more than once: ``i*cols + i``) and
    arguments alone, for any argument values: the span is the form's range over the box."""
    levels = len(box)
    terms = data.draw(_plain_terms(levels, st.integers(-50, 50)))
    scaled = data.draw(_scaled_terms(levels))
    values = data.draw(st.lists(st.integers(-100, 100), min_size=3, max_size=3))
    c = data.draw(st.integers(-1000, 1000))
    forms = [_form(point, terms, scaled, values) for point in _points(box)]
    assert span(terms, c, c, box, scaled, values) == (c + min(forms), c + max(forms))


@settings(max_examples=300, deadline=None)
@given(_BOXES, st.data())
def test_the_generated_span_code_is_the_span(box, data):
    """``span_code.span_code`` — the ``cpu`` back end's pre-check, as code in its graph function
    — evaluated with the box's extents and the arguments' values, equals ``span`` (what
    ``interp`` checks with), plain and scaled terms alike."""
    from hpvm.backends.span_code import span_code

    levels = len(box)
    terms = data.draw(
        st.lists(
            st.tuples(
                st.integers(0, levels - 1),
                st.integers(0, 2),
                st.one_of(st.integers(1, 50), st.integers(-50, -1)),
            ),
            max_size=3,
            unique_by=lambda t: t[:2],
        )
    )
    scaled = data.draw(_scaled_terms(levels))
    values = data.draw(st.lists(st.integers(-100, 100), min_size=3, max_size=3))
    low = data.draw(st.integers(-1000, 1000))
    high = low + data.draw(st.integers(0, 9))
    keys = {(lv, d) for lv, d, *_ in (*terms, *scaled) if lv != ALONE}
    extents = {key: f"E{key[0]}_{key[1]}" for key in keys}
    names = {arg: f"v{arg}" for arg in range(3)}
    lo, hi = span_code(terms, low, high, extents, scaled, names)
    env = {f"v{arg}": value for arg, value in enumerate(values)}
    env.update({f"E{lv}_{d}": (box[lv][d] if d < len(box[lv]) else 1) for lv, d in keys})
    assert (eval(lo, {}, env), eval(hi, {}, env)) == span(terms, low, high, box, scaled, values)  # noqa: S307


def _clips(levels: int) -> st.SearchStrategy:
    """Guards as ``affine.Clip``s: one id (or none: ``ALONE``) times k, plus a constant and
    arguments alone, ``<= 0`` or ``== 0``."""
    args = st.lists(st.integers(0, 2), min_size=1, max_size=2).map(lambda a: tuple(sorted(a)))
    alone = st.lists(st.tuples(st.just(ALONE), st.just(0), st.integers(-3, 3), args), max_size=2).map(tuple)
    return st.lists(
        st.one_of(
            st.tuples(
                st.integers(0, levels - 1), st.integers(0, 2), st.sampled_from([-3, -2, -1, 1, 2, 3]),
                st.integers(-12, 12), alone, st.sampled_from([LE, EQ]),
            ),
            st.tuples(st.just(ALONE), st.just(0), st.just(0), st.integers(-3, 3), alone, st.sampled_from([LE, EQ])),
        ),
        max_size=3,
    )  # fmt: skip


def _meets(point: dict, clips, values) -> bool:
    for level, dim, k, c, alone, relation in clips:
        total = c + sum(kk * product(args, values) for *_, kk, args in alone)
        total += 0 if level == ALONE else k * point.get((level, dim), 0)
        if total > 0 or (relation == EQ and total != 0):
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(_BOXES, st.data())
def test_a_guarded_span_is_the_range_over_the_instances_meeting_the_guard(box, data):
    """``clipped`` narrows each guarded id's range; ``span`` over those ranges is the form's
    range over exactly the instances meeting every clip, and there is none (``None``) when
    no instance meets them."""
    levels = len(box)
    terms = data.draw(_plain_terms(levels, st.integers(-50, 50)))
    scaled = data.draw(_scaled_terms(levels))
    clips = data.draw(_clips(levels))
    values = data.draw(st.lists(st.integers(-4, 4), min_size=3, max_size=3))
    forms = [_form(point, terms, scaled, values) for point in _points(box) if _meets(point, clips, values)]
    ranges = clipped(clips, box, values)
    event("no instance meets the guard" if not forms else "some instances do")
    if not forms:
        assert ranges is None
        return
    assert ranges is not None
    assert span(terms, 0, 0, box, scaled, values, ranges) == (min(forms), max(forms))


@settings(max_examples=300, deadline=None)
@given(_BOXES, st.data())
def test_the_generated_guarded_span_code_is_the_guarded_span(box, data):
    """``span_code.clipped_code`` and ``span_code`` with its ranges — the ``cpu`` pre-check
    of a guarded access — agree with ``clipped`` and ``span``: the code's conditions hold
    exactly when some instance meets the guard, and then its ends are the span's — written
    out in full, or through variables each computed once (``Bindings``, as the checks are)."""
    from hpvm.backends.span_code import Bindings, clipped_code, span_code

    levels = len(box)
    terms = data.draw(
        st.lists(
            st.tuples(st.integers(0, levels - 1), st.integers(0, 2), st.sampled_from([-7, -1, 1, 4])),
            max_size=3,
            unique_by=lambda t: t[:2],
        )
    )
    scaled = data.draw(_scaled_terms(levels))
    clips = data.draw(_clips(levels))
    values = data.draw(st.lists(st.integers(-4, 4), min_size=3, max_size=3))
    keys = {(lv, d) for lv, d, *_ in (*terms, *scaled, *clips) if lv != ALONE}
    extents = {key: f"E{key[0]}_{key[1]}" for key in keys}
    names = {arg: f"v{arg}" for arg in range(3)}
    lines: list[str] = []
    bind = Bindings(lines) if data.draw(st.booleans()) else str
    ranges, reached = clipped_code(clips, extents, names, bind)
    lo, hi = span_code(terms, 0, 3, extents, scaled, names, ranges)
    lo, hi = bind(lo), bind(hi)
    env = {f"v{arg}": value for arg, value in enumerate(values)}
    env.update({f"E{lv}_{d}": (box[lv][d] if d < len(box[lv]) else 1) for lv, d in keys})
    for line in lines:
        exec(line, {}, env)  # noqa: S102
    want = clipped(clips, box, values)
    assert all(eval(test, {}, env) for test in reached) == (want is not None)  # noqa: S307
    if want is not None:
        got = (eval(lo, {}, env), eval(hi, {}, env))  # noqa: S307
        assert got == span(terms, 0, 3, box, scaled, values, want)


DECLARES = """
declare ptr @llvm.hpvm.getNode()
declare ptr @llvm.hpvm.getParentNode(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.y(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.x(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.y(ptr)
"""
IDS = """  %h = call ptr @llvm.hpvm.getNode()
  %up = call ptr @llvm.hpvm.getParentNode(ptr %h)
  %top = call ptr @llvm.hpvm.getParentNode(ptr %up)
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %px = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %up)
  %py = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %up)
  %gx = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %top)
"""
# Each id above as its term key: (level, dim).
KEYS = {"%x": (0, 0), "%px": (1, 0), "%py": (1, 1), "%gx": (2, 0)}


def _function(body: str) -> LLVMBody:
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, ptr %b, i64 %b.size, i64 %width, i32 %narrow) {{\nentry:\n{IDS}{body}\n}}\n"
    return LLVMBody(text, "f")


def test_lbm_style_struct_of_arrays_with_parent_ids_and_a_moved_pointer():
    """``g += MARGIN; g[e*TOTAL + (z*PY + y)*PX + x - 1]`` in ``int``, as clang writes it:
    one fact per array and terms, the lowest and highest entry joined."""
    body = """  %g = getelementptr inbounds i8, ptr %a, i64 504
  %tx = trunc i64 %x to i32
  %ty = trunc i64 %px to i32
  %tz = trunc i64 %py to i32
  %m = mul nsw i32 %tz, 7
  %r = add nsw i32 %m, %ty
  %s = mul nsw i32 %r, 9
  %i = add nsw i32 %s, %tx
  %w = add nsw i32 %i, -1
  %e = sext i32 %w to i64
  %p = getelementptr inbounds float, ptr %g, i64 %e
  %v = load float, ptr %p, align 4
  %j = add nsw i32 %i, 1197
  %f = sext i32 %j to i64
  %q = getelementptr inbounds float, ptr %g, i64 %f
  store float %v, ptr %q, align 4
  ret {} zeroinitializer"""
    (fact,) = affine_accesses(_function(body))
    assert fact.argument == 0 and fact.terms == ((0, 0, 4), (1, 0, 36), (1, 1, 252))
    assert (fact.first, fact.last) == (500, 504 + 4 * 1197 + 3)
    assert every_instance_accesses(_function(body)) == ()
    # the ids fit in an int, and the int forms may not overflow:
    box = [[10], [5, 4]]
    assert holds(fact.limits, fact.guards, box)
    assert not holds(fact.limits, fact.guards, [[10], [5, 2**31 // 63]])
    assert span(fact.terms, fact.first, fact.last, box) == (500, 504 + 4 * (9 + 36 + 189 + 1197) + 3)


def test_a_decreasing_index_and_a_grandparent_id_are_facts_but_a_stride_read_from_memory_is_not():
    body = """  %d = sub i64 %gx, %x
  %p = getelementptr inbounds float, ptr %a, i64 %d
  store float 0.0, ptr %p
  %n = load i64, ptr %b
  %r = mul i64 %px, %n
  %q = getelementptr inbounds float, ptr %b, i64 %r
  store float 0.0, ptr %q
  ret {} zeroinitializer"""
    facts = affine_accesses(_function(body))
    assert [(f.argument, f.terms, f.first, f.last) for f in facts] == [(0, ((0, 0, -4), (2, 0, 4)), 0, 3)]


def test_a_row_major_index_with_a_parameter_width_is_a_fact_with_scaled_terms():
    """``a[(y + 1) * width + x]`` (``width`` an ``i64`` argument, its index 4), ``b[y * narrow]``
    with ``int narrow`` sign-extended, and ``b[width * width * x]``: the ids times the
    arguments (the last times ``width`` twice), and ``width`` alone; two ids multiplied
    (``x * y``) give no fact."""
    body = """  %y1 = add nsw i64 %py, 1
  %row = mul nsw i64 %y1, %width
  %i = add nsw i64 %row, %x
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  %t64 = sext i32 %narrow to i64
  %j = mul nsw i64 %px, %t64
  %q = getelementptr inbounds i16, ptr %b, i64 %j
  store i16 0, ptr %q
  %ss = mul i64 %width, %width
  %k = mul i64 %ss, %x
  %r = getelementptr inbounds i8, ptr %b, i64 %k
  store i8 0, ptr %r
  %xy = mul i64 %x, %py
  %u = getelementptr inbounds i8, ptr %a, i64 %xy
  store i8 0, ptr %u
  ret {} zeroinitializer"""
    facts = affine_accesses(_function(body))
    assert [(f.argument, f.terms, f.scaled, f.first, f.last) for f in facts] == [
        (0, ((0, 0, 4),), ((ALONE, 0, 4, (4,)), (1, 1, 4, (4,))), 0, 3),
        (2, (), ((1, 0, 2, (5,)),), 0, 1),
        (2, (), ((0, 0, 1, (4, 4)),), 0, 0),
    ]
    values = {4: 10, 5: 3}  # (width, narrow)
    box = [[10], [2, 7]]
    assert holds(facts[0].limits, facts[0].guards, box, values)
    assert span(facts[0].terms, 0, 3, box, facts[0].scaled, values) == (40, 4 * (7 * 10 + 9) + 3)
    assert not holds(facts[0].limits, facts[0].guards, box, {4: 2**62, 5: 3})  # ((y + 1) * width wraps)


def test_a_negative_first_byte_of_one_id_is_a_fact_of_both_kinds():
    """``a[x - 1]``: ``ByteAccess`` checks its end, the affine fact its start."""
    body = """  %i = add nsw i64 %x, -1
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  ret {} zeroinitializer"""
    assert [(f.stride, f.first) for f in every_instance_accesses(_function(body))] == [(4, -4)]
    assert [(f.terms, f.first, f.last) for f in affine_accesses(_function(body))] == [(((0, 0, 4),), -4, -1)]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(-50, 50),
    st.integers(-(10**4), 10**4),
)
def test_a_global_ids_span_is_its_values_over_both_levels(own, up, dim, k, c):
    """``k*(parent.x*instances.x + x) + c`` over every parent and own instance (``GLOBAL``:
    the extent is the two levels' product), against brute force."""
    d = dim - 1
    box = [[1] * d + [own], [1] * d + [up]]
    values = [k * (p * own + x) + c for p in range(up) for x in range(own)]
    assert span(((0, GLOBAL + d, k),), c, c, box) == (min(values), max(values))


def test_the_cuda_global_index_is_a_fact_of_its_own():
    """``int ix = gx * gridx + lx`` (``gridx = __hpvm__getNumNodeInstances_x(thisNode)``),
    as clang writes HPVM's GPU-convention leaves, then ``a[ix]`` and ``b[2*ix + 1]``: one
    global id each, its ``int`` width a limit on it; ``b[ix + gx]`` adds the parent's id
    to it (their ranges are not independent: no fact), and the count of another dimension
    or the product alone is none either."""
    body = """  %count = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %h)
  %n32 = trunc i64 %count to i32
  %g32 = trunc i64 %px to i32
  %x32 = trunc i64 %x to i32
  %m = mul nsw i32 %g32, %n32
  %ix = add nsw i32 %m, %x32
  %i = sext i32 %ix to i64
  %p = getelementptr inbounds float, ptr %a, i64 %i
  store float 0.0, ptr %p
  %two = shl nsw i64 %i, 1
  %odd = add nsw i64 %two, 1
  %q = getelementptr inbounds float, ptr %b, i64 %odd
  store float 0.0, ptr %q
  %mixed = add nsw i64 %i, %px
  %r = getelementptr inbounds float, ptr %b, i64 %mixed
  store float 0.0, ptr %r
  %ycount = call i64 @llvm.hpvm.getNumNodeInstances.y(ptr %h)
  %wrong = mul i64 %px, %ycount
  %w = add i64 %wrong, %x
  %s = getelementptr inbounds float, ptr %b, i64 %w
  store float 0.0, ptr %s
  %alone = mul i64 %px, %count
  %t = getelementptr inbounds float, ptr %b, i64 %alone
  store float 0.0, ptr %t
  ret {} zeroinitializer"""
    facts = affine_accesses(_function(body))
    assert [(f.argument, f.terms, f.first, f.last) for f in facts] == [
        (0, ((0, GLOBAL, 4),), 0, 3),
        (2, ((0, GLOBAL, 8),), 4, 7),
    ]
    limit = 2**31 - 1  # (each id and the global one in ``int``)
    assert [f.limits for f in facts] == [((0, 0, limit), (0, GLOBAL, limit), (1, 0, limit))] * 2
    assert every_instance_accesses(_function(body)) == ()  # (a global id is no own-id fact)
    box = [[64], [2]]  # (kmeans: 100 points, two groups of 64)
    assert span(facts[0].terms, facts[0].first, facts[0].last, box) == (0, 4 * 127 + 3)
    assert holds(facts[0].limits, facts[0].guards, box)


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _stepped_lines(steps, bits: int, arg_name: str) -> tuple[list[str], str]:
    """The LLVM of ``steps`` (``_STEPS``) from id x in ``bits`` (the ids cut to ``i32``
    first in 32), and the name of the value they end with."""
    lines = [f"  %t{k} = trunc i64 {name} to i32" for k, name in enumerate(KEYS)] if bits == 32 else []
    ref = {name: (f"%t{k}" if bits == 32 else name) for k, name in enumerate(KEYS)}
    name = ref["%x"]
    for k, (op, c, other) in enumerate(steps):
        new = f"%v{k}"
        if op in ("add", "sub", "mul"):
            lines.append(f"  {new} = {op} i{bits} {name}, {c}")
        elif op.endswith("arg"):
            lines.append(f"  {new} = {op[:3]} i{bits} {name}, {arg_name}")
        else:
            lines.append(f"  {new} = {op[:3]} i{bits} {name}, {ref[other]}")
        name = new
    return lines, name


def _stepped(ids: dict[str, int], steps, bits: int, argument: int) -> int:
    """The value ``_stepped_lines``' LLVM computes for the instance ``ids`` (wrapping)."""
    v = _wrap(ids["%x"], bits)
    for op, c, other in steps:
        operand = _wrap(
            c if op in ("add", "sub", "mul") else argument if op.endswith("arg") else ids[other], bits
        )
        v = _wrap(
            v + operand if op.startswith("add") else v - operand if op.startswith("sub") else v * operand,
            bits,
        )
    return v


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "sub", "mul", "addid", "subid", "mularg", "addarg"]),
        st.integers(-(2**31), 2**31),
        st.sampled_from(sorted(KEYS)),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(
    _STEPS,
    st.sampled_from([32, 64]),
    st.lists(st.integers(1, 4), min_size=4, max_size=4),
    st.integers(0, 40),
    st.one_of(st.integers(-5, 5), st.integers(-(2**31), 2**31 - 1)),
)
def test_a_fact_is_exact_at_every_instance_where_its_conditions_hold(steps, bits, sizes, scale, argument):
    """Random wrapping arithmetic (no ``nsw``) on the four ids and an integer argument (a
    row's width: ``%width`` in 64 bits, ``%narrow`` in 32) in 32 or 64 bits, then the byte
    offset: where the analysis gives a fact and its conditions hold over a box (the sizes,
    or the sizes scaled up to reach the wrap) for the argument's value, the address LLVM
    computes at every instance of the box is the fact's form."""
    arg_name, arg_index = ("%narrow", 5) if bits == 32 else ("%width", 4)
    lines, name = _stepped_lines(steps, bits, arg_name)
    if bits == 32:
        lines.append(f"  %w = sext i32 {name} to i64")
        name = "%w"
    body = "\n".join([*lines, f"  %p = getelementptr inbounds i8, ptr %a, i64 {name}", "  store i8 0, ptr %p",
                      "  ret {} zeroinitializer"])  # fmt: skip
    facts = affine_accesses(_function(body)) + tuple(every_instance_accesses(_function(body)))
    event("scaled fact" if any(getattr(f, "scaled", ()) for f in facts) else "fact" if facts else "none")
    if not facts:
        return

    for factor in (1, 2**scale):
        box = [[sizes[0] * factor], [sizes[1] * factor, sizes[2]], [sizes[3] * factor]]
        # every instance of the small box; of a scaled one, its corners (each id 0 or its
        # last) and the ids one before the last
        small = box if factor == 1 else [[3], [3, 3], [3]]
        values = {arg_index: argument}
        for fact in affine_accesses(_function(body)):
            assert fact.first == fact.last
            if not holds(fact.limits, fact.guards, box, values):
                continue
            for point in _points(small):
                if factor > 1:
                    point = {
                        (lv, d): (0, box[lv][d] - 1, box[lv][d] - 2)[i]
                        if box[lv][d] > 2
                        else min(i, box[lv][d] - 1)
                        for (lv, d), i in point.items()
                    }
                ids = {name: point[key] for name, key in KEYS.items()}
                want = fact.first + _form(point, fact.terms, fact.scaled, values)
                assert _stepped(ids, steps, bits, argument) == want, (point, fact)


def _guarded(condition: str, then: str) -> LLVMBody:
    """``if (condition) then;`` as clang writes it: the test in the entry block, ``then`` in a
    block of its own, both paths meeting at the return."""
    return _function(
        f"{condition}\n  br i1 %c, label %then, label %done\nthen:\n{then}\n  br label %done\n"
        "done:\n  ret {} zeroinitializer"
    )


STORE_A_X = "  %p = getelementptr inbounds float, ptr %a, i64 %x\n  store float 0.0, ptr %p"


def test_an_access_under_an_id_s_test_is_a_fact_for_the_instances_passing_it():
    """``if (x < width) a[x] = 0``: made by the instances with x + 1 - width <= 0 (a clip);
    ``if (x >= width) return; a[x + 1] = 0`` the same, from the other side of the branch."""
    (fact,) = affine_accesses(_guarded("  %c = icmp slt i64 %x, %width", STORE_A_X))
    assert (fact.argument, fact.terms, fact.first, fact.last) == (0, ((0, 0, 4),), 0, 3)
    assert fact.clips == ((0, 0, 1, 1, ((ALONE, 0, -1, (4,)),), LE),)
    assert clipped(fact.clips, [[8]], {4: 5}) == {(0, 0): (0, 4)}  # x <= 4
    early = _function(
        "  %c = icmp sge i64 %x, %width\n  br i1 %c, label %out, label %body\nout:\n  ret {} zeroinitializer\n"
        "body:\n  %x1 = add nsw i64 %x, 1\n  %p = getelementptr inbounds float, ptr %a, i64 %x1\n"
        "  store float 0.0, ptr %p\n  ret {} zeroinitializer"
    )
    (fact,) = affine_accesses(early)
    assert (fact.terms, fact.first, fact.clips) == (
        ((0, 0, 4),),
        4,
        ((0, 0, 1, 1, ((ALONE, 0, -1, (4,)),), LE),),
    )


def test_a_logical_and_of_an_unsigned_test_and_an_equality_is_two_clips():
    """``x < width && py == 0`` as LLVM's ``select`` writes it, the first unsigned: two clips,
    the unsigned one under the condition that both sides stay non-negative."""
    (fact,) = affine_accesses(
        _guarded(
            "  %c1 = icmp ult i64 %x, %width\n  %c2 = icmp eq i64 %py, 0\n  %c = select i1 %c1, i1 %c2, i1 false",
            STORE_A_X,
        )
    )
    assert set(fact.clips) == {(0, 0, 1, 1, ((ALONE, 0, -1, (4,)),), LE), (1, 1, 1, 0, (), EQ)}
    assert holds(fact.limits, fact.guards, [[8], [1, 3]], {4: 5})
    assert not holds(fact.limits, fact.guards, [[8], [1, 3]], {4: -5})  # (ult: width read as unsigned)
    assert clipped(fact.clips, [[8], [1, 3]], {4: 5}) == {(0, 0): (0, 4), (1, 1): (0, 0)}


def test_a_test_of_memory_an_inequality_or_a_merge_gives_no_clip():
    """A bound read from memory (not known before the leaf runs) and ``x != width`` (not a
    range) give no fact; a block both sides of a test reach is a fact without a guard."""
    loaded = "  %n = load i64, ptr %b\n  %c = icmp slt i64 %x, %n"
    assert affine_accesses(_guarded(loaded, STORE_A_X)) == ()
    assert affine_accesses(_guarded("  %c = icmp ne i64 %x, %width", STORE_A_X)) == ()
    merged = _function(
        "  %c = icmp slt i64 %x, %width\n  br i1 %c, label %l, label %r\nl:\n  br label %m\nr:\n  br label %m\n"
        f"m:\n{STORE_A_X}\n  ret {{}} zeroinitializer"
    )
    (fact,) = every_instance_accesses(merged)
    assert (fact.argument, fact.dim, fact.stride) == (0, 0, 4)
    assert affine_accesses(merged) == ()  # (one own id: a ByteAccess, no guard)


_PREDICATES = ["slt", "sle", "sgt", "sge", "eq", "ne", "ult", "ule", "ugt", "uge"]


def _compare(predicate: str, a: int, b: int, bits: int) -> bool:
    if predicate[0] == "u":
        a, b = a % (1 << bits), b % (1 << bits)
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[predicate[-2:]]


@settings(max_examples=300, deadline=None)
@given(
    _STEPS,
    st.sampled_from([32, 64]),
    st.sampled_from(_PREDICATES),
    st.booleans(),
    st.lists(st.integers(1, 4), min_size=4, max_size=4),
    st.integers(0, 40),
    st.one_of(st.integers(-5, 5), st.integers(-(2**31), 2**31 - 1)),
    st.integers(-(2**31), 2**31),
)
def test_a_guard_s_clips_are_exactly_the_instances_that_pass_it(
    steps, bits, predicate, side, sizes, scale, argument, constant
):
    """Random wrapping arithmetic on the ids and an argument, compared (signed or unsigned)
    with the argument plus a constant, and a store on one side of the branch: where the
    store is a fact and its conditions hold over a box, the instances ``clipped`` keeps
    are exactly those for which LLVM's comparison takes that side (none: ``None``)."""
    arg_name, arg_index = ("%narrow", 5) if bits == 32 else ("%width", 4)
    lines, name = _stepped_lines(steps, bits, arg_name)
    lines.append(f"  %bound = add i{bits} {arg_name}, {constant}")
    lines.append(f"  %c = icmp {predicate} i{bits} {name}, %bound")
    then, other = ("then", "done") if side else ("done", "then")
    body = "\n".join(
        [*lines, f"  br i1 %c, label %{then}, label %{other}", "then:", STORE_A_X, "  br label %done", "done:",
         "  ret {} zeroinitializer"]
    )  # fmt: skip
    facts = [f for f in affine_accesses(_function(body)) if f.clips]
    event("clipped fact" if facts else "none")
    if not facts:
        return
    (fact,) = facts

    def passes(ids: dict[str, int]) -> bool:
        v = _stepped(ids, steps, bits, argument)
        return _compare(predicate, v, _wrap(argument + constant, bits), bits) == side

    for factor in (1, 2**scale):
        box = [[sizes[0] * factor], [sizes[1] * factor, sizes[2]], [sizes[3] * factor]]
        values = {arg_index: argument}
        if not holds(fact.limits, fact.guards, box, values):
            continue
        ranges = clipped(fact.clips, box, values)
        # every instance of the small box; of a scaled one, the edges of each clipped range
        # and the instances beside them
        if factor == 1:
            points = list(_points(box))
        else:
            near = {key: {0, 1, extent - 2, extent - 1} for key, extent in
                    (((0, 0), box[0][0]), ((1, 0), box[1][0]), ((1, 1), box[1][1]), ((2, 0), box[2][0]))}  # fmt: skip
            for key, (first, last) in (ranges or {}).items():
                near[key] |= {first - 1, first, last, last + 1}
            keys = sorted(near)
            points = [
                dict(zip(keys, ids, strict=True))
                for ids in itertools.product(*(sorted(v for v in near[key] if 0 <= v < box[key[0]][key[1]])
                                               for key in keys))
            ]  # fmt: skip
        for point in points:
            ids = {name: point.get(key, 0) for name, key in KEYS.items()}
            inside = ranges is not None and all(
                first <= point.get(key, 0) <= last for key, (first, last) in ranges.items()
            )
            assert passes(ids) == inside, (point, ranges)


def test_a_clamped_index_is_a_fact_per_arm():
    """``a[min(x + 1, width - 1)]`` as clang writes it (``llvm.smin``) and ``a[x > 0 ? x - 1 :
    0]`` as a ``select``: a fact per value with an id the index may take, each under the
    clip that takes it; a clamp by a value read from memory gives none."""
    smin = _function(
        "  %x1 = add nsw i64 %x, 1\n  %w1 = add nsw i64 %width, -1\n"
        "  %m = call i64 @llvm.smin.i64(i64 %x1, i64 %w1)\n"
        "  %p = getelementptr inbounds float, ptr %a, i64 %m\n  store float 0.0, ptr %p\n  ret {} zeroinitializer"
    )
    (fact,) = affine_accesses(smin)  # (the arm width - 1 has no id: no fact, as any id-free index)
    assert (fact.terms, fact.first) == (((0, 0, 4),), 4)
    assert fact.clips == ((0, 0, 1, 2, ((ALONE, 0, -1, (4,)),), LE),)  # x + 1 where x + 1 <= width - 1
    assert clipped(fact.clips, [[8]], {4: 5}) == {(0, 0): (0, 3)}
    select = _function(
        "  %c = icmp sgt i64 %x, 0\n  %xm = add nsw i64 %x, -1\n  %s = select i1 %c, i64 %xm, i64 0\n"
        "  %p = getelementptr inbounds float, ptr %a, i64 %s\n  store float 0.0, ptr %p\n  ret {} zeroinitializer"
    )
    (fact,) = affine_accesses(select)  # (the arm 0 has no id: no fact)
    assert (fact.terms, fact.first, clipped(fact.clips, [[8]])) == (((0, 0, 4),), -4, {(0, 0): (1, 7)})
    loaded = _function(
        "  %n = load i64, ptr %b\n  %m = call i64 @llvm.smin.i64(i64 %x, i64 %n)\n"
        "  %p = getelementptr inbounds float, ptr %a, i64 %m\n  store float 0.0, ptr %p\n  ret {} zeroinitializer"
    )
    assert affine_accesses(loaded) == ()


_CLAMPS = ["smin", "smax", "umin", "umax", "select slt", "select sge", "select ult", "select eq"]


@settings(max_examples=300, deadline=None)
@given(
    _STEPS,
    st.sampled_from(_CLAMPS),
    st.lists(st.integers(1, 4), min_size=4, max_size=4),
    st.one_of(st.integers(-5, 5), st.integers(-(2**31), 2**31 - 1)),
    st.integers(-40, 40),
)
def test_each_instance_takes_the_arm_whose_clips_it_meets(steps, clamp, sizes, argument, constant):
    """An index clamped against the argument plus a constant (``llvm.smin`` and its kin, or
    a ``select`` on a comparison of the two): where the facts' conditions hold, every
    instance meets the clips of exactly one fact with an id whose form is LLVM's index,
    or of none when the arm it takes has no id (the argument's side: no fact)."""
    lines, name = _stepped_lines(steps, 64, "%width")
    lines.append(f"  %bound = add i64 %width, {constant}")
    if clamp.startswith("select"):
        lines += [
            f"  %c = icmp {clamp.split()[1]} i64 {name}, %bound",
            f"  %m = select i1 %c, i64 {name}, i64 %bound",
        ]
    else:
        lines.append(f"  %m = call i64 @llvm.{clamp}.i64(i64 {name}, i64 %bound)")
    body = "\n".join(
        [
            *lines,
            "  %p = getelementptr inbounds i8, ptr %a, i64 %m",
            "  store i8 0, ptr %p",
            "  ret {} zeroinitializer",
        ]
    )
    facts = [f for f in affine_accesses(_function(body)) if f.terms]
    event(f"{len(facts)} facts with an id")
    box = [[sizes[0]], [sizes[1], sizes[2]], [sizes[3]]]
    values = {4: argument}
    facts = [f for f in facts if holds(f.limits, f.guards, box, values)]
    if not facts:
        return

    def index(ids: dict[str, int]) -> int:
        v = _stepped(ids, steps, 64, argument)
        bound = _wrap(argument + constant, 64)
        if clamp.startswith("select"):
            return v if _compare(clamp.split()[1], v, bound, 64) else bound
        unsigned = clamp[0] == "u"
        key = (lambda t: t % 2**64) if unsigned else (lambda t: t)
        return (min if clamp.endswith("min") else max)(v, bound, key=key)

    for point in _points(box):
        ids = {name: point.get(key, 0) for name, key in KEYS.items()}
        meeting = []
        for fact in facts:
            ranges = clipped(fact.clips, box, values)
            if ranges is not None and all(lo <= point.get(key, 0) <= hi for key, (lo, hi) in ranges.items()):
                meeting.append(fact)
        assert len(meeting) <= 1, (point, meeting)
        for fact in meeting:
            assert fact.first + _form(point, fact.terms, fact.scaled, values) == index(ids), (point, fact)
