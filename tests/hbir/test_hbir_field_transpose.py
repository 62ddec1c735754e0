"""A field program: a tiled transpose-and-scale written as Lotus's f1 benchmarks write
HBIR (dims without ``const``, named layouts, arrays partitioned ``block`` over a 2-D array of
global memories with ``host``/``device`` flags, the old C loop left in a comment, an
``iterator`` over the rows a tile owns, ``bsg_finish()``). Our own program, in their style:
each tile reads its rows of ``m_in`` and writes them as columns of ``m_out`` — whose parts
live in other memories — so the stores cross the partition."""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import hbir
from hpvm.errors import OutOfBoundsError
from markers import fails

TRANSPOSE = """\
// transpose a matrix spread over a 2x2 array of global memories, scaling it on the way
// (rows = cols: the output is partitioned like the input, so a tile's stores land in
// the parts of the other memories)

target{
    memory g[2][2]{
        size 1M;
        width 4B;
    };

    tile t[2][4];
}

config{
    group tg[2][4] {
        tile target.t[x][y];
    };
}

data{
    rows = 24;
    cols = 24;
    scale = 3;

    layout lat {
        global;
        strided;
    };

    m_in: int[rows][cols] = block[target.g.x_max][target.g.y_max] {
        target.g[x][y];
        global;
        chunked;
        host;
    };

    m_out: int[cols][rows] = block[target.g.x_max][target.g.y_max] {
        target.g[x][y];
        global;
        chunked;
        device;
    };
}

code{
    config.tg[x][y]{
        //for(int i = y+(x*y_max); i<rows; i=i+x_max*y_max){
        for (int i in iterator<rows, lat, x, y>) {
            for (int j = 0; j < cols; j = j + 1) {
                m_out[j][i] = scale * m_in[i][j] - i;
            }
        }

        bsg_finish();
    }
}
"""


def expected(a: np.ndarray) -> np.ndarray:
    rows = np.arange(a.shape[0], dtype=np.int32)[:, None]
    return (3 * a - rows).T.astype(np.int32)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_the_transpose_runs_exactly_on_every_back_end(target: str) -> None:
    a = np.random.default_rng(5).integers(-1000, 1000, (24, 24), dtype=np.int32)
    out = hbir.parse(TRANSPOSE, "transpose.hbir").run({"m_in": a}, target=target)["m_out"]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected(a))


def test_every_tile_owns_its_rows_and_the_parts_follow_the_memories() -> None:
    checked = hbir.parse(TRANSPOSE, "transpose.hbir").check()
    assert checked.arrays["m_out"].parts == {(0, 0): (0, 0), (0, 1): (0, 1), (1, 0): (1, 0), (1, 1): (1, 1)}


def test_a_store_past_the_transposed_array_is_located_by_the_interpreter() -> None:
    """``m_out[j + 1][i]`` runs one row past the 24 rows: ``interp`` names the tile, the
    file and line, and the array (``cpu`` checks such an index only in checked mode: docs/
    backends/cpu.md, "Checked mode")."""
    text = TRANSPOSE.replace("m_out[j][i] =", "m_out[j + 1][i] =")
    line = text.splitlines().index("                m_out[j + 1][i] = scale * m_in[i][j] - i;") + 1
    program = hbir.parse(text, "transpose.hbir")
    with fails(OutOfBoundsError, f"transpose.hbir:{line}", "index 24", "'m_out'"):
        program.run({"m_in": np.zeros((24, 24), np.int32)}, target="interp")


def test_the_same_store_raises_on_cpu_in_checked_mode() -> None:
    """Unchecked, ``cpu`` writes the 25th row of the 24 — another array's memory, or the
    heap's bookkeeping (glibc aborted the process); checked (``cpu.configure(checked=True)``),
    it names the node, the file and line, and the array, as ``interp`` does."""
    import hpvm.backends.cpu as cpu

    text = TRANSPOSE.replace("m_out[j][i] =", "m_out[j + 1][i] =")
    line = text.splitlines().index("                m_out[j + 1][i] = scale * m_in[i][j] - i;") + 1
    program = hbir.parse(text, "transpose.hbir")
    previous = cpu.configure(checked=True)
    try:
        with fails(OutOfBoundsError, "node transpose/tg_0", f"transpose.hbir:{line}", "index 24", "'m_out'"):
            program.run({"m_in": np.zeros((24, 24), np.int32)}, target="cpu")
        a = np.random.default_rng(5).integers(-1000, 1000, (24, 24), dtype=np.int32)
        out = hbir.parse(TRANSPOSE, "transpose.hbir").run({"m_in": a}, target="cpu")["m_out"]
    finally:
        cpu.configure(**previous)
    np.testing.assert_array_equal(out, expected(a))
