"""The compiled replay's native call (``backends/cpu/native.py``, ``NativeCall``): a record
replayed ``plan.HOT_REPLAYS`` times gets its direct calls as C functions of a block of
arguments, which the replay in C calls past Numba's dispatcher. It must compute what the
dispatcher's call computes — for arrays of every rank, dtype and layout (contiguous,
Fortran order, strided views, read-only inputs) and scalars of every type, on all threads
and on one —, raise the same errors in the same words, and step aside (the dispatcher's
call runs) when an array's flags are no longer those it was compiled for.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import NodeExecutionError
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import api, fastpath, plan, quick
from markers import needs_backend
from raising_leaves import picky_root
from running import every_run_quick, spy_direct_calls

pytestmark = [
    pytest.mark.usefixtures("hpvm_runtime"),
    needs_backend("cpu"),
    pytest.mark.skipif(not fastpath.built(), reason=fastpath.REASON or "the extension is not built"),
]


@hpvm.leaf(ins=("a", "b", "m"), outs=("out",))
def mix(
    a: hpvm.f32[:, :],
    b: hpvm.i64[:],
    m: hpvm.u8[:],
    out: hpvm.f64[:, :],
    s8: hpvm.i8,
    s32: hpvm.i32,
    s64: hpvm.i64,
    f32: hpvm.f32,
    f64: hpvm.f64,
    flag: bool,
):
    x = hpvm.get_node_instance_id_x(hpvm.get_node())
    y = hpvm.get_node_instance_id_y(hpvm.get_node())
    value = a[y, x] * f32 + b[x] * s32 + m[y] + s8 - s64 + f64
    if flag:
        out[y, x] = value
    else:
        out[y, x] = -value


@hpvm.internal()
def mix_root(
    a: hpvm.f32[:, :],
    b: hpvm.i64[:],
    m: hpvm.u8[:],
    out: hpvm.f64[:, :],
    s8: hpvm.i8,
    s32: hpvm.i32,
    s64: hpvm.i64,
    f32: hpvm.f32,
    f64: hpvm.f64,
    flag: bool,
):
    node = hpvm.create_node_2d(mix, out.shape[1], out.shape[0])
    for port in range(10):
        hpvm.bind_in(node, port, port)


def _reference(a, b, m, out, s8, s32, s64, f32, f64, flag) -> np.ndarray:
    value = (
        a.astype(np.float32) * np.float32(f32)
        + (b * np.int64(s32))[None, :]
        + m[:, None].astype(np.int64)
        + np.int64(s8)
        - np.int64(s64)
        + np.float64(f64)
    )
    return value if flag else -value


@pytest.fixture(autouse=True)
def hot_after_two(monkeypatch):
    """New plans get the compiled replay, and a record its native calls after two replays;
    every run counts as quick."""
    monkeypatch.setattr(fastpath, "ENABLED", True)
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    every_run_quick(monkeypatch, mix_root, picky_root, axpy_root, unsigned_root, signs_root)


def _layout(array: np.ndarray, layout: str) -> np.ndarray:
    """``array``'s values in a new array of ``layout``."""
    if layout == "fortran":
        return np.asfortranarray(array)
    if layout == "strided":  # (every other element of a larger array: Numba's 'A' layout)
        wide = np.zeros((*array.shape[:-1], 2 * array.shape[-1]), array.dtype)
        view = wide[..., ::2]
        view[...] = array
        return view
    return array.copy()


def _owner(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (what is tracked)."""
    return array if array.base is None else array.base


def _arguments(rng: np.random.Generator, rows: int, cols: int, layout: str, scalars: tuple) -> tuple:
    a = _layout(rng.standard_normal((rows, cols)).astype(np.float32), layout)
    b = _layout(rng.integers(-9, 9, cols), layout if layout != "fortran" else "c")
    m = rng.integers(0, 255, rows).astype(np.uint8)
    m.flags.writeable = False  # (a read-only input: Numba's readonly array type)
    out = _layout(np.zeros((rows, cols)), layout)
    return (a, b, m, out, *scalars)


def _launch(root, args) -> None:
    hpvm.wait(hpvm.launch(root, args, target="cpu"))


def _owners(args) -> list[np.ndarray]:
    """The arrays that own the memory of ``args``' arrays (what is tracked), once each."""
    return list({id(_owner(v)): _owner(v) for v in args if isinstance(v, np.ndarray)}.values())


def _record_of(root, args, threads: str = "all"):
    """Launch until ``args`` (tracked) have a record, settle its key on ``threads`` ("all" or
    "one": what its runs' timings would pick, set here so that a loaded machine does not
    decide), and launch until the record has its native calls; the record."""
    for _ in range(3):
        _launch(root, args)
    records = [r for r in api.default_runtime().tracker.replays.values() if r.root is root]
    assert len(records) == 1, f"{len(records)} records of the launches, not one"
    record = records[0]
    runs = record.runs
    runs.probes = quick.ONE_THREAD_PROBES
    if threads == "one":  # (one thread the faster: ``Runs.threads`` picks it, rechecks aside)
        runs.plain, runs.one, runs.every, runs.choices = False, 1e-9, 1.0, 0
    else:  # (one thread far behind: settled on all threads, ``Runs.plain``)
        runs.plain, runs.one, runs.every = True, 1.0, 1e-9
    for _ in range(plan.HOT_REPLAYS + 1):
        _launch(root, args)
    assert record.native is not None
    assert record.native_single is not None or threads == "all"
    return record


@pytest.mark.parametrize("threads", ["all", "one"])
@pytest.mark.parametrize("layout", ["c", "fortran", "strided"])
def test_a_hot_record_calls_its_native_call_and_computes_what_the_dispatcher_does(layout, threads):
    rng = np.random.default_rng(7)
    scalars = (np.int8(-3), np.int32(4), 5, np.float32(0.25), 1.5, True)
    args = _arguments(rng, 5, 6, layout, scalars)
    for array in _owners(args):
        hpvm.track_memory(array)
    record = _record_of(mix_root, args, threads)
    calls = spy_direct_calls(record)
    a, b, m, out = args[:4]
    for _ in range(3):
        a[...] = rng.standard_normal(a.shape)
        b[...] = rng.integers(-9, 9, b.shape)
        _launch(mix_root, args)
        np.testing.assert_allclose(out, _reference(*args), rtol=1e-6)
    assert calls == []  # (every one of them a native call)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(1, 7),
    cols=st.integers(1, 9),
    layout=st.sampled_from(["c", "fortran", "strided"]),
    s8=st.integers(-128, 127),
    s32=st.integers(-(2**31), 2**31 - 1),
    s64=st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3)),
    f32=st.floats(-1e3, 1e3, width=32),
    f64=st.floats(-1e6, 1e6),
    flag=st.booleans(),
    python_ints=st.booleans(),
)
def test_native_calls_agree_with_the_reference_on_any_arguments(
    rows, cols, layout, s8, s32, s64, f32, f64, flag, python_ints
):
    """Scalars at their types' limits (as NumPy scalars, or as Python ints where the port is
    i64), any shapes and layouts: the block carries them all exactly."""
    scalars = (np.int8(s8), np.int32(s32), s64 if python_ints else np.int64(s64), np.float32(f32), f64, flag)
    args = _arguments(np.random.default_rng(rows * 31 + cols), rows, cols, layout, scalars)
    for array in _owners(args):
        hpvm.track_memory(array)
    with np.errstate(over="ignore", invalid="ignore"):
        record = _record_of(mix_root, args, "one" if flag else "all")
        calls = spy_direct_calls(record)
        args[0][...] += 1
        _launch(mix_root, args)
        want = _reference(*args)
    assert calls == []
    np.testing.assert_allclose(args[3], want, rtol=1e-6, atol=1e-6)
    for array in _owners(args):
        hpvm.untrack_memory(array)


def test_an_array_whose_flags_changed_is_left_to_the_dispatcher():
    """An input made read-only after the native call was made (the replay's key holds the
    same array and shape): the block's flags slot differs, so the dispatcher's call runs
    (compiling for the new type) and computes the same."""
    rng = np.random.default_rng(3)
    args = _arguments(rng, 4, 4, "c", (np.int8(1), np.int32(2), 3, np.float32(0.5), 0.25, False))
    for array in _owners(args):
        hpvm.track_memory(array)
    record = _record_of(mix_root, args)
    calls = spy_direct_calls(record)
    args[1].flags.writeable = False  # (b: an input, so still accepted)
    _launch(mix_root, args)
    np.testing.assert_allclose(args[3], _reference(*args), rtol=1e-6)
    assert calls == ["entry"]


@pytest.mark.parametrize("threads", ["all", "one"])
def test_an_error_in_a_native_call_reads_as_the_dispatchers(threads):
    a = np.arange(16, dtype=np.int64)
    hpvm.track_memory(a)
    record = _record_of(picky_root, (a,), threads)
    a[9] = -1
    with pytest.raises(NodeExecutionError) as native:
        _launch(picky_root, (a,))
    record.native = record.native_single = None  # (the dispatcher's call from now on)
    with pytest.raises(NodeExecutionError) as dispatched:
        _launch(picky_root, (a,))
    assert str(native.value) == str(dispatched.value)
    assert type(native.value.__cause__) is type(dispatched.value.__cause__) is ValueError
    assert "negative input" in str(native.value)
    a[9] = 9
    _launch(picky_root, (a,))  # (the replay goes on after an error)


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def axpy(alpha: hpvm.f32, x: hpvm.f32[:], shift: hpvm.i64, y: hpvm.f32[:], gain: hpvm.f64) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = alpha * x[i] + y[i] + shift * gain


@hpvm.internal()
def axpy_root(alpha: hpvm.f32, x: hpvm.f32[:], shift: hpvm.i64, y: hpvm.f32[:], gain: hpvm.f64):
    node = hpvm.create_node_1d(axpy, y.shape[0])
    for port in range(5):
        hpvm.bind_in(node, port, port)


def test_scalars_between_arrays_keep_their_slots():
    """The block's slots follow the ports' order: an array after scalars is written at its
    own slots, past theirs."""
    x = np.arange(10, dtype=np.float32)
    y = np.ones(10, np.float32)
    for array in (x, y):
        hpvm.track_memory(array)
    args = (np.float32(2.0), x, 3, y, 0.5)
    record = _record_of(axpy_root, args, "one")
    calls = spy_direct_calls(record)
    y[:] = 1
    _launch(axpy_root, args)
    np.testing.assert_allclose(y, 2 * x + 1 + 1.5)
    assert calls == []


def test_a_failure_to_make_the_native_calls_is_reported_and_the_launch_stands(monkeypatch):
    """``fastpath.hot`` raising (a bug, not the user's): the launch that reached
    ``HOT_REPLAYS`` ran and returns its results; the error goes to ``sys.unraisablehook``."""
    import sys

    def broken(record, args):
        raise RuntimeError("no native call today")

    seen: list[BaseException] = []
    monkeypatch.setattr(fastpath, "hot", broken)
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(report.exc_value))
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    for array in (x, y):
        hpvm.track_memory(array)
    for _ in range(3 + plan.HOT_REPLAYS):
        y[:] = 0
        _launch(axpy_root, (np.float32(1), x, 0, y, 0.0))
        np.testing.assert_array_equal(y, x)
    assert [str(e) for e in seen] == ["no native call today"]


def test_ctrl_c_while_the_native_calls_are_made_is_raised_by_the_launch(monkeypatch):
    def interrupted(record, args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fastpath, "hot", interrupted)
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    for array in (x, y):
        hpvm.track_memory(array)
    args = (np.float32(2), x, 0, y, 0.0)
    with pytest.raises(KeyboardInterrupt):
        for _ in range(3 + plan.HOT_REPLAYS):
            y[:] = 0
            _launch(axpy_root, args)
    np.testing.assert_array_equal(y, 2 * x)  # (the launch ran first)
    y[:] = 0
    _launch(axpy_root, args)  # (and the next one replays as before)
    np.testing.assert_array_equal(y, 2 * x)


@hpvm.leaf(ins=("small",), outs=("out",))
def unsigned(big: hpvm.u64, mid: hpvm.u32, small: hpvm.u16[:], out: hpvm.u64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = big - np.uint64(i) + mid + small[i]


@hpvm.internal()
def unsigned_root(big: hpvm.u64, mid: hpvm.u32, small: hpvm.u16[:], out: hpvm.u64[:]):
    node = hpvm.create_node_1d(unsigned, out.shape[0])
    for port in range(4):
        hpvm.bind_in(node, port, port)


def test_unsigned_scalars_past_the_signed_range_travel_as_their_bits():
    small = np.arange(6, dtype=np.uint16)
    out = np.zeros(6, np.uint64)
    for array in (small, out):
        hpvm.track_memory(array)
    args = (np.uint64(2**64 - 100), np.uint32(2**32 - 1), small, out)
    record = _record_of(unsigned_root, args, "one")
    calls = spy_direct_calls(record)
    out[:] = 0
    _launch(unsigned_root, args)
    want = [(2**64 - 100 - i + 2**32 - 1 + i) % 2**64 for i in range(6)]
    assert out.tolist() == want  # (exactly: integers)
    assert calls == []


@hpvm.leaf(outs=("out",))
def signs(wide: hpvm.f64, narrow: hpvm.f32, out: hpvm.f64[:]) -> None:
    out[0] = math.copysign(1.0, wide)
    out[1] = math.copysign(1.0, narrow)


@hpvm.internal()
def signs_root(wide: hpvm.f64, narrow: hpvm.f32, out: hpvm.f64[:]):
    node = hpvm.create_node(signs)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@pytest.mark.parametrize("threads", ["all", "one"])
def test_a_float_equal_to_the_records_is_passed_as_given(threads):
    """``-0.0 == 0.0``: the same replay key, and the same record, as for the dispatcher's
    call — but not the same value, which a float's slot carries per call (its bits)."""
    out = np.zeros(2)
    hpvm.track_memory(out)
    record = _record_of(signs_root, (0.0, np.float32(0.0), out), threads)
    calls = spy_direct_calls(record)
    for wide, narrow in ((-0.0, np.float32(0.0)), (0.0, np.float32(-0.0)), (-0.0, np.float32(-0.0))):
        _launch(signs_root, (wide, narrow, out))
        assert out.tolist() == [math.copysign(1.0, wide), math.copysign(1.0, float(narrow))]
    assert calls == []


@hpvm.leaf(ins=("x", "n"))
def every_output(
    x: hpvm.f64[:], n: hpvm.i64[:], big: hpvm.u64
) -> tuple[hpvm.f32, hpvm.f64, hpvm.i8, hpvm.i32, hpvm.i64, hpvm.u64, bool]:
    return x[0] * 0.5, -x[0], n[0] % 100 - 50, n[0] * 3, n[0] - 2**40, big, x[0] > 0.0


@hpvm.internal()
def every_output_root(x: hpvm.f64[:], n: hpvm.i64[:], big: hpvm.u64):
    node = hpvm.create_node(every_output)
    for port in range(3):
        hpvm.bind_in(node, port, port)
    for port in range(7):
        hpvm.bind_out(node, port, port)


@pytest.mark.parametrize("threads", ["all", "one"])
def test_a_roots_scalar_outputs_of_every_type_come_back_from_a_native_call_as_the_runners(
    monkeypatch, threads
):
    """The native call writes the outputs into its block and the C makes them the ports'
    NumPy scalars (``NativeCall.returns``, ``makers``): the same values and types as the
    interpreter's, launch after launch as the host changes the inputs' contents (the same
    key), a u64 past 2**63 included."""
    every_run_quick(monkeypatch, every_output_root)
    x, n = np.array([1.5]), np.array([7], np.int64)
    for array in (x, n):
        hpvm.track_memory(array)
    args = (x, n, np.uint64(2**64 - 3))
    record = _record_of(every_output_root, args, threads)
    assert (record.native if threads == "all" else record.native_single).returns == b"ffiiiub"
    calls = spy_direct_calls(record)
    for value, count in ((-2.25, -93), (0.0, 2**35), (3.0e38, 0)):
        x[0], n[0] = value, count
        got = hpvm.wait(hpvm.launch(every_output_root, args, target="cpu"))
        want = hpvm.wait(hpvm.launch(every_output_root, args, target="interp"))
        assert [type(v) for v in got] == [type(v) for v in want]
        assert [type(v) for v in got] == [
            np.float32,
            np.float64,
            np.int8,
            np.int32,
            np.int64,
            np.uint64,
            np.bool_,
        ]
        assert got == want
    assert calls == []  # (every cpu launch a native call)
