"""The GPU back ends' barrier-placement check (``check_uniform_barriers``).

A barrier synchronizes the instances of a leaf within one parent instance, so every one of
them must reach the same barriers; on a GPU anything else is undefined behaviour (a hang or
wrong results). The check reads the leaf IR (``ir/leafir/barrier_check.py``, with the IR's
``Uniformity`` analysis). A barrier leaf outside the IR's dialect is refused, naming the
construct, as the ``cpu`` back end refuses to split it: the check is written once, on the
IR (it had a second, syntax-tree version for such leaves until 2026-11-28, which no leaf
of the suite or the examples needed). It lives with the passes, below the back ends,
because back-end packages may not import each other.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir.leafir import leaf_ir
from ..ir.leafir.barrier_check import divergence_message, divergent_barrier
from ..ir.leafir.ops import LeafIRUnsupported
from .clone_leaves import LeafClone


def check_uniform_barriers(clone: LeafClone, backend: str) -> None:
    """Raise ``CompileError`` naming the barrier and the condition when ``clone``'s leaf has a
    barrier some instances of one parent instance may not reach, or when the leaf is outside
    the leaf IR's dialect (naming the construct)."""
    leaf = clone.user
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported as e:
        raise CompileError(
            f"leaf '{leaf.name}' ({e.where or leaf.location}) calls hpvm.barrier() and uses "
            f"{e.construct}, which the {backend} back end cannot check: it proves barriers "
            f"uniform on the leaf IR (docs/leafir.md){'; ' + e.hint if e.hint else ''} — rewrite "
            "it, or run with target='interp'"
        ) from e
    found = divergent_barrier(ir)
    if found is not None:
        middle = (
            "Every instance of one parent instance must reach the same barriers (on a GPU anything "
            f"else is undefined behaviour: a hang or wrong results), so the {backend} back end needs "
            "barriers under uniform conditions only (parameters, instance counts, parent ids, constants)"
        )
        raise CompileError(
            divergence_message(ir, found, middle)
            + ", or run with target='interp', which reports what the instances did"
        )


__all__ = ["check_uniform_barriers"]
