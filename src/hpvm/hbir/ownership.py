"""Which elements of a data array each part of its partition grid owns (docs/hbir.md).

One rule serves the checker (memory capacities), the iterator's tests and the tile map:
a vector over a grid of several dimensions is dealt over the grid's points in row-major
order (HBIR's tile order, ``t = x·Y + y``); otherwise grid dimension k partitions array
axis k (rows along x, columns along y, ...), extra grid dimensions partition nothing and
extra axes are owned whole. Along each partitioned axis the sets are hpvm's
(``hpvm.Layout.owned`` of a 1-D grid), so they are exactly those of the layouts the
lowering puts on ports — for grids of any number of dimensions, where hpvm's own grids
stop at three.
"""

from __future__ import annotations

import numpy as np

from .model import ArrayInfo, LayoutInfo


def owned_by(
    layout: LayoutInfo, shape: tuple[int, ...], grid: tuple[int, ...], ids: tuple[int, ...]
) -> list[list[range]]:
    """Per array axis, the disjoint ranges part ``ids`` of ``grid`` owns under ``layout``."""
    if layout.kind == "replicated" or not grid:
        return [[range(n)] if n else [] for n in shape]
    axes: list[tuple[int, int] | None] = [None] * len(shape)  # axis -> (extent G, id i)
    if len(shape) == 1 and len(grid) > 1:
        axes[0] = (int(np.prod(grid)), int(np.ravel_multi_index(ids, grid)))
    else:
        for k in range(min(len(shape), len(grid))):
            axes[k] = (grid[k], ids[k])
    one = layout.to_layout(1, 1)
    out = []
    for n, split in zip(shape, axes):
        if split is None:
            out.append([range(n)] if n else [])
        else:
            out.append(one.owned((n,), (split[0],), (split[1],))[0])
    return out


def owned(array: ArrayInfo, grid: tuple[int, ...], ids: tuple[int, ...]) -> list[list[range]]:
    """What part ``ids`` of ``grid`` owns of ``array`` (its layout; block when it has none)."""
    return owned_by(array.layout or LayoutInfo("block"), array.shape, grid, ids)


__all__ = ["owned", "owned_by"]
