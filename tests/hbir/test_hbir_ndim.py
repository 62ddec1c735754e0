"""Arrays, groups and memories of any number of dimensions: coordinates and extents past
y (``z``, ``w``, ``x4``...), groups of more than three dimensions on hpvm's 3-D grids,
the iterator and the ownership over N-D grids."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import hbir
from hpvm.hbir import HBIRCheckError
from hpvm.hbir.model import LayoutInfo
from hpvm.hbir.ownership import owned_by
from hpvm.ir import Layout
from markers import fails

MACHINE = """target { memory g[2][3][2] { size 1K; width 4B; }; tile t[4][8]; }
config {
    group cube[2][2][2] { tile target.t[x][y * 2 + z]; };
    group hyper[2][2][2][2] { tile target.t[x + 2][(y * 2 + z) * 2 + w]; };
}
"""


def program(data: str, code: str) -> hbir.HBIRProgram:
    return hbir.parse(MACHINE + "data { " + data + " }\ncode { " + code + " }\n", "nd.hbir")


@pytest.mark.parametrize("layout", ["block", "chunked(3)", "strided", "chunked"])
@pytest.mark.parametrize(
    ("group", "coords"), [("cube", "i, j, k"), ("hyper", "i, j, k, l")], ids=["3-D", "4-D"]
)
def test_the_iterator_over_an_nd_group_visits_the_tiles_ownership(
    layout: str, group: str, coords: str
) -> None:
    dims = (2, 2, 2) if group == "cube" else (2, 2, 2, 2)
    binders = coords.split(", ")
    number = binders[0]
    for b, d in zip(binders[1:], dims[1:]):
        number = f"({number}) * {d} + {b}"
    p = program(
        f"n = 37; layout L {{ global; {layout}; }}; out O : int[n] {{ }}",
        f"config.{group}[{']['.join(binders)}] {{ for (int e in iterator<n, L, {coords}>) {{ O[e] = {number} + 1; }} }}",
    )
    out = p.run({}, target="interp")["O"]
    tiles = int(np.prod(dims))
    kind = "block" if layout == "chunked" else layout
    for t in range(tiles):
        want = [i for r in Layout.parse(kind).owned((37,), (tiles,), (t,))[0] for i in r]
        assert list(np.flatnonzero(out == t + 1)) == want


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_coordinates_and_extents_past_y(target: str) -> None:
    p = program(
        "out Q : int[2][2][2][2] { location : config.hyper, layout : block } out E : int[12] { }",
        "config.hyper[a][b][c][d] { Q[a][b][c][d] = a * 1000 + b * 100 + c * 10 + d; }\n"
        "config.hyper[1][0][1][d] { E[d] = hyper.z + hyper.w + z_max * 10 + w_max * 100; }\n"
        "config.cube[0][0][0] { E[4] = target.g.x_max; E[5] = target.g.y_max; E[6] = target.g.z_max;"
        " E[7] = target.g.count; E[8] = cube.z_max; }",
    )
    out = p.run({}, target=target)
    q = np.fromfunction(lambda a, b, c, d: a * 1000 + b * 100 + c * 10 + d, (2, 2, 2, 2), dtype=int)
    assert np.array_equal(out["Q"], q)
    assert out["E"].tolist()[:9] == [221, 222, 0, 0, 2, 3, 2, 12, 2]


def test_groups_past_three_dimensions_fold_onto_hpvms_z() -> None:
    p = program(
        "out Q : float[4][4][4] { location : config.cube, layout : block } out S : int[16] { location : config.hyper, layout : strided }",
        "config.cube[i][j][k] { Q[i][j][k] = 1.0; }\nconfig.hyper[a][b][c][d] { S[a] = 1; }",
    )
    cube, hyper = p.to_hpvm().graph.nodes
    assert [s.value for s in cube.sizes] == [2, 2, 2] and [s.value for s in hyper.sizes] == [2, 2, 4]
    assert cube.function.params[0].layout == Layout.block()  # hpvm's own 3-D grid
    assert hyper.function.params[0].layout is None  # no hpvm layout for a 4-D grid (docs/hbir.md)


def test_a_3d_partition_over_3d_memories_places_and_counts_each_part() -> None:
    p = program(
        "m = 12; A: int[m][m][m] = block[target.g.x_max][target.g.y_max][target.g.z_max] "
        "{ target.g[x][y][z]; host; };",
        "config.cube[i][j][k] { }",
    )
    model = p.check()
    assert model.arrays["A"].parts[(1, 2, 1)] == (1, 2, 1)
    with fails(HBIRCheckError, "array 'A' 1536 bytes do not fit memory target.g[0][0][0]", "holds 1024"):
        program(
            "m = 16; A: int[m][m][m] = block[target.g.x_max][target.g.y_max][target.g.z_max] "
            "{ target.g[x][y][z]; chunked; host; };",
            "config.cube[i][j][k] { }",
        ).check()


def test_nd_problems_are_located() -> None:
    with fails(HBIRCheckError, "4 coordinate(s) of a tile of group 'hyper': iterator<n, L, x, y, z, w>"):
        program("n = 4;", "config.hyper[a][b][c][d] { for (int e in iterator<n, block, a, b>) { } }").check()
    with fails(HBIRCheckError, "'cube.w' is not declared"):
        program("out O : int[2] { }", "config.cube[i][j][k] { O[0] = cube.w; }").check()


SHAPES = st.lists(st.integers(0, 9), min_size=1, max_size=4).map(tuple)
GRIDS = st.lists(st.integers(1, 4), min_size=1, max_size=5).map(tuple)
KINDS = st.sampled_from(
    [LayoutInfo("block"), LayoutInfo("chunked", 2), LayoutInfo("strided"), LayoutInfo("chunked")]
)


@settings(max_examples=150, deadline=None)
@given(SHAPES, GRIDS, KINDS)
def test_ownership_partitions_every_array_over_every_grid(shape, grid, layout) -> None:
    """Any rank over any grid: the parts cover every element once, and up to three grid
    dimensions they are hpvm's layouts' own (the ports the lowering writes)."""
    counts = np.zeros(shape, int)
    for ids in np.ndindex(*grid):
        parts = owned_by(layout, shape, grid, ids)
        if len(grid) <= 3:
            assert parts == layout.to_layout(len(shape), len(grid)).owned(shape, grid, ids)
        index = np.ix_(*[[i for r in axis for i in r] for axis in parts])
        counts[index] += 1
    # axes no grid dimension partitions are owned whole by each of the parts along them
    split = 1 if len(shape) == 1 else len(grid[: len(shape)])
    spare = int(np.prod(grid)) // int(np.prod(grid[:split])) if len(shape) > 1 else 1
    assert (counts == spare).all()
