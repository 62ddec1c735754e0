"""An LLVM leaf's clone JIT-compiled on its own (llvmlite's MCJIT) and called through ctypes.

What ``interp`` runs LLVM leaves with, instance by instance: ctypes releases the GIL for the
call. The ``cpu`` back end does not use this: it links the same module into its Numba code
(``numba_call.py``), where LLVM inlines it into the loop over instances.
"""

from __future__ import annotations

import ctypes
import threading

from .host import register_host_symbols
from .instrument import RECORDER, register_recorder
from .native import NativeLeaf, optimize_module, target_machine

CALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
GROUP = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_void_p,
)


class JitLeaf:
    """The clone's trampoline and group runner as ctypes functions (the engine kept alive)."""

    def __init__(self, native: NativeLeaf):
        import llvmlite.binding as llvm

        register_host_symbols()
        if RECORDER in native.text:
            register_recorder()
        module = llvm.parse_assembly(native.text)
        module.verify()
        optimize_module(module, 2)
        self.engine = llvm.create_mcjit_compiler(module, target_machine())
        self.engine.finalize_object()
        self.native = native
        self.call = CALL(self.engine.get_function_address(native.call_symbol))
        # The group runner exists for leaves that reach a barrier.
        self.group = (
            GROUP(self.engine.get_function_address(native.group_symbol)) if native.uses_barrier else None
        )


_JITTED: dict[str, JitLeaf] = {}
_LOCK = threading.Lock()


def jit_leaf(native: NativeLeaf) -> JitLeaf:
    """The JIT-compiled clone, once per clone (by digest)."""
    with _LOCK:
        found = _JITTED.get(native.digest)
        if found is None:
            found = _JITTED[native.digest] = JitLeaf(native)
        return found
