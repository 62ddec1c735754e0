"""Unsigned array indices in generated HBIR leaves (codegen.py's ``nonneg``): an index is
written ``np.uint64(...)`` only when its form proves it never negative, and results stay
those of NumPy whether or not it is."""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import hbir
from hpvm.ir.graph import LeafFunction, functions
from markers import needs_backend

HEAD = """\
target { memory g { size 1G; width 8B; }; tile t[2][2]; }
config { group tg[2][2] { tile target.t[x][y]; }; }
"""

TARGETS = ["interp", "cpu", pytest.param("cuda", marks=[pytest.mark.gpu, needs_backend("cuda")])]


def _program(data: str, code: str) -> hbir.HBIRProgram:
    return hbir.parse(HEAD + "data {\n" + data + "\n}\ncode {\n" + code + "\n}\n", "p.hbir")


def _leaf_source(program: hbir.HBIRProgram) -> str:
    return "\n".join(f.source for f in functions(program.to_hpvm()) if isinstance(f, LeafFunction))


CODE = """config.tg[x][y] {
    int base = x * 2 + y;
    int down = 3;
    down = down - 4;
    for (int i = base; i < n; i += 4) {
        C[i] = A[i] + A[n - 1 - i];
    }
    if (x == 1 && y == 1) {
        for (int j = 1; j < n; j++) {
            D[j - 1] = A[j] - A[j - 1];
        }
    }
    if (x == 0 && y == 0) { E[0] = down; E[1] = A[x + 1]; }
}"""  # one tile writes D (every tile writing it was a race, though of equal values)


def test_provably_non_negative_indices_are_unsigned_and_others_are_not() -> None:
    program = _program(
        "n = 10; in A : int[n] { } out C : int[n] { } out D : int[n] { } out E : int[2] { }",
        CODE,
    )
    src = _leaf_source(program)
    assert "C[np.uint64(i)] = " in src  # a counting loop from a non-negative local
    assert "A[np.uint64(j)]" in src  # from a literal
    assert "A[((10 - 1) - i)]" in src  # a subtraction proves nothing
    assert "D[(j - 1)]" in src  # a subtraction proves nothing
    assert "A[(tg__x + 1)]" in src  # coordinates alone: left to the cpu bounds pre-check


@pytest.mark.parametrize("target", TARGETS)
def test_results_match_numpy_with_and_without_unsigned_indices(target: str) -> None:
    program = _program(
        "n = 10; in A : int[n] { } out C : int[n] { } out D : int[n] { } out E : int[2] { }",
        CODE,
    )
    a = np.random.default_rng(5).integers(-50, 50, 10)
    out = program.run({"A": a}, target=target)
    np.testing.assert_array_equal(out["C"], a + a[::-1])
    np.testing.assert_array_equal(out["D"][:-1], np.diff(a))
    np.testing.assert_array_equal(out["E"], [-1, a[1]])


def test_a_local_assigned_again_is_not_trusted() -> None:
    program = _program(
        "n = 4; in A : int[n] { } out C : int[n] { }",
        """config.tg[0][0] {
            int k = 2;
            C[k] = A[k];
            k -= 5;
            for (int i in iterator<n, replicated, 0, 0>) { C[i] = A[i]; }
        }""",
    )
    src = _leaf_source(program)
    assert "C[k] = A[k]" in src
    assert "C[np.uint64(i)] = A[np.uint64(i)]" in src  # an iterator's variable
