"""Run one translated leaf over a grid, outside any graph (tests and debugging).

``run_leaf(leaf, args, grid)`` translates ``leaf`` for ``args``, wraps it in a kernel with one
work-item per instance of a ``grid`` of up to three dimensions, copies the arrays to the
device and back, and returns each output as a NumPy array with one value per instance
(row-major over the grid). Ancestor levels of the context come from ``parents``: one
``(ids, extents, dims)`` per level, the same for every instance. It is the smallest complete
use of the translator: the graph back end (``backend.py``) does the same per kernel of a
launch plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...ir import instance_context as ictx
from ...ir.graph import LeafFunction
from ...ir.types import ArrayType, ScalarType
from . import cltypes as ct
from .context import OpenCLContext, get_context
from .translate import (
    CTX_NAME,
    OUT_PREFIX,
    ArraySpec,
    ScalarSpec,
    TranslatedLeaf,
    render_program,
    translate_leaf,
)


def grid_kernel(t: TranslatedLeaf, dims: int) -> str:
    """A kernel running ``t`` once per work-item of a ``dims``-D NDRange (global size = grid)."""
    params: list[str] = []
    call: list[str] = []
    for decl, role in t.signature:
        kind = role.split()[0]
        if kind in ("scalar", "array", "offset", "extent", "stride"):
            name = decl.split()[-1].lstrip("*")
            if kind == "scalar" and decl.startswith("bool "):
                decl = f"uchar {name}"
            params.append(decl)
            call.append(name)
    levels = max(t.levels, 1)
    params.append("__global const long* hpvm__ctx_in")
    body = [
        f"    long {CTX_NAME}[{ictx.STRIDE * levels}];",
        f"    for (int k = {ictx.STRIDE}; k < {ictx.STRIDE * levels}; k++) {CTX_NAME}[k] = hpvm__ctx_in[k];",
    ]
    for axis in range(3):
        body.append(f"    {CTX_NAME}[{ictx.ID + axis}] = (long)get_global_id({axis});")
        body.append(f"    {CTX_NAME}[{ictx.EXTENT + axis}] = (long)get_global_size({axis});")
    body.append(f"    {CTX_NAME}[{ictx.DIMS}] = {dims};")
    i0, i1, i2 = (f"{CTX_NAME}[{ictx.ID + axis}]" for axis in range(3))
    n1, n2 = (f"{CTX_NAME}[{ictx.EXTENT + axis}]" for axis in (1, 2))
    body.append(f"    const long flat = ({i0} * {n1} + {i1}) * {n2} + {i2};")
    if t.uses_ctx:
        call.append(CTX_NAME)
    for k, out in enumerate(t.leaf.out_types):
        if isinstance(out, ScalarType):
            c = ct.c_name(out.dtype)
            store = "uchar" if out.dtype == ct.BOOL else c
            params.append(f"__global {store}* hpvm__res{k}")
            body.append(f"    {c} {OUT_PREFIX}{k} = 0;")
            call.append(f"&{OUT_PREFIX}{k}")
        else:
            width = 1 + 2 * out.rank
            params.append(f"__global long* hpvm__res{k}")
            body.append(f"    long {OUT_PREFIX}{k}[{width}];")
            call.append(f"{OUT_PREFIX}{k}")
    body.append(f"    {t.name}({', '.join(call)});")
    for k, out in enumerate(t.leaf.out_types):
        if isinstance(out, ScalarType):
            body.append(f"    hpvm__res{k}[flat] = {OUT_PREFIX}{k};")
        else:
            width = 1 + 2 * out.rank
            body.append(
                f"    for (int j = 0; j < {width}; j++) hpvm__res{k}[flat * {width} + j] = {OUT_PREFIX}{k}[j];"
            )
    return "__kernel void hpvm_grid(" + ", ".join(params) + ") {\n" + "\n".join(body) + "\n}"


def run_leaf(
    leaf: LeafFunction,
    args: Sequence[Any],
    grid: Sequence[int] = (1,),
    parents: Sequence[tuple[Sequence[int], Sequence[int], int]] = (),
    ctx: OpenCLContext | None = None,
) -> tuple[np.ndarray, ...]:
    """Run ``leaf`` once per instance of ``grid``; arrays in ``args`` are updated in place."""
    import pyopencl as cl

    ctx = ctx or get_context()
    specs = []
    for p in leaf.params:
        if isinstance(p.type, ArrayType):
            specs.append(ArraySpec(p.type.dtype, p.type.rank, contiguous=False))
        else:
            specs.append(ScalarSpec(p.type.dtype))
    t = translate_leaf(leaf, specs)
    source, _ = render_program([t], [grid_kernel(t, len(grid))])
    program = ctx.build(source)
    n = int(np.prod(grid)) if grid else 1
    values: list[Any] = []
    buffers: list[tuple[Any, np.ndarray]] = []
    mf = cl.mem_flags
    for p, a in zip(leaf.params, args):
        if isinstance(p.type, ArrayType):
            base = _base(a)
            buf = cl.Buffer(
                ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=base if base.nbytes else np.zeros(1)
            )
            buffers.append((buf, base))
            offset = (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // a.itemsize
            values.extend([buf, np.int64(offset), *(np.int64(s) for s in a.shape)])
            values.extend(np.int64(s // a.itemsize) for s in a.strides)
        elif p.type.dtype == ct.BOOL:
            values.append(np.uint8(bool(a)))
        else:
            values.append(p.type.dtype.type(a))
    levels = max(t.levels, 1)
    table = np.zeros(ictx.STRIDE * levels, np.int64)
    for level, (ids, extents, dims) in enumerate(parents, start=1):
        start = ictx.index(level, 0)
        table[start : start + ictx.STRIDE] = ictx.level(dims, ids, extents)
    values.append(cl.Buffer(ctx.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=table))
    results: list[np.ndarray] = []
    for out in leaf.out_types:
        if isinstance(out, ScalarType):
            results.append(np.zeros(n, np.uint8 if out.dtype == ct.BOOL else out.dtype))
        else:
            results.append(np.zeros((n, 1 + 2 * out.rank), np.int64))
    res_bufs = [cl.Buffer(ctx.context, mf.READ_WRITE, max(r.nbytes, 1)) for r in results]
    values.extend(res_bufs)
    kernel = cl.Kernel(program, "hpvm_grid")
    global_size = tuple(grid) if grid else (1,)
    if n:
        kernel(ctx.queue, global_size, None, *values)
    for buf, a in buffers:
        if a.nbytes:
            cl.enqueue_copy(ctx.queue, a, buf)
    for buf, r in zip(res_bufs, results):
        if r.nbytes:
            cl.enqueue_copy(ctx.queue, r, buf)
    ctx.queue.finish()
    return tuple(
        r.astype(bool) if o.dtype == ct.BOOL and isinstance(o, ScalarType) else r
        for r, o in zip(results, leaf.out_types)
    )


def _base(a: np.ndarray) -> np.ndarray:
    """The C-contiguous array ``a`` views (``a`` itself when it owns its memory)."""
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    if not base.flags.c_contiguous:
        raise ValueError("run_leaf needs arrays that are C-contiguous or views of C-contiguous arrays")
    return base
