"""``np.zeros`` of a constant shape in a leaf becomes a thread-private array on the GPU.

Why. numba-cuda cannot allocate arrays in device code, so a leaf that keeps a small scratch
array (``t = np.zeros(16, np.float32)``; every HBIR local array is one) compiles for ``cpu``
and runs on the simulator, but not on an NVIDIA GPU. A GPU thread's private memory is
``cuda.local.array(shape, dtype)``, whose shape must be a compile-time constant and whose
contents start undefined.

What. ``local_array_clone(clone, cuda)`` places the clone's constant-shape ``np.zeros`` in
private memory on its lowered leaf IR (``gpu/zeros.py``: ``np.empty`` plus zero-fill
loops) and emits it again with every constant-shape ``np.empty`` spelled
``<cuda>.local.array(shape, dtype)``, so the leaf computes what it computes on the other
back ends (a user's own constant-shape ``np.empty`` becomes private memory too: both start
undefined). The simulator runs the same code (``cuda.local.array`` is an ``np.empty``
there), so the placement is tested without a GPU. Any other allocation is left as written:
numba-cuda reports it when it compiles the leaf for a GPU; so is every allocation of a leaf
outside the leaf IR's dialect (its clone has no IR to rewrite).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...passes.clone_leaves import LeafClone
from ..gpu.zeros import has_private_arrays, private_zeros

CUDA_NAME = "__hpvm_cuda"  # the name the rewritten code reaches numba.cuda by


def local_array_clone(clone: LeafClone, cuda: Any) -> tuple[LeafClone, dict[str, Any]]:
    """The clone with its constant-shape local arrays in thread-private memory (see the
    module docstring), and the names that code uses, with their values, for the caller to
    bind (none, and the clone itself, when it has no such array or no lowered IR)."""
    if clone.ir is None:
        return clone, {}
    placed = private_zeros(clone.ir)
    if not has_private_arrays(placed):
        return clone, {}
    spelling = replace(clone.spelling, local_array=f"{CUDA_NAME}.local.array")
    return clone.reemitted(placed, "local", spelling), {CUDA_NAME: cuda}


__all__ = ["CUDA_NAME", "local_array_clone"]
