"""Seed 004's LLVMPar translators, DESIGN.md's fixed names: ``prepare(root)`` writes a
program as ordinary LLVM IR whose node functions are inlined into regions marked by
``llvm.directive.region.entry`` / ``exit`` calls with operand bundles (``prepare.py``), and
``extract(text)`` reads such IR back to a dataflow graph, after LLVM's optimizer too
(``extract.py``). ``optimize`` — LLVM's own pipeline between the two — is ``optimize.py``.
docs/llvm.md ("PREPARE and EXTRACT") describes the form and what it guarantees.
"""

from __future__ import annotations

from .extract import extract
from .prepare import prepare

__all__ = ["extract", "prepare"]
