"""The ``cuda`` back end's ``GPUDevice``: numba-cuda, on an NVIDIA GPU or its simulator.

Leaves are cloned as for the ``cpu`` back end (``passes/clone_leaves.py``: the query
intrinsics read a context tuple) and compiled with ``cuda.jit(device=True)``; each ``KernelSpec``
becomes a generated ``cuda.jit`` kernel calling them (``kernelgen.py``).

Under ``NUMBA_ENABLE_CUDASIM=1`` numba-cuda runs kernels in Python, a thread per GPU thread,
and compiles nothing; so that a leaf that would not compile for a GPU is still reported
before it runs, the simulator path first type-checks each leaf with Numba's CPU compiler
for the kernel's argument types (the same Numba subset; device-only restrictions, such as
no array allocation in device code, are checked only on a real GPU — except that a
constant-shape ``np.zeros`` becomes a thread-private array, ``local_arrays.py``). As Python, a leaf's
arithmetic would follow NumPy's scalar rules; the simulator runs each leaf clone rewritten
to compute with Numba's types, as the interpreter does (``interp/arith_rewrite.py``), so that
it computes what the GPU computes.
"""

from __future__ import annotations

import ast
import copy
import threading
import weakref
from typing import Any

import numpy as np

from ...errors import BackendUnavailableError, CompileError
from ...ir import instance_context as ictx
from ...ir import pyast
from ...ir.graph import LeafFunction
from ...ir.leafinfo import analyze_leaf
from ...ir.types import ArrayType, ScalarType
from ...passes.clone_leaves import CTX_PARAM, LeafClone, clone_of, written_leaf
from ..gpu.device import GPUDevice
from ..gpu.prologue import Form, device_axes, launch_form
from ..gpu.spec import Geometry, KernelSpec
from ..interp.arith_rewrite import rewrite_arithmetic
from ..numba_shared.messages import describe_numba_error
from .kernelgen import kernel_source
from .local_arrays import local_array_clone

# numba-cuda's simulator runs one kernel at a time in a process (it asserts so).
_SIM_LOCK = threading.Lock()
# Bytes shared-memory buffers are aligned to on a GPU, as on opencl (``__local`` arrays): a
# malloc buffer is uint8 and leaves view it as float32, int64...
SHARED_ALIGNMENT = 16


def simulated() -> bool:
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", False))


class CUDADevice(GPUDevice):
    name = "cuda"
    backend = "cuda"

    def __init__(self) -> None:
        from numba import cuda

        self.cuda = cuda
        self.simulator = simulated()
        # The most threads per block and blocks per grid along CUDA's x, y, z (direct launches).
        self.block_dims: tuple[int, int, int] = (1024, 1024, 64)
        self.grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
        if self.simulator:
            self.max_group_size = 1024
            self.shared_memory_bytes = 48 * 1024
            self._label = "numba-cuda simulator (NUMBA_ENABLE_CUDASIM=1)"
        else:
            try:
                gpus = list(cuda.gpus)
            except Exception as e:
                raise BackendUnavailableError(
                    f"back end 'cuda': the CUDA driver found no usable GPU ({_first_line(e)}); CUDA "
                    "devices here: none; set NUMBA_ENABLE_CUDASIM=1 to run on numba-cuda's simulator"
                ) from None
            if not gpus:
                raise BackendUnavailableError(
                    "back end 'cuda': the CUDA driver reports no GPU; CUDA devices here: none; set "
                    "NUMBA_ENABLE_CUDASIM=1 to run on numba-cuda's simulator"
                )
            dev = cuda.get_current_device()
            self.max_group_size = int(dev.MAX_THREADS_PER_BLOCK)
            self.shared_memory_bytes = int(dev.MAX_SHARED_MEMORY_PER_BLOCK)
            self.block_dims = (int(dev.MAX_BLOCK_DIM_X), int(dev.MAX_BLOCK_DIM_Y), int(dev.MAX_BLOCK_DIM_Z))
            self.grid_dims = (int(dev.MAX_GRID_DIM_X), int(dev.MAX_GRID_DIM_Y), int(dev.MAX_GRID_DIM_Z))
            name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
            self._label = f"{name} (compute capability {'.'.join(map(str, dev.compute_capability))})"
            quiet_low_occupancy()
        self._leaves: weakref.WeakKeyDictionary[LeafFunction, tuple[LeafClone, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._checked: set[tuple[object, ...]] = set()
        self._lock = threading.RLock()
        # The simulator refuses an alignment (its shared arrays are NumPy arrays, whose data
        # NumPy aligns to 16 bytes already).
        self.shared_alignment = None if self.simulator else SHARED_ALIGNMENT

    def describe(self) -> str:
        return self._label

    # -- memory ---------------------------------------------------------------------------

    def to_device(self, host: np.ndarray) -> Any:
        return self.cuda.to_device(np.ascontiguousarray(host))

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.cuda.device_array(shape, dtype=dtype)

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        if host.flags.c_contiguous:
            handle.copy_to_host(host)
        else:
            host[...] = handle.copy_to_host()

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        handle.copy_to_device(np.ascontiguousarray(host))

    def view(self, base_handle: Any, base: np.ndarray, view: np.ndarray) -> Any:
        if not base.flags.c_contiguous:
            return super().view(base_handle, base, view)
        offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        if self.simulator:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

            flat = base_handle._ary.reshape(-1).view(np.uint8)
            return FakeCUDAArray(
                np.ndarray(view.shape, view.dtype, buffer=flat, offset=offset, strides=view.strides)
            )
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        from numpy.lib.array_utils import byte_bounds

        low, high = byte_bounds(view)
        start = low - base.__array_interface__["data"][0]
        data = base_handle.gpu_data.view(start, start + (high - low))
        # DeviceNDArray addresses elements from gpu_data's start: the view's first element
        # may not be its lowest address (negative strides); shift by the difference.
        first = offset - start
        if first:
            return super().view(base_handle, base, view)
        return DeviceNDArray(view.shape, view.strides, view.dtype, gpu_data=data)

    def synchronize(self) -> None:
        if not self.simulator:
            self.cuda.synchronize()

    # -- kernels --------------------------------------------------------------------------

    def leaf(self, leaf: LeafFunction) -> tuple[LeafClone, Any]:
        """The leaf's clone and its ``cuda.jit(device=True)`` function (made once per leaf)."""
        with self._lock:
            entry = self._leaves.get(leaf)
            if entry is None:
                from . import intrinsics

                clone = clone_of(leaf, "cuda")  # the CloneLeaves pass made it
                namespace = _leaf_namespace(clone)
                namespace.update(intrinsics.helpers())
                # Constant-shape np.zeros: a thread's private array (local_arrays.py).
                placed, names = local_array_clone(clone, self.cuda)
                namespace.update(names)
                func = copy.deepcopy(placed.func)
                if self.simulator:  # Python: Numba's arithmetic by rewriting (see the docstring)
                    namespace.update(rewrite_arithmetic(func, namespace, quiet=True))
                code = pyast.compile_tree(
                    ast.Module(body=[func], type_ignores=[]), leaf.location.file, "exec"
                )
                exec(code, namespace)
                entry = self._leaves[leaf] = (clone, self.cuda.jit(device=True)(namespace[placed.symbol]))
            return entry

    def compile(self, spec: KernelSpec) -> Any:
        symbols = []
        namespace: dict[str, Any] = {"cuda": self.cuda, "np": np}
        for c, call in enumerate(spec.calls):
            refuse_raise(call.leaf)
            clone, func = self.leaf(call.leaf)
            if clone.levels > spec.ctx_levels:
                raise CompileError(
                    f"leaf '{call.leaf.name}' ({call.leaf.location}): it queries {clone.levels - 1} "
                    f"level(s) above its node, but node '{call.node}' has only {spec.ctx_levels - 1} "
                    "ancestor(s)"
                )
            symbol = f"__leaf{c}"
            namespace[symbol] = func
            symbols.append(symbol)
        if self.simulator:
            self._typecheck(spec)
        return _Kernel(self.cuda, spec, symbols, namespace, self.shared_alignment)

    def _form(
        self, spec: KernelSpec, geometry: Geometry, sizes: tuple[int, int, int]
    ) -> tuple[Form, tuple[int, ...]]:
        """The prologue form of a launch, and a direct launch's block shape."""
        n = max(spec.dims, 1)  # (the limits along CUDA's x, y, z: launch_form maps the axes)
        return launch_form(
            spec, geometry, sizes, self.preferred_group_size, self.block_dims[:n], self.grid_dims[:n]
        )

    def prepare(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> int:
        """Generate the kernel for this launch's form and, on a GPU, compile it for the
        arguments' types: numba-cuda's compiled kernel knows its own threads-per-block limit
        (``max_threads_per_block``, lowered by its registers). The simulator compiles
        nothing (``compile`` type-checked the leaves) and has no such limit."""
        dispatcher = kernel.dispatcher(self._form(spec, geometry, sizes)[0])
        if self.simulator:
            return self.max_group_size
        from numba import typeof
        from numba.core.errors import NumbaError

        values = (table, *(np.int64(s) for s in sizes), np.int64(geometry.bpp), *args)
        try:
            compiled = dispatcher.compile(tuple(typeof(v) for v in values))
        except NumbaError as e:
            raise locate(e, spec, "cuda", "numba-cuda") from None
        return min(self.max_group_size, int(compiled.max_threads_per_block))

    def launch(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> None:
        s0, s1, s2 = (np.int64(s) for s in sizes)
        form, local = self._form(spec, geometry, sizes)
        if form.direct:
            blocks = [size // k for size, k in zip(sizes, local)]
            axes = device_axes(spec)  # instance axes in CUDA's order x, y, z
            call = kernel.dispatcher(form)[tuple(blocks[a] for a in axes), tuple(local[a] for a in axes)]
        else:
            call = kernel.dispatcher(form)[geometry.groups, geometry.group_size]
        if self.simulator:
            with _SIM_LOCK:
                call(table, s0, s1, s2, np.int64(geometry.bpp), *args)
            return
        from numba.core.errors import NumbaError

        try:
            call(table, s0, s1, s2, np.int64(geometry.bpp), *args)
        except NumbaError as e:
            raise locate(e, spec, "cuda", "numba-cuda") from None

    # -- type-checking leaves on the simulator ------------------------------------------

    def _typecheck(self, spec: KernelSpec) -> None:
        """Compile each leaf clone with Numba's CPU compiler for the kernel's argument types
        (the simulator compiles nothing, so this is what reports leaves Numba cannot compile)."""
        import numba
        from numba.core import types
        from numba.core.errors import NumbaError

        from ..numba_shared import atomics

        for call in spec.calls:
            arg_types = [self._numba_type(spec, ref, types) for ref in call.args]
            arg_types.append(types.UniTuple(types.int64, ictx.STRIDE * spec.ctx_levels))
            key = (id(call.leaf), tuple(arg_types))
            if key in self._checked:
                continue
            clone = clone_of(call.leaf, "cuda")
            namespace = _leaf_namespace(clone)
            for op in atomics.ATOMIC_OPS:
                namespace[f"__hpvm_atomic_{op}"] = getattr(atomics, f"atomic_{op}")
            namespace["__hpvm_barrier"] = _cpu_barrier()
            code = pyast.compile_tree(
                ast.Module(body=[clone.func], type_ignores=[]), call.leaf.location.file, "exec"
            )
            exec(code, namespace)
            try:
                numba.njit(namespace[clone.symbol]).compile(tuple(arg_types))
            except NumbaError as e:
                raise locate(e, spec, "cuda", "Numba, type-checking for the simulator") from None
            self._checked.add(key)

    @staticmethod
    def _numba_type(spec: KernelSpec, ref: Any, types: Any) -> Any:
        from numba.np.numpy_support import from_dtype

        if ref.kind == "result":
            t = spec.calls[ref.call].leaf.out_types[ref.port]
            if isinstance(t, ArrayType):
                return types.Array(from_dtype(t.dtype), t.rank, "A")
            assert isinstance(t, ScalarType)
            return from_dtype(t.dtype)
        if ref.kind == "shared":
            buf = spec.shared[ref.shared]
            return types.Array(from_dtype(np.dtype(buf.dtype)), 1, "C")
        p = spec.params[ref.param]
        rank = p.rank - (1 if ref.kind == "row" else 0)
        if p.kind == "scalar" or rank == 0:
            return from_dtype(np.dtype(p.dtype))
        return types.Array(from_dtype(np.dtype(p.dtype)), rank, "A")


class _Kernel:
    """A spec's kernels, one ``cuda.jit`` dispatcher per prologue form (generated on first
    use), and the latest generated source."""

    def __init__(
        self,
        cuda: Any,
        spec: KernelSpec,
        symbols: list[str],
        namespace: dict[str, Any],
        alignment: int | None,
    ):
        self.cuda, self.spec, self.symbols, self.namespace = cuda, spec, symbols, namespace
        self.alignment = alignment
        self.forms: dict[Form, Any] = {}
        self.source = ""

    def dispatcher(self, form: Form) -> Any:
        found = self.forms.get(form)
        if found is None:
            self.source = kernel_source(self.spec, self.symbols, form, self.alignment)
            scope = dict(self.namespace)
            exec(compile(self.source, f"<hpvm cuda kernel {self.spec.name}>", "exec"), scope)
            found = self.forms[form] = self.cuda.jit(scope[self.spec.name])
        return found


_BARRIER: Any = None


def quiet_low_occupancy() -> None:
    """Turn off numba-cuda's "Grid size N will likely result in GPU under-utilization"
    warning, unless ``NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS`` asks for it.

    Why: hpvm sizes a grid from the graph's replication extents, so a small grid is the
    program's size, not a launch configuration the user wrote; the warning (raised from
    numba-cuda's dispatcher on every small launch, an error under ``-W error``) names
    nothing the user can change. It is numba-cuda's process-wide setting, so the user's own
    numba-cuda kernels stop warning too (docs/backends/gpu.md, "The simulator and a real GPU")."""
    import os

    if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" in os.environ:
        return
    try:
        from numba.cuda.core import config
    except ImportError:  # numba-cuda before the core split keeps it in numba's config
        from numba.core import config
    config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


def refuse_raise(leaf: LeafFunction) -> None:
    """A leaf with a ``raise`` statement is a ``CompileError`` on ``cuda``, simulator included.

    Why: numba-cuda compiles ``raise`` in device code, but outside debug mode a kernel drops
    the exception: the thread just stops, and the launch reports success with the leaf's
    outputs unwritten (seen on an H200). The simulator runs the leaf as Python and would
    raise, so it refuses too, to keep one behaviour (as ``opencl`` refuses it)."""
    lines = analyze_leaf(leaf).raise_lines
    if lines:
        raise CompileError(
            f"leaf '{leaf.name}' ({leaf.location.file}:{lines[0]}): a 'raise' statement cannot run on "
            "cuda: numba-cuda kernels drop exceptions outside debug mode, so the error would be lost "
            "and the leaf's outputs left unwritten; check the condition on the host, or run this node "
            "with target='cpu' or 'interp', where a leaf may raise"
        )


def _cpu_barrier() -> Any:
    global _BARRIER
    if _BARRIER is None:
        import numba

        @numba.njit
        def barrier():  # type: ignore[no-untyped-def]
            pass

        _BARRIER = barrier
    return _BARRIER


def _leaf_namespace(clone: LeafClone) -> dict[str, Any]:
    """The leaf's own globals and closure values, so its clone sees what the leaf sees."""
    namespace = clone.namespace()
    namespace.pop(CTX_PARAM, None)
    return namespace


def locate(error: Exception, spec: KernelSpec, backend: str, compiler: str) -> CompileError:
    """A ``CompileError`` naming the leaf, line and node a Numba message points at."""
    names = ", ".join(f"'{c.node}'" for c in spec.calls)
    return describe_numba_error(
        error,
        [written_leaf(c.leaf) for c in spec.calls],
        backend,
        compiler,
        f"the kernel of node(s) {names}",
        node_of=lambda leaf: next(c.node for c in spec.calls if written_leaf(c.leaf) is leaf),
    )


def _first_line(e: Exception) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip() and line.strip() != ":"]
    return lines[0] if lines else type(e).__name__
