"""Generated code compiled without LLVM's load PRE across loop iterations.

Why. The stencil's compiled step (7 points, 32x128x128 ``f32``) ran 1.12-1.31x the
hand-written Numba step on one thread, though its loop nest is the same: the common case's
chunk function has ``noalias`` arrays (``restrict.py``), so LLVM's GVN knew that the store to
``dst`` cannot change ``src`` and carried the load of ``src[k, j, i]`` into the next
iteration as its ``src[k, j, i - 1]`` (load PRE in loops). The loop vectorizer then met a
first-order recurrence: each vector of ``src[i - 1]`` became a two-register permute of the
last and the current vector (``vpermt2ps``), and LLVM vectorizes no epilogue of a loop with a
recurrence, so the last 14 of each row's 126 points ran scalar, where Numba's loop (its
indices from ``range(1, n - 1)``, not ids + 1: GVN paired no loads there) ran them 4 wide.
A chunk function without ``noalias`` did not get the recurrence either (its loads could
alias its store). Compiled without load PRE in loops, the
same chunk function measured 0.92-1.02x the Numba step (one thread, interleaved), the
aliased version 0.93-1.01x either way: a load saved per point is worth less than the
vector code it costs.

What. Every dispatcher of generated graph code (graph functions and chunk functions,
``compiler._jit_generated``) compiles with LLVM's ``enable-load-in-loop-pre`` off: both the
chunk function's own optimization and its graph function's, where the chunk is inlined and
optimized again, would form the recurrence.

How. LLVM reads the option (a process-wide ``cl::opt``) when GVN runs, and Numba has no
per-function switch for it, so it is set off for the length of the compile and back on
(LLVM's default) after. Numba compiles under its global compiler lock, held around a
dispatcher's whole compile (``Dispatcher.compile``), so no other Numba compile runs meanwhile
— a user's ``@njit`` function is compiled without the option only when generated code calls
it and compiles it inside. The option changes how fast code runs, never what it computes.
"""

from __future__ import annotations

from typing import Any

#: LLVM's option: GVN's partial-redundancy elimination of loads around loop back edges.
OPTION = "enable-load-in-loop-pre"

_depth = 0  # nested compiles under the compiler lock (a graph function compiles its chunks)


def _set(enabled: bool) -> None:
    import llvmlite.binding as llvm

    llvm.set_option("hpvm", f"-{OPTION}={int(enabled)}")


def without_loop_load_pre(dispatcher: Any) -> Any:
    """``dispatcher``, whose compiles run with LLVM's load PRE in loops off (the outermost
    of nested compiles turns it off and back on)."""
    compiler = dispatcher._compiler
    compile_ = compiler.compile

    def compile(args: Any, return_type: Any) -> Any:
        global _depth
        if _depth == 0:
            _set(False)
        _depth += 1
        try:
            return compile_(args, return_type)
        finally:
            _depth -= 1
            if _depth == 0:
                _set(True)

    compiler.compile = compile
    return dispatcher
