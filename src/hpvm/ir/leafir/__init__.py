"""The typed leaf IR (issue 25, first slice): a leaf's body parsed once into a small typed
dialect (``ops``), built from Python (``build``), printed and parsed in a text form
(``printer``, ``parser``) and verified (``verify``). docs/leafir.md says what it covers and
what is not done yet (no back end reads it today)."""

from __future__ import annotations

from .build import build, leaf_ir
from .ops import LeafIR, LeafIRUnsupported

__all__ = ["LeafIR", "LeafIRUnsupported", "build", "leaf_ir"]
