"""The tensor intrinsics (seed 001's ``llvm.hpvm.tensor.*``): their table, rules, semantics.

``OPS`` holds one ``OpDef`` per operation: its parameters (HPVM-C's argument order), which
are tensors, the defaults of the last ones, its operand rules (``rules``) and its NumPy
reference implementation (``reference``). ``apply`` is what running leaf code calls: it
validates, then computes on NumPy arrays with the reference, or on torch tensors with
``torch_impl`` (imported, with torch, only when a torch tensor arrives). ``body`` reads a
Python leaf written in the tensor form and writes a tensor body back as Python; ``patterns``
holds seed 001's fusion patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .reference import (
    np_add,
    np_batchnorm,
    np_clipped_relu,
    np_conv,
    np_group_conv,
    np_mul,
    np_pool,
    np_relu,
    np_sigmoid,
    np_softmax,
    np_tanh,
)
from .rules import (
    ACTIVATIONS,
    OPS,
    POOLINGS,
    Meta,
    OpDef,
    describe,
    fail,
    infer_add,
    infer_batchnorm,
    infer_clipped_relu,
    infer_conv,
    infer_group_conv,
    infer_mul,
    infer_pool,
    infer_softmax,
    infer_unary,
    meta_of,
)


def apply(name: str, args: tuple[Any, ...]) -> Any:
    """Validate ``args`` for operation ``name``, then run it on NumPy or on torch."""
    op = OPS[name]
    values = list(args)
    metas = list(args)
    kinds = set()
    for i in op.tensors:
        metas[i] = meta_of(values[i], name, op.params[i])
        kinds.add(isinstance(values[i], np.ndarray))
    op.infer(*metas)
    if kinds == {True}:
        for i in op.tensors:
            if type(values[i]) is not np.ndarray:  # interp's checked views: compute on plain arrays
                values[i] = values[i].view(np.ndarray)
        return op.numpy(*values)
    if kinds == {False}:
        from .torch_impl import TORCH

        return TORCH[name](*values)
    raise fail(
        name,
        "operands mix NumPy arrays and torch tensors; pass all of them as one kind "
        "(leaves receive NumPy arrays on interp and torch tensors on the tensor back end)",
    )


def infer(name: str, args: Sequence[Any]) -> Meta:
    """The result Meta of operation ``name`` on ``args`` (tensor operands given as Meta):
    the validation of ``_apply`` without running anything."""
    op = OPS[name]
    for i in op.tensors:
        if not isinstance(args[i], Meta):
            raise fail(
                name,
                f"operand '{op.params[i]}' must be a tensor, not {describe(args[i])}; pass an array port",
            )
    return op.infer(*args)


def defaulted(name: str, given: Sequence[Any]) -> list[Any]:
    """The values of operation ``name``'s parameters after its ``len(given)`` given operands:
    its registered defaults (``clipped_relu(x)`` clips to [0, 6]; ``[]`` when all are
    given), so every reader of a call fills what it leaves out the same way."""
    op = OPS[name]
    first_default = len(op.params) - len(op.defaults)
    return list(op.defaults[max(0, len(given) - first_default) :])


def _register(
    name: str,
    params: tuple[str, ...],
    tensors: tuple[int, ...],
    infer_fn: Callable[..., Meta],
    numpy_fn: Callable[..., np.ndarray],
    defaults: tuple[Any, ...] = (),
) -> None:
    OPS[name] = OpDef(name, params, tensors, infer_fn, numpy_fn, defaults)


_CONV = ("x", "w", "vpad", "hpad", "vstride", "hstride")
_POOL = ("x", "wh", "ww", "vpad", "hpad", "vstride", "hstride")
_register("convolution", _CONV, (0, 1), infer_conv, np_conv)
_register("group_convolution", (*_CONV, "groups"), (0, 1), infer_group_conv, np_group_conv)
_register("add", ("x", "b"), (0, 1), infer_add, np_add)
_register("mul", ("x", "w"), (0, 1), infer_mul, np_mul)
_register("relu", ("x",), (0,), infer_unary("relu"), np_relu)
_register("clipped_relu", ("x", "lo", "hi"), (0,), infer_clipped_relu, np_clipped_relu, (0.0, 6.0))
_register("tanh", ("x",), (0,), infer_unary("tanh"), np_tanh)
_register("sigmoid", ("x",), (0,), infer_unary("sigmoid"), np_sigmoid)
_register("softmax", ("x",), (0,), infer_softmax, np_softmax)
_register(
    "batchnorm",
    ("x", "gamma", "beta", "mean", "variance", "epsilon"),
    (0, 1, 2, 3, 4),
    infer_batchnorm,
    np_batchnorm,
)
for _kind in POOLINGS:
    _register(_kind, _POOL, (0,), infer_pool(_kind), np_pool(_kind))


__all__ = ["ACTIVATIONS", "OPS", "POOLINGS", "Meta", "OpDef", "apply", "infer", "meta_of"]
