"""Barriers on the CPU: the work-item-loop transformation (PoCL's idea, on the leaf IR).

A leaf that calls ``hpvm.barrier()`` synchronizes its instances within one parent instance.
A CPU thread cannot wait for instances that have not run yet, so instead of one call per
instance the back end runs all instances of the leaf (within one parent instance) in one
generated *group function*. Its body is the leaf's body cut at every barrier into
*regions*; each region becomes a loop over the instances (a "work-item loop"), so every
instance finishes region *n* before any starts region *n + 1* — exactly what the barrier
between them promises.

What crosses a barrier:

* **Uniform** values (the same for every instance: parameters, instance counts, parent
  ids, constants and what is computed from them) stay ordinary locals. Every instance
  computes the same value, so after a region's loop the local holds it for the next
  region and for the driver code between regions. A region that only assigns uniform
  locals from call-free expressions (``stride //= 2``) runs once instead of once per
  instance: it has no other effect, so once is the same as every time. A region that both
  reads and updates a uniform local starts every instance from the value it had when the
  region began, so the update is applied once, not once per instance.
* **Varying** values (derived from the instance id, an atomic, ``malloc``, an array read at
  a varying index, or assigned under varying control) that a later region reads are
  *privatized*: one slot per instance in an array indexed by the instance's flat index,
  loaded when a region starts and stored when it ends. Their types come from Numba's type
  leaf IR (one type per local, Numba's). A varying value that is a pure
  expression of the instance id (``lid = get_node_instance_id_x(node)``) is recomputed in
  each region instead. Only scalars are privatized; a per-instance array or other object
  that lives across a barrier is a ``CompileError``.

Barriers inside ``if``/``while``/``for`` are supported when the condition (or the loop's
iterable) is uniform: the statement runs once in the driver and its body is split
recursively (PoCL's barrier loops; ``break``/``continue`` of such a loop must be uniform
too). A barrier under a condition that depends on the instance id is a ``CompileError``
naming the leaf, the barrier's line and the condition's line: on a GPU it would be
undefined behaviour and the interpreter reports it as a ``BarrierError``.

``return`` is allowed only after the leaf's last top-level barrier; the group function
returns what the last instance returns (DESIGN.md's last-instance rule).

The work is shared out: ``ir/leafir/phases.py`` splits the leaf IR into phases and
checks what cannot be split (with the uniformity analysis), ``barrier_emit.py`` writes the
group function from the phases; this module checks the leaf can be handled at all. A
leaf outside the leaf IR's dialect is a ``CompileError`` naming the construct (no barrier
leaf of the suite or the examples is).
"""

from __future__ import annotations

from ...errors import CompileError
from ...ir.leafir import leaf_ir
from ...ir.leafir.lowering import lower_queries
from ...ir.leafir.ops import LeafIRUnsupported
from ...ir.leafir.phases import split_phases
from ...ir.types import PortType
from ...passes.clone_leaves import LeafClone
from .barrier_emit import GroupSource


def group_function(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> tuple[str, str]:
    """(symbol, python source) of the group function of a barrier leaf (``group_source``)."""
    group = group_source(clone, param_types, ctx_levels)
    return group.symbol, group.source()


def group_source(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> GroupSource:
    """The writer of the group function of a barrier leaf: its ``symbol``, its ``source()``,
    and whether it is ``refcounted()`` (compiled with Numba's NRT, or without).

    The source defines ``def <symbol>(<leaf params>, __hpvm_ctx_parent, __hpvm_s0,
    __hpvm_s1, __hpvm_s2, __hpvm_dims)`` (after ``import numpy as __hpvm_np`` and ``import
    math as __hpvm_math`` lines). It runs every instance of the leaf within one parent
    instance, phase by phase, and returns what the last instance (flat index
    ``s0*s1*s2 - 1``) returns; with no instances it runs nothing and returns zeros / empty
    arrays of the declared output types. It compiles with ``numba.njit(nogil=True,
    cache=True, _nrt=refcounted())`` beside the back end's ``__hpvm_atomic_*`` /
    ``__hpvm_malloc`` / ``__hpvm_narrow`` / ``__hpvm_view`` helpers. Raises ``CompileError`` for barriers under divergent control,
    misplaced returns, per-instance objects that cross a barrier and leaves outside the leaf
    IR's dialect.
    """
    leaf = clone.user
    if len(param_types) != len(leaf.params):
        raise CompileError(f"leaf '{leaf.name}': group_function needs one port type per parameter")
    if ctx_levels < max(1, clone.levels):
        raise CompileError(f"leaf '{leaf.name}' reads {clone.levels} context levels, not {ctx_levels}")
    ir = clone.ir  # the lowered leaf IR (queries read the context), None outside the dialect
    if ir is None:  # (or a leaf with a variable named np: the group function names NumPy otherwise)
        try:
            ir = lower_queries(leaf_ir(leaf), "cpu").ir
        except LeafIRUnsupported as e:
            raise CompileError(
                f"leaf '{leaf.name}' ({e.where or leaf.location}) calls hpvm.barrier() and uses "
                f"{e.construct}, which the cpu back end cannot split into phases (it splits barrier "
                f"leaves on the leaf IR: docs/leafir.md){'; ' + e.hint if e.hint else ''} — rewrite it, "
                "or run with target='interp'"
            ) from e
    symbol = clone.symbol.replace("__hpvm_leaf_", "__hpvm_group_", 1)
    if symbol == clone.symbol:
        symbol = f"__hpvm_group_{clone.symbol}"
    return GroupSource(symbol, split_phases(ir, "cpu"), ctx_levels)
