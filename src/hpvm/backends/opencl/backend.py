"""The ``opencl`` back end: graphs as OpenCL kernels through PyOpenCL (seed 001's DFG2LLVM_OpenCL).

The shared GPU lowering (``backends/gpu``) plans the kernels; this back end translates each
leaf's Python to OpenCL C (``translate.py``), generates the kernels (``kernelgen.py``) and runs
them on one device (``device.py``, chosen as ``context.py`` says).
"""

from __future__ import annotations

from ..gpu.backend import GPUBackend
from ..gpu.device import GPUDevice


class OpenCLBackend(GPUBackend):
    """Runs graphs on an OpenCL device: any vendor's GPU, or PoCL's CPU device."""

    name = "opencl"
    device = "opencl"

    def make_device(self) -> GPUDevice:
        from .device import OpenCLDevice

        return OpenCLDevice()
