"""Property tests: translated arithmetic computes what Numba computes, on random operands.

One leaf evaluates a list of expressions over operands of several types (int64, int32,
float64, float32); the same expressions compiled by Numba (``njit``) give the expected
values *and* types. Hypothesis draws the operands: negative numbers for floor division and
modulo, int32 values whose sums overflow int32 (Numba widens to int64), int/float mixes
(NumPy promotion), float32 with float64 literals.
"""

import linecache
import math  # noqa: F401 — used by the generated expressions

import numpy as np
import pytest

import hpvm
from markers import needs_backend

pytest.importorskip("pyopencl")
numba = pytest.importorskip("numba")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hpvm.backends.opencl.standalone import run_leaf  # noqa: E402
from hpvm.backends.opencl.translate import translate_leaf  # noqa: E402

pytestmark = needs_backend("opencl")

# a, b: int64; c: int32 (nonzero); s: small int64; e: small non-negative int64;
# x, y: float64 (y nonzero); d: float32 (nonzero)
EXPRESSIONS = [
    "a // b",
    "a % b",
    "a // c",
    "a % c",
    "c // c",
    "-a // 7",
    "-a % 7",
    "x // y",
    "x % y",
    "a // y",
    "x % b",
    "d // d",
    "d % 2.5",
    "a / b",
    "c / c",
    "c + c",
    "c * c",
    "c - a",
    "c + d",
    "d * d",
    "d * 0.1",
    "d * 2",
    "a * x",
    "s ** e",
    "x ** e",
    "d ** e",
    "abs(x) ** 0.5",
    "-c",
    "~c",
    "a >> e",
    "c << e",
    "a & c",
    "a ^ b",
    "a | s",
    "min(a, b)",
    "max(c, s)",
    "min(c, d)",
    "max(x, a)",
    "abs(a)",
    "abs(c)",
    "abs(d)",
    "int(x)",
    "int(d)",
    "float(a)",
    "np.float32(x)",
    "np.int32(a)",
    "a if x > 0 else x",
    "c if c > 0 else s",
    "(a > b) + (x < y)",
    "a == b",
    "not (a < b)",
    "a < b < c",
    "x > 0 and a > 0",
    "math.floor(x) + math.ceil(d)",
    "math.sqrt(abs(x)) + math.sqrt(abs(d))",
    "round(x)",
]

NAMES = "abcsexyd"
DTYPES = [np.int64, np.int64, np.int32, np.int64, np.int64, np.float64, np.float64, np.float32]
_HPVM = {
    "int64": "hpvm.i64",
    "int32": "hpvm.i32",
    "float64": "hpvm.f64",
    "float32": "hpvm.f32",
    "bool": "hpvm.bool_",
}


def _numba_reference():
    """The expressions as Numba-compiled functions (a few per function: Numba does not take
    very long tuples), and the type of each result."""
    sig = tuple(numba.from_dtype(np.dtype(t)) for t in DTYPES)
    parts, types = [], []
    for start in range(0, len(EXPRESSIONS), 8):
        chunk = EXPRESSIONS[start : start + 8]
        body = "def ref(a, b, c, s, e, x, y, d):\n    return (" + ", ".join(chunk) + ",)\n"
        namespace = {"np": np, "math": math}
        exec(compile(body, "<opencl-semantics-ref>", "exec"), namespace)
        fn = numba.njit(namespace["ref"])
        fn.compile(sig)
        parts.append(fn)
        types += [str(t) for t in fn.nopython_signatures[0].return_type]

    def reference(*row):
        return tuple(v for fn in parts for v in fn(*row))

    return reference, types


REFERENCE, TYPES = _numba_reference()


def _leaf():
    """The same expressions as a leaf: operands from arrays, one instance per operand tuple."""
    params = ", ".join(f"{n.upper()}{n}: {_HPVM[np.dtype(t).name]}[:]" for n, t in zip(NAMES, DTYPES))
    outs = ", ".join(_HPVM[t] for t in TYPES)
    lines = [
        f"def semantics({params}) -> tuple[{outs}]:",
        "    i = hpvm.get_node_instance_id_x(hpvm.get_node())",
    ]
    lines += [f"    {n} = {n.upper()}{n}[i]" for n in NAMES]
    lines += [f"    r{k} = {e}" for k, e in enumerate(EXPRESSIONS)]
    lines.append("    return " + ", ".join(f"r{k}" for k in range(len(EXPRESSIONS))))
    source = "\n".join(lines) + "\n"
    filename = "<opencl-semantics-leaf>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"hpvm": hpvm, "np": np, "math": math}
    exec(compile(source, filename, "exec"), namespace)
    ins = tuple(f"{n.upper()}{n}" for n in NAMES)
    return hpvm.leaf(ins=ins)(namespace["semantics"])


LEAF = _leaf()


def test_every_expression_has_numbas_type():
    types = translate_leaf(LEAF).local_types
    got = [str(types[f"r{k}"]) for k in range(len(EXPRESSIONS))]
    mismatches = [(e, g, w) for e, g, w in zip(EXPRESSIONS, got, TYPES) if g != w]
    assert not mismatches, mismatches


def _nonzero(strategy):
    return strategy.filter(lambda v: v != 0)


int64s = st.integers(-(2**31), 2**31)
operands = st.tuples(
    int64s,
    _nonzero(int64s),
    _nonzero(st.integers(-(2**31), 2**31 - 1)),
    st.integers(-50, 50),
    st.integers(0, 10),
    st.floats(-1e6, 1e6, allow_nan=False),
    _nonzero(st.floats(-1e6, 1e6, allow_nan=False)),
    _nonzero(st.floats(-1e4, 1e4, allow_nan=False, width=32)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operands, min_size=1, max_size=40))
def test_results_match_numba(rows):
    columns = [np.array([r[k] for r in rows], dtype=t) for k, t in enumerate(DTYPES)]
    got = run_leaf(LEAF, columns, (len(rows),))
    for n, row in enumerate(zip(*columns)):
        want = REFERENCE(*row)
        for k, (expr, w) in enumerate(zip(EXPRESSIONS, want)):
            g = got[k][n]
            if isinstance(w, (float, np.floating)):
                tol = 1e-6 if TYPES[k] == "float32" else 1e-12
                assert g == pytest.approx(w, rel=tol, abs=tol), (expr, row)
            else:
                assert g == w, (expr, row)
