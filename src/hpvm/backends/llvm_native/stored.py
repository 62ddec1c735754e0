"""The version under which LLVM leaves' preparation keeps what it builds in hpvm's cache.

Why. Each process that launches a graph of LLVM leaves (every HPVM-C program: each ``hpvm c
run`` is a new process) rebuilt the same modules from the same text before Numba's own cache
could serve the graph code: a leaf's clone (``native._clone``: parse, dead-code pass, the
barrier leaves' work-item loops optimized at -O3), its jammed form (``wijam.py``) and the
group runners' machine code (``jit.py``). For ``examples/c/sgemm.c`` that was 0.6 s of a
2.1 s warm run. Each is now kept (``ir.cache.stored_json``; ``jit.py``: LLVM's object cache)
under ``code_version``.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ...ir.cache import code_digest


@functools.cache
def code_version() -> str:
    """This package's LLVM-leaf code, llvmlite's version and the host CPU (modules are
    optimized for it: ``native.target_machine``), hashed: a change to any never meets an
    answer stored under another (a cache folder shared between machines included)."""
    import llvmlite
    import llvmlite.binding as llvm

    return code_digest(
        sorted(Path(__file__).parent.glob("*.py")),
        f"{llvmlite.__version__}\n{llvm.get_host_cpu_name()}\n{llvm.get_host_cpu_features().flatten()}",
    )


__all__ = ["code_version"]
