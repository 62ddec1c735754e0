"""A field program: a matrix-vector product written as Lotus's f1 benchmarks write HBIR
(a 2-D array of tiles in one group, dims without ``const``, named layouts, arrays
partitioned ``block`` over global memories with ``host``/``device`` flags, the old C loop
kept in a comment, ``bsg_finish()``). Our own program, in their style: tile (x, y) owns row
``x * y_max + y`` and walks the whole vector with a loop every tile runs alike.

That loop is what the ``cpu`` back end jams (``backends/cpu/jam.py``): the 8 tiles of a
group row are neighbours along y (the fastest index of the result), so one call runs all
8 rows' sums in lockstep, each in its own order. The result is exact on ``interp`` and
``cpu``, with the jammed clone in the compiled program.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import hbir
from hpvm.backends import get_backend

MATVEC = """\
// y = M v: one row of M per tile, 2 x 8 tiles, the vector read by all of them

target{
    memory g[2]{
        size 1M;
        width 4B;
    };

    tile t[2][8];
}

config{
    group tg[2][8] {
        tile target.t[x][y];
    };
}

data{
    rows = 16;
    cols = 40;

    layout lat {
        global;
        chunked;
    };

    mat: int[rows][cols] = block[target.g.x_max] {
        target.g[x];
        lat;
        host;
    };

    vec: int[cols] = block[target.g.x_max] {
        target.g[x];
        lat;
        host;
    };

    res: int[rows] = block[target.g.x_max] {
        target.g[x];
        lat;
        device;
    };
}

code{
    config.tg[x][y]{
        int row = x * y_max + y;
        int acc = 0;
        //for(int k = 0; k < cols; k++) acc += mat[row][k] * vec[k];
        for (int k = 0; k < cols; k = k + 1) {
            acc = acc + mat[row][k] * vec[k];
        }
        res[row] = acc;

        bsg_finish();
    }
}
"""


def arrays(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "mat": rng.integers(-100, 100, (16, 40), dtype=np.int32),
        "vec": rng.integers(-100, 100, 40, dtype=np.int32),
    }


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_the_product_is_exact_on_every_back_end(target: str) -> None:
    given = arrays()
    out = hbir.parse(MATVEC, "matvec.hbir").run(dict(given), target=target)["res"]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, given["mat"] @ given["vec"])


def test_the_tiles_of_a_group_row_run_jammed_on_cpu() -> None:
    root = hbir.parse(MATVEC, "matvec.hbir").to_hpvm()
    variants = get_backend("cpu").prepare(root).gen.variants
    assert any("_jam1" in symbol for symbol in variants), sorted(variants)  # (along y)
