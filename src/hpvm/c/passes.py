"""The LLVM passes between clang and the rewrite: SROA on the functions without loops, the
64-bit widening of their ``int`` index arithmetic (``widen.py``), then LLVM's ``-O1``
pipeline over the module.

Clang runs with ``-O1 -Xclang -disable-llvm-passes``: ``-O1``'s code generation (TBAA, no
``optnone``) without its passes, which run here instead, through llvmlite (LLVM 22, as
zig's clang, with clang's ``-O1`` tuning: no loop vectorization or interleaving), so that
one step can go before them. The rewrite needs what ``-O1`` gives (SSA form without allocas
around the ``__hpvm__*`` calls; a loop of ``__hpvm__bindIn`` calls unrolled into calls with
constant ports; the returns of a leaf merged). The widening needs the ``nsw`` flags C's
signed arithmetic carries, which ``-O1``'s instcombine drops from the adds it reassociates,
and SSA form, where a chain goes through the C variables (``int x = id + 1`` and then
``a[x + nx * y]``): SROA first, on the functions it widens only (SROA ahead of the pipeline
changed how ``-O1`` shaped examples/c/sgemm.c's tile loop; functions with loops go through
``-O1`` as clang ran it: sgemm.c's leaves come out the same but for one sign extension
placed elsewhere). Docs: docs/hpvm-c.md, "The innermost loop computed every index in 32
bits".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.llvmcontext import machine_for, own_context
from .errors import HPVMCError
from .widen import has_loop, widen

#: What ``optimize`` does, for the cache of its results (``clang.py``): bump it when it changes.
#: (5: parsed in a context of its own, so named struct types keep clang's names.)
VERSION = 5


def optimize(text: str, file: str) -> str:
    """Clang's unoptimized text of ``file``, as ``-O1`` would leave it but with ``int`` index
    arithmetic in 64 bits; ``HPVMCError`` if LLVM cannot read it. Each parse has a context
    of its own (why: ``llvmcontext.py``; the second would rename the first's types)."""
    import llvmlite.binding as llvm

    with own_context() as parse:
        module = _parse(parse, text, file)
        tuning = llvm.create_pipeline_tuning_options(speed_level=1)
        tuning.loop_vectorization = tuning.loop_interleaving = False  # (as clang at -O1)
        machine = machine_for(module.triple)  # (each function keeps clang's target-cpu: the passes read it)
        builder = llvm.create_pass_builder(machine, tuning)
        fpm = llvm.create_new_function_pass_manager()
        fpm.add_sroa_pass()
        for f in module.functions:
            if not f.is_declaration and not has_loop(str(f).splitlines()):
                fpm.run(f, builder)
        widened = widen(str(module))
    with own_context() as parse:
        module = _parse(parse, widened, file)
        builder.getModulePassManager().run(module, builder)
        return str(module)


def _parse(parse: Callable[[str], Any], text: str, file: str) -> Any:
    try:
        return parse(text)
    except RuntimeError as e:
        raise HPVMCError(f"{file}: LLVM cannot read clang's output: {str(e).strip()}") from None


__all__ = ["VERSION", "optimize"]
