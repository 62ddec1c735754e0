"""The text form: random programs of the dialect print, parse back equal and verify; each
mistake in a text is a ``ParseError`` at its line and column."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hpvm.errors import ParseError
from hpvm.ir.graph import Param
from hpvm.ir.intrinsics import INTRINSICS
from hpvm.ir.leafir import ops, rules
from hpvm.ir.leafir.parser import parse_leaf_ir
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import leaf_problems
from hpvm.ir.types import ArrayType, ScalarType, node_t, parse_type

SCALARS = [parse_type(t) for t in ("bool", "i8", "i32", "i64", "u16", "u64", "f32", "f64")]
PARAMS = (
    Param("n", parse_type("i64")),
    Param("x", parse_type("f32")),
    Param("a", parse_type("f64[:]")),
    Param("m", parse_type("i32[:, :]")),
    Param("h", parse_type("i64[:]")),
    Param("buf", parse_type("u8[:]")),
)
ARRAYS = {p.name: ops.Var(p.name, p.type) for p in PARAMS if isinstance(p.type, ArrayType)}
QUERIES = [i for i in INTRINSICS.values() if i.kind in ("query", "dims")]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
MATH = [
    *("math.sqrt", "math.exp", "math.floor", "math.atan2", "math.isnan", "math.fmod"),
    *("np.sin", "np.floor", "np.rint", "min", "max", "abs", "round"),
]


class _Gen:
    """Draws one random, well-typed leaf IR through the typed constructors."""

    def __init__(self, data: st.DataObject):
        self.data = data
        self.line = 10
        self.declared: dict[str, object] = {}
        self.defined: set[str] = {p.name for p in PARAMS}
        self.loops = 0

    def draw(self, strategy):  # type: ignore[no-untyped-def]
        return self.data.draw(strategy)

    def next_line(self) -> int:
        self.line += self.draw(st.integers(1, 3))
        return self.line

    # -- expressions ----------------------------------------------------------------------

    def const(self) -> ops.Expr:
        t: ScalarType = self.draw(st.sampled_from(SCALARS))
        kind = t.dtype.kind
        if kind == "b":
            value: object = self.draw(st.booleans())
        elif kind in "iu":
            info = np.iinfo(t.dtype)
            value = self.draw(st.integers(int(info.min), int(info.max)))
        else:
            value = self.draw(st.floats(width=32 if t.dtype.itemsize == 4 else 64))
        if self.draw(st.booleans()):  # a Python literal's own type (what source code writes most)
            return rules.const(value if kind != "u" else int(value) % 2**63)  # type: ignore[call-overload]
        return rules.const(value, t)

    def scalars(self) -> list[ops.Var]:
        types = {p.name: p.type for p in PARAMS} | self.declared
        return [
            ops.Var(n, t)  # type: ignore[arg-type]
            for n, t in types.items()
            if n in self.defined and isinstance(t, ScalarType)
        ]

    def index(self) -> ops.Expr:
        choice = self.draw(st.integers(0, 3))
        ints = [v for v in self.scalars() if v.type.dtype.kind in "iu"]  # type: ignore[union-attr]
        if choice == 0 and ints:
            return self.draw(st.sampled_from(ints))
        if choice == 1:
            return rules.shape(ARRAYS[self.draw(st.sampled_from(sorted(ARRAYS)))], 0)
        if choice == 2:
            return rules.cast(self.expr(1), parse_type("i64"))  # type: ignore[arg-type]
        return rules.const(self.draw(st.integers(-3, 7)))

    def expr(self, depth: int = 3) -> ops.Expr:
        kinds = ["const", "var"] + (["compound"] * 3 if depth > 0 else [])
        kind = self.draw(st.sampled_from(kinds))
        if kind == "var" and self.scalars():
            return self.draw(st.sampled_from(self.scalars()))
        if kind != "compound":
            return self.const()
        d = depth - 1
        sub = self.draw(st.integers(0, 13))
        try:
            if sub == 0:
                return rules.binary(self.draw(st.sampled_from(BINARY)), self.expr(d), self.expr(d))
            if sub == 1:
                return rules.unary(self.draw(st.sampled_from(["-", "+", "~", "not"])), self.expr(d))
            if sub == 2:
                n = self.draw(st.integers(1, 3))
                cmps = [self.draw(st.sampled_from(rules.CMP_OPS)) for _ in range(n)]
                return rules.compare(cmps, [self.expr(d) for _ in range(n + 1)])
            if sub == 3:
                op = self.draw(st.sampled_from(["and", "or"]))
                return rules.boolop(op, [self.expr(d) for _ in range(self.draw(st.integers(2, 3)))])
            if sub == 4:
                return rules.ifexp(self.expr(d), self.expr(d), self.expr(d))
            if sub == 5:
                return rules.load(ARRAYS["a"], [self.index()])
            if sub == 6:
                return rules.load(ARRAYS["m"], [self.index(), self.index()])
            if sub == 7:
                return rules.size(ARRAYS[self.draw(st.sampled_from(sorted(ARRAYS)))])
            if sub == 8:
                return rules.cast(self.expr(d), self.draw(st.sampled_from(SCALARS)))
            if sub == 9:
                func = self.draw(st.sampled_from(MATH))
                n = 2 if func in ("math.atan2", "math.fmod", "min", "max") else 1
                return rules.call(func, [self.expr(d) for _ in range(n)])
            if sub == 10:
                node = rules.intrinsic(INTRINSICS["get_node"], [])
                if self.draw(st.booleans()):
                    node = rules.intrinsic(INTRINSICS["get_parent_node"], [node])
                return rules.intrinsic(self.draw(st.sampled_from(QUERIES)), [node])
            if sub == 11:
                return rules.load(rules.retype(ARRAYS["buf"], parse_type("f32")), [self.index()])  # type: ignore[arg-type]
            if sub == 12:
                return rules.load(rules.load(ARRAYS["m"], [self.index()]), [self.index()])
            return rules.shape(ARRAYS["m"], self.draw(st.integers(0, 1)))
        except rules.TypeProblem:
            return self.const()  # (e.g. '&' on floats): the rules refuse it, so does the dialect

    # -- statements -----------------------------------------------------------------------

    def block(self, depth: int) -> ops.Block:
        return tuple(self.stmt(depth) for _ in range(self.draw(st.integers(0, 3))))

    def assign(self, name: str, value: ops.Expr) -> ops.Assign:
        line = self.next_line()
        t = self.declared.setdefault(name, value.type)
        self.defined.add(name)
        return ops.Assign(ops.Var(name, t), rules.convert(value, t), line)  # type: ignore[arg-type]

    def stmt(self, depth: int) -> ops.Stmt:
        kinds = ["assign", "store", "store2", "atomic", "atomic2", "barrier", "handle", "alloc", "raise"]
        if depth > 0:
            kinds += ["if", "while", "for"]
        if self.loops:
            kinds += ["break", "continue"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "assign":
            name = self.draw(
                st.sampled_from(["v0", "size", "var", "at", "leaf", "view"])
            )  # (words of the text)
            return self.assign(name, self.expr())
        if kind == "alloc":
            fill = self.draw(st.sampled_from(rules.ALLOC_FILLS))
            shape = [self.index() for _ in range(self.draw(st.integers(1, 3)))]
            return self.assign(
                f"loc{self.line}", rules.alloc(fill, shape, self.draw(st.sampled_from(SCALARS)))
            )
        if kind == "handle":
            return self.assign("nd", rules.intrinsic(INTRINSICS["get_node"], []))
        if kind == "store":
            idx = (self.index(),)
            return ops.Store(
                ARRAYS["a"], idx, rules.convert(self.expr(), ARRAYS["a"].type.elem), self.next_line()
            )  # type: ignore[union-attr]
        if kind == "store2":
            idx = (self.index(), self.index())
            return ops.Store(
                ARRAYS["m"], idx, rules.convert(self.expr(), ARRAYS["m"].type.elem), self.next_line()
            )  # type: ignore[union-attr]
        if kind == "atomic":
            op = INTRINSICS[self.draw(st.sampled_from(["atomic_add", "atomic_xor", "atomic_max"]))]
            return ops.ExprStmt(
                rules.intrinsic(op, [ARRAYS["h"], self.index(), self.expr(1)]), self.next_line()
            )
        if kind == "atomic2":  # an element of a 2-D array: the indices spread out
            op = INTRINSICS[self.draw(st.sampled_from(["atomic_add", "atomic_min", "atomic_or"]))]
            args = [ARRAYS["m"], self.index(), self.index(), self.expr(1)]
            return ops.ExprStmt(rules.intrinsic(op, args), self.next_line())
        if kind == "barrier":
            return ops.ExprStmt(rules.intrinsic(INTRINSICS["barrier"], []), self.next_line())
        if kind == "raise":  # (an opaque exception text, quotes and escapes included, or bare)
            exc = self.draw(
                st.sampled_from([None, 'ValueError("a \\"quoted\\" \\\\ text")', "RuntimeError()"])
            )
            return ops.Raise(exc, self.next_line())
        if kind == "break":
            return ops.Break(self.next_line())
        if kind == "continue":
            return ops.Continue(self.next_line())
        line = self.next_line()
        if kind == "if":
            test = self.expr()
            return ops.If(test, self.block(depth - 1), self.block(depth - 1), line)
        if kind == "while":
            test = self.expr()
            self.loops += 1
            body = self.block(depth - 1)
            self.loops -= 1
            return ops.While(test, body, line)
        bounds = [self.index(), self.index(), rules.const(self.draw(st.sampled_from([1, 2, -1])))]
        name = f"k{line}"
        self.declared[name] = rules.range_var(bounds)
        self.defined.add(name)
        self.loops += 1
        body = self.block(depth - 1)
        self.loops -= 1
        return ops.For(ops.Var(name, self.declared[name]), *bounds, body, line)  # type: ignore[arg-type]

    def leaf(self) -> ops.LeafIR:
        body = list(self.block(2))
        outputs: tuple = ()
        if self.draw(st.booleans()):
            outputs = (parse_type("f64"),)
            body.append(ops.Return((rules.convert(self.expr(), outputs[0]),), self.next_line()))
        return ops.LeafIR("gen", PARAMS, outputs, tuple(self.declared.items()), tuple(body), "gen.py", 3)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_print_parse_round_trip_and_verify(data: st.DataObject) -> None:
    ir = _Gen(data).leaf()
    text = print_leaf(ir)
    assert leaf_problems(ir) == []
    back = parse_leaf_ir(text)
    assert back == ir
    assert print_leaf(back) == text


GOOD = """\
leaf g(n: i64, a: f64[:] layout(block)) -> (f64) at "g.py":3 {
  var s: f64
  var k: i64
  4: s = f64(n)
  5: for k in range(0, n, 1) {
    6: s = s + a[k]
  }
  7: return s;
}
"""


def test_a_hand_written_text_reads() -> None:
    ir = parse_leaf_ir(GOOD)
    assert str(ir.params[1]) == "a: f64[:] layout(block)"
    assert isinstance(ir.body[1], ops.For) and ir.body[1].var.type == parse_type("i64")
    assert leaf_problems(ir) == []


@pytest.mark.parametrize(
    "old, new, message, line",
    [
        ("6: s = s + a[k]", "6: s = s +", "unexpected", 7),  # a syntax error
        ("  var k: i64\n", "", "'k' is neither a parameter nor declared", 4),  # k undeclared
        ("6: s = s + a[k]", "6: s = s & a[k]", "'&' is not defined on f64 and f64", 6),
        ("4: s = f64(n)", "4: hpvm.get_thing(n)", "'hpvm.get_thing' is not an intrinsic", 4),
        ("4: s = f64(n)", "4: s = math.frob(n)", "math.frob() is not a function of the leaf language", 4),
        ("layout(block)", "layout(sideways)", "", 1),
        ("-> (f64)", "-> (f128)", "", 1),
        ("4: s = f64(n)", "4: s = #i8(300)", "300 does not fit in i8", 4),
        ("4: s = f64(n)", "4: s = #i64(1.5)", "1.5 is not a value of i64", 4),
        ("4: s = f64(n)", "4: s = a[0, 1]", "2 indices into a 1-D array", 4),
        ("4: s = f64(n)", "4: s = math.zeros<f32>(3)", "'math.zeros<...>' is not a NumPy function making", 4),
        ("4: s = f64(n)", "4: s = np.zeros<f32>(a)", "an index must be an integer, not an array", 4),
    ],
)
def test_a_mistake_is_a_parse_error_at_its_place(old: str, new: str, message: str, line: int) -> None:
    """``line``: the line of the text (not a statement's source line)."""
    with pytest.raises(ParseError) as info:
        parse_leaf_ir(GOOD.replace(old, new), file="g.leafir")
    assert message in info.value.message
    assert info.value.line == line and info.value.file == "g.leafir" and info.value.column >= 1


def test_a_node_handle_local_and_an_empty_return() -> None:
    ir = ops.LeafIR(
        "h",
        (),
        (),
        (("nd", node_t),),
        (
            ops.Assign(ops.Var("nd", node_t), rules.intrinsic(INTRINSICS["get_node"], []), 2),
            ops.Return((), 3),
        ),
        "h.py",
        1,
    )
    text = print_leaf(ir)
    assert "var nd: node" in text and "3: return;" in text
    assert parse_leaf_ir(text) == ir


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_verifier_finds_a_value_of_the_wrong_type(data: st.DataObject) -> None:
    """Any assignment or store given a value of another type than its place's is reported."""
    ir = _Gen(data).leaf()
    places = [s for s in ops.walk_stmts(ir.body) if isinstance(s, (ops.Assign, ops.Store))]
    assume(places)
    victim = data.draw(st.sampled_from(places))
    place = victim.target.type if isinstance(victim, ops.Assign) else victim.array.type.elem  # type: ignore[union-attr]
    other = data.draw(st.sampled_from([t for t in SCALARS if t != place]))
    wrong = rules.const(0, other)

    def swap(block: ops.Block) -> ops.Block:
        out = []
        for s in block:
            if s is victim:
                s = replace(s, value=wrong)
            elif isinstance(s, (ops.For, ops.While)):
                s = replace(s, body=swap(s.body))
            elif isinstance(s, ops.If):
                s = replace(s, body=swap(s.body), orelse=swap(s.orelse))
            out.append(s)
        return tuple(out)

    broken = replace(ir, body=swap(ir.body))
    problems = leaf_problems(broken)
    assert any(f"gen.py:{victim.line}:" in p for p in problems), problems
