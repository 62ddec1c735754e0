"""The OpenCL device, context and queue, and building programs with readable errors.

``HPVM_OPENCL_DEVICE`` picks the device: an index into the list of all devices (``1``), a
``platform:device`` pair of indices (``0:1``), or a case-insensitive substring of
``"<platform> / <device>"`` (``pocl``, ``nvidia``). Unset, a GPU is preferred, then any
device — the first that builds and runs a one-line kernel (a machine can have two PoCLs,
PyPI's 3.0 whose LLVM 14 cannot compile for a Zen 5 CPU, and Debian's 3.1 which can). No device at all, or none matching, is a ``BackendUnavailableError`` that lists
what exists.

Programs are built once per process for each source text (PyOpenCL also keeps compiled
binaries in its on-disk cache, ``~/.cache/pyopencl``, so a new process skips the compiler
for sources it has seen). A build failure is a ``CompileError`` naming the leaf and the
Python line when the compiler's message points into a leaf's function, and the line of the
generated source in every case.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import BackendUnavailableError, CompileError

ENV_VAR = "HPVM_OPENCL_DEVICE"


@dataclass
class DeviceInfo:
    platform: int
    index: int  # within the platform
    label: str  # "<platform> / <device>"
    device: Any

    def __str__(self) -> str:
        return f"{self.platform}:{self.index} {self.label}"


def list_devices() -> list[DeviceInfo]:
    """Every OpenCL device of every platform (empty when there is none or no ICD loader)."""
    import pyopencl as cl

    found: list[DeviceInfo] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no platform: the ICD loader reports an error
        return []
    for p, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for d, device in enumerate(devices):
            found.append(DeviceInfo(p, d, f"{platform.name.strip()} / {device.name.strip()}", device))
    return found


def _listing(devices: list[DeviceInfo]) -> str:
    if not devices:
        return "no OpenCL device exists on this machine (install a driver, or PoCL: pip install pocl-binary-distribution)"
    return "devices here: " + "; ".join(f"[{k}] {d}" for k, d in enumerate(devices))


def choose_device(spec: str | None = None) -> DeviceInfo:
    """The device ``spec`` (or ``HPVM_OPENCL_DEVICE``) names, or the default one."""
    import pyopencl as cl

    devices = list_devices()
    if not devices:
        raise BackendUnavailableError(f"back end 'opencl': {_listing(devices)}")
    spec = os.environ.get(ENV_VAR) if spec is None else spec
    if spec is None or not spec.strip():
        gpus = [d for d in devices if d.device.type & cl.device_type.GPU]
        ordered = gpus + [d for d in devices if d not in gpus]
        # the first that can compile: a machine may have two PoCLs, one too old for its CPU
        return next((d for d in ordered if len(ordered) == 1 or _smoke(d.device) is None), ordered[0])
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        k = int(spec)
        if k < len(devices):
            return devices[k]
    elif m := re.fullmatch(r"(\d+):(\d+)", spec):
        for d in devices:
            if (d.platform, d.index) == (int(m.group(1)), int(m.group(2))):
                return d
    else:
        for d in devices:
            if spec.lower() in d.label.lower():
                return d
    raise BackendUnavailableError(
        f"{ENV_VAR}={spec!r} names no OpenCL device; {_listing(devices)} (set it to an index, "
        "'platform:device', or part of a name)"
    )


class OpenCLContext:
    """One device with its context and in-order queue, and the programs built for it."""

    def __init__(self, info: DeviceInfo):
        import pyopencl as cl

        self.info = info
        self.device = info.device
        self.context = cl.Context([info.device])
        self.queue = cl.CommandQueue(self.context)
        self.extensions = set(info.device.extensions.split())
        self.max_group_size = int(info.device.max_work_group_size)
        self.max_item_sizes = tuple(int(n) for n in info.device.max_work_item_sizes)
        self.local_mem_size = int(info.device.local_mem_size)
        self.has_fp64 = "cl_khr_fp64" in self.extensions or bool(getattr(info.device, "double_fp_config", 0))
        self._programs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def describe(self) -> str:
        return self.info.label

    def build(self, source: str, where: Callable[[int], str | None] | None = None) -> Any:
        """The built program for ``source`` (cached); ``where(line)`` locates a generated line
        (1-based) in the user's code, for compiler errors."""
        import pyopencl as cl

        with self._lock:
            program = self._programs.get(source)
            if program is not None:
                return program
            try:
                program = cl.Program(self.context, source).build(options=["-w"])
            except cl.Error as e:
                raise _build_error(str(e), self.describe(), where) from None
            self._programs[source] = program
            return program


_LOCATION = re.compile(r":(\d+):(\d+): (?:error: )?(.*)")


def _build_error(log: str, device: str, where: Callable[[int], str | None] | None) -> CompileError:
    """A ``CompileError`` from the OpenCL compiler's log: the first error, located."""
    lines = [ln for ln in log.splitlines() if "error" in ln]
    first = next((ln for ln in lines if _LOCATION.search(ln)), lines[0] if lines else log.strip()[:400])
    m = _LOCATION.search(first)
    if m is None:
        return CompileError(f"the OpenCL compiler for {device} rejected the generated kernel: {first}")
    line, col, message = int(m.group(1)), int(m.group(2)), m.group(3).strip()
    origin = where(line) if where is not None else None
    place = f"{origin}; " if origin else ""
    return CompileError(
        f"{place}the OpenCL compiler for {device} rejected the generated code at line {line}, column "
        f"{col}: {message} (see it with 'hpvm show --kernels'); run this node with target='cpu' or "
        "target='interp'"
    )


_current: OpenCLContext | None = None
_current_lock = threading.Lock()


def get_context() -> OpenCLContext:
    """The process's OpenCL context (made on first use)."""
    global _current
    with _current_lock:
        if _current is None:
            _current = OpenCLContext(choose_device())
        return _current


_SMOKE_KERNEL = "__kernel void hpvm_probe(__global int *a) { a[get_global_id(0)] += 1; }"


def _smoke(device: Any, context: Any = None, queue: Any = None) -> str | None:
    """Build and run a one-line kernel on ``device``: the compiler's first error, or ``None``."""
    import numpy as np
    import pyopencl as cl

    try:
        context = context or cl.Context([device])
        queue = queue or cl.CommandQueue(context)
        program = cl.Program(context, _SMOKE_KERNEL).build(options=["-w"])
        data = np.zeros(4, np.int32)
        buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
        program.hpvm_probe(queue, (4,), None, buf)
        cl.enqueue_copy(queue, data, buf)
        queue.finish()
    except Exception as e:
        first = next((ln.strip() for ln in str(e).splitlines() if "error" in ln.lower()), str(e).strip())
        return f"cannot build or run a kernel here ({first[:300]})"
    if data.tolist() != [1, 1, 1, 1]:
        return f"ran a test kernel and gave wrong results {data.tolist()}"
    return None


def smoke_test() -> str | None:
    """Build and run a one-line kernel on the chosen device: why it fails, or ``None``.

    Listing devices is not enough: a device may exist and still be unable to compile for
    this machine (PoCL 3.0's LLVM 14 rejects CPUs newer than it with "unknown target CPU
    'generic'"). Run once, when the back end is first asked for. (Without
    ``HPVM_OPENCL_DEVICE``, ``choose_device`` already skips devices that fail it.)
    """
    try:
        ctx = get_context()
    except BackendUnavailableError as e:
        return str(e)
    problem = _smoke(ctx.device, ctx.context, ctx.queue)
    return None if problem is None else f"the OpenCL device {_device_label()} {problem}"


def _device_label() -> str:
    return f"'{_current.describe()}'" if _current is not None else "(none chosen)"
