"""The typed leaf IR (issue 25): a leaf's body parsed once into a small typed
dialect (``ops``), built from Python (``build``), printed and parsed in a text form
(``printer``, ``parser``) and verified (``verify``); its analyses are cached passes
(``analyses/``), and it is emitted back as Python (``pyemit``) after a rewrite (``rewrite``).
docs/leafir.md says what it covers, which back ends read it, and what is not done yet."""

from __future__ import annotations

from .build import build, leaf_ir
from .ops import LeafIR, LeafIRUnsupported

__all__ = ["LeafIR", "LeafIRUnsupported", "build", "leaf_ir"]
