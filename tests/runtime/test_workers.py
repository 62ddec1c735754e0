"""The worker pool stays at the number of launches that really run at once (issue 10,
item 10: strictly sequential launch + wait used to grow it by a thread every few launches)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hpvm
from hpvm.runtime import Runtime


@hpvm.leaf(ins=("a",), outs=("a",))
def bump(a: hpvm.f32[:]):
    a[0] += 1


@hpvm.internal
def root(a: hpvm.f32[:]):
    node = hpvm.create_node(bump)
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf
def block_until(flag: hpvm.i64) -> hpvm.i64:
    # (interp runs leaves as Python: the test's events are reachable from here)
    RELEASE[flag].wait(5)
    return flag


RELEASE = [threading.Event() for _ in range(4)]


@hpvm.internal
def blocking(flag: hpvm.i64):
    node = hpvm.create_node(block_until)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_sequential_launches_reuse_one_worker(target: str) -> None:
    if target not in hpvm.backends.available_backends():
        pytest.skip(f"{target} is not available here")
    rt = Runtime()
    rt.init()
    try:
        a = np.zeros(1, np.float32)
        rt.track_memory(a)
        for _ in range(500):
            rt.wait(rt.launch(root, (a,), target=target))
        assert a[0] == 500
        assert rt.workers.thread_count() <= 2
    finally:
        rt.cleanup()


def test_concurrent_launches_still_get_a_worker_each() -> None:
    rt = Runtime()
    rt.init()
    try:
        handles = [rt.launch(blocking, (k,), target="interp") for k in range(3)]
        for event in RELEASE[:3]:
            event.set()
        assert [rt.wait(h) for h in handles] == [(0,), (1,), (2,)]
        assert rt.workers.thread_count() <= 3
    finally:
        rt.cleanup()
        for event in RELEASE:
            event.clear()
