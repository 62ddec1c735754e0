"""A saxpy-and-scale step as HPVM's GenHPVM writes one (``hpvm9/saxpy_scale_hot.ll``, LLVM 9
text): three levels, the root creating a wrapper that replicates the leaf 1-D over y's
element count (``bytes_y / 4`` as ``lshr``); each instance ``i < n`` (an ``i32`` port, the
instance id truncated to ``int`` as C compares it) computes ``y[i] = a * x[i] + y[i] * s``
with ``a`` and ``s`` ``float`` ports — straight-line code, so the leaf is replayed. The
leaf returns y's byte size, which the wrapper leaves unbound: the root has no outputs (a
root with a scalar output gets no direct call, hence no native calls: ``CPUBackend.direct``).

The host runs it as HPVM-C's field programs do: the arrays tracked once, byte views of them
made once, the same launch in a hot loop with NumPy scalars of the ports' types
(``np.float32``, ``np.int32``), every step NumPy's. Past ``plan.HOT_REPLAYS`` replays the
record has its native calls (``backends/cpu/native.py``), on all threads and on one, and
later launches make no dispatcher call; ``-0.0`` for the recorded ``0.0`` is the same key
and its sign reaches the leaf. An ``x`` shorter than ``y`` with ``n`` past ``x``'s end is
refused as the leaf reads past it, naming the instance, the leaf's line and the load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.printer import print_program
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import api, fastpath, plan, quick
from markers import fails
from running import every_run_quick, spy_direct_calls

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

SAXPY = Path(__file__).parent / "hpvm9" / "saxpy_scale_hot.ll"
TARGETS = ("cpu", "interp")
A, S = np.float32(1.5), np.float32(0.75)


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(SAXPY.read_text(), file=str(SAXPY))


@pytest.fixture
def hot_after_two(monkeypatch, root):
    """New plans get the compiled replay, and a record its native calls after two replays;
    every run counts as quick (``tests/runtime/test_native_call.py``'s fixture)."""
    monkeypatch.setattr(fastpath, "ENABLED", True)
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    every_run_quick(monkeypatch, root)


needs_native = pytest.mark.skipif(
    not fastpath.built(), reason=fastpath.REASON or "the extension is not built"
)


def _line(text: str) -> int:
    """The line of ``SAXPY`` that starts with ``text`` (after its indent)."""
    lines = SAXPY.read_text().splitlines()
    return next(k for k, s in enumerate(lines, 1) if s.lstrip().startswith(text))


def _arrays(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(size).astype(np.float32), rng.standard_normal(size).astype(np.float32)


def _saxpy_scale(x: np.ndarray, y: np.ndarray, a: np.float32, s: np.float32, n: int) -> np.ndarray:
    """The leaf in NumPy: y's first ``n`` elements ``a * x + y * s``, each operation rounded
    to float32 as the LLVM's two ``fmul`` and one ``fadd`` round (no fast-math flags, nothing
    to contract), so results are compared exactly; the rest as they were."""
    want = y.copy()
    want[:n] = a * x[:n] + y[:n] * s
    return want


def _tracked(*arrays: np.ndarray) -> tuple:
    """``arrays`` tracked, and byte views of them made once (as HPVM-C passes tracked memory)."""
    for x in arrays:
        hpvm.track_memory(x)
    return tuple(x.view(np.uint8) for x in arrays)


def _launch(root, args: tuple, target: str = "cpu") -> tuple:
    return hpvm.wait(hpvm.launch(root, args, target=target))


def _record(root):
    records = [r for r in api.default_runtime().tracker.replays.values() if r.root is root]
    assert len(records) == 1, f"{len(records)} records of the launches, not one"
    return records[0]


def _settle(record, threads: str) -> None:
    """Settle the record's key on ``threads`` ("all" or "one") as its runs' timings would
    (``test_native_call._record_of``): set here, so that a loaded machine does not decide."""
    runs = record.runs
    runs.probes = quick.ONE_THREAD_PROBES
    if threads == "one":
        runs.plain, runs.one, runs.every, runs.choices = False, 1e-9, 1.0, 0
    else:
        runs.plain, runs.one, runs.every = True, 1.0, 1e-9


def test_it_imports_as_hpvm_wrote_it(root):
    graph = print_program(root, bodies=False)
    for line in (
        "leaf @saxpy_scale_cloned(x: u8[:], y: u8[:], a: f32, s: f32, n: i32) -> (i64) hint(cpu) ins(x, y) outs(y)",
        "internal @SaxpyWrapper_cloned(x: u8[:], y: u8[:], a: f32, s: f32, n: i32) hint(cpu) ins(x, y) outs(y)",
        "internal @SaxpyRoot_cloned(x: u8[:], y: u8[:], a: f32, s: f32, n: i32) hint(cpu) ins(x, y) outs(y)",
        '%"saxpy_scale_cloned.node" = node @saxpy_scale_cloned[y.shape[0] // 4]',
        '%"SaxpyWrapper_cloned.node" = node @SaxpyWrapper_cloned\n',
    ):
        assert line in graph
    assert "bind out" not in graph  # (the leaf's byte size is left unbound: no root outputs)
    assert root.graph.nodes[0].function.graph.nodes[0].function.location.line == _line(
        "define dso_local %struct.out.saxpy_scale @saxpy_scale_cloned("
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("size", "n"), [(64, 64), (200, 131), (256, 0)])
def test_a_launch_is_numpys(root, target, size, n):
    x, y = _arrays(size, size + n)
    before = y.copy()
    out = _launch(root, (*_tracked(x, y), A, S, np.int32(n)), target)
    assert out == ()
    np.testing.assert_array_equal(y, _saxpy_scale(x, before, A, S, n))
    np.testing.assert_array_equal(y[n:], before[n:])  # (the guard: the rest untouched)


@needs_native
@pytest.mark.usefixtures("hot_after_two")
@pytest.mark.parametrize("threads", ["all", "one"])
@pytest.mark.parametrize(("size", "n"), [(64, 64), (200, 173)])
def test_a_hot_host_loop_is_numpys_step_for_step_and_calls_its_native_calls(root, threads, size, n):
    """y accumulates (``s`` < 1 keeps it bounded): every launch reads the previous one's
    result, as NumPy's model does. After three launches the record is settled on ``threads``, two replays later it
    has its native calls, and every later launch is one (no dispatcher call)."""
    x, y = _arrays(size, 7)
    args = (*_tracked(x, y), A, S, np.int32(n))
    want = y.copy()

    def step() -> None:
        nonlocal want
        assert _launch(root, args) == ()
        want = _saxpy_scale(x, want, A, S, n)
        np.testing.assert_array_equal(y, want)

    for _ in range(3):
        step()
    record = _record(root)
    _settle(record, threads)
    for _ in range(plan.HOT_REPLAYS + 1):
        step()
    assert record.native is not None
    if threads == "one":
        assert record.native_single is not None
    calls = spy_direct_calls(record)
    for _ in range(6):
        step()
    assert calls == []  # (every one of them a native call)
    assert _record(root) is record
    for a in (x, y):
        hpvm.untrack_memory(a)


@needs_native
@pytest.mark.usefixtures("hot_after_two")
@pytest.mark.parametrize("threads", ["all", "one"])
def test_minus_zero_for_the_recorded_zero_is_the_same_key_and_keeps_its_sign(root, threads):
    """``s`` recorded as ``0.0``; ``-0.0 == 0.0``, so the same key and record (native calls),
    but the leaf gets the sign: with ``a < 0``, where ``x`` is ``+0.0`` and ``y`` is ``+0.0``,
    ``a * x + y * s`` is ``-0.0 + (0.0 * s)``: ``+0.0`` for ``s = 0.0``, ``-0.0`` for ``-0.0``."""
    size, n = 128, np.int32(128)
    a = np.float32(-2.0)
    x = np.where(np.arange(size) % 3 == 0, np.float32(0.0), _arrays(size, 3)[0]).astype(np.float32)
    y = np.zeros(size, np.float32)
    views = _tracked(x, y)

    def step(s: np.float32) -> None:
        y[:] = 0.0
        _launch(root, (*views, a, s, n))
        want = _saxpy_scale(x, np.zeros(size, np.float32), a, s, int(n))
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(np.signbit(y), np.signbit(want))

    for _ in range(3):
        step(np.float32(0.0))
    record = _record(root)
    _settle(record, threads)
    for _ in range(plan.HOT_REPLAYS + 1):
        step(np.float32(0.0))
    assert record.native is not None
    if threads == "one":
        assert record.native_single is not None
    calls = spy_direct_calls(record)
    for s in (np.float32(-0.0), np.float32(0.0), np.float32(-0.0)):
        step(s)
        # (the check means something: x's zeros give -0.0 for s = -0.0 and +0.0 for s = 0.0)
        assert np.signbit(y[x == 0]).all() == bool(np.signbit(s))
    assert calls == []
    assert _record(root) is record


@pytest.mark.parametrize(("target", "mode"), [("cpu", "unchecked"), ("cpu", "checked"), ("interp", "")])
def test_n_past_a_shorter_x_is_refused_before_the_leaf_runs(root, target, mode, request):
    """The user's mistake: ``x`` half as long as ``y`` (the instances are y's elements) and
    ``n`` y's length, so the guard ``if (i < n)`` lets instances 32 to 63 read past ``x``.
    The bounds pre-check reads the guard as the instances' range (x - n + 1 <= 0: x up to
    63) and refuses the launch before the leaf runs, unchecked ``cpu`` included (which read
    past ``x`` before: it does not check LLVM leaves' bounds as they run). With ``n`` within
    ``x`` the guard keeps every read inside it."""
    if mode == "checked":
        request.getfixturevalue("checked")
    x, y = _arrays(64, 5)
    short, before = x[:32].copy(), y.copy()
    args = (*_tracked(short, y), A, S, np.int32(64))
    with fails(
        hpvm.OutOfBoundsError,
        f"node 'saxpy_scale_cloned.node' ({SAXPY}:{_line('%saxpy_scale_cloned.node = call')})",
        "every instance of leaf 'saxpy_scale_cloned' that takes the path below accesses bytes 4*x to",
        "of 'x' (input of 'SaxpyWrapper_cloned', 128 bytes long)",
        f"({SAXPY}:{_line('define dso_local %struct.out.saxpy_scale @saxpy_scale_cloned(')})",
        "(x < 64, n = 64; the path: x - n + 1 <= 0) that is bytes 0 to 255",
    ):
        _launch(root, args, target)
    y[:] = before
    _launch(root, (*args[:4], np.int32(32)), target)
    np.testing.assert_array_equal(y, _saxpy_scale(short, before, A, S, 32))
