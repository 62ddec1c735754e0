"""Errors of the LLVM front end: what is wrong with an exported program or an imported text.

Both are ``HPVMError`` subclasses; an import error names the LLVM function and the
instruction (its text) at fault, an export error the node function.
"""

from __future__ import annotations

from ..errors import HPVMError


class LLVMError(HPVMError):
    """Base of the LLVM front end's errors."""


class LLVMImportError(LLVMError):
    """LLVM IR that is not HPVM IR in the form seed 000 describes (or does not parse)."""


class LLVMExportError(LLVMError):
    """A program that cannot be written as HPVM IR in LLVM form (a leaf Numba cannot
    compile, an intrinsic without an LLVM form yet)."""


class LLVMExtractError(LLVMImportError):
    """LLVM IR whose directive regions (seed 004) do not map onto a dataflow graph: EXTRACT
    names the function and the instruction, and says what it reads instead."""


__all__ = ["LLVMError", "LLVMExportError", "LLVMExtractError", "LLVMImportError"]
