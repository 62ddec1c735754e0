"""The LLVM front end: HPVM IR in LLVM form (seed 000's implementation section).

``to_hpvm_ir(root)`` writes a program as LLVM IR text — one function per node function,
``llvm.hpvm.*`` intrinsic calls, struct returns, ``(ptr, i64)`` memory objects — and
``from_hpvm_ir(text)`` builds the dataflow graph back from such text, whoever wrote it,
keeping leaves as LLVM functions (``LLVMBody``). docs/llvm.md describes the ABI.
``optimize(text, level)`` runs LLVM's own pipeline on such text (HPVM IR survives it).
``prepare(root)`` / ``extract(text)`` are seed 004's LLVMPar translators: the program as
ordinary LLVM IR with directive regions, and back (docs/llvm.md, "PREPARE and EXTRACT").
``upgrade(text)`` reads HPVM's own LLVM 9–16 text as LLVM 22 text (``from_hpvm_ir`` calls it).
"""

from __future__ import annotations

from .errors import GraphCallError, LLVMError, LLVMExportError, LLVMExtractError, LLVMImportError
from .export import to_hpvm_ir
from .importer import from_hpvm_ir
from .llvmpar import extract, prepare
from .optimize import optimize
from .upgrade import upgrade

__all__ = [
    "GraphCallError",
    "LLVMError",
    "LLVMExportError",
    "LLVMExtractError",
    "LLVMImportError",
    "extract",
    "from_hpvm_ir",
    "optimize",
    "prepare",
    "to_hpvm_ir",
    "upgrade",
]
