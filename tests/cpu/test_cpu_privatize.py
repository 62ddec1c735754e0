"""Privatized atomics on the cpu back end (privatize.py): arrays a parallel loop only
updates with unused-result atomics of one operation get per-thread copies, folded after the
loop. Results must equal the interpreter's (exactly for integers); the rewrite must not
happen when an instance could observe the array during the loop.

Whether it happened is read from the compile report ``program.gen.privatized``.
"""

# No ``from __future__ import annotations``: the roots below are built with their port types
# as annotation *values*.

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import hpvm
from example_modules import load
from golden_text import check_golden, relative
from hpvm.backends import get_backend
from hpvm.backends.cpu.privatize import atomic_only_params, privatized_clone
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.analyses import atomic_only_arrays
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import verify_leaf
from hpvm.passes.clone_leaves import clone_leaf
from programs import PROGRAMS, assert_matches, expected, run_program

N = 4096


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def report(root):
    return get_backend("cpu").prepare(root).gen.privatized


def launch(root, args, target):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    for a in copies:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    outs = hpvm.wait(hpvm.launch(root, tuple(copies), target=target))
    return copies, outs


# -- one leaf per operation: acc[i % len(acc)] op= vals[i] -------------------------------------


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def add_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def sub_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_sub(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def min_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_min(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def max_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_max(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def and_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_and(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def or_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_or(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def xor_i32(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_xor(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def add_f32(acc: hpvm.f32[:], vals: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def sub_f32(acc: hpvm.f32[:], vals: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_sub(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def min_f64(acc: hpvm.f64[:], vals: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_min(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def max_f64(acc: hpvm.f64[:], vals: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_max(acc, i % acc.shape[0], vals[i])


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def add_i64_2d(acc: hpvm.i64[:, :], vals: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, (i % acc.shape[0], i % 3), vals[i])


def one_leaf_root(leaf, acc_type, vals_type):
    def root(acc: acc_type, vals: vals_type):
        node = hpvm.create_node_1d(leaf, vals.shape[0])
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)

    root.__name__ = f"root_{leaf.name}"
    return hpvm.internal(root)


def int_case(leaf, op):
    rng = np.random.default_rng(7)
    if op in ("and", "or", "xor"):
        vals = (~(np.int64(1) << rng.integers(0, 31, N))).astype(np.int32)
        if op == "or":
            vals = ~vals
        acc = np.full(16, -1 if op == "and" else 0x100, np.int32)
    else:
        vals = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64).astype(np.int32)  # sums wrap
        acc = rng.integers(-1000, 1000, 16).astype(np.int32)
    return one_leaf_root(leaf, hpvm.i32[:], hpvm.i32[:]), (acc, vals)


CASES = {
    "add_i32": lambda: int_case(add_i32, "add"),
    "sub_i32": lambda: int_case(sub_i32, "sub"),
    "min_i32": lambda: int_case(min_i32, "min"),
    "max_i32": lambda: int_case(max_i32, "max"),
    "and_i32": lambda: int_case(and_i32, "and"),
    "or_i32": lambda: int_case(or_i32, "or"),
    "xor_i32": lambda: int_case(xor_i32, "xor"),
    "add_f32": lambda: (
        one_leaf_root(add_f32, hpvm.f32[:], hpvm.f32[:]),
        (
            np.array([1.5, -0.0, 0.0, 2.0] * 4, np.float32),
            np.random.default_rng(8).uniform(-9, 9, N).astype(np.float32),
        ),
    ),
    "sub_f32": lambda: (
        one_leaf_root(sub_f32, hpvm.f32[:], hpvm.f32[:]),
        (
            np.array([1.5, -0.0, 0.0, 2.0] * 4, np.float32),
            np.random.default_rng(9).uniform(-9, 9, N).astype(np.float32),
        ),
    ),
    "min_f64": lambda: (
        one_leaf_root(min_f64, hpvm.f64[:], hpvm.f64[:]),
        (np.array([0.5, np.nan, -np.inf, 3.0] * 4), np.random.default_rng(10).uniform(-9, 9, N)),
    ),
    "max_f64": lambda: (
        one_leaf_root(max_f64, hpvm.f64[:], hpvm.f64[:]),
        (np.array([0.5, np.nan, np.inf, 3.0] * 4), np.random.default_rng(11).uniform(-9, 9, N)),
    ),
    "add_i64_2d": lambda: (
        one_leaf_root(add_i64_2d, hpvm.i64[:, :], hpvm.i64[:]),
        (np.zeros((5, 3), np.int64), np.random.default_rng(12).integers(-(2**62), 2**62, N)),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_privatized_atomics_match_the_interpreter(case):
    root, args = CASES[case]()
    (got, _), _ = launch(root, args, "cpu")
    (want, _), _ = launch(root, args, "interp")
    assert [(r[1], r[2]) for r in report(root)] == [("acc", case.split("_")[0])]
    if np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:  # additions in another order (the spec does not order atomic float adds either)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def add_f32_low4(acc: hpvm.f32[:], vals: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, i % 4, vals[i])


def test_an_untouched_negative_zero_stays_negative_zero():
    """The copies start at -0.0, the identity of float addition: -0.0 + -0.0 is -0.0."""
    root = one_leaf_root(add_f32_low4, hpvm.f32[:], hpvm.f32[:])
    acc = np.array([1.0, -0.0, 0.0, 2.0, -0.0, 0.0, -0.0, 5.0], np.float32)
    (got, _), _ = launch(root, (acc, np.ones(64, np.float32)), "cpu")
    assert report(root)
    np.testing.assert_array_equal(got, [17.0, 16.0, 16.0, 18.0, -0.0, 0.0, -0.0, 5.0])
    assert list(np.signbit(got[4:])) == [True, False, True, False]


def test_histogram_example_is_privatized_and_exact():
    histogram = load("histogram")
    bins, reference = histogram.run(n=50_000, nbins=64, seed=3, target="cpu")
    oracle, _ = histogram.run(n=50_000, nbins=64, seed=3, target="interp")
    np.testing.assert_array_equal(bins, reference)
    np.testing.assert_array_equal(bins, oracle)
    assert [(r[1], r[2]) for r in report(histogram.root)] == [("bins", "add")]


# -- the variant: a pass on the clone's lowered leaf IR (golden) --------------------------------

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    "leaf", [add_i32, min_f64, add_i64_2d, load("histogram").bin_value], ids=lambda leaf: leaf.name
)
def test_the_privatized_variant_golden(leaf):
    clone = clone_leaf(leaf)
    params = atomic_only_params(clone)
    ir = leaf_ir(leaf)
    assert params and all(atomic_only_arrays(ir)[ir.params[i].name] == {op} for i, op in params.items())
    variant = privatized_clone(clone, params)
    verify_leaf(variant.ir)
    assert "__hpvm_atomic" not in variant.source() and variant.symbol.startswith(f"{clone.symbol}_priv")
    check_golden(GOLDEN / f"privatized.{leaf.name}.leafir", print_leaf(relative(variant.ir)))


def test_a_clone_without_leaf_ir_is_not_privatized():
    clone = replace(clone_leaf(add_i32), ir=None)
    assert atomic_only_params(clone) == {}
    assert privatized_clone(clone, {0: "add"}) is clone


# -- cases where privatizing would be wrong ------------------------------------------------------


@hpvm.leaf(ins=("acc", "vals"), outs=("acc", "olds"))
def old_value_used(acc: hpvm.i32[:], vals: hpvm.i32[:], olds: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    olds[i] = hpvm.atomic_add(acc, 0, vals[i])


@hpvm.internal
def old_value_root(acc: hpvm.i32[:], vals: hpvm.i32[:], olds: hpvm.i32[:]):
    node = hpvm.create_node_1d(old_value_used, vals.shape[0])
    for p in range(3):
        hpvm.bind_in(node, p, p)


def test_not_privatized_when_the_old_value_is_used():
    vals = np.arange(1, 201, dtype=np.int32)
    (acc, _, olds), _ = launch(old_value_root, (np.zeros(1, np.int32), vals, np.zeros(200, np.int32)), "cpu")
    assert report(old_value_root) == []
    assert acc[0] == vals.sum()
    # the olds are the partial sums, in some order: each distinct, the largest is the total minus one value
    assert len(set(olds.tolist())) == 200 and olds.min() == 0


@hpvm.leaf(ins=("bins",), outs=("bins",))
def bump(bins: hpvm.i32[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(bins, i, 1)
    return i


@hpvm.leaf(ins=("seen",), outs=("out",))
def look(i: hpvm.i64, seen: hpvm.i32[:], out: hpvm.i32[:]):
    out[i] = seen[i]  # right after this instance's own atomic on the same element


@hpvm.internal
def read_in_same_loop(bins: hpvm.i32[:], out: hpvm.i32[:]):
    a = hpvm.create_node_1d(bump, bins.shape[0])
    b = hpvm.create_node_1d(look, bins.shape[0])
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(b, 0, 1)
    hpvm.bind_in(b, 1, 2)


@hpvm.internal
def read_alias_in_same_loop(bins: hpvm.i32[:], seen: hpvm.i32[:], out: hpvm.i32[:]):
    a = hpvm.create_node_1d(bump, bins.shape[0])
    b = hpvm.create_node_1d(look, bins.shape[0])
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(b, 1, 1)
    hpvm.bind_in(b, 2, 2)


def test_not_privatized_when_another_node_of_the_loop_reads_the_array():
    bins = np.arange(100, dtype=np.int32)
    (got, out), _ = launch(read_in_same_loop, (bins, np.zeros(100, np.int32)), "cpu")
    (_, want), _ = launch(read_in_same_loop, (bins, np.zeros(100, np.int32)), "interp")
    assert report(read_in_same_loop) == []
    np.testing.assert_array_equal(out, bins + 1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(got, bins + 1)


def test_the_same_array_under_two_names_falls_back_to_atomics_at_run_time():
    """Statically the reader's array is another one; at run time it is the same memory."""
    bins = np.arange(100, dtype=np.int32)
    out = np.zeros(100, np.int32)
    for a in (bins, out):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(read_alias_in_same_loop, (bins, bins, out), target="cpu"))
    assert [(r[1], r[2]) for r in report(read_alias_in_same_loop)] == [("bins", "add")]  # static
    np.testing.assert_array_equal(out, np.arange(100) + 1)  # each instance saw its own add
    np.testing.assert_array_equal(bins, np.arange(100) + 1)


def test_not_privatized_when_one_array_takes_several_operations():
    program = next(p for p in PROGRAMS if p.name == "atomics_int32")
    assert_matches(program, run_program(program, "cpu"), expected(program))
    assert report(program.root) == []


def test_arrays_too_big_for_private_copies_keep_the_atomics():
    root = one_leaf_root(add_i32, hpvm.i32[:], hpvm.i32[:])
    acc = np.zeros(20_000, np.int32)  # 80 KB > 64 KiB
    vals = np.random.default_rng(1).integers(-100, 100, 40_000).astype(np.int32)
    (got, _), _ = launch(root, (acc, vals), "cpu")
    want = np.zeros(20_000, np.int64)
    np.add.at(want, np.arange(40_000) % 20_000, vals)
    np.testing.assert_array_equal(got, want)


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def add_and_report(acc: hpvm.i32[:], vals: hpvm.i32[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, i % acc.shape[0], vals[i])
    return i


@hpvm.internal
def peeled_root(acc: hpvm.i32[:], vals: hpvm.i32[:]):
    node = hpvm.create_node_1d(add_and_report, vals.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)
    hpvm.bind_out(node, 0, 0)  # the last instance's value: that instance runs after the loop


def test_the_peeled_last_instance_still_adds_once():
    vals = np.arange(1000, dtype=np.int32)
    (acc, _), (last,) = launch(peeled_root, (np.zeros(8, np.int32), vals), "cpu")
    assert last == 999
    assert report(peeled_root)
    want = np.zeros(8, np.int64)
    np.add.at(want, np.arange(1000) % 8, vals)
    np.testing.assert_array_equal(acc, want)
