"""The tensor path: HPVM's tensor operations, tensor-node fusion and (later) model import.

Leaves with ``hint=hpvm.TENSOR_TARGET`` whose bodies are straight-line calls of these
operations are *tensor leaves* (docs/tensor.md): ``interp`` runs them on NumPy (the
reference implementations), the ``tensor`` back end on PyTorch. Importing this package does
not import torch.
"""

from __future__ import annotations

from typing import Any

from ..errors import ModelImportError, TensorShapeError, UnsupportedLayerError
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
    """What is loaded on first use: ``hpvm.tensor.models`` (the benchmark models) imports
    torch; the model importer (``from_torch``, ``TensorProgram``) is a third of the import
    time of ``hpvm``, which imports this package for the operations leaves call."""
    if name == "models":
        import importlib

        return importlib.import_module(f"{__name__}.models")
    if name == "from_torch":
        from .importer import from_torch

        return from_torch
    if name == "TensorProgram":
        from .imported import TensorProgram

        return TensorProgram
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
