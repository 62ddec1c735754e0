"""Recognising ``name = np.zeros(SHAPE[, DTYPE])`` with a constant shape in a leaf.

Why. GPU threads cannot allocate: a small scratch array in a leaf (every HBIR local array is
one) becomes thread-private memory whose size must be known when the kernel is compiled —
``cuda.local.array`` for numba-cuda, a ``__private`` C array for OpenCL. Both back ends ask
the same question of the same statement, answered here once.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ZerosCall:
    """``target = np.zeros(shape, dtype)``: ``dtype`` is the written expression, or ``None``
    for NumPy's default (float64)."""

    target: str
    shape: tuple[int, ...]
    dtype: ast.expr | None


def constant_zeros(node: ast.stmt, resolve: Callable[[ast.expr], Any]) -> ZerosCall | None:
    """``node`` as a constant-shape ``np.zeros`` assignment to one name, else ``None``;
    ``resolve`` gives the object a (dotted) name refers to in the leaf's namespace."""
    if (
        not isinstance(node, ast.Assign)
        or len(node.targets) != 1
        or not isinstance(node.targets[0], ast.Name)
    ):
        return None
    call = node.value
    if not isinstance(call, ast.Call) or not call.args or len(call.args) > 2:
        return None
    if any(k.arg != "dtype" for k in call.keywords) or (len(call.args) == 2 and call.keywords):
        return None
    if resolve(call.func) is not np.zeros:
        return None
    shape = _constant_shape(call.args[0])
    if shape is None:
        return None
    dtype = call.args[1] if len(call.args) == 2 else next((k.value for k in call.keywords), None)
    return ZerosCall(node.targets[0].id, shape, dtype)


def _constant_shape(node: ast.expr) -> tuple[int, ...] | None:
    """An integer constant or a tuple of them, as a shape (non-negative), else None."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    shape = []
    for item in items:
        if not (isinstance(item, ast.Constant) and type(item.value) is int and item.value >= 0):
            return None
        shape.append(item.value)
    return tuple(shape) if shape else None
