"""``backends/dask/tiny.py``: which direct launches run whole because their chunks ran in
next to no time (the rule alone; the launches themselves: test_dask_fixed_cost.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpvm.backends.dask import tiny
from hpvm.backends.dask.tiny import ChunkTimes, Tiny

SIZES = (8, 1)
times = st.lists(st.one_of(st.none(), st.floats(0.0, 1e-3)), min_size=1, max_size=4)


@given(seconds=times)
def test_a_split_makes_the_next_launch_whole_exactly_when_every_chunk_was_timed_tiny(seconds):
    chunks = ChunkTimes()
    chunks.split_ran(SIZES, seconds)
    tiny_ones = all(s is not None and s < tiny.TINY_CHUNK_S for s in seconds)
    assert (chunks.whole(SIZES, len(seconds)) is not None) == tiny_ones
    assert chunks.whole((9, 1), len(seconds)) is None  # (other sizes: their own)


@given(seconds=st.one_of(st.none(), st.floats(0.0, 1e-2)))
def test_a_whole_run_keeps_the_decision_unless_timed_past_the_bound(seconds):
    chunks = ChunkTimes()
    chunks.split_ran(SIZES, [1e-6, 2e-6])
    decided = chunks.whole(SIZES, 2)
    assert decided == Tiny(SIZES, 2)
    chunks.whole_ran(decided, seconds)
    kept = seconds is None or seconds < 2 * tiny.TINY_CHUNK_S
    assert (chunks.whole(SIZES, 2) is not None) == kept


def test_a_slow_split_forgets_an_earlier_tiny_one():
    chunks = ChunkTimes()
    chunks.split_ran(SIZES, [1e-6, 1e-6])
    chunks.split_ran(SIZES, [1e-6, 1.0])
    assert chunks.whole(SIZES, 2) is None


def test_a_bound_of_zero_splits_every_launch(monkeypatch: pytest.MonkeyPatch):
    chunks = ChunkTimes()
    chunks.split_ran(SIZES, [0.0, 0.0])
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 0.0)
    assert chunks.whole(SIZES, 2) is None


def test_the_note_says_why_in_microseconds():
    assert Tiny(SIZES, 3).reason == (
        "its 3 chunks each ran in under 200 µs last time (one call to one worker costs less than 3)"
    )
