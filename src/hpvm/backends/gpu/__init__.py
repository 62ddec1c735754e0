"""The lowering shared by the GPU back ends (``cuda``, ``opencl``); see ``plan.py``.

``spec.py`` describes a kernel, ``prologue.py`` how its threads find their instances (both
kernel generators render it), ``device.py`` is what a back end implements, ``plan.py``
turns graphs into kernel launches and ``backend.py`` is the ``Backend`` on top.
"""

from .backend import GPUBackend
from .device import GPUDevice
from .spec import ArgRef, Geometry, KernelOutput, KernelParam, KernelSpec, LeafCall, SharedBuffer

__all__ = [
    "ArgRef",
    "GPUBackend",
    "GPUDevice",
    "Geometry",
    "KernelOutput",
    "KernelParam",
    "KernelSpec",
    "LeafCall",
    "SharedBuffer",
]
