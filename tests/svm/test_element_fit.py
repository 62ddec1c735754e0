"""A value enters a stream or block only if it fits the element type (docs/svm.md, "Element
values"): from control code, from Python work functions and from compiled ones, with one
message naming the call, the stream or block, the value and the type."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import svm
from hpvm.svm import elements

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def misfit(call: str, value: str, dtype: str):
    return pytest.raises(
        svm.SVMError, match=rf"^{call}: {value} does not fit in an element of type {dtype} \(.*\); bring it"
    )


def ram_stream(name: str, dtype, address: int = 0) -> svm.Stream:
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", address, 8, dtype)
    s.name = name  # what messages call it
    return s


def test_pushes_from_control_code(computer):
    small = ram_stream("small", np.uint8)
    with misfit(r"stream_push\(small\)", "300", "uint8"):
        svm.stream_push(small, 300)
    with misfit(r"stream_push_with_eos\(small\)", "-1", "uint8"):
        svm.stream_push_with_eos(small, -1)
    wide = ram_stream("wide", np.int32, 64)
    with misfit(r"stream_push_multicast\(wide\)", "1e\\+20", "int32"):
        svm.stream_push_multicast(1e20, wide)
    with misfit(r"stream_push\(wide\)", "nan", "int32"):
        svm.stream_push(wide, math.nan)
    single = ram_stream("single", np.float32, 128)
    with misfit(r"stream_push\(single\)", "1e\\+39", "float32"):
        svm.stream_push(single, np.float64(1e39))
    assert len(small) == len(wide) == len(single) == 0  # nothing was pushed
    svm.stream_push(small, 255)
    svm.stream_push(wide, -2.9)  # C's conversion: toward zero
    svm.stream_push(single, math.inf)
    svm.stream_push(single, 3.4028235e38)  # rounds to float32's largest value
    assert (svm.stream_pop(small), svm.stream_pop(wide)) == (255, -2)
    assert svm.stream_pop(single) == np.inf and svm.stream_pop(single) == np.finfo(np.float32).max


def test_bulk_pushes_name_the_first_value_that_does_not_fit(computer):
    s = ram_stream("s", np.int8)
    with misfit(r"stream_push_many\(s\)", r"values\[2\] = 128", "int8"):
        svm.stream_push_many(s, np.array([1, 2, 128, 300], np.int64))  # NumPy alone would wrap these
    with misfit(r"stream_push_many\(s\)", r"values\[1\] = 1180591620717411303424", "int8"):
        svm.stream_push_many(s, [1, 2**70])
    with misfit(r"stream_push_many\(s\)", r"values\[0\] = inf", "int8"):
        svm.stream_push_many(s, np.array([np.inf]))
    assert len(s) == 0
    svm.stream_push_many(s, np.array([-128, 127, 5.9]))
    assert svm.stream_pop_many(s, 3).tolist() == [-128, 127, 5]


def test_blocks_arrays_and_structs(computer):
    b = svm.Block()
    svm.block_init(b, "RAM", 0, 4, np.int16)
    with misfit(r"block_write\(b\)", "40000", "int16"):
        svm.block_write(b, 0, 40000)
    pair = ram_stream("pair", np.dtype((np.uint8, 2)), 64)
    with misfit(r"stream_push\(pair\)", r"values\[1\] = 256", "uint8"):
        svm.stream_push(pair, [1, 256])
    record = ram_stream("record", np.dtype([("a", np.uint8), ("b", np.float32)]), 128)
    with pytest.raises(svm.SVMError, match=r"stream_push\(record\): \(300, 1.0\) does not fit.*out of its"):
        svm.stream_push(record, (300, 1.0))


def test_a_python_work_function_gets_the_error_at_kernel_wait(computer):
    out = ram_stream("out", np.uint8)

    class Doubler(svm.Kernel):
        pass

    k = Doubler()
    svm.kernel_init(k, "PROC0", None, lambda k: svm.stream_push(k.out, 200 * 2))
    k.out = out
    svm.kernel_run(k)
    with pytest.raises(svm.SVMError, match=r"kernel k .* failed: stream_push\(out\): 400 does not fit"):
        svm.kernel_wait(k)


class K(svm.Kernel):
    pass


# One case per kind of conversion: (element type, value, the value as messages show it).
CASES = [
    (np.int8, -129, "-129"),  # a narrower signed integer
    (np.uint64, -1, "-1"),  # signed into unsigned
    (np.int64, np.uint64(2**63), "9223372036854775808"),  # unsigned into signed
    (np.int32, math.nan, "nan"),  # a float into an integer
    (np.float32, 1e39, "1e\\+39"),  # a narrower float
]


def push_case(k):
    """Pushes case ``k.which``: one work function for every case, so the kernel compiles
    once (its members keep their types from run to run)."""
    if k.which == 0:
        svm.stream_push(k.o0, k.v0)
    elif k.which == 1:
        svm.stream_push(k.o1, k.v1)
    elif k.which == 2:
        svm.stream_push(k.o2, k.v2)
    elif k.which == 3:
        svm.stream_push(k.o3, k.v3)
    else:
        svm.stream_push(k.o4, k.v4)


def write_value(k):
    svm.block_write(k.b, 0, k.value)


def test_compiled_kernels_refuse_what_python_refuses(computer):
    outs = [ram_stream(f"o{i}", dtype, 64 * i) for i, (dtype, _, _) in enumerate(CASES)]
    k = K()
    for which, (dtype, value, shown) in enumerate(CASES):
        svm.kernel_init(k, "PROC0", None, push_case, compiled=True)
        k.which = which
        for i, (out, (_, v, _)) in enumerate(zip(outs, CASES)):
            setattr(k, f"o{i}", out)
            setattr(k, f"v{i}", v)
        svm.kernel_run(k)
        name = np.dtype(dtype).name
        compiled = rf"stream_push\(o{which}\) in compiled kernel k: {shown} does not fit .* type {name}"
        with pytest.raises(svm.SVMError, match=compiled):
            svm.kernel_wait(k)
        assert len(outs[which]) == 0
        with pytest.raises(
            svm.SVMError, match=rf"stream_push\(o{which}\): {shown} does not fit .* type {name}"
        ):
            svm.stream_push(outs[which], value)


def test_compiled_block_writes_and_values_that_fit(computer):
    b = svm.Block()
    svm.block_init(b, "RAM", 0, 2, np.int8)
    k = K()
    svm.kernel_init(k, "PROC0", None, write_value, compiled=True)
    k.b, k.value = b, 1000
    svm.kernel_run(k)
    with pytest.raises(
        svm.SVMError, match=r"block_write\(b\) in compiled kernel k: 1000 does not fit .* int8"
    ):
        svm.kernel_wait(k)
    for value in (-128, 127, 126.9, -128.9):
        svm.kernel_init(k, "PROC0", None, write_value, compiled=True)
        k.b, k.value = b, value
        svm.kernel_run(k)
        svm.kernel_wait(k)
        assert svm.block_read(b, 0) == math.trunc(value)


@settings(max_examples=200, deadline=None)
@given(
    dtype=st.sampled_from([*INTS, np.float16, np.float32, np.float64]),
    value=st.one_of(st.integers(-(2**65), 2**65), st.floats(allow_nan=True, allow_infinity=True, width=64)),
)
def test_fits_agrees_with_numpy_where_numpy_is_exact(dtype, value):
    """``elements.fits`` against the definition: the value converted by NumPy (which raises
    or overflows to infinity when it does not fit) comes back equal to it, truncated."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            try:
                converted = dtype.type(value)
            except OverflowError:
                converted = dtype.type(math.inf)
        expected = not (np.isinf(converted) and math.isfinite(value))
    elif isinstance(value, float):
        info = np.iinfo(dtype)
        expected = math.isfinite(value) and info.min <= math.trunc(value) <= info.max
    else:
        try:
            expected = int(np.array(value, dtype=object).astype(dtype)) == value
        except OverflowError:
            expected = False
    assert elements.fits(value, dtype) == expected


@settings(max_examples=150, deadline=None)
@given(
    source=st.sampled_from([np.int64, np.uint64, np.int16, np.float64, np.float32]),
    target=st.sampled_from([*INTS, np.float16, np.float32]),
    values=st.lists(
        st.one_of(st.floats(-(2.0**66), 2.0**66), st.sampled_from([math.nan, math.inf, -math.inf])),
        max_size=8,
    ),
)
def test_bulk_pushes_refuse_exactly_the_first_value_one_push_refuses(source, target, values):
    """The array check (vectorised) against ``fits`` value by value."""
    with np.errstate(all="ignore"):
        src = np.array(values, np.float64)
        if np.dtype(source).kind in "iu":
            src = np.nan_to_num(src, nan=0, posinf=0, neginf=0)
            info = np.iinfo(source)
            src = np.clip(src, float(info.min), float(np.nextafter(float(info.max), 0.0))).astype(source)
        else:
            src = src.astype(source)
    target = np.dtype(target)
    expected = next((i for i, v in enumerate(src) if not elements.fits(v, target)), None)
    if expected is None:
        assert len(elements.many(src, target, "w")) == len(src)
    else:
        with pytest.raises(svm.SVMError, match=rf"^w: values\[{expected}\] = "):
            elements.many(src, target, "w")
