"""Kept for the modules that import it here: ``recompile`` lives in ``ir/recompile.py``
(below the back ends, beside the syntax-tree lowering whose result it compiles)."""

from ...ir.recompile import recompile

__all__ = ["recompile"]
