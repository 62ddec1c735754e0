"""State reaches back ends through a run context, not globals: back ends run with no runtime,
two runtimes coexist, and importing hpvm loads no device library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hpvm
from hpvm.backends import RunContext, get_backend
from hpvm.runtime import Runtime
from markers import fails


@hpvm.leaf(ins=("a",), outs=("b",))
def scale(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * k


@hpvm.internal
def scale_root(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    node = hpvm.create_node_1d(scale, n)
    for i in range(3):
        hpvm.bind_in(node, i, i)


DEVICE_LIBRARIES = ("numba", "llvmlite", "pyopencl", "torch", "numba_cuda", "dask", "distributed")


def test_import_hpvm_loads_no_device_library() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import hpvm
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {DEVICE_LIBRARIES!r})
        print(",".join(loaded))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import hpvm loaded {out.stdout.strip()}"


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_back_end_runs_without_any_runtime(target: str) -> None:
    """What a Dask worker or an SVM processor does: no hpvm.init(), a fresh run context."""
    a = np.arange(6, dtype=np.float32)
    b = np.zeros(6, np.float32)
    ctx = RunContext()
    get_backend(target).run(scale_root, [a, b, np.float32(3), 6], ctx)
    np.testing.assert_array_equal(b, a * 3)
    assert ctx.transfers.total == 0 and len(ctx.tracker) == 0


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_back_end_run_directly_checks_its_arguments(target: str) -> None:
    """No runtime checked them: the back end does, and says which argument is wrong (the
    cpu back end's generated code used to fail with an IndexError on a missing one)."""
    a, b = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    backend = get_backend(target)
    with fails(
        hpvm.LaunchError,
        f"get_backend('{target}').run()",
        "'scale_root'",
        "takes 4 input(s)",
        "but 3 were given",
    ):
        backend.run(scale_root, [a, b, np.float32(3)], RunContext())
    with fails(hpvm.LaunchError, "argument 1 ('b') of 'scale_root'", "float64"):
        backend.run(scale_root, [a, np.zeros(6), np.float32(3), 6])
    frozen = np.zeros(6, np.float32)
    frozen.flags.writeable = False
    with fails(hpvm.LaunchError, "argument 1 ('b')", "read-only array", "'scale'"):
        backend.run(scale_root, [a, frozen, np.float32(3), 6])
    with fails(hpvm.LaunchError, "args must be a tuple"):
        backend.run(scale_root, a)  # type: ignore[arg-type]
    assert not b.any()  # nothing ran


def test_a_context_the_runtime_checked_is_trusted() -> None:
    """``checked=True`` is the runtime's word that it checked the arguments (a Dask worker
    runs row slices of the host's arrays under it): the back end does not check again,
    and a run without a context gets a checked one of its own."""
    a, b = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    backend = get_backend("cpu")
    trusted = RunContext(checked=True)
    assert backend.checked_context(scale_root, [a], trusted) is trusted  # one argument of four: not looked at
    with fails(hpvm.LaunchError, "takes 4 input(s)"):
        backend.checked_context(scale_root, [a], RunContext())
    fresh = backend.checked_context(scale_root, [a, b, np.float32(2), 6], None)
    assert fresh.checked and len(fresh.tracker) == 0


def test_two_runtimes_coexist_each_with_its_own_tracker() -> None:
    first, second = Runtime(), Runtime()
    first.init()
    second.init()
    try:
        a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
        first.track_memory(a)
        first.track_memory(b)
        with fails(hpvm.MemoryTrackingError, "argument 0 ('a')", "untracked array"):
            second.launch(scale_root, (a, b, 2.0, 4))  # tracked by the other runtime only
        handle = first.launch(scale_root, (a, b, 2.0, 4), target="interp")
        with fails(hpvm.RuntimeStateError, "belongs to another runtime"):
            second.wait(handle)
        assert first.wait(handle) == ()
        np.testing.assert_array_equal(b, a * 2)
        second.cleanup()  # cleaning one up leaves the other running
        assert len(first.tracker) == 2
    finally:
        first.cleanup()
        second.cleanup()


def test_the_fixed_api_uses_the_default_runtime() -> None:
    hpvm.init()
    try:
        a, b = np.arange(3, dtype=np.float32), np.zeros(3, np.float32)
        hpvm.track_memory(a)
        hpvm.track_memory(b)
        handle = hpvm.launch(scale_root, (a, b, 1.5, 3), target="interp")
        assert handle.runtime is hpvm.runtime.default_runtime()
        hpvm.wait(handle)
        np.testing.assert_array_equal(b, a * 1.5)
        assert len(hpvm.runtime.default_runtime().tracker) == 2
    finally:
        hpvm.cleanup()
