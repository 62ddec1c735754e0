"""The interpreter computes leaf arithmetic as Numba does (docs/semantics.md §7), end to end.

``test_numba_arithmetic.py`` compares expressions with Numba; these tests run whole leaves
on ``interp``: the cases of issue 10, stores, augmented assignments, division by zero without
warnings, and the interpreter's checks and messages through the rewritten code.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import hpvm
from running import runs_from_its_ir

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, *args):
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy RuntimeWarning may reach the user
        return hpvm.wait(hpvm.launch(root, args, target="interp"))


@hpvm.leaf(ins=("y",))
def sum_from_zero(y: hpvm.f32[:], n: hpvm.i64) -> hpvm.f64:
    s = 0.0
    for i in range(n):
        s += y[i]
    return s


@hpvm.internal(ins=("y",))
def r_sum_from_zero(y: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node(sum_from_zero)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)
    hpvm.bind_out(node, 0, 0)


def test_a_float32_element_added_to_zero_point_zero_is_float64():
    y = np.array([16777216, 1, 1, 1], np.float32)
    (s,) = run(r_sum_from_zero, y, 4)
    assert s == 16777219.0  # float32 would stay at 16777216


@hpvm.leaf(ins=("v",))
def square(v: hpvm.i32[:]) -> hpvm.i64:
    x = v[0]
    return x * x


@hpvm.internal(ins=("v",))
def r_square(v: hpvm.i32[:]):
    node = hpvm.create_node(square)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def test_int32_products_widen_to_int64():
    assert run(r_square, np.array([100000], np.int32)) == (10_000_000_000,)


@hpvm.leaf()
def divisions(
    x: hpvm.f64, k: hpvm.i64, j: hpvm.i32
) -> tuple[hpvm.f64, hpvm.i64, hpvm.i64, hpvm.f64, hpvm.f64]:
    return 1.0 / x, 7 // k, -7 % j, k / k, math.sqrt(x - 1.0) + math.log(x)


@hpvm.internal()
def r_divisions(x: hpvm.f64, k: hpvm.i64, j: hpvm.i32):
    node = hpvm.create_node(divisions)
    for port in range(3):
        hpvm.bind_in(node, port, port)
    for port in range(5):
        hpvm.bind_out(node, port, port)


def test_division_by_zero_never_raises_nor_warns():
    inv, q, r, nan, log = run(r_divisions, 0.0, 0, 0)
    assert inv == math.inf and q == 0 and r == 0 and math.isnan(nan) and math.isnan(log)
    inv, q, r, one, log = run(r_divisions, -0.0, 2, 3)
    assert inv == -math.inf and q == 3 and r == 2 and one == 1.0  # floor division and modulo as Python's
    assert run(r_divisions, 1.0, -2, -3)[1:3] == (-4, -1)


@hpvm.leaf(ins=("a", "b"), outs=("c", "u", "w"))
def stores(a: hpvm.i32[:], b: hpvm.i32[:], c: hpvm.i32[:], u: hpvm.u8[:], w: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] * b[i]  # an int64 product, wrapped to the element's 32 bits
    u[i] = -1 - i  # 255, 254, ...
    w[i] = a[i]
    w[i] += 0.1  # in float64, then rounded to float32 once


@hpvm.internal(ins=("a", "b"), outs=("c", "u", "w"))
def r_stores(a: hpvm.i32[:], b: hpvm.i32[:], c: hpvm.i32[:], u: hpvm.u8[:], w: hpvm.f32[:]):
    node = hpvm.create_node_1d(stores, a.shape[0])
    for port in range(5):
        hpvm.bind_in(node, port, port)


def test_stores_cast_to_the_element_type_as_compiled_code_does():
    a = np.array([100000, -7, 2**31 - 1, 16777217], np.int32)
    b = np.array([100000, 3, 2, 1], np.int32)
    c, u, w = np.zeros(4, np.int32), np.zeros(4, np.uint8), np.zeros(4, np.float32)
    run(r_stores, a, b, c, u, w)
    np.testing.assert_array_equal(c, (a.astype(np.int64) * b).astype(np.int32))
    np.testing.assert_array_equal(u, [255, 254, 253, 252])
    np.testing.assert_array_equal(w, (a.astype(np.float32).astype(np.float64) + 0.1).astype(np.float32))


@hpvm.leaf(ins=("x",), outs=("x",))
def out_of_bounds_update(x: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    x[i + 2] += 1


@hpvm.internal(ins=("x",), outs=("x",))
def r_out_of_bounds_update(x: hpvm.i64[:]):
    node = hpvm.create_node_1d(out_of_bounds_update, x.shape[0])
    hpvm.bind_in(node, 0, 0)


def test_checks_name_the_leaf_line_through_rewritten_updates():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        run(r_out_of_bounds_update, np.zeros(3, np.int64))
    line = out_of_bounds_update.location.line + 3
    assert f"test_interp_arithmetic.py:{line}" in str(info.value) and "index 3" in str(info.value)


def make_scaler(factor):
    @hpvm.leaf(ins=("x",), outs=("y",))
    def scale(x: hpvm.f32[:], y: hpvm.f64[:]):
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        y[i] = x[i] * factor + min(x[i], OFFSET)  # a closure variable and a global

    @hpvm.internal(ins=("x",), outs=("y",))
    def root(x: hpvm.f32[:], y: hpvm.f64[:]):
        node = hpvm.create_node_1d(scale, x.shape[0])
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)

    return root


OFFSET = 0.1


def test_rewritten_leaves_see_their_closures_and_live_globals():
    global OFFSET
    x = np.array([0.3, 2.0], np.float32)
    y = np.zeros(2)
    run(make_scaler(0.1), x, y)
    x64 = x.astype(np.float64)  # float32 * 0.1 is float64; min(float32, 0.1) too
    np.testing.assert_array_equal(y, x64 * 0.1 + np.minimum(x64, 0.1))
    OFFSET = 5.0
    try:
        run(make_scaler(0.1), x, y)
    finally:
        OFFSET = 0.1
    np.testing.assert_array_equal(y, x64 * 0.1 + x64)


@hpvm.leaf(ins=("x",), outs=("y",))
def barrier_leaf(x: hpvm.i32[:], y: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    t = x[i] * x[i]
    hpvm.barrier()
    y[i] = t


@hpvm.internal(ins=("x",), outs=("y",))
def r_barrier_leaf(x: hpvm.i32[:], y: hpvm.i64[:]):
    node = hpvm.create_node_1d(barrier_leaf, x.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_barrier_leaves_compute_with_numbas_types_too(interp_path):
    assert runs_from_its_ir(barrier_leaf)
    x, y = np.array([100000, 3], np.int32), np.zeros(2, np.int64)
    run(r_barrier_leaf, x, y)
    np.testing.assert_array_equal(y, [10**10, 9])
