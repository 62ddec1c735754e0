"""Shared for the HBIR tests: the example programs' paths and a generator of random valid
syntax trees (for the round-trip and fuzz properties)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from hpvm.hbir import ast as A

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "hbir"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.hbir"))

KEYWORDS = {
    "target", "config", "data", "code", "memory", "tile", "group", "temporal", "const", "layout",
    "in", "out", "int", "float", "bool", "if", "else", "while", "for", "iterator", "break",
    "continue", "true", "false",
}  # fmt: skip

names = st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True).filter(lambda s: s not in KEYWORDS)
elems = st.sampled_from(["int", "float", "bool"])


def _leaf_exprs() -> st.SearchStrategy:
    return st.one_of(
        st.integers(0, 10**6).map(lambda v: A.IntLit(v)),
        st.floats(0, 1e6, allow_nan=False, allow_infinity=False).map(lambda v: A.FloatLit(v)),
        st.booleans().map(lambda v: A.BoolLit(v)),
        st.lists(names, min_size=1, max_size=3).map(lambda p: A.Ref(tuple(p))),
    )


OPS = ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"]

exprs = st.recursive(
    _leaf_exprs(),
    lambda inner: st.one_of(
        st.builds(A.Binary, st.sampled_from(OPS), inner, inner),
        st.builds(A.Unary, st.sampled_from(["-", "!"]), inner),
        st.builds(A.Index, inner.filter(lambda e: isinstance(e, (A.Ref, A.Index))), inner),
        st.builds(A.Call, names, st.lists(inner, max_size=3).map(tuple)),
        st.builds(A.Cond, inner, inner, inner),
    ),
    max_leaves=8,
)
lvalues = st.recursive(
    names.map(lambda n: A.Ref((n,))), lambda inner: st.builds(A.Index, inner, exprs), max_leaves=3
)
array_inits = st.recursive(
    st.lists(exprs, max_size=3).map(lambda items: A.ArrayInit(tuple(items))),
    lambda inner: st.lists(inner | exprs, max_size=3).map(lambda items: A.ArrayInit(tuple(items))),
    max_leaves=4,
)
simple_stmts = st.one_of(
    st.builds(A.VarDecl, elems, names, st.none() | exprs),
    st.builds(
        A.VarDecl, elems, names, st.none() | array_inits, st.lists(exprs, min_size=1, max_size=2).map(tuple)
    ),
    st.builds(A.Assign, lvalues, st.sampled_from(["=", "+=", "-=", "*=", "/=", "%="]), exprs),
    st.builds(
        A.ExprStmt,
        st.builds(A.Call, names, st.lists(exprs | names.map(lambda s: A.StrLit(s)), max_size=2).map(tuple)),
    ),
)
stmts = st.recursive(
    simple_stmts | st.just(A.Break()) | st.just(A.Continue()),
    lambda inner: st.one_of(
        st.builds(
            A.If,
            exprs,
            st.lists(inner, max_size=2).map(tuple),
            st.none() | st.lists(inner, max_size=2).map(tuple),
        ),
        st.builds(A.While, exprs, st.lists(inner, max_size=2).map(tuple)),
        st.builds(
            A.For,
            st.none() | st.builds(A.VarDecl, elems, names, exprs),
            st.none() | exprs,
            st.none() | st.builds(A.Assign, lvalues, st.just("+="), exprs),
            st.lists(inner, max_size=2).map(tuple),
        ),
        st.builds(
            A.ForIn,
            st.just("int"),
            names,
            st.lists(exprs, min_size=1, max_size=4).map(tuple),
            st.lists(inner, max_size=2).map(tuple),
        ),
        st.builds(A.Compound, st.lists(inner, max_size=2).map(tuple)),
    ),
    max_leaves=6,
)
tile_dims = st.lists(exprs, max_size=2).map(tuple)  # tile arrays: one or two dimensions
dims = st.lists(exprs, max_size=5).map(tuple)  # groups, memories, arrays, grids: any number
mem_values = st.sampled_from(["8G", "16K", "8B", "4", "?", "1MB"])
memories = st.builds(
    A.Memory, names, dims, st.lists(st.builds(A.MemField, names, mem_values), max_size=2).map(tuple)
)
targets = st.builds(
    A.Target,
    st.lists(
        memories | st.builds(A.Tile, names, tile_dims, st.none() | st.lists(memories, max_size=1).map(tuple)),
        max_size=3,
    ).map(tuple),
)
groups = st.recursive(
    st.builds(
        A.Group,
        names,
        dims,
        st.lists(st.builds(A.TileMap, exprs) | st.builds(A.Temporal, st.none() | exprs), max_size=2).map(
            tuple
        ),
    ),
    lambda inner: st.builds(
        A.Group, names, dims, st.lists(inner | st.builds(A.TileMap, exprs), max_size=2).map(tuple)
    ),
    max_leaves=3,
)
configs = st.builds(A.Config, st.lists(groups, max_size=2).map(tuple))
data_items = st.one_of(
    st.builds(A.Const, names, exprs, st.booleans()),
    st.builds(A.LayoutDecl, names, st.lists(exprs, max_size=3).map(tuple)),
    st.builds(
        A.ArrayDecl, names, elems, dims, st.none() | st.builds(A.Distribution, names, dims), st.lists(exprs, max_size=3).map(tuple)
    ),
    st.builds(
        A.IOArrayDecl, st.sampled_from(["in", "out"]), names, elems, dims,
        st.lists(st.builds(A.Prop, names | st.just("layout"), exprs), max_size=2).map(tuple),
    ),
)  # fmt: skip


def _lotus_array(name: str, elem: str, memory: str, axes: int, flags: list[A.Expr]) -> A.ArrayDecl:
    """Lotus's form: ``A: int[n] = block[target.g.x_max] { target.g[x]; chunked; host; };``."""
    grid = tuple(A.Ref(("target", memory, f"{'xyzw'[k]}_max")) for k in range(axes))
    place = A.Ref(("target", memory))
    for k in range(axes):
        place = A.Index(place, A.Ref(("xyzw"[k],)))
    return A.ArrayDecl(name, elem, (A.Ref(("n",)),), A.Distribution("block", grid), (place, *flags))


lotus_arrays = st.builds(
    _lotus_array, names, elems, names, st.integers(1, 4),
    st.lists(st.sampled_from(["global", "local", "chunked", "host", "device"]).map(lambda w: A.Ref((w,))), max_size=3),
)  # fmt: skip
datas = st.builds(A.Data, st.lists(data_items | lotus_arrays, max_size=4).map(tuple))
blocks = st.builds(
    A.Block,
    names,
    st.lists(names.map(lambda n: A.Ref((n,))) | st.integers(0, 9).map(A.IntLit), max_size=5).map(tuple),
    st.lists(stmts, max_size=3).map(tuple),
)
codes = st.builds(
    A.Code, st.lists(st.builds(A.VarDecl, elems, names, st.none() | exprs) | blocks, max_size=3).map(tuple)
)
programs = st.builds(A.Program, st.lists(st.one_of(targets, configs, datas, codes), max_size=4).map(tuple))
