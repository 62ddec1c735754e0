"""The ``opencl`` back end's ``GPUDevice``: PyOpenCL on one device (PoCL's CPU device in CI).

Memory handles are ``CLArray``: a buffer with a NumPy-like shape, strides and byte offset, so
the memory tracker's views of tracked arrays are device views of the same buffer. Kernels
are generated per ``KernelSpec`` (``kernelgen.py``) and built per array layout on first
launch; the program text is cached by the context, the binary by PyOpenCL's disk cache.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ...errors import CompileError, DeviceLimitError
from ..gpu.device import GPUDevice
from ..gpu.prologue import Form, device_axes, launch_form
from ..gpu.spec import Geometry, KernelSpec
from . import cltypes as ct
from .context import OpenCLContext, get_context
from .kernelgen import GeneratedKernel, Layout, generate, generic_layout, layout_of
from .translate import FP64, TranslatedLeaf

_I64, _U8 = np.dtype(np.int64), np.dtype(np.uint8)  # a launch's scalar arguments' types


@dataclass
class CLArray:
    """A device array: ``buffer`` holds it; ``offset`` (bytes) is where element 0 is."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]  # bytes
    offset: int = 0

    @property
    def c_contiguous(self) -> bool:
        expected = self.dtype.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n > 1 and s != expected:
                return False
            expected *= n
        return True

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class OpenCLDevice(GPUDevice):
    name = "opencl"
    backend = "opencl"

    def __init__(self, context: OpenCLContext | None = None) -> None:
        self.cl_context = context or get_context()
        self.max_group_size = self.cl_context.max_group_size
        self.shared_memory_bytes = self.cl_context.local_mem_size
        self.preferred_group_size = min(256, self.max_group_size)
        self._lock = threading.RLock()

    def describe(self) -> str:
        return f"OpenCL: {self.cl_context.describe()}"

    # -- memory ---------------------------------------------------------------------------

    def _buffer(self, nbytes: int, host: np.ndarray | None = None) -> Any:
        import pyopencl as cl

        mf = cl.mem_flags
        if host is not None and nbytes:
            return cl.Buffer(self.cl_context.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
        return cl.Buffer(self.cl_context.context, mf.READ_WRITE, max(nbytes, 1))

    def to_device(self, host: np.ndarray) -> CLArray:
        data = np.ascontiguousarray(host)
        buf = self._buffer(data.nbytes, data)
        return CLArray(buf, data.shape, data.dtype, _contiguous_strides(data.shape, data.itemsize))

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> CLArray:
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return CLArray(self._buffer(nbytes), shape, dtype, _contiguous_strides(shape, dtype.itemsize))

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> CLArray:
        import pyopencl as cl

        array = self.empty(shape, dtype)
        if array.nbytes:
            cl.enqueue_fill_buffer(self.cl_context.queue, array.buffer, np.uint8(0), 0, array.nbytes)
        return array

    def copy_to_host(self, handle: CLArray, host: np.ndarray) -> None:
        import pyopencl as cl

        if handle.nbytes == 0:
            return
        queue = self.cl_context.queue
        if handle.c_contiguous and host.flags.c_contiguous:
            cl.enqueue_copy(queue, host, handle.buffer, src_offset=handle.offset, is_blocking=True)
            return
        # A strided view: read the bytes it spans, then view them with its strides.
        low, high = _span(handle)
        raw = np.empty(high - low, np.uint8)
        cl.enqueue_copy(queue, raw, handle.buffer, src_offset=handle.offset + low, is_blocking=True)
        host[...] = np.ndarray(handle.shape, handle.dtype, buffer=raw, offset=-low, strides=handle.strides)

    def copy_to_device(self, host: np.ndarray, handle: CLArray) -> None:
        import pyopencl as cl

        if handle.nbytes == 0:
            return
        if not handle.c_contiguous:
            raise RuntimeError("internal error: copying into a strided OpenCL view")  # the tracker never does
        data = np.ascontiguousarray(host, dtype=handle.dtype)
        cl.enqueue_copy(
            self.cl_context.queue, handle.buffer, data, dst_offset=handle.offset, is_blocking=True
        )

    def view(self, base_handle: CLArray, base: np.ndarray, view: np.ndarray) -> CLArray:
        offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        low, _ = byte_bounds(view)
        if (
            not base.flags.c_contiguous
            or offset % view.itemsize
            or any(s % view.itemsize for s in view.strides)
            or low < base.__array_interface__["data"][0]
        ):
            return super().view(base_handle, base, view)
        return CLArray(base_handle.buffer, view.shape, view.dtype, view.strides, base_handle.offset + offset)

    def synchronize(self) -> None:
        self.cl_context.queue.finish()

    def group_limit(self, kernel: Any) -> int:
        """The most work-items one work-group of ``kernel`` may have on this device
        (``CL_KERNEL_WORK_GROUP_SIZE``: at most the device's limit, less for big kernels)."""
        import pyopencl as cl

        return int(
            kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.cl_context.device)
        )

    # -- kernels --------------------------------------------------------------------------

    def compile(self, spec: KernelSpec) -> _Kernel:
        """Translate the spec's leaves now (``CompileError`` early); build per layout at launch."""
        kernel = _Kernel(self, spec)
        kernel.variant(generic_layout(spec), build=False)
        return kernel

    def _built(
        self,
        kernel: _Kernel,
        spec: KernelSpec,
        geometry: Geometry,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> tuple[_Built, Form, tuple[int, ...]]:
        """The program for this launch's layout and form (built now if new), the form, and a
        direct launch's work-group shape."""
        form, local = launch_form(
            spec, geometry, sizes, self.preferred_group_size, self.cl_context.max_item_sizes
        )
        built = kernel.variant(layout_of(spec, args, form))
        assert built is not None
        return built, form, local

    def prepare(
        self,
        kernel: _Kernel,
        spec: KernelSpec,
        geometry: Geometry,
        table: CLArray,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> int:
        """Build the program for this launch's layout and form; its limit is
        ``CL_KERNEL_WORK_GROUP_SIZE``."""
        with self._lock:
            return self._built(kernel, spec, geometry, sizes, args)[0].limit

    def launch(
        self,
        kernel: _Kernel,
        spec: KernelSpec,
        geometry: Geometry,
        table: CLArray,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> None:
        import pyopencl as cl

        with self._lock:
            built, form, local = self._built(kernel, spec, geometry, sizes, args)
            clk = built.kernel
            group = math.prod(local) if form.direct else geometry.group_size
            if group > built.limit:  # (the plan checked launches that must fit one block)
                names = ", ".join(f"'{c.node}'" for c in spec.calls)
                raise DeviceLimitError(
                    f"node(s) {names}: the kernel needs work-groups of {group} work-items, but "
                    f"{self.cl_context.describe()} allows at most {built.limit} for this kernel "
                    "(CL_KERNEL_WORK_GROUP_SIZE); make the leaf's grid smaller, e.g. by adding a level "
                    "of hierarchy"
                )
            values: list[Any] = [table.buffer, *sizes, geometry.bpp]  # (as _argument_types says)
            for p, a, lay in zip(spec.params, args, built.layout.arrays):
                if p.kind == "scalar":
                    dtype = np.dtype(p.dtype)
                    values.append(int(bool(a)) if dtype == ct.BOOL else dtype.type(a))
                    continue
                contiguous, zero, _ = lay  # type: ignore[misc]
                item = a.dtype.itemsize
                values.append(a.buffer)
                if not zero:
                    values.append(a.offset // item)
                values.extend(a.shape)
                if not contiguous:
                    values.extend(s // item for s in a.strides)
            clk.set_args(*values)
            if form.direct:  # the grid itself; dimension 0 is the leaves' unit-stride axis
                axes = device_axes(spec)  # instance axes in the NDRange's order
                grid = tuple(int(sizes[a]) for a in axes)
                cl.enqueue_nd_range_kernel(self.cl_context.queue, clk, grid, tuple(local[a] for a in axes))
                return
            size = geometry.groups * geometry.group_size
            cl.enqueue_nd_range_kernel(self.cl_context.queue, clk, (size,), (geometry.group_size,))


@dataclass
class _Built:
    generated: GeneratedKernel
    layout: Layout
    kernel: Any
    limit: int  # the most work-items one work-group may have (CL_KERNEL_WORK_GROUP_SIZE)

    @property
    def source(self) -> str:
        return self.generated.source


class _Kernel:
    """A spec's programs, one per array layout (``kernel.source``: the latest, for display)."""

    def __init__(self, device: OpenCLDevice, spec: KernelSpec):
        self.device = device
        self.spec = spec
        self.variants: dict[Layout, _Built | GeneratedKernel] = {}
        self.source = ""

    def variant(self, layout: Layout, build: bool = True) -> _Built | None:
        """The program for ``layout``, generated (and, with ``build``, built) on first use."""
        import pyopencl as cl

        found = self.variants.get(layout)
        if isinstance(found, _Built):
            return found
        generated = found or generate(self.spec, layout)
        self.source = generated.source
        self._check_device(generated.leaves)
        if not build:
            self.variants[layout] = generated
            return None
        ctx = self.device.cl_context
        program = ctx.build(generated.source, lambda line: _locate(generated, line, self.spec))
        clk = cl.Kernel(program, generated.name)
        clk.set_scalar_arg_dtypes(_argument_types(self.spec, layout))
        built = _Built(generated, layout, clk, self.device.group_limit(clk))
        self.variants[layout] = built
        return built

    def _check_device(self, leaves: list[TranslatedLeaf]) -> None:
        ctx = self.device.cl_context
        for t in leaves:
            needs = t.extensions | t.helpers.extensions
            if FP64 in needs and not ctx.has_fp64:
                raise CompileError(
                    f"leaf '{t.leaf.name}' ({t.leaf.location}): it computes in float64, which "
                    f"{ctx.describe()} does not support (no cl_khr_fp64); use float32 values and "
                    "literals (np.float32(...)), or run it with target='cpu'"
                )
            missing = sorted(e for e in needs if e != FP64 and e not in ctx.extensions)
            if missing:
                raise CompileError(
                    f"leaf '{t.leaf.name}' ({t.leaf.location}): its 64-bit atomics need "
                    f"{', '.join(missing)}, which {ctx.describe()} does not support; use int32 / float32 "
                    "arrays for atomics, or run it with target='cpu'"
                )


def _argument_types(spec: KernelSpec, layout: Layout) -> list[np.dtype | None]:
    """The kernel's arguments in the order ``OpenCLDevice.launch`` passes them, as PyOpenCL's
    ``set_scalar_arg_dtypes`` takes them: ``None`` for a buffer, else the scalar's type (the
    instance table, the three sizes and blocks per parent instance; then per parameter a
    scalar, or a buffer with its offset unless 0, its extents and its strides unless
    C-contiguous). Given the types once per built program, PyOpenCL packs a launch's plain
    integers with ``struct`` instead of asking NumPy scalars for their bytes one at a time:
    ``set_args`` of the vector add's 14 arguments took 49 µs before, 1 µs after (PoCL 3.1,
    PyOpenCL 2026.1.4, the 2-core Zen 4 machine)."""
    types: list[np.dtype | None] = [None, _I64, _I64, _I64, _I64]
    for p, lay in zip(spec.params, layout.arrays):
        if p.kind == "scalar":
            dtype = np.dtype(p.dtype)
            types.append(_U8 if dtype == ct.BOOL else dtype)
            continue
        contiguous, zero, _ = lay  # type: ignore[misc]
        types.append(None)
        types.extend([_I64] * ((0 if zero else 1) + p.rank + (0 if contiguous else p.rank)))
    return types


def _locate(generated: GeneratedKernel, line: int, spec: KernelSpec) -> str | None:
    origin = generated.where[line - 1] if 0 < line <= len(generated.where) else None
    if origin is None:
        names = ", ".join(f"'{c.node}'" for c in spec.calls)
        return f"kernel of node(s) {names}"
    leaf, pyline = origin
    return f"leaf '{leaf.name}' ({leaf.location.file}:{pyline})"


def _span(handle: CLArray) -> tuple[int, int]:
    """The byte range (relative to element 0) a strided view covers."""
    low = high = 0
    for n, s in zip(handle.shape, handle.strides):
        if n == 0:
            return 0, 0
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + handle.dtype.itemsize
