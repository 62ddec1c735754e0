"""The three-stage streaming pipeline the streaming tests of every back end share (runtime,
dask, LLVM leaves, the SVM mapping): ``x → x + 1 → (2y, y) → (a + 1000·b, b)``, and the
pair each pushed ``x`` gives (``expect``)."""

from __future__ import annotations

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
