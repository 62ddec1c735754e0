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


class LLVMNotBuiltError(LLVMError):
    """A function of DESIGN.md's LLVM API that is not built yet (``prepare``, ``extract``)."""


__all__ = ["LLVMError", "LLVMExportError", "LLVMImportError", "LLVMNotBuiltError"]
