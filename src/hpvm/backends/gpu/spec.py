"""What one GPU kernel does, written down independently of CUDA and OpenCL.

The shared lowering (``plan.py``) describes every kernel it launches as a ``KernelSpec``;
a device (``device.py``) turns the spec into code for its API and launches it. The spec is
fully typed (every parameter has a dtype and a rank), so a device can generate code from
it alone. Its meaning, for one GPU thread (CUDA: ``group_id = blockIdx.x``, ``local_id =
threadIdx.x``, ``group_size = blockDim.x``; OpenCL: ``get_group_id(0)``, ``get_local_id(0)``,
``get_local_size(0)``; the plan's launches are 1-D, and a device may launch one parent
instance as its grid instead — the *forms* of ``prologue.py``, which computes ``row`` to
``ctx`` below for both devices)::

    kernel(table, s0, s1, s2, bpp, p0, p1, ...):        # the five implicit parameters first
        row   = group_id // bpp                           # which launched parent instance
        local = (group_id % bpp) * group_size + local_id  # the instance within that parent
        total = s0 * s1 * s2
        if local >= total: return                         # (never happens when spec.barrier)
        gp    = table[row, 0]         # the parent instance's index in its instance set
        flat  = table[row, 1] + local # the instance's index among all instances of the node
        ids   = row-major unravel of local over the first `dims` of (s0, s1, s2), x outermost;
                unused dimensions have id 0 (and extent 1)
        ctx   = (id_x, id_y, id_z, s0, s1, s2, dims,      # level 0: the leaf's own node
                 table[row, 2], ..., table[row, 2 + 7 * (ctx_levels - 1) - 1])  # ancestors
        for each shared buffer k:                         # spec.shared (needs all of a parent
            sh_k = local array of `length` elements       # instance in one block: bpp == 1)
            for e in range(local_id, length, group_size): sh_k[e] = <source>[e]
            barrier()
        for each call c, in order:
            r_c = leaf_c(<arg>, ..., ctx)   # the leaf clone (query intrinsics read ctx)
        for each output o:
            mode "each": params[o.param][flat] = r_{o.call}[o.port]
            mode "last": if local == total - 1: params[o.param][gp] = r_{o.call}[o.port]

``r[port]`` is the leaf's return value itself when the leaf declares one output. An
argument (``ArgRef``) is a kernel parameter (``param``), one row of a parameter
(``row``: ``params[p][i]`` with ``i`` = ``flat`` or ``gp``, or ``params[p][params[m][i]]``
through an int64 map), an output of an earlier call in the same kernel (``result``, how
fused leaves pass values in registers) or a shared buffer (``shared``).

The ``table`` is an int64 array ``[rows, 2 + 7 * (ctx_levels - 1)]``; each row holds
``gp``, the flat offset of the parent instance's first instance, and the context of the
parent and its ancestors (``ir/instance_context.py``: 7 values per level, ids x, y, z,
extents x, y, z, number of dimensions). Leaf clones read the context tuple at constant
indices (``passes/clone_leaves.py``); a device that translates leaves itself reads the same
layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...ir import instance_context as ictx
from ...ir.graph import LeafFunction

IMPLICIT_PARAMS = ("table", "s0", "s1", "s2", "bpp")
TABLE_FIXED = 2  # gp, offset


@dataclass(frozen=True)
class KernelParam:
    """One data parameter of a kernel (after the implicit ones).

    ``kind`` is ``"scalar"`` (a value of ``dtype``) or ``"array"`` (a device array of
    ``dtype`` with ``rank`` dimensions; per-instance storages have the instance as their
    first dimension). ``read_only``: no leaf of the kernel writes it (OpenCL: ``const``, and
    ``restrict`` when no written parameter shares its buffer; numba-cuda cannot say it).
    """

    name: str
    kind: Literal["scalar", "array"]
    dtype: str  # a NumPy dtype name: "int64", "float32", ...
    rank: int = 0
    read_only: bool = True


@dataclass(frozen=True)
class ArgRef:
    """How one argument of a leaf call is formed inside the kernel (see the module doc)."""

    kind: Literal["param", "row", "result", "shared"]
    param: int = -1  # param, row: index into KernelSpec.params
    index: Literal["flat", "parent"] = "flat"  # row: which instance index selects the row
    map: int = -1  # row: index of an int64 map parameter applied to the index first (-1: none)
    call: int = -1  # result: the earlier call
    port: int = -1  # result: its output port
    shared: int = -1  # shared: index into KernelSpec.shared


@dataclass(frozen=True)
class SharedBuffer:
    """A ``malloc`` buffer placed in shared (CUDA) / local (OpenCL) memory for one kernel.

    ``source`` (a ``row`` ArgRef into a global pool) holds its initial contents, copied in
    at kernel start; nothing is copied out (the plan only chooses shared memory when no
    other kernel uses the buffer).
    """

    source: ArgRef
    dtype: str
    length: int  # elements


@dataclass(frozen=True, eq=False)
class LeafCall:
    """One leaf node's instance, run by the thread: ``leaf(args..., ctx)``."""

    leaf: LeafFunction
    node: str  # the node's name, for messages
    args: tuple[ArgRef, ...]

    def key(self) -> tuple[object, ...]:
        return (id(self.leaf), self.node, self.args)


@dataclass(frozen=True)
class KernelOutput:
    """Store output ``port`` of call ``call`` into ``params[param]`` (mode as in the module doc)."""

    call: int
    port: int
    param: int
    mode: Literal["each", "last"]


@dataclass(frozen=True, eq=False)
class KernelSpec:
    """A kernel: one or more leaf nodes (fused along one-to-one edges) over one instance grid."""

    name: str  # a readable, unique-per-program identifier ("k3_p_saxpy")
    dims: int  # replication dimensions of the leaf nodes (0-3)
    ctx_levels: int  # the context tuple has 7 * ctx_levels values
    params: tuple[KernelParam, ...]
    calls: tuple[LeafCall, ...]
    outputs: tuple[KernelOutput, ...] = ()
    shared: tuple[SharedBuffer, ...] = ()
    barrier: bool = False  # a leaf calls hpvm.barrier(): each block is exactly one parent instance

    def key(self) -> tuple[object, ...]:
        """Equal keys mean the same generated code (devices cache compiled kernels by it)."""
        return (
            self.name,
            self.dims,
            self.ctx_levels,
            self.params,
            tuple(c.key() for c in self.calls),
            self.outputs,
            self.shared,
            self.barrier,
        )

    @property
    def table_width(self) -> int:
        return TABLE_FIXED + ictx.STRIDE * (self.ctx_levels - 1)


@dataclass(frozen=True)
class Geometry:
    """A 1-D launch: ``groups`` blocks / work-groups of ``group_size`` threads / work-items."""

    groups: int
    group_size: int
    bpp: int  # blocks per parent instance
