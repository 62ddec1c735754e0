"""Memory arrays as Lotus's programs use them: their fields (``target.g.x_max``...), arrays
partitioned over the memories (``= block[target.g.x_max] { target.g[x]; ... }``), where each
part lives, and memory capacities. The programs are our own, written in the style of the
Lotus examples of seed 002's generation."""

from __future__ import annotations

import io

import numpy as np
import pytest

from hpvm import hbir
from hpvm.hbir import HBIRCheckError
from markers import fails

TARGETS = ["interp", "cpu"]


def line_of(text: str, fragment: str) -> int:
    """The line of ``text`` that holds ``fragment`` (once)."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if fragment in line]
    assert len(hits) == 1, hits
    return hits[0]


def vvadd(memory: str = "memory g[4]{\n        size 8G;\n        width 8B;\n    };", dim: int = 96) -> str:
    """A vector add in the Lotus examples' form: the vectors partitioned over the memories."""
    return f"""// vector add, its vectors spread over the global memories
target{{
    {memory}

    tile t[2][2];
}}

config{{
    group tg[2][2] {{
        tile target.t[x][y];
    }};
}}

data{{
    const dim = {dim};

    layout part {{
        global;
        chunked;
    }};

    src0: int[dim] = block[target.g.x_max] {{
        target.g[x];
        global;
        chunked;
        host;
    }};

    src1: int[dim] = block[target.g.x_max] {{
        target.g[x];
        global;
        chunked;
        host;
    }};

    dest: int[dim] = block[target.g.x_max] {{
        target.g[x];
        global;
        chunked;
        device;
    }};
}}

code{{
    config.tg[x][y]{{
        for (int i in iterator<dim, part, x, y>) {{
            dest[i] = src0[i] + src1[i];
        }}
        bsg_finish();
    }}
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_arrays_partitioned_over_memories_run(target: str) -> None:
    program = hbir.parse(vvadd(), "vvadd.hbir")
    a, b = np.arange(96, dtype=np.int32), np.arange(96, dtype=np.int32) * 7
    out = program.run({"src0": a, "src1": b}, target=target)
    assert np.array_equal(out["dest"], a + b)


def test_each_part_lives_in_the_memory_its_placement_names() -> None:
    model = hbir.parse(vvadd(), "vvadd.hbir").check()
    assert model.arrays["src0"].grid == (4,)
    assert model.arrays["src0"].parts == {(0,): (0,), (1,): (1,), (2,): (2,), (3,): (3,)}
    assert model.memories["g"].dims == (4,) and model.memories["g"].size == 8 * 1024**3


def test_memory_fields_are_readable_everywhere() -> None:
    text = """
target { memory g[2][3] { size 1K; width 8B; }; tile t[2][3] { memory l[2] { size 4K; width 4B; }; }; }
config { group tg[target.g.x_max][target.g.y_max] { tile target.t[x][y]; }; }
data {
    n = target.g.count * target.t.l.x_max;
    C: int[8] = block[target.g.x_max][target.g.y_max] { target.g[x][y]; device; };
}
code {
    config.tg[0][0] {
        C[0] = target.g.x_max; C[1] = target.g.y_max; C[2] = target.g.count;
        C[3] = target.g.size; C[4] = target.g.width; C[5] = target.t.l.count;
        C[6] = target.t.l.size; C[7] = n;
    }
}
"""
    out = hbir.parse(text, "fields.hbir").run({}, target="interp")
    assert out["C"].tolist() == [2, 3, 6, 1024, 8, 2, 4096, 12]


def test_a_2d_array_over_a_grid_of_memories_placed_by_x() -> None:
    """gemm's form: a [4][4] partition grid over a memory array of 4, part (x, y) in g[x]."""
    text = """
target { memory g[4] { size 8G; width 8B; }; tile t[4][4]; }
config { group tg[4][2] { tile target.t[x][y]; }; }
data {
    m = 8;
    A: int[m][m] = block[target.g.x_max][target.g.x_max] { target.g[x]; global; chunked; host; };
    C: int[m][m] = block[target.g.x_max][target.g.x_max] { target.g[x]; global; chunked; device; };
}
code {
    config.tg[x][y] {
        for (int j = x * 2; j < x * 2 + 2; j = j + 1) {
            for (int i = y * 4; i < y * 4 + 4; i = i + 1) { C[j][i] = A[j][i] * 2; }
        }
    }
}
"""
    program = hbir.parse(text, "grid.hbir")
    model = program.check()
    assert model.arrays["A"].parts[(3, 1)] == (3,)
    a = np.arange(64, dtype=np.int32).reshape(8, 8)
    for target in TARGETS:
        assert np.array_equal(program.run({"A": a}, target=target)["C"], a * 2)


SCALE_2D = """\
// scale and shift a matrix spread over a 2x2 array of global memories
// (the way Lotus's f1 benchmarks write it: dims without const, a layout, bsg_finish)

target{
    memory g[2][2]{
        size 1M;
        width 4B;
    };

    tile t[4][2];
}

config{
    group tg[4][2] {
        tile target.t[x][y];
    };
}

data{
    rows = 16;
    cols = 24;

    layout lat {
        global;
        chunked;
    };

    m_in: float[rows][cols] = block[target.g.x_max][target.g.y_max] {
        target.g[x][y];
        global;
        chunked;
        host;
    };

    m_out: float[rows][cols] = block[target.g.x_max][target.g.y_max] {
        target.g[x][y];
        global;
        chunked;
        device;
    };
}

code{
    config.tg[x][y]{
        //for(int i = x+(y*x_max); i<rows; i=i+x_max*y_max){
        for (int i in iterator<rows, lat, x, y>) {
            for (int j = 0; j < cols; j = j + 1) {
                m_out[i][j] = 2.5 * m_in[i][j] - 1.0;
            }
        }

        bsg_finish();
    }
}
"""


def test_a_lotus_style_matrix_over_a_2d_memory_array_runs_in_cs_arithmetic() -> None:
    """A program of our own written as Lotus's f1 benchmarks are (dims without ``const``, a
    layout, the old C loop left in a comment, ``bsg_finish()``), over a 2x2 array of memories
    partitioned by both of its extents; ``2.5 * m_in[i][j] - 1.0`` is computed in double and
    stored as float, as C does."""
    program = hbir.parse(SCALE_2D, "scale2d.hbir")
    assert program.check().arrays["m_in"].parts == {
        (0, 0): (0, 0),
        (0, 1): (0, 1),
        (1, 0): (1, 0),
        (1, 1): (1, 1),
    }
    a = np.random.default_rng(0).random((16, 24)).astype(np.float32)
    want = (2.5 * a.astype(np.float64) - 1.0).astype(np.float32)
    for target in TARGETS:
        assert np.array_equal(program.run({"m_in": a}, target=target)["m_out"], want)


def test_a_placement_outside_the_memory_array_is_located() -> None:
    text = vvadd().replace("src1: int[dim] = block[target.g.x_max] {\n        target.g[x];",
                           "src1: int[dim] = block[target.g.x_max] {\n        target.g[x + 1];")  # fmt: skip
    with fails(HBIRCheckError, f"vvadd.hbir:{line_of(text, 'target.g[x + 1]')}:", "part [3] of array 'src1' goes to memory target.g[4]",
               "outside the memory array target.g[4]"):  # fmt: skip
        hbir.parse(text, "vvadd.hbir").check()


def test_a_grid_of_no_group_nor_memory_without_placement_is_refused() -> None:
    text = vvadd().replace("dest: int[dim] = block[target.g.x_max] {\n        target.g[x];",
                           "dest: int[dim] = block[3] {")  # fmt: skip
    with fails(HBIRCheckError, f"vvadd.hbir:{line_of(text, 'block[3]')}:", "array 'dest' is partitioned over a 3 grid",
               "memories: target.g[4]"):  # fmt: skip
        hbir.parse(text, "vvadd.hbir").check()


def test_arrays_that_do_not_fit_their_memory_are_refused() -> None:
    """3 vectors of 500 ints in memories of 16 bytes: each memory gets 3 × 125 ints."""
    text = vvadd("memory g[4]{\n        size 16B;\n        width 8B;\n    };", dim=500)
    with fails(HBIRCheckError, "vvadd.hbir:", "arrays 'src0' 500 bytes, 'src1' 500 bytes, 'dest' 500 bytes",
               "do not fit memory target.g[0] (line 3): 1500 bytes placed there, but it holds 16 (size 16 bytes)"):  # fmt: skip
        hbir.parse(text, "vvadd.hbir").check()


def test_one_array_too_large_for_its_memory_names_it_and_both_sizes() -> None:
    text = """
target { memory g[2] { size 1K; width 8B; }; tile t[1][1]; }
config { group tg[1][1] { tile target.t[x][y]; }; }
data {
    n = 1000;
    A: float[n] = block[target.g.x_max] { target.g[x]; host; };
}
code { config.tg[x][y] { } }
"""
    with fails(HBIRCheckError, "big.hbir:6:", "array 'A' 2000 bytes do not fit memory target.g[0]",
               "2000 bytes placed there, but it holds 1024"):  # fmt: skip
        hbir.parse(text, "big.hbir").check()


def test_capacity_follows_the_layout_and_a_whole_memory_array_holds_count_times_size() -> None:
    # strided over 4 memories: 10 ints give parts of 3, 3, 2, 2 ints; 12 bytes fit a 12-byte memory
    fits = """
target { memory g[4] { size 12B; width 4B; }; tile t[1][1]; }
config { group tg[1][1] { tile target.t[x][y]; }; }
data { A: int[10] = block[4] { target.g[x]; strided; host; }; }
code { config.tg[x][y] { } }
"""
    hbir.parse(fits, "fits.hbir").check()
    # without indices the array lives in the memory array as a whole: 4 × 12 bytes
    whole = fits.replace("A: int[10] = block[4] { target.g[x]; strided; host; }",
                         "A: int[13] { target.g; host; }")  # fmt: skip
    with fails(HBIRCheckError, "whole.hbir:4:", "array 'A' 52 bytes do not fit memory target.g",
               "it holds 48 (size 12 bytes × 4 memories)"):  # fmt: skip
        hbir.parse(whole, "whole.hbir").check()


def test_unknown_memory_sizes_constrain_nothing() -> None:
    text = vvadd("memory g[4]{\n        size ?;\n        width 8B;\n    };", dim=5000)
    hbir.parse(text, "vvadd.hbir").check()


def test_constants_come_before_memory_mappings() -> None:
    text = vvadd().replace("    dest: int[dim]", "    late = 3;\n\n    dest: int[dim]")
    with fails(HBIRCheckError, f"vvadd.hbir:{line_of(text, 'late = 3')}:",
               f"constant 'late' is declared after array 'src0' (line {line_of(text, 'src0: int')})",
               "constants come before every memory mapping"):  # fmt: skip
        hbir.parse(text, "vvadd.hbir").check()


def test_printing_a_memory_field() -> None:
    text = vvadd().replace(
        "bsg_finish();", 'printf("%d %d\\n", target.g.x_max, target.g.count);\n        bsg_finish();'
    )
    program = hbir.parse(text, "vvadd.hbir")
    stream = io.StringIO()
    program.run({"src0": np.zeros(96, np.int32), "src1": np.zeros(96, np.int32)}, target="interp", out=stream)
    assert stream.getvalue() == "4 4\n" * 4


def test_the_tile_map_lists_each_memorys_parts(tmp_path) -> None:
    from hpvm.hbir.draw import MAX_MEMORY_BOXES, memory_contents

    program = hbir.parse(vvadd(), "vvadd.hbir")
    held = memory_contents(program.check())
    assert held == {f"target.g[{m}]": [f"{a}[{24 * m}:{24 * m + 24}]" for a in ("src0", "src1", "dest")]
                    for m in range(4)}  # fmt: skip
    many = vvadd(f"memory g[{MAX_MEMORY_BOXES + 1}] {{ size 8G; width 8B; }};", dim=99)
    assert memory_contents(hbir.parse(many, "many.hbir").check()) == {"target.g": ["src0", "src1", "dest"]}
    program.draw(tmp_path / "map.svg")
    assert "target.g[3]" in (tmp_path / "map.svg").read_text()


def test_placements_must_be_integers_inside_a_grid_of_bounded_size() -> None:
    text = vvadd().replace("target.g[x];\n        global;\n        chunked;\n        device;",
                           "target.g[x / 2.0];\n        global;\n        chunked;\n        device;")  # fmt: skip
    with fails(HBIRCheckError, "part [0] of array 'dest' goes to memory target.g[0.0]"):
        hbir.parse(text, "vvadd.hbir").check()
    huge = vvadd().replace("src0: int[dim] = block[target.g.x_max]", "src0: int[dim] = block[300][300]")
    with fails(HBIRCheckError, "array 'src0' is cut into 90000 parts", "at most 65536 parts"):
        hbir.parse(huge, "vvadd.hbir").check()
