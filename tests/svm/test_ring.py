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
        elif model:
            i = n % len(model)
            assert int(ring.peek(i, 1)[0]) == model[i][0]
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
