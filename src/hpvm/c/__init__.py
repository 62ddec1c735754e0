"""HPVM-C: HPVM's own C (and C++) programs, compiled and run unchanged (docs/hpvm-c.md).

``c.compile(path)`` runs clang (the ``ziglang`` package) on the program with ``hpvm.h``
(``c.include_dir()``), rewrites its ``__hpvm__*`` calls as HPVM's GenHPVM pass does and
imports the graphs with ``hpvm.llvm``; ``CProgram.run(argv, target)`` JIT-compiles ``main``
and answers its host calls with hpvm's runtime. Mistakes are ``c.HPVMCError`` at the C line.
"""

from __future__ import annotations

from .clang import include_dir, unavailable_reason
from .errors import HPVMCError
from .program import CProgram, compile

__all__ = ["CProgram", "HPVMCError", "compile", "include_dir", "unavailable_reason"]
