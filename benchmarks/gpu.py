"""Launch + wait of a one-kernel graph on the GPU back ends: the host's share of a launch.

A GPU launch costs the device its kernel and the host everything around it: the runtime's
checks and hand-off, hpvm's plan (columns, the kernel's parameters, instance tables — kept
across runs, ``backends/gpu/reuse.py``) and the device API's calls (setting arguments,
enqueueing, waiting). The row times ``launch`` + ``wait`` of a small vector add (64 float32,
tracked arrays, warm) on each GPU back end of ``--targets`` (``cuda``, ``opencl``), and
splits off the time spent inside the device's own calls (``GPUDevice.launch``,
``synchronize`` and the copies: the API and the kernel itself), so that what remains is
hpvm's and the runtime's Python. On numba-cuda's simulator the device's share is the
simulation, so only the split-off host part means anything there. The target: launch + wait
≤ 100 µs on ``opencl`` (PoCL), the whole of it.

A second row runs the same launches on a GPU back end whose device does nothing (``NoopDevice``:
NumPy arrays for memory, kernels never run): hpvm's and the runtime's host path alone,
measurable on any machine.

Part of ``run.py`` (``--only gpulaunch``).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import kernels  # (benchmarks/, on the path: run.py imports this module)
import numpy as np

import hpvm
from hpvm.backends import get_backend, register_backend
from hpvm.backends.gpu import GPUBackend, GPUDevice, KernelSpec

TARGET = 100e-6  # launch + wait of a one-kernel graph on opencl (PoCL)
SIZE = 64  # elements: a kernel whose own time is negligible
DEVICE_CALLS = ("launch", "synchronize", "copy_to_host", "copy_to_device", "to_device")
SIMULATED_SAMPLES = 20  # the simulator runs every GPU thread as a Python thread


class DeviceClock:
    """Time spent inside a device's own calls, while installed (instance attributes that
    wrap the methods ``DEVICE_CALLS``)."""

    def __init__(self, device: Any):
        self.device, self.seconds = device, 0.0

    def __enter__(self) -> DeviceClock:
        for name in DEVICE_CALLS:
            setattr(self.device, name, self._timed(getattr(self.device, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for name in DEVICE_CALLS:
            delattr(self.device, name)

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def launch_and_wait(target: str, samples: int, check: bool = True) -> tuple[float, float]:
    """Median seconds of launch + wait of the vector add on ``target``, and the median share
    of it spent outside the device's calls (hpvm's and the runtime's). ``check``: that the
    result is right (a device doing nothing computes none)."""
    a, b, c = (np.full(SIZE, 1.5, np.float32) for _ in range(3))
    for array in (a, b, c):
        hpvm.track_memory(array)
    kernels.vector_add(a, b, c, target)
    if check and not np.array_equal(hpvm.request_memory(c), a + b):
        raise AssertionError(f"the vector add computed a wrong result on {target}")
    kernels.vector_add(a, b, c, target)  # warm: the result stays on the device
    totals, hosts = [], []
    with DeviceClock(get_backend(target).gpu) as clock:
        for _ in range(samples):
            clock.seconds = 0.0
            start = time.perf_counter()
            kernels.vector_add(a, b, c, target)
            total = time.perf_counter() - start
            totals.append(total)
            hosts.append(total - clock.seconds)
    for array in (a, b, c):
        hpvm.untrack_memory(array)
    return statistics.median(totals), statistics.median(hosts)


class NoopDevice(GPUDevice):
    """A GPU that runs nothing: memory is NumPy arrays, kernels are their specs."""

    name = backend = "noop-gpu"

    def to_device(self, host: np.ndarray) -> Any:
        return np.array(host, order="C")

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return np.empty(shape, dtype)

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        host[...] = handle

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        handle[...] = host

    def compile(self, spec: KernelSpec) -> Any:
        return spec

    def launch(self, kernel: Any, spec: KernelSpec, geometry: Any, table: Any, sizes: Any, args: Any) -> None:
        pass


class NoopBackend(GPUBackend):
    name = device = "noop-gpu"

    def make_device(self) -> GPUDevice:
        return NoopDevice()


def bench_gpu_launch(ctx: Any) -> list[Any]:
    """``run.py``'s ``gpulaunch`` benchmark: a row with a cell per GPU back end of
    ``--targets``, and a row for the host path alone (a device doing nothing)."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, fmt_time, verdict = harness.Row, harness.fmt_time, harness.verdict
    register_backend(NoopBackend.name, NoopBackend)
    alone = Row("launch + wait, one kernel, a device doing nothing", f"vector add, {SIZE} f32")
    total, _ = launch_and_wait(NoopBackend.name, ctx.sizes.launches, check=False)
    alone.measure, alone.data = f"hpvm host path {fmt_time(total)}", {"noop_s": total}
    row = Row("launch + wait, one kernel (warm)", f"vector add, {SIZE} f32", target="≤ 100 µs (opencl)")
    targets = [t for t in ctx.targets if t in ("cuda", "opencl")]
    if not targets:
        row.measure = "not run: needs --targets cuda or opencl"
        return [row, alone]
    for target in targets:
        simulated = target == "cuda" and bool(getattr(get_backend(target).gpu, "simulator", False))
        samples = SIMULATED_SAMPLES if simulated else ctx.sizes.launches
        total, host = launch_and_wait(target, samples)
        note = ", simulated" if simulated else ""
        row.hpvm[target] = f"{fmt_time(total)} (hpvm {fmt_time(host)}{note})"
        row.data[f"{target}_s"], row.data[f"{target}_host_s"] = total, host
    if "opencl_s" in row.data:
        row.measure = f"opencl {fmt_time(row.data['opencl_s'])}"
        row.verdict = verdict(row.data["opencl_s"] <= TARGET)
    else:
        row.measure = "; ".join(f"{t}: hpvm {fmt_time(row.data[f'{t}_host_s'])}" for t in targets)
    return [row, alone]
