"""The ring buffer under every stream, against a Python deque model (hypothesis)."""

from __future__ import annotations

from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.svm.ring import Ring

ops = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 9), st.booleans()),
        st.tuples(st.just("pop"), st.integers(1, 9), st.just(False)),
        st.tuples(st.just("discard"), st.integers(1, 9), st.just(False)),
        st.tuples(st.just("peek"), st.integers(0, 9), st.just(False)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), ops)
def test_random_push_pop_peek_sequences_match_a_deque(capacity, operations):
    memory = np.zeros(capacity * 4 + 8, np.uint8)
    ring = Ring(memory[4:], capacity, np.dtype(np.int32))
    model: deque[tuple[int, bool]] = deque()
    counter = 0
    for op, n, eos in operations:
        if op == "push":
            n = min(n, capacity - len(model))
            values = np.arange(counter, counter + n, dtype=np.int32)
            counter += n
            ring.push(values, eos_last=eos)
            model.extend((int(v), eos and i == n - 1) for i, v in enumerate(values))
        elif op == "pop":
            n = min(n, len(model))
            values, tags = ring.pop(n)
            expected = [model.popleft() for _ in range(n)]
            assert values.tolist() == [v for v, _ in expected]
            assert tags.tolist() == [t for _, t in expected]
        elif op == "discard":
            n = min(n, len(model))
            ring.discard(n)
            for _ in range(n):
                model.popleft()
        elif model:
            i = n % len(model)
            assert int(ring.peek(i, 1)[0]) == model[i][0] == int(ring.get(i))
            assert ring.peek_eos(i) == model[i][1]
        assert ring.count == len(model) and ring.space == capacity - len(model)
        tagged = [i for i, (_, t) in enumerate(model) if t]
        assert ring.first_eos(len(model)) == (tagged[0] if tagged else -1)
    # The guard bytes around the ring's region were never written.
    assert memory[:4].tolist() == [0, 0, 0, 0]
    assert not memory[4 + capacity * 4 :].any()


def test_elements_sit_at_their_slot_of_the_circular_layout():
    memory = np.zeros(16, np.uint8)
    ring = Ring(memory, 4, np.dtype(np.int32))
    ring.push(np.array([1, 2, 3], np.int32))
    ring.pop(2)
    ring.push(np.array([4, 5, 6], np.int32))  # wraps: slots 3, 0, 1
    assert memory.view(np.int32).tolist() == [5, 6, 3, 4]
    assert ring.peek(0, 4).tolist() == [3, 4, 5, 6]


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(1, 7),
    st.integers(0, 20),
    st.integers(0, 20),
    st.data(),
)
def test_move_to_copies_bytes_between_rings_like_pop_then_push(cap_a, cap_b, shift_a, shift_b, data):
    """``move_to`` (the Move kernel's direct copy) against pop + push, from random heads."""
    a = Ring(np.zeros(cap_a * 4, np.uint8), cap_a, np.dtype(np.int32))
    b = Ring(np.zeros(cap_b * 4, np.uint8), cap_b, np.dtype(np.float32))  # same size, other type
    for ring, shift in ((a, shift_a), (b, shift_b)):  # rotate the heads
        for _ in range(shift % ring.capacity):
            ring.push(np.zeros(1, ring.dtype))
            ring.pop(1)
    stored_a = data.draw(st.integers(0, cap_a))
    a.push(np.arange(1, stored_a + 1, dtype=np.int32), eos_last=data.draw(st.booleans()))
    stored_b = data.draw(st.integers(0, cap_b))
    b.push(np.full(stored_b, -1, np.float32))
    n = data.draw(st.integers(0, min(a.count, b.space)))
    expected_tags = [a.peek_eos(i) for i in range(a.count)][n:]
    last = data.draw(st.booleans())
    a.move_to(b, n, eos_last=last)
    moved = b.peek(stored_b, n).view(np.int32).tolist() if n else []
    assert moved == list(range(1, n + 1))
    assert a.count == stored_a - n and b.count == stored_b + n
    assert a.peek(0, a.count).tolist() == list(range(n + 1, stored_a + 1))
    assert [a.peek_eos(i) for i in range(a.count)] == expected_tags
    expected_b = [False] * b.count
    if last and n:
        expected_b[-1] = True
    assert [b.peek_eos(i) for i in range(b.count)] == expected_b
