"""Errors of the ``cuda`` back end: no device, device limits, leaves it cannot compile,
graphs the GPU lowering cannot express, failures inside kernels."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.backends.cuda import unavailable_reason
from markers import SourceMarkers, fails

pytestmark = pytest.mark.gpu
SRC = SourceMarkers(__file__)


def launch(root, args, target: str = "cuda"):  # type: ignore[no-untyped-def]
    hpvm.init()
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    try:
        return hpvm.wait(hpvm.launch(root, args, target=target))
    finally:
        hpvm.cleanup()


def test_no_device_lists_what_exists() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    probe = subprocess.run(
        [sys.executable, "-c", "from hpvm.backends.cuda import unavailable_reason as r; print(r())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() == "None":
        pytest.skip("a CUDA driver is present here: there is no 'no device' error to see")
    code = textwrap.dedent(
        """
        import hpvm
        from programs import r_saxpy_1d
        hpvm.init()
        try:
            hpvm.launch(r_saxpy_1d, (), target="cuda")
        except hpvm.BackendUnavailableError as e:
            print(e)
        """
    )
    tests_dir = os.path.dirname(os.path.dirname(__file__))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tests_dir
    ).stdout
    assert "back end 'cuda' is not available" in out
    assert "CUDA devices here: none" in out and "NUMBA_ENABLE_CUDASIM=1" in out
    assert "available here: " in out and "cpu" in out and "interp" in out


def test_cuda_is_available_under_the_simulator() -> None:
    assert unavailable_reason() is None


@hpvm.leaf(ins=("a",), outs=("a",))
def sync_all(a: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = i
    hpvm.barrier()


@hpvm.internal
def r_too_wide(a: hpvm.i64[:]):
    k = hpvm.create_node_1d(sync_all, a.shape[0])
    hpvm.bind_in(k, 0, 0)


def test_barrier_leaf_wider_than_a_block() -> None:
    with fails(
        hpvm.DeviceLimitError,
        "node 'sync_all'",
        "hpvm.barrier()",
        "all 1025 instances",
        "at most 1024 threads per block",
    ):
        launch(r_too_wide, (np.zeros(1025, np.int64),))


@hpvm.leaf(outs=("a",))
def not_numba(a: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = len(object().__class__.__name__)  # @untyped


@hpvm.internal
def r_not_numba(a: hpvm.i64[:]):
    k = hpvm.create_node_1d(not_numba, a.shape[0])
    hpvm.bind_in(k, 0, 0)


def test_leaf_the_device_cannot_compile_names_the_line() -> None:
    with fails(
        hpvm.CompileError,
        f"leaf 'not_numba' ({SRC.at('untyped')})",
        "the cuda back end",
        "cannot compile",
        "object()",
    ):
        launch(r_not_numba, (np.zeros(4, np.int64),))


@hpvm.leaf(ins=("a",))
def allocate_from(a: hpvm.i64[:]) -> hpvm.i64[:]:
    return hpvm.malloc(a.shape[0] * 8).view(np.int64)


@hpvm.leaf(ins=("buf",))
def use_buf(buf: hpvm.i64[:]):
    pass


@hpvm.internal
def r_alloc_array(a: hpvm.i64[:]):
    k = hpvm.create_node(allocate_from)
    u = hpvm.create_node(use_buf)
    hpvm.bind_in(k, 0, 0)
    hpvm.edge(k, u, hpvm.ALL_TO_ALL, 0, 0)


def test_allocation_leaf_taking_an_array() -> None:
    with fails(hpvm.CompileError, "allocation node", "runs on the host", "array 'a'"):
        launch(r_alloc_array, (np.zeros(4, np.int64),))


@hpvm.leaf(ins=("m",))
def row_of(m: hpvm.f64[:, :]) -> hpvm.f64[:]:
    return m[hpvm.get_node_instance_id_x(hpvm.get_node())]


@hpvm.leaf(ins=("r",))
def first(r: hpvm.f64[:]) -> hpvm.f64:
    return r[0]


@hpvm.internal
def r_view_all_to_all(m: hpvm.f64[:, :]):
    a = hpvm.create_node_1d(row_of, m.shape[0])
    b = hpvm.create_node(first)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_out(b, 0, 0)


def test_array_view_over_an_all_to_all_edge() -> None:
    m = np.arange(6.0).reshape(3, 2)
    with pytest.warns(hpvm.HPVMWarning, match="disagree"):  # legal: the rows differ
        assert launch(r_view_all_to_all, (m.copy(),), target="interp") == (4.0,)
    with fails(
        hpvm.CompileError, "node 'row_of'", "output 0", "not one of its array parameters", "target='interp'"
    ):
        launch(r_view_all_to_all, (m,))


@hpvm.leaf(ins=("a",), outs=("a",))
def overrun(a: hpvm.i64[:]):
    a[a.shape[0] + hpvm.get_node_instance_id_x(hpvm.get_node())] = 1


@hpvm.internal
def r_overrun(a: hpvm.i64[:]):
    k = hpvm.create_node_1d(overrun, 2)
    hpvm.bind_in(k, 0, 0)


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="only the simulator checks bounds")
def test_failure_inside_a_kernel_names_the_node() -> None:
    with fails(
        hpvm.NodeExecutionError, "node(s) 'overrun'", "cuda back end", "IndexError", "target='interp'"
    ):
        launch(r_overrun, (np.zeros(3, np.int64),))


def test_a_leaf_that_raises_is_refused_naming_the_raise_line() -> None:
    """numba-cuda kernels drop exceptions outside debug mode (on an H200 the stage stopped
    silently, its output unwritten), so ``cuda`` refuses a ``raise``, naming its line."""
    from hpvm.backends.cuda.device import refuse_raise
    from streaming_programs import fails_on_five

    raise_line = next(
        n
        for n, text in enumerate(Path(fails_on_five.location.file).read_text().splitlines(), 1)
        if text.strip().startswith('raise ValueError("five is refused")')
    )
    with pytest.raises(
        hpvm.CompileError, match=rf"fails_on_five' \(.*streaming_programs.py:{raise_line}\).*'raise'"
    ):
        refuse_raise(fails_on_five)


@pytest.mark.parametrize("setting", [None, "1"])
def test_low_occupancy_warnings_are_off_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    """hpvm sizes grids from the graph, so numba-cuda's "Grid size N ... under-utilization"
    warning (an error under ``-W error``; seen on an H200) is turned off on a real GPU, unless
    ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` is set."""
    from numba.cuda.core import config

    from hpvm.backends.cuda.device import quiet_low_occupancy

    monkeypatch.setattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS", 1)
    if setting is None:
        monkeypatch.delenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", raising=False)
    else:
        monkeypatch.setenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", setting)
    quiet_low_occupancy()
    assert config.CUDA_LOW_OCCUPANCY_WARNINGS == (0 if setting is None else 1)
