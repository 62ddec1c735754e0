"""A field program: a blocked integer matrix product written as Lotus's f1 benchmarks write
HBIR (a 2-D array of tiles in one group, dims without ``const``, named layouts, arrays
partitioned ``block`` over global memories with ``host``/``device`` flags, the old C loops
kept in a comment, ``bsg_finish()``). Our own program, in their style: tile (x, y) computes
the block of C at rows ``x * rows…`` and columns ``y * cols…`` in i-k-j order, each block's
bounds clipped to the matrix by ``if``, as a C programmer writes them.

What it holds on ``cpu``: the group's sizes (``x_max``, ``y_max``: the replication sizes of
the tile node, numbers in the graph function) reach the code that runs each chunk of tiles
as numbers. A chunk of tiles runs in a task function that ``__hpvm_parallel_for`` hands to
Numba's threading layer; when its locals were packed in a tuple, Numba widened the sizes
to ``int64``, and the inner loop over ``j`` (bounded by ``y * cols`` and ``n``) lost its
known trip count — the 512³ benchmark of this shape ran 1.6× slower
(``backends/cpu/parallel_for.py``). The results are exact on ``interp`` and ``cpu``, for a
size the group divides and one it does not.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import hbir
from hpvm.backends import get_backend

BLOCKED_MATMUL = """\
// C = A B over a 2 x 4 array of tiles, each tile one block of C

target{
    memory g[2]{
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
    n = {N};

    layout lat {
        global;
        chunked;
    };

    A: int[n][n] = block[target.g.x_max] {
        target.g[x];
        lat;
        host;
    };

    B: int[n][n] = block[target.g.x_max] {
        target.g[x];
        lat;
        host;
    };

    C: int[n][n] = block[target.g.x_max] {
        target.g[x];
        lat;
        device;
    };
}

code{
    config.tg[x][y]{
        int rows = (n + x_max - 1) / x_max;
        int cols = (n + y_max - 1) / y_max;
        int i_end = (x + 1) * rows;
        if (i_end > n) {
            i_end = n;
        }
        int j_end = (y + 1) * cols;
        if (j_end > n) {
            j_end = n;
        }
        //for(i...) for(k...) for(j...) C[i][j] += A[i][k] * B[k][j];
        for (int i = x * rows; i < i_end; i = i + 1) {
            for (int k = 0; k < n; k = k + 1) {
                int a = A[i][k];
                for (int j = y * cols; j < j_end; j = j + 1) {
                    C[i][j] = C[i][j] + a * B[k][j];
                }
            }
        }

        bsg_finish();
    }
}
"""


def program(n: int) -> hbir.Program:
    return hbir.parse(BLOCKED_MATMUL.replace("{N}", str(n)), "blocked_matmul.hbir")


def arrays(n: int, seed: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.integers(-50, 50, (n, n), dtype=np.int32) for name in ("A", "B")}


@pytest.mark.parametrize("n", [16, 30])  # (30: the group divides neither edge evenly)
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_the_product_is_exact_on_every_back_end(target: str, n: int) -> None:
    given = arrays(n)
    out = program(n).run(dict(given), target=target)["C"]
    assert out.dtype == np.int32 and out.shape == (n, n)
    np.testing.assert_array_equal(out, given["A"] @ given["B"])


def test_the_group_sizes_reach_the_chunks_as_numbers_on_cpu(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The task functions of the compiled program were typed with the group's sizes as
    literals (2 and 4), the numbers the graph function holds them as. (An empty cache: a
    graph function Numba loads from its disk cache types nothing.)"""
    from numba.core import types

    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    hb = program(16)
    hb.run(arrays(16), target="cpu")
    compiled = get_backend("cpu").prepare(hb.to_hpvm())
    assert compiled.module is not None
    tasks = [f for name, f in vars(compiled.module).items() if "_task" in name and hasattr(f, "signatures")]
    assert tasks, sorted(vars(compiled.module))
    literals = {
        member.literal_value
        for task in tasks
        for signature in task.signatures
        for member in signature[1].types
        if isinstance(member, types.IntegerLiteral)
    }
    assert {2, 4} <= literals, [task.signatures for task in tasks]
