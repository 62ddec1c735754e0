"""HPVM-C: HPVM's own C (and C++) programs, compiled and run unchanged (docs/hpvm-c.md).

``c.compile(path)`` runs clang (the ``ziglang`` package) on the program with ``hpvm.h``
(``c.include_dir()``), rewrites its ``__hpvm__*`` calls as HPVM's GenHPVM pass does and
imports the graphs with ``hpvm.llvm``; ``CProgram.run(argv, target)`` builds the host code
into a shared library, runs ``main`` and answers its host calls with hpvm's runtime.
Mistakes are ``c.HPVMCError`` at the C line (``c.CMemoryTrackingError``, also a
``MemoryTrackingError``, for memory passed to a launch without ``llvm_hpvm_track_mem``).
"""

from __future__ import annotations

from .clang import include_dir, unavailable_reason
from .errors import CMemoryTrackingError, HPVMCError
from .program import CProgram, compile

__all__ = ["CMemoryTrackingError", "CProgram", "HPVMCError", "compile", "include_dir", "unavailable_reason"]
