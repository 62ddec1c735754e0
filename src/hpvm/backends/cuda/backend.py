"""The ``cuda`` back end: graphs as numba-cuda kernels (seed 001's DFG2LLVM_OpenCL, for CUDA)."""

from __future__ import annotations

from ...passes.clone_leaves import CloneLeaves
from ..gpu.backend import GPUBackend
from ..gpu.device import GPUDevice


class CUDABackend(GPUBackend):
    """Runs graphs on an NVIDIA GPU, or on numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``)."""

    name = "cuda"
    device = "cuda"
    # numba-cuda compiles the leaves' clones (seed 001's step 1) as device functions.
    lowering = (*GPUBackend.lowering, CloneLeaves("cuda"))

    def make_device(self) -> GPUDevice:
        from .device import CUDADevice

        return CUDADevice()
