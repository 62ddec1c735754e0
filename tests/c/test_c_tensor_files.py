"""The tensor runtime's Python halves, without C: HPVM's file format (tensorfiles.py) and
HPVM's accuracy (tensoraccuracy.py), against plain NumPy, property by property."""

from __future__ import annotations

import ctypes
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hpvm import c
from hpvm.c.tensoraccuracy import RunningAccuracy, batch_accuracy, chosen_classes
from hpvm.c.tensorfiles import c_copy, c_values, read_values

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

DTYPES = ["float32", "uint32", "uint8"]


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    size=st.integers(0, 40),
    start=st.integers(0, 45),
    count=st.integers(1, 45),
    data=st.data(),
)
def test_read_values_is_a_slice_of_the_file_or_says_how_short_it_is(dtype, size, start, count, data):
    values = data.draw(hnp.arrays(dtype, size, elements=hnp.from_dtype(np.dtype(dtype), allow_nan=False)))
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "v.bin")
        values.tofile(path)
        if start + count <= size:
            got = read_values("api", path, dtype, start, count)
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got, values[start : start + count])
        else:
            with fails(c.HPVMCError, "api(", f"holds {size} {dtype} values, {start + count} are needed"):
                read_values("api", path, dtype, start, count)


def test_read_values_of_a_missing_file_or_a_folder(tmp_path):
    with fails(c.HPVMCError, "readLabels(", "cannot read the file: No such file"):
        read_values("readLabels", str(tmp_path / "none.bin"), "uint8", 0, 1)
    with fails(c.HPVMCError, "readTrainedWeights(", "cannot read the file: Is a directory"):
        read_values("readTrainedWeights", str(tmp_path), "float32", 0, 1)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(st.sampled_from(["uint8", "uint32", "float32"]), st.integers(0, 50)))
def test_c_memory_round_trip(values):
    address = c_copy(values)
    try:
        np.testing.assert_array_equal(c_values(address, values.dtype.name, values.size), values)
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(address))  # C's malloc: the program may free it


scores = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 12), st.integers(1, 12)),
    elements=st.floats(-3, 3, width=32) | st.sampled_from([0.0, 1.0]),  # ties are common
)


@settings(max_examples=80, deadline=None)
@given(scores)
def test_the_chosen_class_is_the_first_maximum(s):
    """HPVM's loop (``chosen`` moves only to a strictly larger value) is NumPy's argmax."""
    np.testing.assert_array_equal(chosen_classes(s), np.argmax(s, axis=1))


def test_a_nan_is_never_chosen_over_an_earlier_class():
    s = np.array([[np.nan, 5.0, 1.0], [1.0, np.nan, 2.0], [3.0, np.nan, 2.0]], np.float32)
    np.testing.assert_array_equal(chosen_classes(s), [0, 2, 0])  # HPVM's comparisons with NaN are false


@settings(max_examples=60, deadline=None)
@given(scores, st.data())
def test_batch_accuracy_is_the_percentage_of_rows_right(s, data):
    labels = data.draw(hnp.arrays(np.uint32, s.shape[0], elements=st.integers(0, s.shape[1])))
    accuracy = batch_accuracy(s, labels)
    assert isinstance(accuracy, np.float32)
    right = np.count_nonzero(np.argmax(s, axis=1) == labels)
    assert accuracy == np.float32(right / s.shape[0] * 100.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 100, width=32), min_size=1, max_size=30))
def test_the_running_accuracy_is_the_mean_so_far(accuracies):
    running = RunningAccuracy()
    for k, a in enumerate(accuracies, 1):
        average = running.add(np.float32(a))
        assert isinstance(average, np.float32)
        assert average == pytest.approx(np.mean(accuracies[:k]), rel=1e-5, abs=1e-4)
