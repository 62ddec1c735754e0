"""The LLVM front end: HPVM IR in LLVM form (seed 000's implementation section).

``to_hpvm_ir(root)`` writes a program as LLVM IR text — one function per node function,
``llvm.hpvm.*`` intrinsic calls, struct returns, ``(ptr, i64)`` memory objects — and
``from_hpvm_ir(text)`` builds the dataflow graph back from such text, whoever wrote it,
keeping leaves as LLVM functions (``LLVMBody``). docs/llvm.md describes the ABI.
``optimize(text, level)`` runs LLVM's own pipeline on such text (HPVM IR survives it).
``prepare`` / ``extract`` (seed 004's LLVMPar) are not built yet: they raise
``LLVMNotBuiltError``.
"""

from __future__ import annotations

from .errors import LLVMError, LLVMExportError, LLVMImportError, LLVMNotBuiltError
from .export import to_hpvm_ir
from .importer import from_hpvm_ir
from .llvmpar import extract, prepare
from .optimize import optimize

__all__ = [
    "LLVMError",
    "LLVMExportError",
    "LLVMImportError",
    "LLVMNotBuiltError",
    "extract",
    "from_hpvm_ir",
    "optimize",
    "prepare",
    "to_hpvm_ir",
]
