"""Local arrays inside code blocks (``int tmp[16];``, ``float m[2][2] = {{...}, {...}};``):
parsed, printed back, checked (constant positive sizes, one or two dimensions, initialisers
that fit, indexing arity, no whole-array use) with every problem located, and run on the
interpreter, ``cpu`` and the CUDA simulator with the results NumPy computes."""

from __future__ import annotations

import numpy as np
import pytest
from hbir_programs import EXAMPLES

from hpvm import hbir
from hpvm.hbir import HBIRCheckError
from hpvm.hbir import ast as A
from hpvm.hbir.parser import parse
from hpvm.hbir.printer import format_program
from markers import fails, needs_backend

TARGETS = [
    "interp",
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, needs_backend("cuda")]),
    pytest.param("opencl", marks=[pytest.mark.gpu, needs_backend("opencl")]),
]

HEAD = """\
target { memory g { size 1G; width 8B; }; tile t[2][2]; }
config { group tg[2][2] { tile target.t[x][y]; }; }
data { n = 8; w = 3; in A : int[n] { } in F : float[2][3] { } out C : int[n] { } out M : float[2][3] { } }
"""


def _text(code: str) -> str:
    return HEAD + "code {\n" + code + "\n}\n"


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_declarations_parse_with_and_without_initialisers_and_print_back() -> None:
    text = _text(
        """config.tg[x][y] {
    int tmp[16];
    int small[4] = {1, 2, 3,};
    float m[2][w] = {{0.5, 1}, {2}};
    bool flat[2][2] = {true, false, true};
}"""
    )
    tree = parse(text, "p.hbir")
    block = tree.segment(A.Code).items[0]  # type: ignore[union-attr]
    tmp, small, m, flat = block.body
    assert tmp.dims == (A.IntLit(16),) and tmp.init is None
    assert small.init == A.ArrayInit((A.IntLit(1), A.IntLit(2), A.IntLit(3)))
    assert m.dims == (A.IntLit(2), A.Ref(("w",)))
    assert m.init == A.ArrayInit((A.ArrayInit((A.FloatLit(0.5), A.IntLit(1))), A.ArrayInit((A.IntLit(2),))))
    assert len(flat.init.items) == 3  # type: ignore[union-attr]
    assert parse(format_program(tree), "q.hbir") == tree
    hbir.parse(text, "p.hbir").check()


PROGRAM = """config.tg[x][y] {
    int t = x * 2 + y;
    int acc[4];
    int prefix[4] = {t, t + 1};
    for (int k = 0; k < 4; k++) {
        acc[k] = A[(t + k) % n] * (k + 1);
        if (k > 0) { acc[k] += acc[k - 1]; }
    }
    C[t] = acc[3] + prefix[0] * 100 + prefix[1] * 1000 + prefix[3];
    float m[2][w] = {{F[0][0], F[0][1] * 2}, {1.5}};
    float flat[2][3] = {1, 2, 3, 4};
    if (t == 0) {
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < w; j++) { M[i][j] = m[i][j] + flat[i][j]; }
        }
    }
    for (int r = 0; r < 2; r++) {
        int row[w];
        row[r] = r + 1;
        C[4 + t] += row[0] + row[1] + row[2];
    }
}"""


def _expected(a: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.zeros(8, np.int64)
    for t in range(4):
        acc = np.cumsum([a[(t + k) % 8] * (k + 1) for k in range(4)])
        c[t] = acc[3] + t * 100 + (t + 1) * 1000 + 0
        c[4 + t] = 1 + 2  # each iteration's row is a new zeroed array
    m = np.zeros((2, 3), np.float32)
    m[0, 0], m[0, 1], m[1, 0] = f[0, 0], f[0, 1] * np.float32(2), 1.5
    flat = np.array([[1, 2, 3], [4, 0, 0]], np.float32)
    return c, m + flat


@pytest.mark.parametrize("target", TARGETS)
def test_local_arrays_run_on_every_back_end_like_numpy(target: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-100, 100, 8)
    f = rng.random((2, 3), dtype=np.float32)
    out = hbir.parse(_text(PROGRAM), "p.hbir").run({"A": a, "F": f}, target=target)
    c, m = _expected(a, f)
    np.testing.assert_array_equal(out["C"], c)
    np.testing.assert_allclose(out["M"], m, rtol=1e-6)


def test_each_tile_has_its_own_local_array() -> None:
    code = """config.tg[x][y] {
    int mine[1];
    mine[0] = x * 2 + y + 1;
    for (int k = 0; k < 1000; k++) { mine[0] += 0; }
    C[x * 2 + y] = mine[0];
}"""
    out = hbir.parse(_text(code), "p.hbir").run({"A": np.zeros(8, int), "F": np.zeros((2, 3))}, target="cpu")
    np.testing.assert_array_equal(out["C"][:4], np.arange(1, 5))


@pytest.mark.parametrize(
    "code, fragment, message",
    [
        ("int t[x];", "int t[x]", "'x' is not declared (in a dimension of local array 't')"),
        ("int t[0];", "int t[0]", "a dimension of local array 't' is 0; sizes are positive integers"),
        ("int t[2][2][2];", "int t[2]", "local array 't' has 3 dimensions; local arrays have one or two"),
        ("int t[4] = 5;", "int t[4]", "an array is initialised with braces: int t[..] = {...};"),
        ("int v = {1};", "int v", "braces initialise arrays, but 'v' is a scalar"),
        ("int t[2] = {1, 2, 3};", "int t[2]", "3 values initialise 't', which holds 2"),
        ("int t[2][2] = {{1}, {2}, {3}};", "int t[2]", "3 rows initialise 't', which has 2"),
        ("int t[2][2] = {{1, 2, 3}, {4}};", "int t[2]", "3 values initialise a row of 't', which holds 2"),
        ("int t[2] = {{1}};", "int t[2]", "too many braces in the initialiser of 't'"),
        ("int t[2] = {1.5 % 2};", "int t[2]", "'%' takes ints"),
        ("int t[2]; t[0][1] = 1;", "t[0][1]", "array 't' has 1 dimension(s) but is indexed with 2"),
        ("int t[2]; C[0] = t;", "C[0] = t", "array 't' is used without indices; write t[i]"),
        (
            "int t[2][2]; t = 3;",
            "t = 3",
            "cannot assign to the whole array 't'; assign its elements (t[i][i] = ...)",
        ),
        ("int t[2]; t[1.5] = 1;", "t[1.5]", "an array index is an int, not a float"),
        ("int t[2]; int t[3];", "int t[3]", "declared twice in the same braces"),
        ("int t[2]; { int t[3]; }", "{ int t[3]", "shadows a variable of an enclosing scope"),
        ("int A[2];", "int A[2]", "'A' is already a data array"),
        ("int v = 1; v[0] = 2;", "v[0]", "only arrays (data arrays and local arrays) can be indexed"),
    ],
)
def test_local_array_problems_are_located(code: str, fragment: str, message: str) -> None:
    text = _text("config.tg[x][y] {\n" + code + "\n}")
    with fails(HBIRCheckError, f"p.hbir:{_line(text, fragment)}:", message):
        hbir.parse(text, "p.hbir").check()


def test_a_global_array_is_refused_with_the_way_out() -> None:
    text = _text("int g[4];\nconfig.tg[x][y] { }")
    with fails(
        HBIRCheckError, f"p.hbir:{_line(text, 'int g[4]')}:", "global 'g' is an array; globals are scalars"
    ):
        hbir.parse(text, "p.hbir").check()


def test_every_local_array_problem_is_reported_at_once() -> None:
    text = _text("config.tg[x][y] {\nint a[0];\nint b[2] = {1, 2, 3};\nint c[2]; c = 1;\n}")
    with pytest.raises(HBIRCheckError) as info:
        hbir.parse(text, "p.hbir").check()
    assert len(info.value.problems) == 3, info.value.problems


@pytest.mark.parametrize("target", TARGETS)
def test_the_window_sum_example_matches_numpy(target: str) -> None:
    a = np.random.default_rng(3).integers(-1000, 1000, 256)
    out = hbir.load(EXAMPLES / "window_sum.hbir").run({"A": a}, target=target)
    np.testing.assert_array_equal(out["S"], np.convolve(a, [1, 1, 1], mode="same"))
