"""The tensor path: HPVM's tensor operations, tensor-node fusion and (later) model import.

Leaves with ``hint=hpvm.TENSOR_TARGET`` whose bodies are straight-line calls of these
operations are *tensor leaves* (docs/tensor.md): ``interp`` runs them on NumPy (the
reference implementations), the ``tensor`` back end on PyTorch. Importing this package does
not import torch.
"""

from __future__ import annotations

from typing import Any

from ..errors import ModelImportError, TensorShapeError, UnsupportedLayerError
from .imported import TensorProgram
from .importer import from_torch
from .ops import (
    add,
    batchnorm,
    clipped_relu,
    convolution,
    group_convolution,
    mul,
    pool_max,
    pool_mean,
    pool_min,
    relu,
    sigmoid,
    softmax,
    tanh,
)


def fuse(root: Any) -> Any:
    """FuseHPVMTensorNodes (seed 001): a new root whose chains of single-operation tensor
    nodes matching a fusion pattern are fused into one node each; ``root`` is left intact."""
    from ..passes.fuse_tensor_nodes import fuse as _fuse

    return _fuse(root)


__all__ = [
    "ModelImportError",
    "TensorProgram",
    "TensorShapeError",
    "UnsupportedLayerError",
    "from_torch",
    "add",
    "batchnorm",
    "clipped_relu",
    "convolution",
    "fuse",
    "group_convolution",
    "mul",
    "pool_max",
    "pool_mean",
    "pool_min",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]


def __getattr__(name: str) -> Any:
    """``hpvm.tensor.models`` (the benchmark models) imports torch, so only when asked for."""
    if name == "models":
        import importlib

        return importlib.import_module(f"{__name__}.models")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
