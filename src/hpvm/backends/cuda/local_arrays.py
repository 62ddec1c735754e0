"""``np.zeros`` of a constant shape in a leaf becomes a thread-private array on the GPU.

Why. numba-cuda cannot allocate arrays in device code, so a leaf that keeps a small scratch
array (``t = np.zeros(16, np.float32)``; every HBIR local array is one) compiles for ``cpu``
and runs on the simulator, but not on an NVIDIA GPU. A GPU thread's private memory is
``cuda.local.array(shape, dtype)``, whose shape must be a compile-time constant and whose
contents start undefined.

What. ``lower_local_arrays(func, env)`` rewrites, in place, each statement
``name = np.zeros(SHAPE[, DTYPE])`` of a leaf clone whose ``SHAPE`` is an integer constant or
a tuple of them into ``name = <cuda>.local.array(SHAPE, DTYPE)`` followed by loops that set
every element to zero, so the leaf computes what it computes on the other back ends. The
simulator runs the same rewritten code (``cuda.local.array`` is an ``np.empty`` there), so
the rewriting is tested without a GPU. Any other allocation is left as written: numba-cuda
reports it when it compiles the leaf for a GPU.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

import numpy as np

from ..gpu.zeros import constant_zeros

CUDA_NAME = "__hpvm_cuda"  # the name the rewritten code reaches numba.cuda by
FLOAT64_NAME = "__hpvm_float64"  # np.zeros's default dtype


def lower_local_arrays(func: ast.FunctionDef, env: dict[str, Any], cuda: Any) -> dict[str, Any]:
    """Rewrite ``func``'s constant-shape ``np.zeros`` assignments (see the module docstring);
    ``env`` is what its global names refer to, ``cuda`` the ``numba.cuda`` module. Returns
    the names the rewritten code uses, with their values, for the caller to bind (none if
    nothing was rewritten)."""
    rewriter = _Rewriter(env)
    rewriter.visit(func)
    ast.fix_missing_locations(func)
    return {CUDA_NAME: cuda, FLOAT64_NAME: np.float64} if rewriter.changed else {}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, env: dict[str, Any]):
        self.env = env
        self.changed = False
        self._names = itertools.count()

    def visit_Assign(self, node: ast.Assign) -> Any:
        zeros = constant_zeros(node, self._resolve)
        if zeros is None:
            return node
        dtype = zeros.dtype if zeros.dtype is not None else ast.Name(FLOAT64_NAME, ast.Load())
        allocate = ast.Assign(
            targets=[ast.Name(zeros.target, ast.Store())],
            value=ast.Call(
                func=ast.Attribute(
                    ast.Attribute(ast.Name(CUDA_NAME, ast.Load()), "local", ast.Load()), "array", ast.Load()
                ),
                args=[_shape_node(zeros.shape), dtype],
                keywords=[],
            ),
        )
        self.changed = True
        return [
            ast.copy_location(allocate, node),
            ast.copy_location(self._zero_fill(zeros.target, zeros.shape), node),
        ]

    def _resolve(self, node: ast.expr) -> Any:
        """The object a name or dotted name refers to in ``env`` (None if it does not)."""
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def _zero_fill(self, name: str, shape: tuple[int, ...]) -> ast.stmt:
        """``for i0 in range(n0): for i1 in range(n1): name[i0, i1] = 0``."""
        ids = [f"__hpvm_z{next(self._names)}" for _ in shape]
        index: ast.expr = (
            ast.Name(ids[0], ast.Load())
            if len(ids) == 1
            else ast.Tuple([ast.Name(i, ast.Load()) for i in ids], ast.Load())
        )
        body: ast.stmt = ast.Assign(
            targets=[ast.Subscript(ast.Name(name, ast.Load()), index, ast.Store())], value=ast.Constant(0)
        )
        for i, extent in reversed(list(zip(ids, shape))):
            body = ast.For(
                target=ast.Name(i, ast.Store()),
                iter=ast.Call(ast.Name("range", ast.Load()), [ast.Constant(extent)], []),
                body=[body],
                orelse=[],
            )
        return body


def _shape_node(shape: tuple[int, ...]) -> ast.expr:
    if len(shape) == 1:
        return ast.Constant(shape[0])
    return ast.Tuple([ast.Constant(n) for n in shape], ast.Load())
