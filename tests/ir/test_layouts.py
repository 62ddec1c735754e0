"""Data layouts (ir/layouts.py): who owns what, construction, the text spelling, the
verifier's layout rules and the parser's layout errors."""

from __future__ import annotations

import math
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import UNKNOWN_LOCATION, ParseError, VerificationError
from hpvm.ir.expr import Const
from hpvm.ir.graph import ChildGraph, InputBind, InternalFunction, Node, Param
from hpvm.ir.layouts import KINDS, Layout
from hpvm.ir.parser import no_code_leaf, parse_program
from hpvm.ir.printer import print_program
from hpvm.ir.program_file import load_program, save_program
from hpvm.ir.types import ArrayType, f32, i64
from markers import SourceMarkers, fails

MARKS = SourceMarkers(__file__)
at = MARKS.at

# ---------------------------------------------------------------------------------------
# Strategies


def axes_for(rank: int, dims: int) -> st.SearchStrategy[tuple[int | None, ...] | None]:
    """Valid axes for a ``rank``-D array on a ``dims``-D grid: array axes (an axis may be
    named by several grid dimensions, which partition it together) or None."""
    explicit = st.lists(st.one_of(st.none(), st.integers(0, rank - 1)), min_size=0, max_size=dims)
    return st.one_of(st.none(), explicit.map(tuple))


def partitioning_layouts(rank: int, dims: int) -> st.SearchStrategy[Layout]:
    """block, chunked(c) and strided layouts that fit the array and the grid."""
    return st.tuples(
        st.sampled_from(["block", "chunked", "strided"]), st.integers(1, 6), axes_for(rank, dims)
    ).map(lambda t: Layout(t[0], t[1] if t[0] == "chunked" else None, t[2]))


@st.composite
def cases(draw: st.DrawFn) -> tuple[Layout, tuple[int, ...], tuple[int, ...]]:
    """A layout, an array shape it fits, and a grid it fits."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 23), min_size=rank, max_size=rank)))
    dims = draw(st.integers(0, 3))
    grid = tuple(draw(st.lists(st.integers(1, 5), min_size=dims, max_size=dims)))
    return draw(partitioning_layouts(rank, dims)), shape, grid


def any_layouts() -> st.SearchStrategy[Layout]:
    """Every layout the constructor accepts, valid or not for a given parameter."""
    axes = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=3).map(tuple))
    return st.one_of(
        st.builds(Layout.block, axes),
        st.builds(Layout.chunked, st.integers(0, 100), axes),
        st.builds(Layout.strided, axes),
        st.just(Layout.replicated()),
    )


def elements(ranges: list[range]) -> list[int]:
    return [e for r in ranges for e in r]


# ---------------------------------------------------------------------------------------
# owned(): the contract of the module docstring


def oracle_owner(layout: Layout, n: int, extent: int, e: int) -> int:
    """Which instance along the partitioning grid dimension owns element ``e`` (independent
    of ``owned``: straight from the docstring's definitions)."""
    if layout.kind == "block":
        return e // math.ceil(n / extent)
    chunk = 1 if layout.kind == "strided" else layout.chunk
    assert chunk is not None
    return (e // chunk) % extent


@settings(max_examples=300, deadline=None)
@given(cases(), st.data())
def test_owned_partitions_every_partitioned_axis_exactly_once(case, data) -> None:  # type: ignore[no-untyped-def]
    layout, shape, grid = case
    mapping = layout.grid_axes(len(shape), len(grid))
    base = tuple(data.draw(st.integers(0, g - 1)) for g in grid)
    for axis, n in enumerate(shape):
        dims = [d for d, a in enumerate(mapping) if a == axis]  # partitioning it together
        if not dims:
            continue
        extent = math.prod(grid[d] for d in dims)
        seen: list[int] = []
        for i, point in enumerate(product(*(range(grid[d]) for d in dims))):  # row-major
            ids = list(base)
            for d, v in zip(dims, point):
                ids[d] = v
            mine = layout.owned(shape, grid, tuple(ids))[axis]
            assert all(len(r) > 0 for r in mine), "ranges are non-empty"
            flat = elements(mine)
            assert flat == sorted(flat), "ranges are in increasing order"
            assert flat == [e for e in range(n) if oracle_owner(layout, n, extent, e) == i]
            seen.extend(flat)
        assert sorted(seen) == list(range(n)), f"axis {axis} not partitioned exactly once"


@settings(max_examples=200, deadline=None)
@given(cases(), st.data())
def test_unpartitioned_axes_are_owned_whole_and_other_dimensions_replicate(case, data) -> None:  # type: ignore[no-untyped-def]
    layout, shape, grid = case
    mapping = layout.grid_axes(len(shape), len(grid))
    ids = tuple(data.draw(st.integers(0, g - 1)) for g in grid)
    owned = layout.owned(shape, grid, ids)
    for axis, n in enumerate(shape):
        if axis not in mapping:
            assert elements(owned[axis]) == list(range(n))
    for dim, g in enumerate(grid):
        if mapping[dim] is None:  # moving along this grid dimension changes nothing
            other = ids[:dim] + ((ids[dim] + 1) % g,) + ids[dim + 1 :]
            assert layout.owned(shape, grid, other) == owned


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.integers(1, 7), st.data())
def test_kinds_agree_where_they_should(n: int, extent: int, data) -> None:  # type: ignore[no-untyped-def]
    i = data.draw(st.integers(0, extent - 1))
    as_block = Layout.block().owned((n,), (extent,), (i,))
    per = max(1, math.ceil(n / extent))
    assert elements(Layout.chunked(per).owned((n,), (extent,), (i,))) == elements(as_block)
    strided = Layout.strided().owned((n,), (extent,), (i,))
    assert strided == Layout.chunked(1).owned((n,), (extent,), (i,))
    assert len(strided) <= 1, "strided is one stepped range"


def test_block_blocks_may_be_short_or_empty() -> None:
    def sizes(n: int, extent: int) -> list[int]:
        return [len(elements(Layout.block().owned((n,), (extent,), (i,))[0])) for i in range(extent)]

    assert sizes(10, 4) == [3, 3, 3, 1]  # the docstring's examples
    assert sizes(4, 3) == [2, 2, 0]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=3), st.lists(st.integers(1, 4), max_size=3), st.data()
)
def test_replicated_instances_own_everything(shape, grid, data) -> None:  # type: ignore[no-untyped-def]
    ids = tuple(data.draw(st.integers(0, g - 1)) for g in grid)
    owned = Layout.replicated().owned(shape, grid, ids)
    assert [elements(o) for o in owned] == [list(range(n)) for n in shape]


def test_default_axes_follow_rank_and_grid() -> None:
    layout = Layout.block()
    assert layout.grid_axes(2, 2) == (0, 1)
    assert layout.grid_axes(1, 3) == (0, None, None)  # a 1-D array on a 3-D grid: x only
    assert layout.grid_axes(3, 1) == (0,)
    assert Layout.block(axes=(None, 0)).grid_axes(2, 3) == (None, 0, None)
    assert Layout.block(axes=(None, 0)).min_grid_dims == 2 and Layout.block().min_grid_dims == 0
    # Every instance of a 2-D grid owns its tile of a 2-D array.
    tiles = {
        ids: [elements(r) for r in Layout.block().owned((4, 6), (2, 3), ids)]
        for ids in product(range(2), range(3))
    }
    cells = [(r, c) for rows, cols in tiles.values() for r in rows for c in cols]
    assert sorted(cells) == [(r, c) for r in range(4) for c in range(6)]


@pytest.mark.parametrize(
    ("layout", "shape", "grid", "ids", "fragment"),
    [
        (Layout.block(), (4,), (2,), (2,), "is not in grid"),
        (Layout.block(), (4,), (2,), (), "one id per dimension"),
        (Layout.block(axes=(None, 0)), (4,), (2,), (0,), "needs a grid of 2 dimensions"),
        (Layout.block(axes=(1,)), (4,), (2,), (0,), "does not fit an array of shape (4,)"),
        (Layout.chunked(0), (4,), (2,), (0,), "at least one element"),
    ],
)
def test_owned_refuses_what_does_not_fit(layout, shape, grid, ids, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        layout.owned(shape, grid, ids)


# ---------------------------------------------------------------------------------------
# Construction and the text spelling


def test_constructors_and_equality() -> None:
    assert Layout.block() == Layout("block")
    assert Layout.chunked(4, axes=[0]) == Layout("chunked", 4, (0,))
    assert Layout.block(axes=(0, None, None)) == Layout.block(axes=(0,)), "trailing None dropped"
    assert Layout.block(axes=(None,)).axes == () != Layout.block().axes
    assert hash(Layout.strided(axes=(1, 0))) == hash(Layout.strided(axes=[1, 0]))
    assert Layout.strided().chunk_size == 1 and Layout.block().chunk_size is None
    assert set(KINDS) == {"block", "chunked", "strided", "replicated"}
    assert hpvm.Layout is Layout and "Layout" in hpvm.__all__


@pytest.mark.parametrize(
    ("make", "error", "fragment"),
    [
        (lambda: Layout("blocked"), ValueError, "unknown layout 'blocked'"),
        (lambda: Layout("block", 4), ValueError, "only chunked layouts take a chunk size"),
        (lambda: Layout("chunked"), ValueError, "needs a chunk size"),
        (lambda: Layout.chunked(2.5), ValueError, "is an integer, not 2.5"),
        (lambda: Layout.chunked(True), ValueError, "is an integer"),
        (lambda: Layout("replicated", axes=(0,)), ValueError, "partitions no axis"),
        (lambda: Layout.block(axes=(0, 1, 2, 3)), ValueError, "three grid dimensions"),
        (lambda: Layout.block(axes=("x",)), ValueError, "not 'x'"),
        (lambda: Layout.block(axes="x"), TypeError, "axes=(None, 0)"),
    ],
)
def test_constructor_refuses_nonsense(make, error, fragment) -> None:  # type: ignore[no-untyped-def]
    with fails(error, fragment):
        make()


@given(any_layouts())
def test_text_spelling_round_trips(layout: Layout) -> None:
    text = str(layout)
    assert Layout.parse(text) == layout
    assert str(Layout.parse(text)) == text


def test_text_spelling() -> None:
    assert str(Layout.chunked(4, axes=(None, 0))) == "chunked(4), axes(_, 0)"
    assert Layout.parse("  strided ,axes( 1 ,_ ,0 )") == Layout.strided(axes=(1, None, 0))
    assert Layout.parse("replicated") == Layout.replicated()


@pytest.mark.parametrize(
    ("text", "where", "fragment"),
    [
        ("blok", "blok", "unknown layout 'blok'; did you mean block?"),
        ("tiles", "tiles", "the layouts are block, chunked(N), strided, replicated"),
        ("chunked", "chunked", "a chunked layout needs a chunk size, e.g. chunked(4)"),
        ("block(3)", "3", "only chunked layouts take a chunk size; write block, not block(3)"),
        ("replicated, axes(0)", "axes", "a replicated layout partitions no axis"),
        ("block, axes(0, 1, 2, 0)", "axes", "axes(...) has 4 entries"),
        ("chunked(-1)", "-", "unexpected '-'; expected an integer"),
        ("block axes(0)", "axes", "unexpected 'axes'; expected one of: '(', ',', the end of the text"),
        ("block, axes(y)", "y", "unexpected 'y'"),
    ],
)
def test_layout_parse_errors_point_at_the_problem(text: str, where: str, fragment: str) -> None:
    with fails(ParseError, fragment) as info:
        Layout.parse(text)
    assert (info.value.line, info.value.column) == (1, text.index(where) + 1)
    assert str(info.value).startswith(f"<layout>:1:{text.index(where) + 1}: ")


# ---------------------------------------------------------------------------------------
# The text form of programs


LAID_OUT = """\
# hpvm IR v1
leaf @tile(a: f32[:, :] layout(block), b: f32[:] layout(chunked(4), axes(0)), n: i64) -> () ins(a) outs(b)
internal @root(a: f32[:, :] layout(strided, axes(_, 1)), b: f32[:] layout(replicated), n: i64) {
  %tile = node @tile[n, n]
  bind in 0 -> %tile.0
  bind in 1 -> %tile.1
  bind in 2 -> %tile.2
}
"""


def test_program_text_with_layouts_round_trips() -> None:
    root = parse_program(LAID_OUT)
    assert print_program(root) == LAID_OUT
    tile = root.graph.nodes[0].function
    assert [p.layout for p in tile.params] == [Layout.block(), Layout.chunked(4, axes=(0,)), None]
    assert root.params[0].layout == Layout.strided(axes=(None, 1))
    assert str(root.params[1]) == "b: f32[:] layout(replicated)"
    hpvm.verify(root)


def test_keywords_of_layouts_stay_usable_as_names() -> None:
    text = LAID_OUT.replace("n: i64", "layout: i64").replace("[n, n]", "[layout, axes]")
    text = text.replace("b: f32[:] layout(replicated)", "b: f32[:] layout(replicated), axes: i64")
    root = parse_program(text)
    assert print_program(root) == text


def _program_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_program(text, file="bad.hpvm")
    assert type(info.value) is ParseError
    return info.value


@pytest.mark.parametrize(
    ("bad", "where", "fragment"),
    [
        ("layout(bloc)", "bloc", "unknown layout 'bloc'; did you mean block?"),
        ("layout(block", "b: f32", "unexpected 'b'; expected 'axes'"),
        ("layout block", "block", "unexpected 'block'; expected '('"),
        ("layout(chunked)", "chunked", "needs a chunk size"),
        ("layout(block, axes(0, x))", "x))", "unexpected 'x'"),
        ("layout()", ")", "unexpected ')'; expected a name"),
    ],
)
def test_malformed_layout_in_program_text(bad: str, where: str, fragment: str) -> None:
    lines = LAID_OUT.splitlines()
    lines[1] = lines[1].replace("layout(block)", bad)
    e = _program_error("\n".join(lines) + "\n")
    assert (e.line, e.column, e.file) == (2, lines[1].index(where) + 1, "bad.hpvm")
    assert fragment in str(e)


def test_layouts_the_verifier_rejects_still_round_trip() -> None:
    """The parser leaves rules to the verifier: any layout can be written down and read back."""
    text = LAID_OUT.replace("n: i64) -> ()", "n: i64 layout(chunked(0), axes(7, 7))) -> ()")
    root = parse_program(text)
    assert print_program(root) == text
    with fails(VerificationError, "parameter 'n' (i64) has layout(chunked(0), axes(7, 7))"):
        hpvm.verify(root)


# ---------------------------------------------------------------------------------------
# The verifier's layout rules


def test_layout_on_a_scalar() -> None:
    with fails(
        VerificationError,
        f"leaf 'scalar_laid_out' ({at('scalar')}): parameter 'n' (i64) has layout(block), but only "
        "array parameters carry layouts; remove the layout of 'n' or make it an array",
    ):

        @hpvm.leaf(ins=("a",), layouts={"n": Layout.block()})  # @scalar
        def scalar_laid_out(a: hpvm.f32[:], n: hpvm.i64) -> None:
            pass


def test_axis_outside_the_rank() -> None:
    with fails(
        VerificationError,
        f"internal 'rank_too_small' ({at('rank')}): parameter 'a' (f32[:]) has "
        "layout(block, axes(_, 1)): grid dimension y partitions axis 1, but a 1-D array has "
        "axes 0..0; name an axis below 1, or _ for a grid dimension that partitions nothing",
    ):

        @hpvm.internal(layouts={"a": "block, axes(_, 1)"})  # @rank
        def rank_too_small(a: hpvm.f32[:]):
            pass


@pytest.mark.parametrize(
    "layout", [Layout.block(axes=(0, 0)), Layout.chunked(3, axes=(0, 0)), Layout.strided(axes=(0, 0))]
)
def test_two_grid_dimensions_partition_one_axis_together_in_row_major_order(layout: Layout) -> None:
    """``axes(0, 0)``: the instances of a 3×4 grid numbered t = x·4 + y share a vector as
    the 12 instances of a 1-D grid would (HBIR's tile order)."""
    n, grid = 50, (3, 4)
    for x, y in product(range(3), range(4)):
        assert layout.owned((n,), grid, (x, y)) == Layout(layout.kind, layout.chunk).owned(
            (n,), (12,), (x * 4 + y,)
        )
    owned = [
        e for x, y in product(range(3), range(4)) for r in layout.owned((n,), grid, (x, y))[0] for e in r
    ]
    assert sorted(owned) == list(range(n))


def test_x_and_z_partition_one_axis_together() -> None:
    @hpvm.leaf(ins=("a",), layouts={"a": Layout.strided(axes=(1, None, 1))})
    def together(a: hpvm.f32[:, :]) -> None:
        pass

    layout = Layout.strided(axes=(1, None, 1))
    # grid 2×5×3: x and z number the instances x·3 + z; y partitions nothing
    assert layout.owned((4, 10), (2, 5, 3), (1, 4, 2)) == [[range(4)], [range(5, 10, 6)]]


def test_chunk_below_one() -> None:
    with fails(
        VerificationError,
        f"leaf 'empty_chunks' ({at('chunk')}): parameter 'a' (f32[:]) has layout(chunked(0)): a "
        "chunk of 0 elements; chunks hold at least one element — write chunked(1) or more",
    ):

        @hpvm.leaf(ins=("a",), layouts={"a": Layout.chunked(0)})  # @chunk
        def empty_chunks(a: hpvm.f32[:]) -> None:
            pass


def test_every_layout_problem_is_reported_at_once() -> None:
    leaf = no_code_leaf(
        "many",
        [
            Param("a", ArrayType(f32, 2), Layout.chunked(0, axes=(2, 2))),
            Param("n", i64, Layout.replicated()),
            Param("b", ArrayType(f32, 1), "block"),  # type: ignore[arg-type]
        ],
        [],
        ref="@many",
        hint=None,
        ins=("a", "b"),
        outs=(),
        location=UNKNOWN_LOCATION,
    )
    graph = ChildGraph()
    node = Node("many", leaf, (Const(2), Const(2)))  # the grid axes(2, 2) asks for
    graph.nodes.append(node)
    params = [Param(p.name, p.type) for p in leaf.params]
    graph.in_binds.extend(InputBind(i, node, i) for i in range(3))
    root = InternalFunction("r", params, graph=graph)
    with fails(VerificationError, "5 problems") as info:
        hpvm.verify(root)
    problems = info.value.problems
    assert sum("chunks hold at least one element" in p for p in problems) == 1
    assert sum("partitions axis 2, but a 2-D array" in p for p in problems) == 2
    assert any("parameter 'n' (i64) has layout(replicated), but only array" in p for p in problems)
    assert any("layout 'block', which is not an hpvm.Layout" in p for p in problems)
    assert all(p.startswith("leaf 'many' (<unknown>:0): parameter ") for p in problems)


@hpvm.leaf(ins=("a",), outs=("a",), layouts={"a": Layout.block(axes=(None, 0))})  # @over-y
def over_y(a: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = 0.0


def test_node_needs_the_grid_dimensions_its_layouts_name() -> None:
    @hpvm.internal
    def flat(a: hpvm.f32[:], n: hpvm.i64):
        node = hpvm.create_node_1d(over_y, n)  # @flat-node
        hpvm.bind_in(node, 0, 0)

    with fails(
        VerificationError,
        f"node 'over_y' ({at('flat-node')}) in 'flat': leaf 'over_y' ({at('over-y')}) gives "
        "parameter 'a' layout(block, axes(_, 0)), which partitions over grid dimension y, but "
        "the node is replicated in 1 dimension(s); replicate it in at least 2 "
        "(hpvm.create_node_2d) or drop grid dimension y from the layout's axes",
    ):
        hpvm.verify(flat)


def test_a_grid_with_enough_dimensions_verifies() -> None:
    @hpvm.internal(layouts={"a": Layout.block()})
    def square(a: hpvm.f32[:], n: hpvm.i64):
        node = hpvm.create_node_2d(over_y, 1, n)
        hpvm.bind_in(node, 0, 0)

    hpvm.verify(square)
    assert square.params[0].layout == Layout.block()


# ---------------------------------------------------------------------------------------
# Saved programs keep their layouts, and back ends that ignore layouts run them unchanged


@hpvm.leaf(ins=("a",), outs=("b",), layouts={"a": Layout.strided(), "b": Layout.block(axes=(0,))})
def shift(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] + 1


@hpvm.internal(ins=("a",), outs=("b",), layouts={"a": Layout.chunked(3)})
def shifted(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(shift, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_saved_programs_keep_layouts_and_run(tmp_path: Path) -> None:
    path = tmp_path / "shifted.hpvm"
    save_program(shifted, path)
    loaded = load_program(path)
    assert print_program(loaded.root) == print_program(shifted)
    leaf = loaded.root.graph.nodes[0].function
    assert [p.layout for p in leaf.params] == [p.layout for p in shift.params]
    a = np.arange(5, dtype=np.float32)
    b = np.zeros(5, dtype=np.float32)
    hpvm.init()
    try:
        for array in (a, b):
            hpvm.track_memory(array)
        hpvm.wait(hpvm.launch(loaded.root, (a, b, 5), target="interp"))
        hpvm.request_memory(b)
    finally:
        hpvm.cleanup()
    assert b.tolist() == (a + 1).tolist()
