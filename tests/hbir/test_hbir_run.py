"""HBIR programs lowered onto the graph and run: every example against NumPy on every back
end that can run here, C's integer semantics, the iterator's ownership, printf order,
bsg_finish, located errors in generated code, and the inputs run() accepts."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hbir_programs import EXAMPLES

import hpvm
from hpvm import hbir
from hpvm.hbir import HBIRInputError
from hpvm.ir import Layout, parse_program, print_program
from hpvm.ir.bodies import GeneratedBody
from markers import fails, needs_backend
from running import interp_leaves_from

TARGETS = [
    "interp",
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, needs_backend("cuda")]),
    pytest.param("opencl", marks=needs_backend("opencl")),
]

RNG = np.random.default_rng(2)


def _vadd_group():
    a, b = RNG.integers(-1000, 1000, 1000), RNG.integers(-1000, 1000, 1000)
    return {"A": a, "B": b}, {"C": a + b}


def _vadd_one_tile():
    a, b = RNG.integers(-1000, 1000, 500), RNG.integers(-1000, 1000, 500)
    return {"A": a, "B": b}, {"C": a + b}


def _matmul():
    a, b = RNG.random((12, 12), dtype=np.float32), RNG.random((12, 12), dtype=np.float32)
    return {"A": a, "B": b}, {"C": a.astype(np.float64) @ b.astype(np.float64)}


def _two_groups():
    a = RNG.integers(-100, 100, 128)
    neg = -a[64:]
    expected = np.concatenate([3 * a[:64], np.sign(neg) * (np.abs(neg) % 7)])  # C's % keeps the sign
    return {"A": a}, {"B": expected}


def _nested():
    r = np.array([[10 * g + x for x in range(4)] for g in range(4)])
    sums = [sum(range(x + 1)) for x in range(4)]
    row = [s // 2 if s > 2 else (-1 if s == 1 else s) for s in sums]
    return {}, {"R": r, "S": np.array([row] * 4)}


def _vvadd_memories():
    a, b = RNG.integers(-1000, 1000, 1000), RNG.integers(-1000, 1000, 1000)
    return {"src0": a, "src1": b}, {"dest": a + b}


def _volume():
    v = RNG.random((6, 6, 6), dtype=np.float32)
    octant = (np.arange(6) // 3)[:, None, None]
    owner = np.arange(40) % 16
    return {"V": v}, {"W": v * 2 + octant, "Id": np.arange(16).reshape(2, 2, 2, 2), "Owner": owner}


CASES = {
    "vadd_group.hbir": _vadd_group,
    "vadd_one_tile.hbir": _vadd_one_tile,
    "matmul.hbir": _matmul,
    "two_groups.hbir": _two_groups,
    "nested.hbir": _nested,
    "vvadd_memories.hbir": _vvadd_memories,
    "volume.hbir": _volume,
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_examples_match_numpy(name: str, target: str) -> None:
    inputs, expected = CASES[name]()
    program = hbir.load(EXAMPLES / name)
    outputs = program.run(inputs, target=target, out=io.StringIO())
    assert set(outputs) == set(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(outputs[key], want, rtol=1e-5)
        assert outputs[key].dtype == program.outputs[key][1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_examples_match_numpy_with_the_interpreters_leaves_from_their_syntax_tree(name: str) -> None:
    """The interpreter runs generated leaves from their leaf IR (above: every example's
    are in the dialect, ``test_hbir_lines.py``); its other path, from the syntax tree, too."""
    with interp_leaves_from(False):
        test_examples_match_numpy(name, "interp")


def test_vadd_group_prints_after_the_run() -> None:
    out = io.StringIO()
    program = hbir.load(EXAMPLES / "vadd_group.hbir")
    program.run(_vadd_group()[0], target="interp", out=out)
    assert out.getvalue() == "done: 1\n" and program.last_output == "done: 1\n"
    assert program.globals_after == {"g_done_flag": 1}


# ---------------------------------------------------------------------------------------
# The lowered graph


def test_the_lowered_graph_verifies_prints_and_reads_back() -> None:
    program = hbir.load(EXAMPLES / "vadd_group.hbir")
    root = program.to_hpvm()
    hpvm.verify(root)
    assert [p.name for p in root.params] == ["A", "B", "C", "g_done_flag", "hbir_log", "hbir_nlog"]
    assert root.params[0].layout == Layout.chunked(8)
    spmd, single = root.graph.nodes
    assert [str(s) for s in spmd.sizes] == ["4", "4"] and single.sizes == ()
    leaf = spmd.function
    assert isinstance(leaf.body, GeneratedBody) and leaf.body.origin.endswith("vadd_group.hbir")
    text = print_program(root, bodies=True)
    assert 'generated "' in text and "layout(chunked(8))" in text
    again = parse_program(text)
    a, b = np.arange(1000, dtype=np.int32), np.arange(1000, dtype=np.int32)
    c, flag = np.zeros(1000, np.int32), np.zeros(1, np.int32)
    log, nlog = np.zeros((16, 256, 9)), np.zeros(16, np.int64)
    hpvm.init()
    args = (a, b, c, flag, log, nlog)
    for x in args:
        hpvm.track_memory(x)
    hpvm.wait(hpvm.launch(again, args, target="interp"))
    for x in args:
        hpvm.request_memory(x)
        hpvm.untrack_memory(x)
    np.testing.assert_array_equal(c, a + b)
    assert flag[0] == 1 and nlog[0] == 1


def test_leaf_lines_map_to_the_hbir_lines() -> None:
    path = EXAMPLES / "vadd_group.hbir"
    leaf = hbir.load(path).to_hpvm().graph.nodes[0].function
    hbir_lines = path.read_text().splitlines()
    store = next(i for i, line in enumerate(leaf.source.splitlines(), 1) if "C[np.uint64(i)] =" in line)
    assert "C[i] = A[i] + B[i];" in hbir_lines[leaf.where(store).line - 1]


# ---------------------------------------------------------------------------------------
# Semantics

HEAD = """\
target { memory g { size 1G; width 8B; }; tile t[2][3]; }
config { group tg[2][3] { tile target.t[x][y]; }; }
"""


def _program(data: str, code: str) -> hbir.HBIRProgram:
    return hbir.parse(HEAD + "data {\n" + data + "\n}\ncode {\n" + code + "\n}\n", "p.hbir")


@pytest.mark.parametrize("target", TARGETS)
def test_integer_division_and_remainder_are_cs(target: str) -> None:
    program = _program(
        "n = 8; in A : int[n] { } in B : int[n] { } out Q : int[n] { } out R : int[n] { } out T : int[n] { } out M : float[n] { }",
        """config.tg[0][0] {
            for (int i = 0; i < n; i++) {
                Q[i] = A[i] / B[i];
                R[i] = A[i] % B[i];
                float f = A[i] * 0.75;
                int k = f;
                k /= 1;
                T[i] = k;
                int q = A[i];
                q /= B[i];
                int r = A[i];
                r %= B[i];
                if (q != Q[i] || r != R[i]) { T[i] = 12345; }
                M[i] = A[i] > 0 ? A[i] : A[i] < -5 ? -0.5 * A[i] : 1;
            }
        }""",
    )
    a = np.array([7, -7, 7, -7, 0, 5, -9, 100])
    b = np.array([2, 2, -2, -2, 3, 7, 4, -9])
    out = program.run({"A": a, "B": b}, target=target)
    q = np.trunc(a / b).astype(int)
    np.testing.assert_array_equal(out["Q"], q)
    np.testing.assert_array_equal(out["R"], a - b * q)
    np.testing.assert_array_equal(out["T"], np.trunc(a * 0.75).astype(int))
    np.testing.assert_array_equal(out["M"], np.where(a > 0, a, np.where(a < -5, -0.5 * a, 1)))


@pytest.mark.parametrize(
    "brk", ["", "if (i > 1000) { break; }"]
)  # (a loop that may break is generated otherwise)
@pytest.mark.parametrize("layout", ["block", "chunked(3)", "strided", "chunked"])
def test_iterator_visits_what_the_layout_gives_the_tile(layout: str, brk: str) -> None:
    program = _program(
        f"n = 29; layout L {{ global; {layout}; }}; out O : int[n] {{ }} out V : int[6] {{ }}",
        "config.tg[x][y] {\n for (int i in iterator<n, L, x, y>) {"
        + brk
        + " O[i] = x * y_max + y + 1; V[x * y_max + y] += 1; }\n}",
    )
    out = program.run({}, target="interp")
    kind = "block" if layout == "chunked" else layout
    lay = Layout.parse(kind)
    for t in range(6):
        owned = [i for r in lay.owned((29,), (6,), (t,))[0] for i in r]
        assert list(np.flatnonzero(out["O"] == t + 1)) == owned
        assert out["V"][t] == len(owned)
    assert (out["O"] > 0).all()  # every element belongs to some tile


def test_iterator_replicated_visits_everything() -> None:
    program = _program(
        "n = 11; out V : int[6] { }",
        "config.tg[x][y] { for (int i in iterator<n, replicated, x, y>) { V[x * y_max + y] += i; } }",
    )
    assert list(program.run({}, target="interp")["V"]) == [sum(range(11))] * 6


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_printf_is_collected_per_tile_and_printed_in_tile_order(target: str) -> None:
    program = _program(
        "out V : int[1] { }",
        """config.tg[x][y] {
            printf("tile %d,%d: %d\\n", x, y, x * 10 + y);
            if (y == 1) { printf("%.2f %x%%\\n", 1.5 * x, 255); }
        }
        config.tg[1][0] { printf("last %d\\n", 7); }""",
    )
    out = io.StringIO()
    program.run({}, target=target, out=out)
    expected = []
    for x in range(2):
        for y in range(3):
            expected.append(f"tile {x},{y}: {x * 10 + y}\n")
            if y == 1:
                expected.append(f"{1.5 * x:.2f} ff%\n")
            if (x, y) == (1, 0):
                expected.append("last 7\n")
    assert out.getvalue() == "".join(expected)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_int_locals_are_64_bit_and_int_arrays_wrap_at_32(target: str) -> None:
    """docs/hbir.md: locals do not wrap at 2^31 (C leaves signed overflow undefined, so no
    program with defined behaviour sees a difference); a store into an int array does."""
    program = _program(
        "out C : int[2] { }",
        """config.tg[0][0] {
            int big = 2147483647;
            big = big + 1;
            printf("%d\\n", big);
            C[0] = big;
            C[1] = big / 2;
        }""",
    )
    out = io.StringIO()
    result = program.run({}, target=target, out=out)
    assert out.getvalue() == f"{2**31}\n"
    np.testing.assert_array_equal(result["C"], np.array([2**31, 2**30], np.int64).astype(np.int32))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_printf_prints_string_literals_with_percent_s(target: str) -> None:
    program = _program(
        "out V : int[1] { }",
        """config.tg[0][y] {
            printf("%s|%5s|%-4s|%.2s: %d %s\\n", "tile", "a\\tb", "x", "abc", y, "100% \\"done\\"\\\\");
        }""",
    )
    out = io.StringIO()
    program.run({}, target=target, out=out)
    expected = [f'tile|{"a" + chr(9) + "b":>5}|x   |ab: {y} 100% "done"\\\n' for y in range(3)]
    assert out.getvalue() == "".join(expected)


@pytest.mark.parametrize("target", TARGETS)
def test_bsg_finish_ends_the_tiles_block_and_blocks_run_in_order(target: str) -> None:
    program = _program(
        "out C : int[6] { } out D : int[6] { }",
        """int g = 5;
        config.tg[x][y] {
            int t = x * y_max + y;
            C[t] = 1;
            while (true) { if (y > 0) { bsg_finish(); } break; }
            C[t] = 2;
        }
        config.tg[x][y] { int t = x * y_max + y; D[t] = C[5 - t] * 10 + g; }""",
    )
    out = program.run({}, target=target)
    c = np.array([2 if y == 0 else 1 for x in range(2) for y in range(3)])
    np.testing.assert_array_equal(out["C"], c)
    np.testing.assert_array_equal(
        out["D"], c[::-1] * 10 + 5
    )  # another tile's element: the whole block ran first


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_c_for_with_continue_runs_its_step(target: str) -> None:
    program = _program(
        "out C : int[1] { }",
        """config.tg[0][0] {
            int s = 0;
            for (int i = 0; i < 10 && s < 100; i += 1) { if (i % 2 == 1) { continue; } s += i; }
            C[0] = s;
        }""",
    )
    assert program.run({}, target=target)["C"][0] == sum(range(0, 10, 2))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_an_error_in_generated_code_names_the_hbir_line(target: str) -> None:
    program = _program(
        "n = 4; in A : int[n] { } out C : int[n] { }",
        """config.tg[x][y] {
            int t = y;
            C[t] = A[x + 3];
        }""",
    )
    with pytest.raises(hpvm.HPVMError) as info:
        program.run({"A": np.arange(4)}, target=target)
    text = HEAD + "data {\n" + "n = 4; in A : int[n] { } out C : int[n] { }" + "\n}\ncode {\n"
    line = text.count("\n") + 3  # the block's third line
    assert f"p.hbir:{line}" in str(info.value), str(info.value)
    assert "<generated" not in str(info.value)


# ---------------------------------------------------------------------------------------
# Inputs


def test_inputs_missing_misshaped_mistyped_or_unknown_are_errors_naming_them() -> None:
    program = hbir.load(EXAMPLES / "vadd_one_tile.hbir")
    good = np.arange(500)
    with fails(HBIRInputError, "vadd_one_tile.hbir:12: input array 'B' (int[500]) is missing"):
        program.run({"A": good})
    with fails(HBIRInputError, "input array 'A' is declared int[500] but was given shape (499,)"):
        program.run({"A": good[:499], "B": good})
    with fails(HBIRInputError, "input array 'B' holds int (int32) but was given float64"):
        program.run({"A": good, "B": good * 1.5})
    with fails(HBIRInputError, "input 'C' is a device (output) array", "input 'Z' is not an array"):
        program.run({"A": good, "B": good, "C": good, "Z": good})


def test_input_values_the_element_type_cannot_hold_are_refused_at_the_first_index() -> None:
    program = hbir.load(EXAMPLES / "vadd_one_tile.hbir")
    good = np.arange(500)
    big = good.copy()
    big[[7, 9]] = 3_000_000_000  # wrapped to -1294967296 by a plain conversion
    with fails(HBIRInputError, "vadd_one_tile.hbir:11: input array 'A' holds int (int32, -2147483648 to 2147483647)",
               "element [7] is 3000000000, which it cannot hold"):  # fmt: skip
        program.run({"A": big, "B": good})
    small = good.copy()
    small[499] = -(2**31) - 1
    with fails(HBIRInputError, "input array 'B'", "element [499] is -2147483649"):
        program.run({"A": good, "B": small})
    edge = np.array([2**31 - 1, -(2**31)] * 250)  # the extremes still fit
    out = program.run({"A": edge, "B": np.zeros(500, np.int64)}, target="interp")
    assert np.array_equal(out["C"], edge.astype(np.int32))


def test_float_inputs_beyond_float32_are_refused() -> None:
    text = """target { tile t[1]; }
config { group g[1] { tile target.t[x]; }; }
data { in A : float[2][3] { }
       out B : float[2][3] { } }
code { config.g[x] { B[1][2] = A[1][2]; } }
"""
    program = hbir.parse(text, "f.hbir")
    a = np.ones((2, 3))
    a[1, 1] = 1e300
    with fails(HBIRInputError, "f.hbir:3: input array 'A' holds float (float32", "element [1][1] is 1e+300"):
        program.run({"A": a})
    a[1, 1] = np.inf  # infinities and NaNs are float32 values
    program.run({"A": a}, target="interp")


def test_run_does_not_change_the_callers_arrays() -> None:
    a = np.arange(500)
    before = a.copy()
    hbir.load(EXAMPLES / "vadd_one_tile.hbir").run({"A": a, "B": a})
    np.testing.assert_array_equal(a, before)


def test_load_of_a_missing_file_is_an_hbir_error(tmp_path) -> None:
    with fails(hbir.HBIRParseError, "cannot read the HBIR file"):
        hbir.load(tmp_path / "nope.hbir")


def test_draw_writes_the_tile_map_with_groups_and_partitions(tmp_path) -> None:
    path = tmp_path / "map.svg"
    hbir.load(EXAMPLES / "vadd_group.hbir").draw(path)
    svg = path.read_text()
    # tile (1, 2) is member 6 of the 16 in row-major order: its chunks of 8 start at 48, 176, ...
    assert "tg[1][2]" in svg and "C[48:56,176:184,304:312,…]" in svg and "target.g" in svg


def test_the_owned_text_follows_the_layouts() -> None:
    from hpvm.hbir.draw import owned_text

    model = hbir.load(EXAMPLES / "matmul.hbir").check()
    assert owned_text(model.arrays["A"], (2, 2), (1, 0)) == "A[6:12][0:6]"
    assert owned_text(model.arrays["B"], (2, 2), (1, 0)) == "B (copy)"


def test_import_hpvm_does_not_load_the_hbir_front_end() -> None:
    import subprocess
    import sys

    code = "import sys, hpvm; print('hpvm.hbir' in sys.modules, 'lark' in sys.modules); hpvm.hbir.parse; print('hpvm.hbir' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False", "True"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_opencl_translator_accepts_every_examples_leaves(name: str) -> None:
    from hpvm.backends.opencl.show import kernels_text

    text, errors = kernels_text(hbir.load(EXAMPLES / name).to_hpvm())
    assert errors == [] and "__global" in text


@pytest.mark.parametrize("layout", ["chunked(3)", "block", "strided"])
def test_break_leaves_the_whole_share_of_an_iterator(layout: str) -> None:
    program = _program(
        f"n = 40; layout L {{ global; {layout}; }}; out V : int[6] {{ }}",
        """config.tg[x][y] {
            int seen = 0;
            for (int i in iterator<n, L, x, y>) { if (seen == 4) { break; } seen += 1; }
            V[x * y_max + y] = seen;
        }""",
    )
    lay = Layout.parse(layout)
    expected = [min(4, sum(len(r) for r in lay.owned((40,), (6,), (t,))[0])) for t in range(6)]
    assert list(program.run({}, target="cpu")["V"]) == expected


def test_layouts_go_on_the_ports_of_the_nodes_replicated_over_the_arrays_group() -> None:
    root = hbir.load(EXAMPLES / "nested.hbir").to_hpvm()
    outer = root.graph.nodes[0].function  # replicated over grid, which R and S are partitioned over
    leaf = outer.graph.nodes[0].function  # replicated over row: not their grid
    assert [p.layout for p in root.params] == [Layout.block()] * 2
    assert [p.layout for p in outer.params] == [Layout.block()] * 2
    assert [p.layout for p in leaf.params] == [None, None]
    # a 1-D array over a 2-D group: x and y partition it together, tiles in row-major order
    # (axes(0, 0)), which is exactly what the iterator visits; a 2-D array carries the default
    vadd = hbir.load(EXAMPLES / "vadd_group.hbir").to_hpvm()
    port = vadd.graph.nodes[0].function.params[0].layout
    assert vadd.params[0].layout == Layout.chunked(8) and port == Layout.chunked(8, axes=(0, 0))
    assert port.owned((1000,), (4, 4), (2, 3)) == Layout.chunked(8).owned((1000,), (16,), (11,))
    matmul = hbir.load(EXAMPLES / "matmul.hbir").to_hpvm().graph.nodes[0].function
    assert [str(p.layout) for p in matmul.params] == ["block", "replicated", "block"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_lowered_example_prints_reads_back_and_runs_the_same(name: str) -> None:
    inputs, expected = CASES[name]()
    program = hbir.load(EXAMPLES / name)
    root = program.to_hpvm()
    again = parse_program(print_program(root, bodies=True))
    assert print_program(again, bodies=True) == print_program(root, bodies=True)
    program._root = again  # run the graph read back from its text
    outputs = program.run(inputs, target="interp", out=io.StringIO())
    for key, want in expected.items():
        np.testing.assert_allclose(outputs[key], want, rtol=1e-5)


def test_a_tile_that_prints_more_than_its_log_keeps_is_told() -> None:
    from hpvm.hbir.codegen import LOG_CAPACITY

    program = _program(
        "n = 300;",
        'config.tg[0][1] { for (int i = 0; i < n; i++) { printf("%d\\n", i); } }',
    )
    out = io.StringIO()
    program.run({}, target="cpu", out=out)
    lines = out.getvalue().splitlines()
    assert lines[:LOG_CAPACITY] == [str(i) for i in range(LOG_CAPACITY)]
    assert lines[LOG_CAPACITY:] == [f"[p.hbir: tile 1 printed {300 - LOG_CAPACITY} more lines, not kept]"]
