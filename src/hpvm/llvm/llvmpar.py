"""Seed 004's LLVMPar directives: ``prepare`` (a program as ordinary LLVM IR whose parallel
regions are marked by ``llvm.directive.region.entry/exit`` calls with operand bundles) and
``extract`` (such IR back to a dataflow graph).

Not built yet. The names are DESIGN.md's fixed API, so they exist, and each says plainly
that it is not available (an ``LLVMNotBuiltError``) instead of failing as an unknown
attribute; docs/llvm.md ("Not yet") says what they will do. ``optimize`` — LLVM's own
pipeline, which works on any LLVM IR today — is in ``optimize.py``.
"""

from __future__ import annotations

from typing import Any

from .errors import LLVMNotBuiltError

_DOCS = "docs/llvm.md, 'Not yet'"


def prepare(root: Any) -> str:
    """Seed 004's PREPARE: not built yet (``LLVMNotBuiltError``)."""
    raise LLVMNotBuiltError(
        "llvm.prepare(): PREPARE (seed 004's directive regions with operand bundles) is not built "
        f"yet; llvm.to_hpvm_ir(root) writes the program as HPVM IR in LLVM form, and "
        f"llvm.optimize(text) runs LLVM's pipeline on it ({_DOCS})"
    )


def extract(text: str) -> Any:
    """Seed 004's EXTRACT: not built yet (``LLVMNotBuiltError``)."""
    raise LLVMNotBuiltError(
        "llvm.extract(): EXTRACT (directive regions back to a dataflow graph) is not built yet; "
        f"llvm.from_hpvm_ir(text) reads HPVM IR in LLVM form, optimized or not ({_DOCS})"
    )


__all__ = ["extract", "prepare"]
