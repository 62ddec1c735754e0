"""The three-stage streaming pipeline the streaming tests of every back end share (runtime,
dask, LLVM leaves, the SVM mapping): ``x → x + 1 → (2y, y) → (a + 1000·b, b)``, and the
pair each pushed ``x`` gives (``expect``)."""

from __future__ import annotations

import numpy as np

import hpvm


@hpvm.leaf
def add_one(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def double(x: hpvm.i64) -> tuple[hpvm.i64, hpvm.i64]:
    return x * 2, x


@hpvm.leaf
def combine(a: hpvm.i64, b: hpvm.i64) -> tuple[hpvm.i64, hpvm.i64]:
    return a + 1000 * b, b


@hpvm.internal
def three_stages(x: hpvm.i64):  # type: ignore[no-untyped-def]
    s1 = hpvm.create_node(add_one)
    s2 = hpvm.create_node(double)
    s3 = hpvm.create_node(combine)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.edge(s2, s3, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.edge(s2, s3, hpvm.ONE_TO_ONE, 1, 1, stream=True)
    hpvm.bind_out(s3, 0, 0, stream=True)
    hpvm.bind_out(s3, 1, 1, stream=True)


def expect(x: int) -> tuple[int, int]:
    """What ``three_stages`` pops for a pushed ``x``."""
    return ((x + 1) * 2 + 1000 * (x + 1), x + 1)


# -- pipelines inside internal nodes (docs/semantics.md §13, "Nested pipelines") -----------


@hpvm.internal
def nested_pipeline(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """A root stage that is an internal node holding ``three_stages`` (3 stages of its own),
    streaming into a last stage at the root: 4 stages in all."""
    inner = hpvm.create_node(three_stages)
    last = hpvm.create_node(add_one)
    hpvm.bind_in(inner, 0, 0)
    hpvm.edge(inner, last, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(last, 0, 0)
    hpvm.bind_out(inner, 1, 1)


def expect_nested(x: int) -> tuple[int, int]:
    """What ``nested_pipeline`` pops for a pushed ``x``."""
    a, b = expect(x)
    return a + 1, b


@hpvm.internal
def middle(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """One level down: a stage, then ``three_stages`` (the second level) over a stream bind."""
    first = hpvm.create_node(add_one)
    inner = hpvm.create_node(three_stages)
    hpvm.bind_in(first, 0, 0)
    hpvm.edge(first, inner, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(inner, 0, 0, stream=True)
    hpvm.bind_out(inner, 1, 1)


@hpvm.internal
def two_levels(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """Two levels of nesting: ``middle`` holds ``three_stages``; a root stage after it (5 in all)."""
    mid = hpvm.create_node(middle)
    last = hpvm.create_node(double)
    hpvm.bind_in(mid, 0, 0)
    hpvm.edge(mid, last, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(last, 0, 0)
    hpvm.bind_out(mid, 1, 1)


def expect_two_levels(x: int) -> tuple[int, int]:
    """What ``two_levels`` pops for a pushed ``x``."""
    a, b = expect(x + 1)
    return a * 2, b


@hpvm.leaf
def fails_on_five(x: hpvm.i64) -> hpvm.i64:
    if x == 5:
        raise ValueError("five is refused")
    return x


@hpvm.internal
def checked(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """A nested pipeline whose second stage fails for the item 5 (``add_one`` gives 5 for 4)."""
    first = hpvm.create_node(add_one)
    check = hpvm.create_node(fails_on_five)
    hpvm.bind_in(first, 0, 0)
    hpvm.edge(first, check, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(check, 0, 0)


@hpvm.internal
def nested_failing(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """``checked`` as a root stage before another: pushing 4 fails in node ``checked/fails_on_five``;
    every other ``x`` gives ``x + 2``."""
    inner = hpvm.create_node(checked)
    last = hpvm.create_node(add_one)
    hpvm.bind_in(inner, 0, 0)
    hpvm.edge(inner, last, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(last, 0, 0)


#: The nested programs every streaming back end runs: root, expected pop per pushed x, and
#: how many stages the root's pipeline has once they are inlined.
NESTED = {
    "nested_pipeline": (nested_pipeline, expect_nested, 4),
    "two_levels": (two_levels, expect_two_levels, 5),
}
#: The pushed x that fails in ``nested_failing``, and the node path its error names.
FAILING_ITEM, FAILING_NODE = 4, "checked/fails_on_five"


@hpvm.leaf
def sum_of_scratch(x: hpvm.i64) -> hpvm.i64:
    scratch = hpvm.malloc(64).view(np.int64)  # zero-filled, like a fresh buffer
    s = 0
    for k in range(8):
        scratch[k] += x + k
        s += scratch[k]
    return s


def scratch_stages(x: hpvm.i64):  # type: ignore[no-untyped-def]
    """``x → x + 1 → sum over k < 8 of (x + 1 + k)`` through a fresh malloc'd buffer per
    item: wrapped by ``hpvm.internal`` in each test, so that its malloc statistics start at
    zero (``8 (x + 1) + 28``)."""
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(sum_of_scratch)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)
