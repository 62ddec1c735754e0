"""The text form of the IR: golden prints, print → parse → print fixed points over generated
programs, and ParseErrors with the right line and column for malformed text."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import CompileError, ParseError
from hpvm.ir.expr import MAX_EXPR_DEPTH, BinOp, Call, Const, Expr, Shape, truncated
from hpvm.ir.expr import Param as ParamExpr
from hpvm.ir.graph import (
    ALL_TO_ALL,
    HINTS,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
    Param,
    functions,
)
from hpvm.ir.layouts import KINDS, Layout
from hpvm.ir.parser import no_code_leaf, parse_function_ref, parse_program
from hpvm.ir.printer import print_program
from hpvm.ir.types import SCALAR_TYPES, ArrayType, PortType, ScalarType, node_t
from hpvm.ir.verify import verify

f32, i64 = hpvm.f32, hpvm.i64

# ---------------------------------------------------------------------------------------
# Structure of a program, for comparing an original with its parse


def structure(root: InternalFunction) -> list[Any]:
    """Everything the text form carries, with functions and nodes replaced by positions."""
    fns = list(functions(root))
    index = {id(f): i for i, f in enumerate(fns)}
    out: list[Any] = []
    for fn in fns:
        params = [(p.name, p.type, p.layout) for p in fn.params]
        entry: list[Any] = [fn.kind, fn.name, params, fn.hint, fn.ins, fn.outs]
        if isinstance(fn, LeafFunction):
            entry.append(list(fn.outputs))
        else:
            assert isinstance(fn, InternalFunction)
            g = fn.graph
            nodes = {id(n): i for i, n in enumerate(g.nodes)}
            entry += [
                fn.declared_outputs,
                [(n.name, index[id(n.function)], [repr(s) for s in n.sizes], n.attrs) for n in g.nodes],
                [(nodes[id(e.src)], e.sp, nodes[id(e.dst)], e.dp, e.repl, e.stream) for e in g.edges],
                [(b.ip, nodes[id(b.dst)], b.ic, b.stream) for b in g.in_binds],
                [(nodes[id(b.src)], b.oc, b.op, b.stream) for b in g.out_binds],
            ]
        out.append(entry)
    return out


def round_trip(root: InternalFunction) -> InternalFunction:
    text = print_program(root)
    parsed = parse_program(text)
    assert print_program(parsed) == text
    assert structure(parsed) == structure(root)
    return parsed


# ---------------------------------------------------------------------------------------
# Golden: program in → text out


@hpvm.leaf(hint=hpvm.CPU_TARGET, ins=("a", "b"), outs=("c",))
def vadd(a: f32[:], b: f32[:], c: f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + b[i]


@hpvm.leaf(ins=("c",))
def first(c: f32[:], n: i64) -> tuple[f32, i64]:
    return c[0], n


@hpvm.internal(hint=hpvm.GPU_TARGET)
def tile(x: f32, m: i64):
    node = hpvm.create_node_2d(first_scalar, m // 16, hpvm.size_min(m, 4))
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0, stream=True)


@hpvm.leaf()
def first_scalar(x: f32) -> f32:
    return x


@hpvm.internal(ins=("a", "b"), outs=("c",))
def root(a: f32[:], b: f32[:], c: f32[:], n: i64) -> f32:
    add = hpvm.create_node_1d(vadd, n)
    hpvm.bind_in(add, "a", "a")
    hpvm.bind_in(add, 1, 1)
    hpvm.bind_in(add, 2, 2)
    f = hpvm.create_node(first)
    hpvm.bind_in(f, 2, 0)
    hpvm.bind_in(f, 3, 1, stream=True)
    t = hpvm.create_node_nd(1, tile, a.shape[0] - -3)
    hpvm.edge(f, t, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.edge(f, t, hpvm.ALL_TO_ALL, 1, "m")
    hpvm.bind_out(t, 0, 0)


GOLDEN = """\
# hpvm IR v1
leaf @vadd(a: f32[:], b: f32[:], c: f32[:]) -> () hint(cpu) ins(a, b) outs(c)
leaf @first(c: f32[:], n: i64) -> (f32, i64) ins(c)
leaf @first_scalar(x: f32) -> (f32)
internal @tile(x: f32, m: i64) hint(gpu) {  # -> (f32)
  %first_scalar = node @first_scalar[m // 16, min(m, 4)]
  bind in 0 -> %first_scalar.0
  bind out %first_scalar.0 -> 0 stream
}
internal @root(a: f32[:], b: f32[:], c: f32[:], n: i64) -> (f32) ins(a, b) outs(c) {
  %vadd = node @vadd[n]
  %first = node @first
  %tile = node @tile[a.shape[0] - -3]
  edge %first.0 -> %tile.0 all_to_all stream
  edge %first.1 -> %tile.1 all_to_all
  bind in 0 -> %vadd.0
  bind in 1 -> %vadd.1
  bind in 2 -> %vadd.2
  bind in 2 -> %first.0
  bind in 3 -> %first.1 stream
  bind out %tile.0 -> 0
}
"""


def test_golden_print() -> None:
    assert print_program(root) == GOLDEN


def test_golden_round_trip_and_parsed_program_verifies() -> None:
    parsed = round_trip(root)
    verify(root)
    verify(parsed)
    assert parsed.name == "root" and parsed.declared_outputs == [f32]
    assert parsed.graph.nodes[1].function.name == "first"
    tile_fn = parsed.graph.node("tile").function
    assert isinstance(tile_fn, InternalFunction) and tile_fn.declared_outputs is None
    assert tile_fn.out_types == [f32]


def test_parsed_objects_point_into_the_text() -> None:
    parsed = parse_program(GOLDEN, file="prog.hpvm")
    lines = GOLDEN.splitlines()
    assert parsed.location.file == "prog.hpvm"
    assert lines[parsed.location.line - 1].startswith("internal @root")
    tile_node = parsed.graph.node("tile")
    assert lines[tile_node.location.line - 1].strip().startswith("%tile = node")
    e = parsed.graph.edges[1]
    assert lines[e.location.line - 1].strip() == "edge %first.1 -> %tile.1 all_to_all"
    b = parsed.graph.in_binds[4]
    assert lines[b.location.line - 1].strip() == "bind in 3 -> %first.1 stream"


def test_parsed_leaf_has_no_code() -> None:
    parsed = parse_program(GOLDEN)
    leaf = parsed.graph.node("vadd").function
    assert isinstance(leaf, LeafFunction)
    with pytest.raises(CompileError, match="leaf 'vadd'.*has no Python code"):
        leaf.pyfunc()
    with pytest.raises(OSError):
        _ = leaf.source


def test_leaf_factory_is_used() -> None:
    seen: list[tuple[str, str]] = []

    def factory(name: str, params: list[Param], outputs: list[PortType], **kw: Any) -> LeafFunction:
        seen.append((name, kw["ref"]))
        return LeafFunction(
            lambda *a: 42,
            name,
            params,
            outputs,
            hint=kw["hint"],
            ins=kw["ins"],
            outs=kw["outs"],
            location=kw["location"],
        )

    parsed = parse_program(GOLDEN, leaf_factory=factory)
    assert seen == [("vadd", "@vadd"), ("first", "@first"), ("first_scalar", "@first_scalar")]
    assert parsed.graph.node("vadd").function.pyfunc() == 42


def test_empty_and_one_instance_forms() -> None:
    text = textwrap.dedent(
        """\
        leaf @l() -> ()
        internal @r() {
          %a = node @l[]
          %b = node @l
        }
        """
    )
    r = parse_program(text)
    assert [n.dims for n in r.graph.nodes] == [0, 0]
    assert print_program(r).splitlines()[1:] == [
        "leaf @l() -> ()",
        "internal @r() {",
        "  %a = node @l",
        "  %b = node @l",
        "}",
    ]


def test_forward_references_names_as_ports_and_single_output_shorthand() -> None:
    text = textwrap.dedent(
        """\
        # the root may come first in hand-written text only if it is also last: here it is last
        internal @r(n: i64, x: f32) -> f32 {
          edge %p.0 -> %q.y one_to_one     # nodes may be used before their declaration
          %p = node @prod[n]
          %q = node @cons[n]
          bind in x -> %p.x
          bind in n -> %q.n
          bind out %q.0 -> 0
        }
        leaf @prod(x: f32) -> f32
        leaf @cons(n: i64, y: f32) -> (f32)
        internal @main(n: i64, x: f32) {
          %r = node @r
          bind in 0 -> %r.0
          bind in 1 -> %r.1
          bind out %r.0 -> 0
        }
        """
    )
    main = parse_program(text)
    verify(main)
    r = main.graph.nodes[0].function
    assert isinstance(r, InternalFunction)
    e = r.graph.edges[0]
    assert (e.src.name, e.sp, e.dst.name, e.dp, e.repl) == ("p", 0, "q", 1, ONE_TO_ONE)
    assert [(b.ip, b.ic) for b in r.graph.in_binds] == [(1, 0), (0, 0)]
    assert print_program(parse_program(print_program(main))) == print_program(main)


def test_duplicate_function_names_are_told_apart() -> None:
    def leaf(name: str, out: PortType) -> LeafFunction:
        return no_code_leaf(
            name, [], [out], ref="@" + name, hint=None, ins=(), outs=(), location=hpvm.errors.UNKNOWN_LOCATION
        )

    a, b = leaf("f", f32), leaf("f", i64)
    g = ChildGraph()
    na, nb = Node("f", a, ()), Node("f_1", b, ())
    g.nodes += [na, nb]
    g.out_binds += [OutputBind(na, 0, 0), OutputBind(nb, 0, 1)]
    r = InternalFunction("f", [], graph=g)
    text = print_program(r)
    assert "leaf @f() -> (f32)" in text and "leaf @f.1() -> (i64)" in text
    assert "internal @f.2()" in text and "%f_1 = node @f.1" in text
    parsed = round_trip(r)
    assert parsed.out_types == [f32, i64]


def test_odd_names_are_quoted() -> None:
    leaf = no_code_leaf(
        "my leaf",
        [Param("x y", f32)],
        [],
        ref="",
        hint="custom hint",
        ins=(),
        outs=(),
        location=hpvm.errors.UNKNOWN_LOCATION,
    )
    g = ChildGraph()
    n = Node('odd "node".1', leaf, (Const(-2),))
    g.nodes.append(n)
    g.in_binds.append(InputBind(0, n, 0))
    r = InternalFunction("r.1", [Param("p", f32)], graph=g)
    text = print_program(r)
    assert 'leaf @"my leaf"("x y": f32) -> () hint("custom hint")' in text
    assert '%"odd \\"node\\".1" = node @"my leaf"[-2]' in text
    assert 'internal @"r.1"(p: f32)' in text
    round_trip(r)


def test_parse_function_ref() -> None:
    assert parse_function_ref("@f") == ("f", 0)
    assert parse_function_ref("@f.12") == ("f", 12)
    assert parse_function_ref('@"a.1"') == ("a.1", 0)
    assert parse_function_ref('@"a.1".3') == ("a.1", 3)


@pytest.mark.parametrize(
    "expr",
    [
        Const(-3),
        BinOp("-", ParamExpr("n"), Const(-3)),
        BinOp("-", ParamExpr("n"), BinOp("-", ParamExpr("m"), Const(1))),
        BinOp("+", ParamExpr("n"), BinOp("+", ParamExpr("m"), Const(1))),
        BinOp("//", BinOp("*", Const(-2), ParamExpr("n")), BinOp("%", ParamExpr("m"), Const(7))),
        BinOp("*", BinOp("+", ParamExpr("n"), Const(1)), Shape("a", 1)),
        Call("max", (Call("min", (ParamExpr("n"), Const(4))), BinOp("-", Const(0), Shape("a", 0)))),
        Call("min", ()),
    ],
    ids=str,
)
def test_size_expressions_round_trip(expr: Expr) -> None:
    leaf = no_code_leaf(
        "l", [], [], ref="@l", hint=None, ins=(), outs=(), location=hpvm.errors.UNKNOWN_LOCATION
    )
    g = ChildGraph()
    g.nodes.append(Node("l", leaf, (expr,)))
    r = InternalFunction("r", [Param("n", i64), Param("m", i64), Param("a", f32[:, :])], graph=g)
    parsed = round_trip(r)
    assert repr(parsed.graph.nodes[0].sizes[0]) == repr(expr)
    env = {"n": 10, "m": 3, "a": __import__("numpy").zeros((5, 6))}
    if not isinstance(expr, Call) or expr.args:
        assert parsed.graph.nodes[0].sizes[0].evaluate(env) == expr.evaluate(env)


# ---------------------------------------------------------------------------------------
# Generated programs: print → parse → print is a fixed point, and the structure survives

_NAMES = ["a", "b", "n", "x", "in", "node", "edge", "shape", "min", "out_1", "layout", "axes", "_"]
_FN_NAMES = ["f", "g", "node", "leaf", "f.1", "two words", "édition", 'q"uote\\', "tab\there"]


@st.composite
def port_types(draw: st.DrawFn) -> PortType:
    # Mostly two common types, so that edges and binds find ports to connect.
    name = draw(st.one_of(st.sampled_from(["i64", "f32"]), st.sampled_from(sorted(SCALAR_TYPES))))
    scalar = SCALAR_TYPES[name]
    kind = draw(st.sampled_from(["scalar", "scalar", "scalar", "array", "pointer", "node"]))
    if kind == "array":
        return ArrayType(scalar, draw(st.integers(1, 3)))
    if kind == "pointer":  # a pointer-only array (u8[*]: HPVM's pointer without its size)
        return ArrayType(scalar, 1, sized=False)
    return node_t if kind == "node" else scalar


@st.composite
def layouts(draw: st.DrawFn, rank: int) -> Layout | None:
    """No layout half the time, else one that fits a ``rank``-D array (distinct axes < rank)."""
    if draw(st.booleans()):
        return None
    kind = draw(st.sampled_from(KINDS))
    axes = None
    if kind != "replicated" and draw(st.booleans()):
        picks = draw(st.lists(st.one_of(st.none(), st.integers(0, rank - 1)), max_size=3))
        axes = tuple(a if a is None or a not in picks[:i] else None for i, a in enumerate(picks))
    return Layout(kind, draw(st.integers(1, 9)) if kind == "chunked" else None, axes)


def any_layouts() -> st.SearchStrategy[Layout]:
    """Any layout the text can hold, including ones the verifier rejects for a parameter."""
    axes = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 12)), max_size=3))
    return st.one_of(
        st.builds(Layout.block, axes),
        st.builds(Layout.chunked, st.integers(0, 99), axes),
        st.builds(Layout.strided, axes),
        st.just(Layout.replicated()),
    )


@st.composite
def param_lists(draw: st.DrawFn, max_size: int = 4) -> list[Param]:
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=max_size))
    params = []
    for n in names:
        t = draw(port_types())
        params.append(Param(n, t, draw(layouts(t.rank)) if isinstance(t, ArrayType) else None))
    return params


def grid_dims_needed(fn: NodeFunction) -> int:
    """The fewest dimensions a node of ``fn`` may have: its layouts' explicit grid axes."""
    return max([p.layout.min_grid_dims for p in fn.params if p.layout is not None], default=0)


@st.composite
def leaves(draw: st.DrawFn) -> LeafFunction:
    params = draw(param_lists())
    arrays = [p.name for p in params if isinstance(p.type, ArrayType)]
    ins = tuple(draw(st.lists(st.sampled_from(arrays), unique=True))) if arrays else ()
    outs = tuple(draw(st.lists(st.sampled_from(arrays), unique=True))) if arrays else ()
    return no_code_leaf(
        draw(st.sampled_from(_FN_NAMES)),
        params,
        draw(st.lists(port_types(), min_size=draw(st.integers(0, 1)), max_size=3)),
        ref="",
        hint=draw(st.sampled_from([None, *HINTS])),
        ins=ins,
        outs=outs,
        location=hpvm.errors.UNKNOWN_LOCATION,
    )


def size_exprs(ints: list[str], arrays: list[Param]) -> st.SearchStrategy[Expr]:
    atoms: list[st.SearchStrategy[Expr]] = [st.integers(-20, 50).map(Const)]
    if ints:
        atoms.append(st.sampled_from(ints).map(ParamExpr))
    if arrays:
        atoms.append(
            st.sampled_from(arrays).flatmap(
                lambda p: st.integers(0, p.type.rank - 1).map(lambda k: Shape(p.name, k))
            )
        )
    return st.recursive(
        st.one_of(atoms),
        lambda sub: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*", "//", "%"]), sub, sub).map(lambda t: BinOp(*t)),
            st.tuples(st.sampled_from(["min", "max"]), st.lists(sub, min_size=1, max_size=3)).map(
                lambda t: Call(t[0], tuple(t[1]))
            ),
        ),
        max_leaves=6,
    ).map(_valid_size)


def _valid_size(expr: Expr) -> Expr:
    """Sizes without parameters must be non-negative and mean the same with Python's and
    LLVM's division (the verifier evaluates them: ``ir/expr.py``, "Division")."""
    if expr.params():
        return expr
    try:
        value = expr.evaluate({})
        return expr if value >= 0 and truncated(expr, {}) == value else Const(3)
    except ZeroDivisionError:
        return Const(3)


@st.composite
def internals(draw: st.DrawFn, library: list[NodeFunction]) -> InternalFunction:
    """A valid internal function over functions defined before it (so the hierarchy is acyclic)."""
    params = draw(param_lists())
    graph = ChildGraph()
    children = draw(st.lists(st.sampled_from(library), min_size=1, max_size=4)) if library else []
    ints = [p.name for p in params if isinstance(p.type, ScalarType) and p.type.is_integer]
    arrays = [p for p in params if isinstance(p.type, ArrayType) and p.type.sized]  # (sizes need one)
    for fn in children:
        dims = draw(st.integers(grid_dims_needed(fn), 3))
        sizes = tuple(draw(size_exprs(ints, arrays)) for _ in range(dims))
        attrs = draw(st.dictionaries(st.sampled_from(_NAMES), st.text(max_size=6), max_size=2))
        graph.nodes.append(Node(graph.unique_name(fn.name), fn, sizes, attrs=attrs))
    fed: set[tuple[int, int]] = set()
    used_sources: set[tuple[int, int]] = set()
    # Edges go from an earlier node to a later one: acyclic, one feed per input, unique sources.
    for j, dst in enumerate(graph.nodes):
        for dp, p in enumerate(dst.function.params):
            candidates = [
                (i, sp)
                for i, src in enumerate(graph.nodes[:j])
                for sp, t in enumerate(src.function.out_types)
                if t == p.type and (i, sp) not in used_sources
            ]
            if candidates and draw(st.integers(0, 3)):  # an edge 3 times out of 4
                i, sp = draw(st.sampled_from(candidates))
                src = graph.nodes[i]
                repl = draw(st.sampled_from([ONE_TO_ONE, ALL_TO_ALL])) if src.dims == dst.dims else ALL_TO_ALL
                if repl == ONE_TO_ONE and any(
                    not a.params() and not b.params() and a.evaluate({}) != b.evaluate({})
                    for a, b in zip(src.sizes, dst.sizes)
                ):
                    repl = ALL_TO_ALL
                graph.edges.append(Edge(src, sp, dst, dp, repl, draw(st.booleans())))
                used_sources.add((i, sp))
                fed.add((j, dp))
    # Every other child input is bound to a parent input of its type (added if none exists).
    for j, node in enumerate(graph.nodes):
        for ic, p in enumerate(node.function.params):
            if (j, ic) in fed:
                continue
            same = [ip for ip, q in enumerate(params) if q.type == p.type]
            if not same:
                params.append(Param(f"p{len(params)}", p.type))
                same = [len(params) - 1]
            graph.in_binds.append(InputBind(draw(st.sampled_from(same)), node, ic, draw(st.booleans())))
    # Some child outputs become the parent's outputs, in a random order.
    free = [
        (j, oc)
        for j, n in enumerate(graph.nodes)
        for oc in range(len(n.function.out_types))
        if (j, oc) not in used_sources
    ]
    bound = draw(
        st.permutations(free).flatmap(lambda perm: st.integers(0, len(perm)).map(lambda k: perm[:k]))
    )
    for op, (j, oc) in enumerate(bound):
        graph.out_binds.append(OutputBind(graph.nodes[j], oc, op, draw(st.booleans())))
    arrays_all = [p.name for p in params if isinstance(p.type, ArrayType)]
    fn = InternalFunction(
        draw(st.sampled_from(_FN_NAMES)),
        params,
        graph=graph,
        hint=draw(st.sampled_from([None, *HINTS])),
        ins=tuple(draw(st.lists(st.sampled_from(arrays_all), unique=True))) if arrays_all else (),
    )
    if draw(st.booleans()):
        fn.declared_outputs = list(fn.out_types)
    return fn


@st.composite
def programs(draw: st.DrawFn) -> InternalFunction:
    library: list[NodeFunction] = []
    for _ in range(draw(st.integers(0, 6))):
        if library and draw(st.booleans()):
            library.append(draw(internals(library)))
        else:
            library.append(draw(leaves()))
    return draw(internals(library))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_round_trip(program: InternalFunction) -> None:
    verify(program)  # the generator makes valid programs
    parsed = round_trip(program)
    verify(parsed)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.data())
def test_any_layout_round_trips(program: InternalFunction, data: st.DataObject) -> None:
    """Layouts the verifier rejects (on scalars, axes beyond the rank, chunked(0)) print and
    parse back too: the parser leaves those rules to hpvm.verify."""
    for fn in functions(program):
        fn.params = [Param(p.name, p.type, data.draw(st.one_of(st.none(), any_layouts()))) for p in fn.params]
    round_trip(program)


# ---------------------------------------------------------------------------------------
# Malformed text: a ParseError at the right place, with a helpful message


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_program(text, file="bad.hpvm")
    return info.value


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("", 1, 1, "defines no function"),
        ("leaf @f() -> ()\n", 1, 1, "the last function is the root and must be internal"),
        ("internal @r( {\n}\n", 1, 14, "unexpected '{'; expected one of: ')'"),
        ("internal @r() {\n  %a = node @g\n}\n", 2, 13, "unknown function @g; the text defines @r"),
        ("leaf @g(x: f33) -> ()\ninternal @r() {\n}\n", 1, 12, "unknown type 'f33'"),
        ("leaf @g(x: f32[:, 3]) -> ()\ninternal @r() {\n}\n", 1, 19, "unexpected '3'; expected '*' or ':'"),
        (
            "leaf @g(x: u8[*, :]) -> ()\ninternal @r() {\n}\n",
            1,
            12,
            "or u8[*] for a pointer without its size",
        ),
        ("leaf @g() -> (f32[:, *])\ninternal @r() {\n}\n", 1, 15, "one dimension"),
        (
            "leaf @g(x: i64) -> ()\ninternal @r() {\n  %a = node @g\n  edge %a.0 -> %b.0 one_to_one\n}\n",
            4,
            16,
            "unknown node %b in @r; its nodes are %a",
        ),
        (
            "leaf @g() -> ()\ninternal @r() {\n  %a = node @g[1, 2, 3, 4]\n}\n",
            3,
            15,
            "at most three dimensions",
        ),
        (
            "leaf @g() -> ()\nleaf @g() -> ()\ninternal @r() {\n}\n",
            2,
            6,
            "function @g is defined twice (first at line 1)",
        ),
        ("internal @r() {\n  %a = node @r\n  %a = node @r\n}\n", 3, 3, "node %a is declared twice"),
        ("internal @r() {\n  %a = node @r[n $ 2]\n}\n", 2, 18, "unexpected character '$'"),
        (
            "internal @r() {\n  %a = node @r[foo(2)]\n}\n",
            2,
            16,
            "unknown function foo() in a size expression",
        ),
        ("internal @r() {\n  %a = node @r[n +]\n}\n", 2, 19, "unexpected ']'"),
        (
            "internal @r() {\n  %a = node @r\n  edge %a.x -> %a.0 one_to_one\n}\n",
            3,
            11,
            "output ports are numbered",
        ),
        (
            "leaf @g(x: i64) -> ()\ninternal @r() {\n  %a = node @g\n  bind in 0 -> %a.y\n}\n",
            4,
            19,
            "%a has no input named 'y' (its inputs: x)",
        ),
        (
            "internal @r(n: i64) {\n  %a = node @r\n  bind in m -> %a.0\n}\n",
            3,
            11,
            "@r has no input named 'm'",
        ),
        (
            "internal @r() {\n  %a = node @r\n  edge %a.0 -> %a.0 sideways\n}\n",
            3,
            21,
            "unexpected 'sideways'; expected one of: all_to_all, an integer, one_to_one",
        ),
        ("internal @r() hint(cpu) hint(gpu) {\n}\n", 1, 25, "@r has two hint(...) attributes"),
        ("internal @r() {\n  bind in 0 -> %a.0\n", 2, 19, "unexpected end of the text"),
        ("internal @r() {\n  node @r\n}\n", 2, 3, "unexpected 'node'"),
    ],
)
def test_malformed_text(text: str, line: int, column: int, message: str) -> None:
    e = parse_error(text)
    assert (e.line, e.column, e.file) == (line, column, "bad.hpvm")
    assert message in str(e)
    assert str(e).startswith(f"bad.hpvm:{line}:{column}: ")


def test_node_attributes_print_parse_and_reject_repeats() -> None:
    text = textwrap.dedent(
        """\
        # hpvm IR v1
        leaf @f(n: i64) -> ()
        internal @r(n: i64) {
          %a = node @f[n] {fuse = "a", "odd key" = "x \\"y\\""}
          bind in 0 -> %a.0
        }
        """
    )
    root = parse_program(text)
    assert root.graph.nodes[0].attrs == {"fuse": "a", "odd key": 'x "y"'}
    assert print_program(root) == text
    with pytest.raises(ParseError, match="node %a has two attributes named 'fuse'") as info:
        parse_program(text.replace('"odd key" = "x \\"y\\""', 'fuse = "b"'), "t.hpvm")
    assert (info.value.line, info.value.column) == (4, 32)


# ---------------------------------------------------------------------------------------
# Inputs that crashed the parser with Python's own errors: each is a ParseError now


def deep_sum(terms: int) -> str:
    return "internal @r(n: i64) {\n  %a = node @r[" + " + ".join(["n"] * terms) + "]\n}\n"


def test_a_size_expression_at_the_depth_limit_parses() -> None:
    root = parse_program(deep_sum(MAX_EXPR_DEPTH + 1))  # MAX_EXPR_DEPTH operators
    size = root.graph.nodes[0].sizes[0]
    assert size.depth == MAX_EXPR_DEPTH and size.evaluate({"n": 2}) == 2 * (MAX_EXPR_DEPTH + 1)
    assert print_program(parse_program(print_program(root))) == print_program(root)


@pytest.mark.parametrize("terms", [MAX_EXPR_DEPTH + 2, 1000, 5000])
def test_a_size_expression_nested_too_deep_is_a_parse_error(terms: int) -> None:
    e = parse_error(deep_sum(terms))  # was RecursionError (from ~500 terms)
    assert type(e) is ParseError and (e.line, e.column) == (2, 16)
    assert f"nests operators more than {MAX_EXPR_DEPTH} deep" in str(e)


def test_nested_min_calls_too_deep_are_a_parse_error() -> None:
    text = "internal @r(n: i64) {\n  %a = node @r[" + "min(" * 600 + "n" + ")" * 600 + "]\n}\n"
    e = parse_error(text)
    assert (e.line, type(e)) == (2, ParseError) and "more than 100 deep" in str(e)


BIG = "9" * 5000
LEAF = "leaf @f(a: f32[:]) -> ()\n"
ROOT = "internal @r(a: f32[:]) {\n  %a = node @f\n  bind in 0 -> %a.0\n}\n"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("internal @r(n: i64) {\n  %a = node @r[" + BIG + "]\n}\n", 2, 16),
        ("internal @r(n: i64) {\n  %a = node @r[-" + BIG + "]\n}\n", 2, 17),
        ("internal @r(n: i64) {\n  %a = node @r[n.shape[" + BIG + "]]\n}\n", 2, 24),
        ("leaf @f(a: f32[:] layout(chunked(" + BIG + "))) -> ()\n" + ROOT, 1, 34),
        ("leaf @f(a: f32[:] layout(block, axes(" + BIG + "))) -> ()\n" + ROOT, 1, 38),
        (LEAF + "internal @r(a: f32[:]) {\n  %a = node @f\n  bind in " + BIG + " -> %a.0\n}\n", 4, 11),
        (LEAF + "internal @r(a: f32[:]) {\n  %a = node @f\n  bind out %a.0 -> " + BIG + "\n}\n", 4, 20),
        (LEAF + "internal @r(a: f32[:]) {\n  %a = node @f\n  edge %a.0 -> %a.0 " + BIG + "\n}\n", 4, 21),
        ("leaf @f(a: f32[:]) -> f32[:] tensor {\n  %" + BIG + " = relu(a)\n  return a\n}\n" + ROOT, 2, 3),
        ("leaf @f(a: f32[:]) -> f32[:] tensor {\n  %0 = relu(a)\n  return %" + BIG + "\n}\n" + ROOT, 3, 10),
        ("leaf @f(a: f32[:]) -> f32[:] tensor {\n  %0 = add(a, " + BIG + ")\n  return %0\n}\n" + ROOT, 2, 15),
        ('leaf @f(a: f32[:]) -> () generated "x.c" lines(' + BIG + ") {\n| def f(a):\n}\n" + ROOT, 1, 48),
        ("leaf @f." + BIG + "(a: f32[:]) -> ()\n" + ROOT, 1, 6),
    ],
    ids=[
        "size",
        "negative size",
        "shape axis",
        "chunk",
        "layout axis",
        "input bind",
        "output bind",
        "replication",
        "tensor result",
        "tensor return",
        "tensor constant",
        "generated lines",
        "function index",
    ],
)
def test_an_integer_of_thousands_of_digits_is_a_parse_error(text: str, line: int, column: int) -> None:
    e = parse_error(text)  # was Python's ValueError about integer string conversion
    assert type(e) is ParseError and (e.line, e.column) == (line, column), str(e)
    assert "digits" in str(e)


def test_python_that_cannot_be_compiled_is_a_parse_error() -> None:
    deep = "| def f(a):\n|     return " + "+".join(["1"] * 100_000) + "\n"
    e = parse_error("leaf @f(a: f32[:]) -> () python {\n" + deep + "}\n" + ROOT)
    assert type(e) is ParseError and "Python cannot compile the code of leaf @f" in str(e)
    nul = "| def f(a):\n|     return '\x00'\n"
    e = parse_error("leaf @f(a: f32[:]) -> () python {\n" + nul + "}\n" + ROOT)
    assert type(e) is ParseError and "leaf @f" in str(e)


def test_syntax_errors_in_generated_bodies_keep_their_message() -> None:
    text = 'leaf @f(a: f32[:]) -> () generated "x.c" lines(1, 2) {\n| def f(a):\n|   return (\n}\n' + ROOT
    e = parse_error(text)
    assert (e.line, e.column) == (3, 10)
    assert str(e) == "bad.hpvm:3:10: invalid Python in the code of leaf 'f': '(' was never closed"


_FUZZ_BASE = """\
# hpvm IR v1
leaf @scale(x: f32[:] layout(chunked(4), axes(0)), k: f32) -> () hint(cpu) ins(x) outs(x) python {
  | def scale(x, k):
  |     x[0] = x[0] * k
}
leaf @act(x: f32[:, :, :, :]) -> f32[:, :, :, :] tensor {
  %0 = relu(x)
  %1 = add(%0, 1.5)
  return %1
}
leaf @gen(n: i64) -> i64 generated "g.c" lines(7, 8) {
  | def gen(n):
  |     return n + 1
}
leaf @ll(n: i64) -> () llvm @ll {
  | define void @ll(i64 %n) { ret void }
}
internal @inner(x: f32[:], k: f32, n: i64) -> (i64) {
  %s = node @scale[min(n, x.shape[0]) // 2 + 1, (n - 1) % 3] {fuse = "s"}
  %g = node @gen
  bind in x -> %s.x
  bind in 1 -> %s.1
  bind in 2 -> %g.0 stream
  edge %g.0 -> %g.0 all_to_all
  bind out %g.0 -> 0
}
internal @"root 1"(x: f32[:], k: f32, n: i64) {
  %i = node @inner[n]
  bind in 0 -> %i.0
  bind in 1 -> %i.1
  bind in 2 -> %i.2
}
"""
_FUZZ_TOKENS = [
    "@", "%", "(", ")", "[", "]", "{", "}", ",", ".", ":", "->", "=", "+", "-", "*", "//", "%0",
    '"', "\\u0000", "\\ud800", "#", "| ", "\n", "leaf", "internal", "node", "edge", "bind", "in",
    "out", "layout(", "axes(", "chunked(", "tensor", "python", "llvm", "generated", "stream",
    "one_to_one", "all_to_all", "min(", ".shape[", "f64", "i64[:]", "nan", "-inf", "1e999",
    "9" * 30, "9" * 5000, "\x00",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_text_parses_or_is_a_parse_error(data: st.DataObject) -> None:
    """Random edits of a program using every construct: each either parses or raises
    ParseError — never another exception from the parser, lark or Python."""
    text = _FUZZ_BASE
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["insert", "delete", "text", "number"]))
        numbers = [m.span() for m in re.finditer(r"[0-9]+", text)]
        if edit == "number" and numbers:  # a number becomes another: huge, negative, a name
            start, end = data.draw(st.sampled_from(numbers))
            text = (
                text[:start] + data.draw(st.sampled_from(["9" * 5000, "9" * 30, "-1", "x", ""])) + text[end:]
            )
        elif edit == "insert":
            text = text[:at] + data.draw(st.sampled_from(_FUZZ_TOKENS)) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 12)) :]
        else:
            text = text[:at] + data.draw(st.text(max_size=6)) + text[at:]
    try:
        parse_program(text, file="fuzz.hpvm")
    except ParseError:
        pass


# ---------------------------------------------------------------------------------------
# Pointer-only arrays: HPVM's pointer without its size


def test_pointer_only_arrays_print_and_parse() -> None:
    text = (
        "# hpvm IR v1\n"
        "leaf @f(a: u8[*], n: i64, b: f32[*]) -> (u8[*], i64) ins(a) outs(b)\n"
        "internal @r(a: u8[*], n: i64, b: f32[*]) {  # -> (u8[*], i64)\n"
        "  %f = node @f[n]\n"
        "  bind in 0 -> %f.0\n"
        "  bind in 1 -> %f.1\n"
        "  bind in 2 -> %f.2\n"
        "  bind out %f.0 -> 0\n"
        "  bind out %f.1 -> 1\n"
        "}\n"
    )
    root = parse_program(text)
    verify(root)
    leaf = root.graph.nodes[0].function
    assert (
        leaf.params[0].type
        == ArrayType(SCALAR_TYPES["u8"], 1, sized=False)
        != ArrayType(SCALAR_TYPES["u8"], 1)
    )
    assert print_program(root) == text


def test_a_sized_and_a_pointer_only_array_do_not_connect() -> None:
    text = "leaf @f(a: u8[:]) -> ()\ninternal @r(a: u8[*]) {\n  %f = node @f\n  bind in 0 -> %f.0\n}\n"
    with pytest.raises(hpvm.VerificationError, match=re.escape("u8[*]")) as info:
        verify(parse_program(text))
    assert "u8[:]" in str(info.value)
