"""The footprint check in C (``fastpath.ANY_SHARED``, the extension's ``any_shared``): for
any lists of arrays — views of one buffer with steps in either direction, transposes,
reshapes, other dtypes over the same bytes, empty ones, separate arrays — it answers what
NumPy's ``may_share_memory`` over every pair answers, and ``replicas.Footprint.overlaps``
answers the same through either path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.runtime import fastpath, replicas
from hpvm.runtime.replicas import Footprint

pytestmark = pytest.mark.skipif(fastpath.ANY_SHARED is None, reason=fastpath.REASON or "no any_shared")

BASES = [np.zeros(96, np.float64), np.zeros(96, np.float64)]  # two buffers: sharing and not


@st.composite
def views(draw: st.DrawFn) -> np.ndarray:
    """A view of one of ``BASES``: a 1-D slice (any step, either direction), reshaped to 2-D,
    transposed, or read as another dtype; or a fresh array of its own."""
    kind = draw(st.sampled_from(["slice", "2d", "transposed", "dtype", "fresh", "scalar"]))
    base = BASES[draw(st.integers(0, 1))]
    start = draw(st.integers(0, 96))
    stop = draw(st.integers(0, 96))
    step = draw(st.sampled_from([1, 2, 3, -1, -2, 5]))
    view = base[start:stop:step]
    if kind == "2d":
        rows = draw(st.integers(1, 8))
        view = (
            base[start : start + rows * 4].reshape(-1, 4)
            if start + rows * 4 <= 96
            else base[:8].reshape(2, 4)
        )
        view = view[:, draw(st.integers(0, 3)) :: draw(st.sampled_from([1, 2, -1]))]
    elif kind == "transposed":
        view = base[:48].reshape(6, 8).T[:: draw(st.sampled_from([1, 2, -1]))]
    elif kind == "dtype":
        view = base[start // 2 * 2 : start // 2 * 2 + 8].view(np.uint8)[draw(st.integers(0, 63)) :]
    elif kind == "fresh":
        view = np.zeros(draw(st.integers(0, 5)), np.int32)
    elif kind == "scalar":
        at = draw(st.integers(0, 95))
        view = base[at : at + 1].reshape(())  # (a 0-d view: one element)
    return view


@settings(max_examples=400, deadline=None)
@given(ours=st.lists(views(), max_size=5), theirs=st.lists(views(), max_size=5))
def test_any_shared_is_numpys_may_share_memory_over_every_pair(ours, theirs) -> None:  # type: ignore[no-untyped-def]
    want = any(np.may_share_memory(a, b) for a in ours for b in theirs)
    assert fastpath.ANY_SHARED(ours, theirs, np.ndarray) is want


def test_the_footprints_overlap_alike_through_c_and_numpy(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    base = np.zeros(8)
    pairs = [
        (Footprint([np.zeros(2)], [base[0:4]]), Footprint([], [base[2:6]])),  # overlapping views
        (Footprint([np.zeros(2)], [base[0:4]]), Footprint([base[3:5]], [])),  # one the other reads
        (Footprint([np.zeros(2)], [base[0:4]]), Footprint([], [base[4:8]])),  # disjoint halves
        (Footprint([base], []), Footprint([base], [np.zeros(1)])),  # read by both
        (Footprint([], [base[::2]]), Footprint([], [base[1::2]])),  # interleaved: bounds say shared
    ]
    with_c = [a.overlaps(b) for a, b in pairs]
    monkeypatch.setattr(fastpath, "ANY_SHARED", None)
    assert with_c == [a.overlaps(b) for a, b in pairs] == [True, True, False, False, True]
    assert replicas._any_shared([base], [base[3:4]])  # (the NumPy pairs: the path taken now)


def test_anything_but_an_array_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not an ndarray"):
        fastpath.ANY_SHARED([np.zeros(2)], [[1.0, 2.0]], np.ndarray)
    with pytest.raises(TypeError, match="lists"):
        fastpath.ANY_SHARED((np.zeros(2),), [np.zeros(2)], np.ndarray)
