"""Stage threads are woken only when they can take an item (issue 24, item 2): a stage
waiting for inputs is not woken by a push while its upstream has nothing for it, nor by one
of its inputs while another is still empty, nor by its consumer taking an item (that wakes
a producer waiting for room, ``Stage.room``). Each such wake-up was a context switch and a
turn of the GIL for nothing: the edge detection's stream slept and woke 13 times a frame,
3.5 after."""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np
import pytest

import hpvm
from hpvm.runtime import replicas, stagebuffers

N = 64
ITEMS = 12


@hpvm.leaf(ins=("x",), outs=("a",))
def slow(x: hpvm.f64[:], steps: hpvm.i64, a: hpvm.f64[:]) -> hpvm.f64[:]:
    """The first stage, slow (busy work), so that the others wait for each item."""
    s = 0.0
    for k in range(steps):
        s += (k % 7) * 1e-12
    for i in range(x.shape[0]):
        a[i] = x[i] + 1.0 + s
    return a


@hpvm.leaf(ins=("a",), outs=("b",))
def left(a: hpvm.f64[:], b: hpvm.f64[:]) -> hpvm.f64[:]:
    for i in range(a.shape[0]):
        b[i] = a[i] * 2.0
    return b


@hpvm.leaf(ins=("a",), outs=("c",))
def right(a: hpvm.f64[:], c: hpvm.f64[:]) -> hpvm.f64[:]:
    for i in range(a.shape[0]):
        c[i] = a[i] * 3.0
    return c


@hpvm.leaf(ins=("b", "c"), outs=("d",))
def join(b: hpvm.f64[:], c: hpvm.f64[:], d: hpvm.f64[:]) -> hpvm.f64[:]:
    """Two inputs: it can take an item only once both have it."""
    for i in range(b.shape[0]):
        d[i] = b[i] + c[i]
    return d


@hpvm.internal()
def diamond(x: hpvm.f64[:], steps: hpvm.i64, a: hpvm.f64[:], b: hpvm.f64[:], c: hpvm.f64[:], d: hpvm.f64[:]):
    s, lft, rgt, j = (hpvm.create_node(f) for f in (slow, left, right, join))
    for name in ("x", "steps", "a"):
        hpvm.bind_in(s, name, name, stream=True)
    hpvm.bind_in(lft, "b", "b", stream=True)
    hpvm.bind_in(rgt, "c", "c", stream=True)
    hpvm.bind_in(j, "d", "d", stream=True)
    hpvm.edge(s, lft, hpvm.ALL_TO_ALL, 0, "a", stream=True)
    hpvm.edge(s, rgt, hpvm.ALL_TO_ALL, 0, "a", stream=True)
    hpvm.edge(lft, j, hpvm.ALL_TO_ALL, 0, "b", stream=True)
    hpvm.edge(rgt, j, hpvm.ALL_TO_ALL, 0, "c", stream=True)
    hpvm.bind_out(j, 0, 0, stream=True)


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


def run(steps: int) -> list[np.ndarray]:
    handle = hpvm.launch(diamond, None, stream=True, target="cpu", capacity=ITEMS)
    for k in range(ITEMS):
        arrays = [np.arange(N, dtype=np.float64) + k, *(np.zeros(N) for _ in range(4))]
        for array in arrays:
            hpvm.track_memory(array)
        hpvm.push(handle, (arrays[0], steps, *arrays[1:]))
    out = [hpvm.pop(handle)[0].copy() for _ in range(ITEMS)]
    hpvm.wait(handle)
    return out


def test_stages_waiting_for_their_inputs_sleep_about_once_an_item(monkeypatch):
    """Items pushed at once, the first stage slow (a few ms an item), one item at a time:
    each later stage sleeps once per item, until its inputs have it — not also once per
    push, nor for its consumer's takes, nor (``join``) again for its second input after
    the first arrived (twice an item or more before)."""
    hpvm.init()
    monkeypatch.setattr(replicas, "REPLICAS", False)  # (items one at a time: counts as said)
    run(10)  # compiles
    waits: dict[str, int] = defaultdict(int)
    wait = stagebuffers.Signal.wait

    def counted(self, timeout=None):  # type: ignore[no-untyped-def]
        waits[threading.current_thread().name] += 1
        return wait(self, timeout)

    monkeypatch.setattr(stagebuffers.Signal, "wait", counted)
    got = run(3 * 10**6)
    for k, d in enumerate(got):
        np.testing.assert_allclose(
            d, 5.0 * (np.arange(N) + k + 1.0), err_msg=f"item {k}", atol=1e-3
        )  # (+ 5 s)
    downstream = {name[-1]: n for name, n in waits.items() if name[-2:] in ("-1", "-2", "-3")}
    assert len(downstream) == 3, waits
    # (one sleep an item, and one at the end; about twice that before: 20-26 each)
    assert all(n <= ITEMS + 2 for n in downstream.values()), (
        f"sleeps of stages 1-3 for {ITEMS} items: {downstream}"
    )
