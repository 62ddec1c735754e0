"""The error of the HPVM-C front end: a C program that does not compile, or misuses HPVM-C.

One class, ``HPVMCError`` (an ``HPVMError``): its message starts with ``file:line`` of the C
source (from clang's debug locations) when the mistake has a place in it, says what is
wrong and how to fix it.
"""

from __future__ import annotations

from ..errors import HPVMError, MemoryTrackingError


class HPVMCError(HPVMError):
    """An HPVM-C program that clang rejects, that misuses the HPVM-C API, or that fails while
    its host code runs (a host call the runtime refused)."""


class CMemoryTrackingError(HPVMCError, MemoryTrackingError):
    """A C program passed memory it did not track (``llvm_hpvm_track_mem``): a
    ``MemoryTrackingError``, as the Python API's is, said in C's terms."""


__all__ = ["CMemoryTrackingError", "HPVMCError"]
