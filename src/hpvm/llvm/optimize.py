"""``optimize(text, level)``: LLVM's own optimizer on LLVM IR text (llvmlite's new pass
manager at O0–O3), the step seed 004 puts between PREPARE and EXTRACT.

Why here and not in a back end: the point of LLVMPar is that the parallel program travels
through an unmodified LLVM pipeline; this is that pipeline, with nothing of hpvm's own in
it, for the module's target triple and that target's generic CPU (no host features): the
optimized text stays portable across machines of the triple, and the back end that runs it
(Numba's JIT, clang) compiles for the host's CPU. (Tried with the host's CPU, znver3: LLVM
then vectorizes a guarded 3-point stencil with masked loads, which ran 1.6× slower than
the scalar loop; benchmarks/llvmpar_inline.py.)
"""

from __future__ import annotations

from ..ir.llvmcontext import machine_for, own_context
from .errors import LLVMError
from .importer import parse_verified

LEVELS = (0, 1, 2, 3)


def optimize(text: str, level: int = 2) -> str:
    """``text`` optimized by LLVM's default pipeline at ``-O<level>`` (0–3), as text.
    ``LLVMImportError`` if the text does not parse or verify; ``LLVMError`` for a level
    outside 0–3."""
    if isinstance(level, bool) or level not in LEVELS:
        raise LLVMError(f"optimize(level={level!r}): the level is one of 0, 1, 2, 3 (as in -O2)")
    import llvmlite.binding as llvm

    with own_context() as parse:  # (the output's type names do not depend on the process: ir/llvmcontext.py)
        module = parse_verified(parse, text, "optimize(): ")
        tuning = llvm.create_pipeline_tuning_options(speed_level=level)
        builder = llvm.create_pass_builder(machine_for(module.triple), tuning)
        builder.getModulePassManager().run(module, builder)
        return str(module)


__all__ = ["LEVELS", "optimize"]
