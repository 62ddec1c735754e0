"""The device side of the seam: what a GPU back end implements for the shared lowering.

``plan.py`` decides *what* runs where (kernels, buffers, copies); a ``GPUDevice`` does it on
one API — numba-cuda for ``cuda``, PyOpenCL for ``opencl``. Every method is called from the
thread running a launch; a device serializes what its API needs serialized.

Memory handles are opaque to the plan (a numba-cuda ``DeviceNDArray``, a ``pyopencl``
array...). They must support ``.shape`` and ``.dtype`` like NumPy arrays. The same methods
serve the memory tracker (``runtime/memory.py``), which keeps one device copy per tracked
array and address space (``name``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .spec import Geometry, KernelSpec


class GPUDevice(ABC):
    """One GPU (or OpenCL device) as the shared lowering sees it."""

    #: the address space's name: the memory tracker keys device copies by it ("cuda", "opencl")
    name: str = "?"
    #: the back end's name, for messages ("cuda")
    backend: str = "?"
    #: the most threads one block / work-group may have (CUDA: 1024)
    max_group_size: int = 1024
    #: block size for leaves without barriers (a multiple of the warp / SIMD width)
    preferred_group_size: int = 128
    #: bytes of shared / local memory one block may use; larger malloc buffers stay global
    shared_memory_bytes: int = 48 * 1024

    def describe(self) -> str:
        """The device in words, for messages and ``hpvm run --timings``."""
        return self.name

    # -- memory ---------------------------------------------------------------------------

    @abstractmethod
    def to_device(self, host: np.ndarray) -> Any:
        """A new device array holding a copy of ``host`` (any layout)."""

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A new, uninitialised C-contiguous device array."""

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A new C-contiguous device array of zeros. The default uploads host zeros; a device
        that can fill memory itself overrides it (a pool of malloc buffers, one per block,
        is tens of MiB: filled on the device it crosses no bus)."""
        return self.to_device(np.zeros(shape, dtype))

    @abstractmethod
    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        """Copy the device array ``handle`` into ``host`` (same shape and dtype)."""

    @abstractmethod
    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        """Copy ``host`` into the existing device array ``handle`` (same shape and dtype)."""

    def view(self, base_handle: Any, base: np.ndarray, view: np.ndarray) -> Any:
        """The device counterpart of ``view``, a view of the tracked host array ``base`` whose
        device copy is ``base_handle`` (same byte offset, shape and strides). Devices that
        cannot alias device memory may raise ``LaunchError``."""
        from ...errors import LaunchError

        raise LaunchError(
            f"the {self.backend} back end cannot pass a view of a tracked array to a graph; pass "
            "the tracked array itself (or track the view)"
        )

    # -- kernels --------------------------------------------------------------------------

    @abstractmethod
    def compile(self, spec: KernelSpec) -> Any:
        """Compile ``spec`` (see ``spec.py`` for its meaning); return anything ``launch`` takes.

        Called once per distinct ``spec.key()``; a leaf the device cannot compile raises
        ``CompileError`` naming the leaf, its file and line.
        """

    def prepare(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> int:
        """Build ``kernel`` now for a launch with these arguments (the variant its prologue
        form and its arguments' types and layouts select), unless it is built already, and
        return the most threads one block of that build may have: the compiled kernel's own
        limit (its registers or local memory may lower it), at most ``max_group_size``.

        The plan calls it before launching a kernel whose parent instances must each fit in
        one block (barriers, shared buffers), and instead of ``launch`` when it compiles a
        graph ahead of running it (``Plan.compile``). A device that builds nothing per
        launch keeps this default."""
        return self.max_group_size

    @abstractmethod
    def launch(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> None:
        """Run ``kernel`` on ``geometry``: implicit parameters ``table`` (a device int64 array),
        ``s0, s1, s2`` = ``sizes`` and ``bpp`` = ``geometry.bpp``, then ``args`` (NumPy
        scalars of each scalar parameter's dtype, device handles for arrays). Kernels of one
        launch run in order (one stream / in-order queue); errors raised while running are
        reported as they are (the plan names the nodes)."""

    def synchronize(self) -> None:  # noqa: B027 — optional
        """Wait for every kernel launched so far (before results are read on the host)."""
