"""A field program: a 1-D three-point stencil with halos, then a checksum, written as
Lotus's f1 benchmarks write HBIR (dims without ``const``, a named layout, arrays partitioned
``block`` over global memories with ``host``/``device`` flags, Lotus's compact ``i-1``, the
old C loop kept in a comment, ``bsg_finish()``). Our own program, in their style.

What it uses that the matvec and transpose field programs do not: a group placed at an
offset in the tile array (``tile target.t[x+2][y]``); a named layout ``chunked(chunk)`` whose
chunks are dealt round-robin to the 8 tiles, the last one short (100 = 14 * 7 + 2); reads
one element past each end of a chunk — the halo, owned by the neighbouring tile — with the
signal's ends clamped by a ``?:`` and an ``if``; C's division of negative sums (truncating
toward zero, where NumPy's ``//`` floors); per-tile partial sums in a device array, summed
by a second block pinned to one tile (``config.tg[0][0]``) that may only start once every
tile has finished the first; a code-segment global; and ``printf`` of the result.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

import hpvm.backends.cpu as cpu
from hpvm import hbir
from hpvm.errors import OutOfBoundsError
from hpvm.hbir import HBIRCheckError
from markers import fails

STENCIL = """\
// smooth a signal with the 3-point stencil (1 2 1) / 4 over a 2x4 group in the lower
// half of the tile array, then add the result up: each tile owns chunks of 7 samples and
// reads one sample past each end of a chunk (the halo, another tile's); the ends clamp

target{
    memory g[4]{
        size 1M;
        width 4B;
    };

    tile t[4][4];
}

config{
    group tg[2][4] {
        tile target.t[x+2][y];
    };
}

data{
    n = 100;
    chunk = 7;
    tiles = 8;

    layout lat {
        global;
        chunked(chunk);
    };

    sig: int[n] = block[target.g.x_max] {
        target.g[x];
        lat;
        host;
    };

    smooth: int[n] = block[target.g.x_max] {
        target.g[x];
        lat;
        device;
    };

    part: int[tiles] = block[target.g.x_max] {
        target.g[x];
        global;
        chunked;
        device;
    };

    total: int[1] = block[target.g.x_max] {
        target.g[x];
        global;
        device;
    };
}

code{
    int g_summed = 0;

    config.tg[x][y]{
        int acc = 0;
        //for(int c = y+(x*y_max); c*chunk<n; c=c+x_max*y_max) for(int i = c*chunk; ...
        for (int i in iterator<n, lat, x, y>) {
            int left = i > 0 ? sig[i-1] : sig[i];
            int right = sig[i];
            if (i < n-1) {
                right = sig[i+1];
            }
            smooth[i] = (left + 2*sig[i] + right) / 4;
            acc = acc + smooth[i];
        }
        part[x*y_max + y] = acc;

        bsg_finish();
    }

    config.tg[0][0]{
        for (int k = 0; k < tiles; k = k + 1) {
            total[0] += part[k];
        }
        g_summed = 1;
        printf("checksum %d\\n", total[0]);

        bsg_finish();
    }
}
"""

N, CHUNK, TILES = 100, 7, 8


def signal(seed: int = 11) -> np.ndarray:
    return np.random.default_rng(seed).integers(-1000, 1000, N, dtype=np.int32)


def stencil_sums(sig: np.ndarray) -> np.ndarray:
    s = sig.astype(np.int64)
    left = np.concatenate([s[:1], s[:-1]])
    right = np.concatenate([s[1:], s[-1:]])
    return left + 2 * s + right


def expected(sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smoothed signal (C's division: toward zero) and each tile's sum of the samples
    it owns: sample i is in chunk i // 7, which goes to tile (i // 7) mod 8."""
    sums = stencil_sums(sig)
    smooth = (np.sign(sums) * (np.abs(sums) // 4)).astype(np.int32)
    owner = (np.arange(N) // CHUNK) % TILES
    part = np.array([smooth[owner == t].sum() for t in range(TILES)], dtype=np.int32)
    return smooth, part


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_the_stencil_and_its_checksum_are_exact_on_every_back_end(target: str) -> None:
    sig = signal()
    sums = stencil_sums(sig)
    assert ((sums < 0) & (sums % 4 != 0)).any()  # C's division differs from NumPy's // here
    program = hbir.parse(STENCIL, "stencil.hbir")
    printed = io.StringIO()
    out = program.run({"sig": sig}, target=target, out=printed)
    smooth, part = expected(sig)
    assert sorted(out) == ["part", "smooth", "total"]
    assert out["smooth"].dtype == np.int32
    np.testing.assert_array_equal(out["smooth"], smooth)
    np.testing.assert_array_equal(out["part"], part)
    np.testing.assert_array_equal(out["total"], [smooth.sum()])
    assert printed.getvalue() == f"checksum {smooth.sum()}\n"
    assert program.globals_after == {"g_summed": 1}


# The halo guards a user forgets: without the ``?:`` the tile owning sample 0 (chunk 0:
# tile tg[0][0]) reads sig[-1]; without the ``if`` the one owning sample 99 (chunk 14:
# tile 14 mod 8 = 6, tg[1][2]) reads sig[100].
RIGHT_GUARD = "if (i < n-1) {\n                right = sig[i+1];\n            }"
UNGUARDED = {
    "left": (
        STENCIL.replace("int left = i > 0 ? sig[i-1] : sig[i];", "int left = sig[i-1];"),
        "int left = sig[i-1];",
        "tg_0[0, 0]",
        "index -1",
    ),
    "right": (
        STENCIL.replace(RIGHT_GUARD, "right = sig[i+1];"),
        "            right = sig[i+1];",
        "tg_0[1, 2]",
        "index 100",
    ),
}


@pytest.mark.parametrize("side", sorted(UNGUARDED))
def test_an_unguarded_halo_read_is_located_by_the_interpreter(side: str) -> None:
    text, fragment, tile, index = UNGUARDED[side]
    assert text != STENCIL
    where = f"stencil.hbir:{line_of(text, fragment)}"
    program = hbir.parse(text, "stencil.hbir")
    with fails(OutOfBoundsError, f"node stencil/{tile}", where, index, "'sig'"):
        program.run({"sig": signal()}, target="interp")


def test_the_right_halo_read_raises_on_cpu_in_checked_mode() -> None:
    """Unchecked, ``cpu`` reads past ``sig`` (docs/backends/cpu.md, "Checked mode");
    checked, it names the tile, the file and line, and the array, as ``interp`` does."""
    text, fragment, tile, index = UNGUARDED["right"]
    where = f"stencil.hbir:{line_of(text, fragment)}"
    program = hbir.parse(text, "stencil.hbir")
    previous = cpu.configure(checked=True)
    try:
        with fails(OutOfBoundsError, f"node stencil/{tile}", where, index, "'sig'"):
            program.run({"sig": signal()}, target="cpu")
    finally:
        cpu.configure(**previous)


def test_a_loop_bound_never_declared_is_located_by_the_checker() -> None:
    """Lotus's own vvadd.hbir bounds its loop by ``csize``, which it never declares: the
    checker names the name and its line (and ``run`` refuses the program the same way)."""
    text = STENCIL.replace("k < tiles;", "k < csize;")
    line = line_of(text, "k < csize;")
    program = hbir.parse(text, "stencil.hbir")
    with fails(HBIRCheckError, f"stencil.hbir:{line}:", "'csize' is not declared"):
        program.check()
    with fails(HBIRCheckError, f"stencil.hbir:{line}:", "'csize' is not declared"):
        program.run({"sig": signal()}, target="interp")
