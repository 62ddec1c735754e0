"""The ``cpu`` back end's Numba atomics (``hpvm.backends.numba_shared.atomics``).

Every contention test runs ``N`` iterations of a ``prange`` loop that all hit the same one
to four elements, and checks exact results. Besides the final values, each test checks
the returned *old* values with the linearization identity that any atomic
read-modify-write sequence satisfies: if the element goes s0 -> s1 -> ... -> sN, the old
values are {s0 .. sN-1} and the new values f(old_i, v_i) are {s1 .. sN}, so
``olds + [final] == [s0] + news`` as multisets. Lost or torn updates break it.

Kernels are grouped (one kernel runs every op) because Numba's compile time dominates.
"""

from __future__ import annotations

import math
import os
import platform
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba import njit, prange  # noqa: E402
from numba.core.errors import TypingError  # noqa: E402

from hpvm.backends.numba_shared.atomics import (  # noqa: E402
    ATOMICS,
    atomic_add,
    atomic_and,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_xchg,
    atomic_xor,
    supported_dtypes,
)

N = 200_000  # iterations per contention kernel; a multiple of 4
SRC = Path(__file__).resolve().parents[2] / "src"


# --------------------------------------------------------------------------- helpers


def check_chain(init, olds: np.ndarray, vals: np.ndarray, final, f: Callable) -> None:
    """``olds + [final] == [init] + f(olds, vals)`` as multisets (by bit pattern)."""
    dtype = olds.dtype
    news = f(olds, vals).astype(dtype)
    left = np.sort(np.concatenate([olds, np.array([final], dtype)]).view(f"u{dtype.itemsize}"))
    right = np.sort(np.concatenate([np.array([init], dtype), news]).view(f"u{dtype.itemsize}"))
    np.testing.assert_array_equal(left, right)


def py_min(old: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Python's ``min(old, v)`` elementwise: keep ``old`` unless ``v < old``."""
    return np.where(v < old, v, old)


def py_max(old: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.where(v > old, v, old)


def bits_of(x, dtype) -> int:
    return int(np.array([x], dtype).view(f"u{np.dtype(dtype).itemsize}")[0])


# --------------------------------------------------------------------------- integer ops


@njit(parallel=True)
def _int_kernel(acc, vals, setbits, clearbits, olds):
    for i in prange(vals.shape[0]):
        olds[0, i] = atomic_add(acc, i & 3, 3)  # four elements, a Python-int value (cast)
        olds[1, i] = atomic_sub(acc, 4, 2)
        olds[2, i] = atomic_min(acc, 5, vals[i])
        olds[3, i] = atomic_max(acc, 6, vals[i])
        olds[4, i] = atomic_xchg(acc, 7, vals[i])
        olds[5, i] = atomic_and(acc, 8, clearbits[i])
        olds[6, i] = atomic_or(acc, 9, setbits[i])
        olds[7, i] = atomic_xor(acc, 10, vals[i])
        olds[8, i] = atomic_add(acc, -1, np.int8(1))  # negative index, an int8 value (cast)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_int_ops_under_contention(dtype: str) -> None:
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    rng = np.random.default_rng(width)
    i = np.arange(N, dtype=np.int64)
    perm = rng.permutation(N)
    # Distinct values, negative ones for the signed types: min/max/xchg/xor use them.
    vals = ((perm - N // 2) if dt.kind == "i" else (perm + 5)).astype(dt)
    info = np.iinfo(dt)
    vals[perm == 0] = info.min + 1 if dt.kind == "i" else info.max - 1  # high bits set too
    one = np.array(1, dt)
    setbits = (one << (i % width).astype(dt)).astype(dt)  # every bit, including the top one
    clearbits = ~(one << (i % (width - 1)).astype(dt)).astype(dt)  # every bit but the top one

    # element: add x4, sub, min, max, xchg, and (all ones), or, xor, counter
    init = np.array([0, 0, 0, 0, 1_000_000, 2**30, 0, 2**30 + 1, 0, 0, 0x1234, 0], dtype=dt)
    init[6] = 0 if dt.kind == "u" else -(2**30)
    init[8] = ~np.array(0, dt)
    acc = init.copy()
    olds = np.zeros((9, N), dt)
    _int_kernel(acc, vals, setbits, clearbits, olds)

    with np.errstate(over="ignore"):
        # add: four counters, each hit N/4 times; the returned olds are exactly 0, 3, 6, ...
        for k in range(4):
            assert acc[k] == 3 * (N // 4)
            np.testing.assert_array_equal(np.sort(olds[0, i & 3 == k]), (3 * np.arange(N // 4)).astype(dt))
        # sub
        assert acc[4] == 1_000_000 - 2 * N
        np.testing.assert_array_equal(np.sort(olds[1]), (1_000_000 - 2 * np.arange(N, 0, -1) + 2).astype(dt))
        # min / max
        assert acc[5] == min(init[5], vals.min())
        check_chain(init[5], olds[2], vals, acc[5], np.minimum)
        assert acc[6] == max(init[6], vals.max())
        check_chain(init[6], olds[3], vals, acc[6], np.maximum)
        # xchg: every written value (and the initial one) is seen exactly once
        assert acc[7] in set(vals.tolist())
        np.testing.assert_array_equal(
            np.sort(np.concatenate([olds[4], [acc[7]]])), np.sort(np.concatenate([[init[7]], vals]))
        )
        # and / or / xor
        assert acc[8] == np.bitwise_and.reduce(np.concatenate([[init[8]], clearbits]))
        assert acc[8] == (one << np.array(width - 1, dt)).astype(dt)  # only the top bit survives
        check_chain(init[8], olds[5], clearbits, acc[8], np.bitwise_and)
        assert acc[9] == ~np.array(0, dt)  # every bit set
        check_chain(init[9], olds[6], setbits, acc[9], np.bitwise_or)
        assert acc[10] == np.bitwise_xor.reduce(np.concatenate([[init[10]], vals]))
        check_chain(init[10], olds[7], vals, acc[10], np.bitwise_xor)
        # the negative index hit the last element; its olds are exactly 0 .. N-1
        assert acc[-1] == N
        np.testing.assert_array_equal(np.sort(olds[8]), np.arange(N).astype(dt))


# --------------------------------------------------------------------------- float ops


@njit(parallel=True)
def _float_kernel(acc, vals, olds):
    for i in prange(vals.shape[0]):
        olds[0, i] = atomic_add(acc, i & 1, 0.5)  # two elements; a float64 value (cast)
        olds[1, i] = atomic_sub(acc, 2, 0.25)
        olds[2, i] = atomic_min(acc, 3, vals[i])
        olds[3, i] = atomic_max(acc, 4, vals[i])
        olds[4, i] = atomic_add(acc, 5, 1)  # a counter; an integer value (cast)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_ops_under_contention(dtype: str) -> None:
    dt = np.dtype(dtype)
    rng = np.random.default_rng(dt.itemsize)
    vals = ((rng.permutation(N) - N / 2) * 0.25).astype(dt)  # exactly representable, distinct
    init = np.array([0, 0, 0, 1e9, -1e9, 0], dt)
    acc = init.copy()
    olds = np.zeros((5, N), dt)
    _float_kernel(acc, vals, olds)

    # add: sums of 0.5 are exact, so are the returned olds: 0, 0.5, 1.0, ... each once
    i = np.arange(N)
    for k in range(2):
        assert acc[k] == 0.5 * (N // 2)
        np.testing.assert_array_equal(np.sort(olds[0, i & 1 == k]), (0.5 * np.arange(N // 2)).astype(dt))
    assert acc[2] == -0.25 * N
    np.testing.assert_array_equal(np.sort(olds[1]), (-0.25 * np.arange(N - 1, -1, -1)).astype(dt))
    assert acc[3] == vals.min()
    check_chain(init[3], olds[2], vals, acc[3], py_min)
    assert acc[4] == vals.max()
    check_chain(init[4], olds[3], vals, acc[4], py_max)
    assert acc[5] == N
    np.testing.assert_array_equal(np.sort(olds[4]), np.arange(N).astype(dt))


@njit
def _fmin(a, v):
    return atomic_min(a, 0, v)


@njit
def _fmax(a, v):
    return atomic_max(a, 0, v)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_min_max_match_python_min_max(dtype: str) -> None:
    """NaN and signed-zero semantics are those of the interpreter's ``min(old, v)``."""
    nan, inf = math.nan, math.inf
    cases = [(1.0, 2.0), (2.0, 1.0), (nan, 1.0), (1.0, nan), (nan, nan), (0.0, -0.0), (-0.0, 0.0),
             (inf, -inf), (-inf, 5.0), (3.0, 3.0)]  # fmt: skip
    for kernel, pyop in ((_fmin, min), (_fmax, max)):
        for old, v in cases:
            a = np.array([old], dtype)
            ret = kernel(a, np.array(v, dtype)[()])
            expected = pyop(np.array(old, dtype)[()], np.array(v, dtype)[()])
            assert bits_of(ret, dtype) == bits_of(old, dtype), (kernel, old, v)
            assert bits_of(a[0], dtype) == bits_of(expected, dtype), (kernel, old, v, a[0], expected)


# --------------------------------------------------------------------------- indexing and layouts


@njit(parallel=True)
def _nd_kernel(a2, a3, n):
    for i in prange(n):
        atomic_add(a2, (i % 3, i % 5), 1)
        atomic_add(a2, (i % 3 - 3, i % 5), 1)  # negative indices count from the end
        atomic_add(a3, (i % 2, np.int32(i % 3), np.uint8(i % 4)), 0.5)  # mixed integer types


def _nd_expected(n: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n)
    e2 = np.zeros((3, 5), np.int64)
    np.add.at(e2, (i % 3, i % 5), 2)
    e3 = np.zeros((2, 3, 4))
    np.add.at(e3, (i % 2, i % 3, i % 4), 0.5)
    return e2, e3


@pytest.mark.parametrize("layout", ["C", "F", "A"])
def test_nd_arrays_with_tuple_indices(layout: str) -> None:
    e2, e3 = _nd_expected(N)
    if layout in "CF":
        a2 = np.zeros((3, 5), np.int64, order=layout)
        a3 = np.zeros((2, 3, 4), order=layout)
        base2 = base3 = None
    else:  # non-contiguous views: every other row / column, and a transposed slice
        base2 = np.full((6, 11), 7, np.int64)
        a2 = base2[::2, 1::2]
        base3 = np.full((8, 3, 2), 9.0)
        a3 = base3[::2].transpose(2, 1, 0)
    assert numba.typeof(a2).layout == layout and numba.typeof(a3).layout == layout
    a2[...] = 0
    a3[...] = 0
    _nd_kernel(a2, a3, N)
    np.testing.assert_array_equal(a2, e2)
    np.testing.assert_array_equal(a3, e3)
    if base2 is not None and base3 is not None:  # nothing outside the views was touched
        mask2 = np.ones(base2.shape, bool)
        mask2[::2, 1::2] = False
        assert (base2[mask2] == 7).all()
        assert (base3[1::2] == 9.0).all()


@njit(parallel=True)
def _strided_kernel(v, n):
    for i in prange(n):
        atomic_add(v, i % 3, 1)
        atomic_xchg(v, -1, 5)


def test_non_contiguous_1d_view() -> None:
    base = np.zeros(20, np.int32)
    view = base[::2]
    assert numba.typeof(view).layout == "A"
    _strided_kernel(view, N)
    expected = np.zeros(20, np.int32)
    np.add.at(expected, 2 * (np.arange(N) % 3), 1)
    expected[18] = 5
    np.testing.assert_array_equal(base, expected)


@njit(boundscheck=True)
def _checked(a, i):
    return atomic_add(a, i, 1)


def test_boundscheck_applies_when_enabled() -> None:
    a = np.zeros(4, np.int64)
    assert _checked(a, -4) == 0 and a[0] == 1
    with pytest.raises(IndexError):
        _checked(a, 4)
    with pytest.raises(IndexError):
        _checked(a, -5)


# --------------------------------------------------------------------------- errors


def _jit_call(op: str):
    """A fresh ``@njit`` function ``call(a, i, v)`` that returns ``atomic_<op>(a, i, v)``."""
    fn = ATOMICS[op]

    @njit
    def call(a, i, v):
        return fn(a, i, v)

    return call


def _compile_call(op: str, arr, index, value) -> None:
    _jit_call(op)(arr, index, value)


@pytest.mark.parametrize(
    "op, arr, index, value, expected",
    [
        ("and", np.zeros(2, np.float32), 0, 1, ["atomic_and", "float32", "int32, int64, uint32, uint64"]),
        ("xchg", np.zeros(2, np.float64), 0, 1.0, ["atomic_xchg", "float64", "int32, int64, uint32, uint64"]),
        (
            "add",
            np.zeros(2, np.int8),
            0,
            1,
            ["atomic_add", "int8", "int32, int64, uint32, uint64, float32, float64"],
        ),
        ("or", np.zeros(2, np.bool_), 0, True, ["atomic_or", "bool", "int32, int64, uint32, uint64"]),
        ("min", np.zeros(2, np.complex128), 0, 1, ["atomic_min", "complex128", "float32, float64"]),
        (
            "add",
            np.zeros((2, 2), np.int32),
            0,
            1,
            ["atomic_add", "2 dimension(s)", "one integer per dimension"],
        ),
        ("add", np.zeros(2, np.int32), (0, 1), 1, ["atomic_add", "1 dimension(s)"]),
        ("sub", np.zeros(2, np.int32), 0.5, 1, ["atomic_sub", "index must be an integer"]),
        ("max", np.zeros(2, np.int64), 0, 1j, ["atomic_max", "value must be an integer, float or bool"]),
        ("add", 3, 0, 1, ["atomic_add", "arr must be a NumPy array"]),
    ],
)
def test_unsupported_combinations_are_typing_errors(op, arr, index, value, expected) -> None:
    with pytest.raises(TypingError) as info:
        _compile_call(op, arr, index, value)
    for text in expected:
        assert text in str(info.value)


def test_read_only_array_is_a_typing_error() -> None:
    a = np.zeros(2, np.int64)
    a.flags.writeable = False
    with pytest.raises(TypingError, match="read-only"):
        _compile_call("add", a, 0, 1)


def test_supported_dtypes() -> None:
    assert supported_dtypes("add") == ("int32", "int64", "uint32", "uint64", "float32", "float64")
    assert supported_dtypes("xor") == ("int32", "int64", "uint32", "uint64")
    assert set(ATOMICS) == {"add", "sub", "min", "max", "xchg", "and", "or", "xor"}
    with pytest.raises(ValueError, match="unknown atomic operation"):
        supported_dtypes("nand")


# --------------------------------------------------------------------------- caching


CACHED_SCRIPT = """
import numpy as np
from numba import njit, prange
from hpvm.backends.numba_shared.atomics import atomic_add, atomic_max, atomic_min

@njit(parallel=True, nogil=True, cache=True)
def kernel(ints, floats, n):
    for i in prange(n):
        atomic_add(ints, (i % 2, 0), 1)
        atomic_min(floats, 0, -0.5 * i)
        atomic_max(floats, 1, 0.5 * i)

ints = np.zeros((2, 2), np.int64)
floats = np.zeros(2)
kernel(ints, floats, 10_000)
assert ints[0, 0] == ints[1, 0] == 5_000 and floats[0] == -4999.5 and floats[1] == 4999.5
print("HITS", sum(kernel.stats.cache_hits.values()), "MISSES", sum(kernel.stats.cache_misses.values()))
"""


def test_callers_compile_with_cache_true(tmp_path: Path) -> None:
    script = tmp_path / "cached_atomics.py"
    script.write_text(textwrap.dedent(CACHED_SCRIPT))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))

    def run() -> str:
        done = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run() == "HITS 0 MISSES 1"
    assert any((tmp_path / "cache").rglob("*.nbc")), "no cache file was written"
    assert run() == "HITS 1 MISSES 0"


# --------------------------------------------------------------------------- real concurrency

STRESS_SCRIPT = """
import numpy as np, numba
from numba import njit, prange
from hpvm.backends.numba_shared.atomics import atomic_add, atomic_max, atomic_min, atomic_xor

@njit(parallel=True)
def racy(counts, n):
    for i in prange(n):
        counts[i & 1] += 1

@njit(parallel=True)
def stress(counts, fsum, fmin, umax, bits, n):
    for i in prange(n):
        v = (i * 7919) % 1_000_003
        atomic_add(counts, i & 1, 1)
        atomic_add(fsum, i & 1, 0.5)
        atomic_min(fmin, 0, v - 500_000)
        atomic_max(umax, 0, v)
        atomic_xor(bits, 0, i)

@njit(parallel=True)
def stress_min(fmin, olds, period):
    # Every thread sweeps the same descending values at once, so they keep racing to
    # store (a random order would store only about log(n) times).
    for i in prange(olds.shape[0]):
        olds[i] = atomic_min(fmin, 0, -(i % period))

n = {n}
counts = np.zeros(2, np.int64)
racy(counts, 1000)
counts[:] = 0
racy(counts, n)
print("RACY", n - counts.sum(), "of", n, "plain increments lost on", numba.get_num_threads(), "threads")
counts, fsum = np.zeros(2, np.int64), np.zeros(2)
fmin, umax, bits = np.full(1, 1e9, np.float32), np.zeros(1, np.uint32), np.zeros(1, np.int32)
stress(counts, fsum, fmin, umax, bits, n)
assert (counts == n // 2).all(), counts
assert (fsum == n // 2 * 0.5).all(), fsum
assert fmin[0] == -500_000 and umax[0] == 1_000_002, (fmin, umax)
assert bits[0] == [n - 1, 1, n, 0][(n - 1) % 4], bits

m, period = n // 4, n // 32
fmin, olds = np.zeros(1, np.float32), np.zeros(m, np.float32)
stress_min(fmin, olds, period)
assert fmin[0] == -(period - 1), fmin
v = -(np.arange(m) % period).astype(np.float32)
news = np.where(v < olds, v, olds)  # every old value and the new value it became
assert (np.sort(np.append(olds, fmin)) == np.sort(np.append(news, np.float32(0)))).all()
print("STORES", np.count_nonzero(v < olds), "of", m, "atomic_min calls stored")
print("OK")
"""


def test_stress_with_many_threads(tmp_path: Path) -> None:
    """Oversubscribed threads and a long loop, so that threads really interleave (also on
    machines with few cores, where the in-process tests may hardly overlap): exact totals
    for the native RMWs and the compare-and-swap loops. Prints how many updates a plain
    ``counts[i & 1] += 1`` loses in the same setting (not asserted: timing-dependent)."""
    script = tmp_path / "stress_atomics.py"
    script.write_text(STRESS_SCRIPT.format(n=20_000_000))
    env = dict(os.environ, NUMBA_NUM_THREADS="8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    print("\n" + "\n".join(lines[:-1]))
    assert lines[-1] == "OK"


# x86-64 lowering of each op with its result used: a locked fetch-and-add, an exchange
# (implicitly locked), or a locked compare-and-swap loop (LLVM expands the RMWs that x86
# lacks, and float fadd/fsub, into one). NRT's own reference counting only uses lock inc/dec.
X86_LOCKED = {
    "add": r"lock\s+xadd",
    "sub": r"lock\s+xadd",
    "xchg": r"\bxchg[bwlq]?\b",
    **{op: r"lock\s+cmpxchg" for op in ("min", "max", "and", "or", "xor")},
}
X86_LOCKED_FLOAT = {op: r"lock\s+cmpxchg" for op in ("add", "sub", "min", "max")}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="checks x86-64 code")
@pytest.mark.parametrize("dtype", ["int64", "uint32", "float32", "float64"])
def test_every_op_compiles_to_a_locked_instruction(dtype: str) -> None:
    """Independent of how much threads overlap on the test machine: each op's machine code
    has the locked instruction that makes it atomic."""
    expected = X86_LOCKED_FLOAT if dtype.startswith("float") else X86_LOCKED
    for op, pattern in expected.items():
        one = _jit_call(op)
        a = np.ones(1, dtype)
        one(a, 0, a.dtype.type(1))
        asm = one.inspect_asm(one.signatures[0])
        assert re.search(pattern, asm), (op, dtype, pattern)
