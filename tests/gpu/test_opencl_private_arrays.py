"""``np.zeros`` of a constant shape in a leaf becomes a work-item's ``__private`` array on
``opencl`` (as ``cuda.local.array`` on cuda): zeroed each time the statement runs, indexed
in one or two dimensions, with the results the interpreter computes; misuse is located."""

import numpy as np
import pytest

import hpvm
from markers import SourceMarkers, fails, needs_backend

pytest.importorskip("pyopencl")
from hpvm.backends.opencl.translate import translate_leaf  # noqa: E402

HERE = SourceMarkers(__file__)


@hpvm.leaf(ins=("a",), outs=("c", "m"))
def windowed(a: hpvm.i64[:], c: hpvm.i64[:], m: hpvm.f32[:, :]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    total = 0
    for r in range(3):
        w = np.zeros(4, np.int64)  # a new zeroed array every iteration
        for k in range(4):
            w[k] += a[(i + k + r) % a.shape[0]] * (k + 1)
        total += w[3] - w[0]
    grid = np.zeros((2, 3), np.float32)
    grid[1, 2] = 1.5
    grid[0, i % 3] += 2.0
    scratch = np.zeros(2)  # NumPy's default: float64
    scratch[1] = 0.25
    c[i] = total + np.int64(grid[1, 2] * 2.0 + grid[0, 0] + scratch[1] * 4.0)
    if i == 0:
        m[0, 0] = grid[1][2]


@hpvm.internal
def r_windowed(a: hpvm.i64[:], c: hpvm.i64[:], m: hpvm.f32[:, :]):
    node = hpvm.create_node_1d(windowed, a.shape[0])
    for k in range(3):
        hpvm.bind_in(node, k, k)


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", ["interp", pytest.param("opencl", marks=needs_backend("opencl"))])
def test_private_arrays_compute_what_the_interpreter_computes(target: str) -> None:
    a = np.arange(-5, 12, dtype=np.int64) * 3
    results = []
    for t in ("interp", target):
        c, m = np.zeros_like(a), np.zeros((2, 3), np.float32)
        for x in (a, c, m):
            hpvm.track_memory(x)
        hpvm.wait(hpvm.launch(r_windowed, (a, c, m), target=t))
        for x in (a, c, m):
            hpvm.request_memory(x)
            hpvm.untrack_memory(x)
        results.append((c, m))
    (c0, m0), (c1, m1) = results
    np.testing.assert_array_equal(c1, c0)
    np.testing.assert_array_equal(m1, m0)
    assert m1[0, 0] == np.float32(1.5)


def test_the_kernel_declares_each_array_once_and_zeroes_it_where_python_assigns_it() -> None:
    source = translate_leaf(windowed).source
    assert source.count("long w__priv[4];") == 1
    assert "float grid__priv[6];" in source
    assert "double scratch__priv[2];" in source
    assert source.count("w__priv[w__priv__z] = 0;") == 1  # inside the loop over r


@hpvm.leaf(outs=("out",))
def returns_its_scratch(out: hpvm.f32[:]) -> hpvm.f32[:]:
    t = np.zeros(4, np.float32)
    return t  # @ret


@hpvm.leaf(outs=("out",))
def assigns_twice(out: hpvm.f32[:], flag: hpvm.i64):
    t = np.zeros(4, np.float32)
    if flag:
        t = np.zeros(4, np.float32)  # @twice
    out[0] = t[0]


@hpvm.leaf(outs=("out",))
def complex_zeros(out: hpvm.f32[:]):
    t = np.zeros(4, np.complex64)  # @complex
    out[0] = t[0].real


@pytest.mark.parametrize(
    "leaf, marker, words",
    [
        (returns_its_scratch, "ret", "returns the leaf's own array 't'"),
        (assigns_twice, "twice", "'t' is assigned in more than one place"),
        (complex_zeros, "complex", "np.zeros with the element type np.complex64 is not supported"),
    ],
)
def test_misused_private_arrays_are_located_compile_errors(leaf, marker: str, words: str) -> None:
    with fails(hpvm.CompileError, f"leaf '{leaf.name}'", HERE.at(marker), words):
        translate_leaf(leaf)
