"""The Python → OpenCL C translator on its own: leaves run over grids on PoCL (``run_leaf``).

Each construct of the supported subset is run on the device and compared with what Python /
Numba computes; each unsupported construct is a ``CompileError`` naming the leaf, the line
and the construct.
"""

import math

import numpy as np
import pytest

import hpvm
from markers import SourceMarkers, fails, needs_backend

pytest.importorskip("pyopencl")

from hpvm.backends.opencl.standalone import run_leaf  # noqa: E402
from hpvm.backends.opencl.translate import ArraySpec, ScalarSpec, translate_leaf  # noqa: E402

pytestmark = needs_backend("opencl")
HERE = SourceMarkers(__file__)


# -- arithmetic, types, control flow ----------------------------------------------------------


@hpvm.leaf(ins=("a", "b"), outs=("q", "r"))
def divmod_ints(a: hpvm.i64[:], b: hpvm.i64[:], q: hpvm.i64[:], r: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


def test_floor_division_and_modulo_of_negative_integers_follow_python():
    a = np.array([7, -7, 7, -7, 0, 9, -9, 1], np.int64)
    b = np.array([2, 2, -2, -2, 3, -4, 4, -1], np.int64)
    q, r = np.zeros_like(a), np.zeros_like(a)
    run_leaf(divmod_ints, (a, b, q, r), (a.size,))
    assert q.tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())]
    assert r.tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())]


@hpvm.leaf(ins=("x",), outs=("out",))
def widening(x: hpvm.i32[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    s = x[i] + x[i]  # int32 + int32 is int64 (Numba): no overflow
    out[i] = s


def test_int32_arithmetic_widens_to_int64_like_numba():
    x = np.array([2**31 - 1, -(2**31), 5], np.int32)
    out = np.zeros(3, np.int64)
    run_leaf(widening, (x, out), (3,))
    assert out.tolist() == [2 * v for v in x.tolist()]
    assert translate_leaf(widening).local_types["s"] == np.int64


@hpvm.leaf(ins=("x",), outs=("out",))
def float_promotion(x: hpvm.f32[:], out: hpvm.f64[:]) -> tuple[hpvm.f32, hpvm.f64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y = x[i] * 0.1  # a float64 literal: float64 (Numba), not float32
    z = x[i] * x[i]  # float32 stays float32
    out[i] = y
    return z, y


def test_float32_with_a_float_literal_computes_in_float64():
    x = np.array([1.1, 3.3, -7.7], np.float32)
    out = np.zeros(3)
    z, y = run_leaf(float_promotion, (x, out), (3,))
    assert out.tolist() == (x.astype(np.float64) * 0.1).tolist()
    assert z.dtype == np.float32 and z.tolist() == (x * x).tolist()
    types = translate_leaf(float_promotion).local_types
    assert types["y"] == np.float64 and types["z"] == np.float32


@hpvm.leaf(ins=("x",), outs=("out",))
def control_flow(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    v = x[i]
    acc = 0
    for k in range(v):  # range(n)
        acc += k
    for k in range(10, 0, -3):  # a negative step
        acc += k
    step = 2 if v > 3 else -1
    for _k in range(0, 5, step):  # a step known only at run time (never 0 here)
        acc += 100
    j = 0
    while j < v and j < 4:
        j += 1
        if j == 2:
            continue
        acc += 1000
    if v < 0:
        acc = -acc
    elif v == 0:
        acc = 7
    else:
        acc = acc * 2
    out[i] = acc


def _control_flow(v: int) -> int:
    acc = sum(range(v)) + sum(range(10, 0, -3))
    acc += 100 * len(range(0, 5, 2 if v > 3 else -1))
    j = 0
    while j < v and j < 4:
        j += 1
        if j == 2:
            continue
        acc += 1000
    return -acc if v < 0 else 7 if v == 0 else acc * 2


def test_loops_branches_break_continue():
    x = np.array([-3, 0, 1, 2, 5, 9], np.int64)
    out = np.zeros_like(x)
    run_leaf(control_flow, (x, out), (x.size,))
    assert out.tolist() == [_control_flow(v) for v in x.tolist()]


@hpvm.leaf(ins=("x",))
def loop_variable_after(x: hpvm.i64[:]) -> tuple[hpvm.i64, hpvm.i64, hpvm.bool_]:
    last = -1
    for last in range(x.shape[0]):
        if x[last] > 10:
            break
    empty = 42
    for empty in range(0):  # noqa: B007 — the loop variable keeps its value after an empty loop
        pass
    return last, empty, not (x[0] > 0 or x[1] > 0)


def test_loop_variable_keeps_python_value_after_the_loop():
    x = np.array([1, 2, 30, 4], np.int64)
    last, empty, flag = run_leaf(loop_variable_after, (x,))
    assert (last[0], empty[0], bool(flag[0])) == (2, 42, False)


@hpvm.leaf(ins=("m",), outs=("out",))
def indexing(m: hpvm.f64[:, :], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    row = m[i]
    out[i] = row[-1] + m[i, 0] * m.shape[1] + m[i][1] + len(row) + m.size + m.ndim


def test_multidimensional_indexing_rows_negative_indices_and_shapes():
    base = np.arange(40.0).reshape(5, 8)
    m = base[:, ::2]  # strided: strides are passed, not assumed
    out = np.zeros(5)
    run_leaf(indexing, (m, out), (5,))
    want = m[:, -1] + m[:, 0] * 4 + m[:, 1] + 4 + m.size + 2
    assert out.tolist() == want.tolist()


@hpvm.leaf(ins=("x",), outs=("out",))
def math_calls(x: hpvm.f64[:], out: hpvm.f64[:, :]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    v = x[i]
    out[i, 0] = math.sqrt(abs(v)) + np.exp(v / 10.0) + math.log(abs(v) + 1.0)
    out[i, 1] = math.floor(v) + math.ceil(v) + np.floor(v) + round(v)
    out[i, 2] = min(v, 1.0, 0.5) + max(v, -2) + math.sin(v) * math.cos(v) + math.atan2(v, 2.0)
    out[i, 3] = v**2 + v**0.5 if v > 0 else math.pi + math.hypot(v, 3.0) + math.fmod(v, 1.5)
    out[i, 4] = 2**3 + (-2) ** 3 + 3**-1 + (1 if math.isnan(v) else 0) + float(int(v)) + np.float32(v)


def _math_calls(v: float) -> list[float]:
    return [
        math.sqrt(abs(v)) + math.exp(v / 10.0) + math.log(abs(v) + 1.0),
        math.floor(v) + math.ceil(v) + math.floor(v) + round(v),
        min(v, 1.0, 0.5) + max(v, -2) + math.sin(v) * math.cos(v) + math.atan2(v, 2.0),
        v**2 + v**0.5 if v > 0 else math.pi + math.hypot(v, 3.0) + math.fmod(v, 1.5),
        8 + (-8) + 0 + float(int(v)) + float(np.float32(v)),
    ]


def test_math_functions_and_builtins():
    x = np.array([-3.7, -0.5, 0.0, 0.25, 2.5, 7.9])
    out = np.zeros((6, 5))
    run_leaf(math_calls, (x, out), (6,))
    np.testing.assert_allclose(out, [_math_calls(v) for v in x.tolist()], rtol=1e-12)


@hpvm.leaf
def multiple_outputs(a: hpvm.i64, b: hpvm.f32, flag: hpvm.bool_) -> tuple[hpvm.i64, hpvm.f32, hpvm.bool_]:
    if flag:
        return a * 2, b / 2, flag
    x, y = b, a  # tuple assignment with temporaries
    return y + 1, x, not flag


def test_multiple_returns_and_early_return():
    assert run_leaf(multiple_outputs, (5, 3.0, True)) == pytest.approx((10, 1.5, True))
    got = run_leaf(multiple_outputs, (5, 3.0, False))
    assert (int(got[0][0]), float(got[1][0]), bool(got[2][0])) == (6, 3.0, True)


@hpvm.leaf(outs=("out",))
def queries(out: hpvm.i64[:, :, :]):
    n = hpvm.get_node()
    p = hpvm.get_parent_node(n)
    i, j = hpvm.get_node_instance_id_x(n), hpvm.get_node_instance_id_y(n)
    k = hpvm.get_node_instance_id_z(n)
    out[i, j, k] = (
        hpvm.get_node_instance_id_x(p) * 1000
        + hpvm.get_num_node_instances_x(p) * 100
        + hpvm.get_num_dims(n) * 10
        + hpvm.get_num_node_instances_z(n)
    )


def test_query_intrinsics_read_the_context_of_each_level():
    out = np.zeros((2, 3, 4), np.int64)
    run_leaf(queries, (out,), (2, 3, 4), parents=[((5,), (6,), 1)])
    assert (out == 5000 + 600 + 30 + 4).all()


@hpvm.leaf(ins=("x",), outs=("hist", "fsum"))
def atomics(x: hpvm.i64[:], hist: hpvm.i32[:, :], fsum: hpvm.f32[:]) -> hpvm.i32:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    old = hpvm.atomic_add(hist, (0, x[i] % 4), 1)
    hpvm.atomic_max(hist, (1, 0), x[i])
    hpvm.atomic_add(fsum, 0, 0.5)
    return old


def test_atomics_on_two_dimensional_int32_and_float32():
    x = np.arange(100, dtype=np.int64)
    hist, fsum = np.zeros((2, 4), np.int32), np.zeros(1, np.float32)
    (olds,) = run_leaf(atomics, (x, hist, fsum), (100,))
    assert hist[0].tolist() == [25] * 4 and hist[1, 0] == 99 and fsum[0] == 50.0
    assert sorted(olds[x % 4 == 1].tolist()) == list(range(25))


@hpvm.leaf(ins=("a",), outs=("b",))
def read_only_const(a: hpvm.f32[:], b: hpvm.f32[:]):
    b[0] = a[0]


def test_arrays_only_read_are_const_and_layouts_specialise():
    t = translate_leaf(read_only_const)
    decls = [d for d, _ in t.signature]
    assert "const __global float* a" in decls and "__global float* b" in decls
    strided = translate_leaf(
        read_only_const,
        [
            ArraySpec(np.dtype(np.float32), 1, contiguous=False, zero_offset=True),
            ArraySpec(np.dtype(np.float32), 1),
        ],
    )
    decls = [d for d, _ in strided.signature]
    assert "long a__s0" in decls and "long a__off" not in decls and "long b__s0" not in decls


# -- what the translator refuses ---------------------------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def uses_slice(a: hpvm.f64[:], b: hpvm.f64[:]):
    b[0] = a[1:3][0]  # @slice


@hpvm.leaf(ins=("a",), outs=("b",))
def uses_unknown_function(a: hpvm.f64[:], b: hpvm.f64[:]):
    b[0] = np.sum(a)  # @func


@hpvm.leaf(ins=("a",), outs=("b",))
def uses_method(a: hpvm.f64[:], b: hpvm.f64[:]):
    b[0] = a.sum()  # @method


@hpvm.leaf(ins=("a",), outs=("b",))
def uses_with(a: hpvm.f64[:], b: hpvm.f64[:]):
    with open("x"):  # @with
        b[0] = a[0]


@hpvm.leaf(ins=("a",), outs=("b",))
def loops_over_array(a: hpvm.f64[:], b: hpvm.f64[:]):
    for v in a:  # @iter
        b[0] = v


@hpvm.leaf(ins=("a", "b"))
def two_bases(a: hpvm.f64[:], b: hpvm.f64[:], k: hpvm.i64) -> hpvm.f64[:]:
    if k > 0:
        return a
    return b  # @bases


@hpvm.leaf
def allocates(n: hpvm.i64) -> hpvm.u8[:]:
    return hpvm.malloc(n)  # @malloc


@hpvm.leaf
def handle_escapes() -> hpvm.i64:
    node = hpvm.get_node()
    return hpvm.get_num_dims(node) + node  # @handle


@hpvm.leaf
def array_expression(x: hpvm.f64) -> hpvm.f64:
    s = "text"  # noqa: F841  # @string
    return x


@hpvm.leaf
def used_before(x: hpvm.f64) -> hpvm.f64:
    if x > 0:
        return y  # noqa: F821  # @unbound
    return x


@pytest.mark.parametrize(
    ("leaf", "marker", "construct"),
    [
        (uses_slice, "slice", "slices (a[i:j]) are not supported"),
        (uses_unknown_function, "func", "the function np.sum() is not supported"),
        (uses_method, "method", "array method '.sum()'"),
        (uses_with, "with", "a 'With' statement is not supported"),
        (loops_over_array, "iter", "only loops over range(...)"),
        (two_bases, "bases", "returns a view of 'b' here and of 'a' elsewhere"),
        (allocates, "malloc", "hpvm.malloc() is supported only in an allocation node"),
        (handle_escapes, "handle", "arithmetic on a node handle"),
        (array_expression, "string", "the constant 'text' is not supported"),
        (used_before, "unbound", "the name 'y' is not defined"),
    ],
    ids=lambda v: v if isinstance(v, str) else getattr(v, "name", "?"),
)
def test_unsupported_constructs_are_compile_errors_with_the_line(leaf, marker, construct):
    with fails(hpvm.CompileError, f"leaf '{leaf.name}'", HERE.at(marker), construct, "target='cpu'"):
        translate_leaf(leaf)


def test_scalar_specs_must_match_the_parameters():
    with pytest.raises(ValueError, match="1 specs for the 2 parameters"):
        translate_leaf(read_only_const, [ScalarSpec(np.dtype(np.float32))])


@hpvm.leaf
def reassigns_parameters(n: hpvm.i64, x: hpvm.f64) -> tuple[hpvm.i64, hpvm.f64]:
    n = n // 2
    x *= 3
    return n, x


def test_scalar_parameters_may_be_reassigned_with_their_type():
    n, x = run_leaf(reassigns_parameters, (-7, 1.5))
    assert (n[0], x[0]) == (-4, 4.5)


@hpvm.leaf(ins=("a",))
def retypes_parameter(a: hpvm.f64[:], n: hpvm.i64) -> hpvm.i64:
    n = a[0]  # @retype
    return n


def test_a_parameter_cannot_change_kind():
    with fails(hpvm.CompileError, HERE.at("retype"), "a scalar parameter keeps its type"):
        translate_leaf(retypes_parameter)


@hpvm.leaf(ins=("a",), outs=("b",))
def neighbours(a: hpvm.f64[:], b: hpvm.f64[:]):
    k = hpvm.get_node_instance_id_x(hpvm.get_node()) + 1
    j = k - 2  # -1 for the first instance: wraps to the last element, as in Python
    b[k - 1] = a[k - 1] + a[j]


def test_indices_known_to_be_non_negative_skip_the_wrap():
    a = np.arange(6.0)
    b = np.zeros(6)
    run_leaf(neighbours, (a, b), (5,))
    assert b[:5].tolist() == [a[k] + a[k - 1] for k in range(5)]
    source = translate_leaf(neighbours).source
    assert "a[a__off + (k - 1L)]" in source and "hpvm_wrap(j, a__n0)" in source
