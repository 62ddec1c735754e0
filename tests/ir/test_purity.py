"""``parent_independent``: whether an allocation leaf computes the same thing in every parent
instance (the GPU back ends then run it once). It must never say yes wrongly, whatever the
leaf calls: parent ids, state and random numbers are found in helpers too."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest

import hpvm
from hpvm.ir.graph import LeafFunction, location_of
from hpvm.ir.purity import parent_independent

SIZES = (4, 8)
TABLE = (1, 2, 3)
STATE = [0]
WEIGHTS = np.ones(4)


def pure_helper(n: int) -> int:
    return int(math.sqrt(n)) + len(TABLE) + deeper(n)


def deeper(n: int) -> int:
    return n % 3 if n < 10 else deeper(n - 10)  # recursion is fine


def parent_helper() -> int:
    return hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))


def via_helper() -> int:
    return parent_helper()  # two calls deep


def stateful() -> int:
    STATE[0] += 1
    return STATE[0]


def with_global() -> int:
    global SIZES
    SIZES = (1,)
    return 0


def with_default(acc=[]) -> int:  # noqa: B006 — the point: state in a default
    acc.append(1)
    return len(acc)


def importing() -> float:
    import random as r

    return r.random()


def module_alias() -> float:
    m = np
    return m.random.random()


def module_argument() -> float:
    return draws(np)


def draws(m) -> float:  # type: ignore[no-untyped-def]
    return m.random.random()


MODULES = (np,)


def module_in_a_tuple() -> float:
    return MODULES[0].random.random()


def make_closure(value):  # type: ignore[no-untyped-def]
    def leaf_closure() -> hpvm.u8[:]:
        buf = hpvm.malloc(8)
        buf[0] = value[0] if isinstance(value, list) else value
        return buf

    return hpvm.leaf(leaf_closure)


def alloc(body):  # type: ignore[no-untyped-def]
    """A leaf ``() -> u8[:]`` whose first byte is ``body()``. Made without the decorator's
    checks: the verifier refuses intrinsics in helpers (``parent_helper``), but the analysis
    must not rely on it (a helper can be out of the verifier's sight)."""

    def leaf() -> hpvm.u8[:]:
        buf = hpvm.malloc(8)
        buf[0] = body()
        return buf

    return LeafFunction(leaf, "leaf", [], [hpvm.u8[:]], location=location_of(leaf))


@hpvm.leaf
def plain(n: hpvm.i64) -> hpvm.u8[:]:
    return hpvm.malloc(n * 4)


@hpvm.leaf
def numpy_and_math(n: hpvm.i64) -> hpvm.f32[:]:
    buf = hpvm.malloc(n * 4).view(np.float32)
    buf[:] = np.arange(n, dtype=np.float32) * np.float32(math.pi) + np.sin(np.float32(1.0))
    buf.fill(max(SIZES)) if n > TABLE[0] else None
    return buf


@hpvm.leaf
def own_node_query() -> hpvm.i64[:]:
    node = hpvm.get_node()
    buf = hpvm.malloc(8 * hpvm.get_num_node_instances_x(node)).view(np.int64)
    buf[hpvm.get_node_instance_id_x(node)] = 1
    return buf


@hpvm.leaf
def with_pure_helper(n: hpvm.i64) -> hpvm.i64[:]:
    buf = hpvm.malloc(8).view(np.int64)
    buf[0] = pure_helper(n)
    return buf


@hpvm.leaf
def parent_query() -> hpvm.i64[:]:
    buf = hpvm.malloc(8).view(np.int64)
    buf[0] = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    return buf


@hpvm.leaf
def numpy_random(n: hpvm.i64) -> hpvm.f64[:]:
    buf = hpvm.malloc(n * 8).view(np.float64)
    buf[:] = np.random.default_rng(0).standard_normal(n)
    return buf


@hpvm.leaf
def reads_global_array() -> hpvm.f64[:]:
    buf = hpvm.malloc(32).view(np.float64)
    buf[:] = WEIGHTS  # an array someone may change: not a constant
    return buf


@hpvm.leaf
def prints() -> hpvm.u8[:]:
    print("allocating")
    return hpvm.malloc(8)


@pytest.mark.parametrize(
    "leaf",
    [plain, numpy_and_math, own_node_query, with_pure_helper, make_closure(3)],
    ids=lambda leaf: leaf.name,
)
def test_leaves_that_read_only_their_inputs_are_parent_independent(leaf) -> None:  # type: ignore[no-untyped-def]
    assert parent_independent(leaf)


@pytest.mark.parametrize(
    "leaf",
    [
        parent_query,
        alloc(parent_helper),
        alloc(via_helper),
        alloc(stateful),
        alloc(with_global),
        alloc(with_default),
        alloc(importing),
        alloc(random.random),
        alloc(time.time),
        alloc(lambda: 1),  # a lambda's source cannot be read on its own
        alloc(module_alias),
        alloc(module_argument),
        alloc(module_in_a_tuple),
        numpy_random,
        reads_global_array,
        prints,
        make_closure([3]),
    ],
    ids=lambda leaf: getattr(leaf, "name", "?"),
)
def test_leaves_that_read_anything_else_are_not(leaf) -> None:  # type: ignore[no-untyped-def]
    assert not parent_independent(leaf)


@hpvm.leaf
def refuses_a_size(n: hpvm.i64) -> hpvm.u8[:]:
    if n < 0:
        raise ValueError(f"negative size {n} (sizes {SIZES})")
    return hpvm.malloc(n)


@hpvm.leaf(ins=("counts",), outs=("counts",))
def atomic_count(counts: hpvm.i32[:]) -> hpvm.u8[:]:
    hpvm.atomic_add(counts, 0, 1)
    return hpvm.malloc(8)


@pytest.mark.parametrize(
    ("leaf", "expected"),
    [(plain, True), (own_node_query, True), (parent_query, False), (atomic_count, False)],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_a_leaf_in_the_dialect_is_answered_from_its_leaf_ir(leaf, expected) -> None:  # type: ignore[no-untyped-def]
    """The IR's analysis decides, and agrees with the reading of the Python source."""
    from hpvm.ir import purity
    from hpvm.ir.leafir import leaf_ir
    from hpvm.ir.leafir.analyses import parent_independence

    assert parent_independence(leaf_ir(leaf)) is expected
    func = purity.parse_leaf(leaf)
    assert purity._Checker(set()).function(func, purity.leaf_namespace(leaf)) is expected
    leaf.__dict__.pop("_parent_independent", None)
    assert parent_independent(leaf) is expected


def test_a_raise_leaves_the_answer_to_the_reading_of_its_source() -> None:
    from hpvm.ir.leafir import leaf_ir
    from hpvm.ir.leafir.analyses import parent_independence

    assert parent_independence(leaf_ir(refuses_a_size)) is None  # the exception text is opaque
    # the reading of the source decides: it knows no exception classes among the pure calls
    # (when in doubt, no), so the leaf runs in every parent instance
    assert parent_independent(refuses_a_size) is False
