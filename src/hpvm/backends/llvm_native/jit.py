"""An LLVM leaf's clone JIT-compiled on its own (llvmlite's MCJIT) and called through ctypes.

What ``interp`` runs LLVM leaves with, instance by instance: ctypes releases the GIL for the
call. The ``cpu`` back end links the same module into its Numba code instead (``numba_call.py``),
where LLVM inlines it into the loop over instances — all but the work-item group runners,
which it compiles here once and calls by name (``numba_call._register_group``, and their
copies for constant extents, ``wispecial.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import threading
from pathlib import Path
from typing import Any

from ...ir.cache import cache_folder, prune, used, write_whole
from .host import register_host_symbols
from .instrument import RECORDER, register_recorder
from .native import NativeLeaf, optimize_module, target_machine
from .stored import code_version

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
        self.engine = _engine(native.text)
        self.native = native
        self.call = CALL(self.engine.get_function_address(native.call_symbol))
        # The group runner exists for leaves that reach a barrier.
        self.group = (
            GROUP(self.engine.get_function_address(native.group_symbol)) if native.uses_barrier else None
        )


def _engine(text: str) -> Any:
    """An MCJIT engine holding ``text`` optimized (O2) and compiled for this host.

    The machine code is kept in hpvm's cache (``llvm-object/``, named by ``text`` and
    ``stored.code_version``): a later process loads it instead of optimizing and compiling
    again (LLVM's object cache, as Numba's own cache does; the host symbols are resolved
    when it is loaded) — 0.25 s of ``examples/c/sgemm.c``'s warm run was its group runner."""
    import llvmlite.binding as llvm

    register_host_symbols()
    if RECORDER in text:
        register_recorder()
    module = llvm.parse_assembly(text)
    module.verify()
    path = _object_path(text)
    stored = _read_object(path)
    if stored is None:
        optimize_module(module, 2)
    engine = llvm.create_mcjit_compiler(module, target_machine())

    def compiled(_: Any, code: bytes) -> None:
        if stored is None:
            with contextlib.suppress(OSError):  # (not stored: compiled again next time)
                write_whole(path, hashlib.sha1(code).digest() + code)
                prune(path.parent, "*.o")

    engine.set_object_cache(compiled, lambda _: stored)
    engine.finalize_object()
    return engine


def _object_path(text: str) -> Path:
    name = hashlib.sha1(f"{code_version()}\n{text}".encode()).hexdigest()
    return cache_folder("llvm-object") / f"{name}.o"


def _read_object(path: Path) -> bytes | None:
    """The stored machine code, or ``None``: not stored, unreadable, or not the bytes that
    were written (each file starts with the SHA-1 of the code after it: MCJIT would load a
    damaged object file as it is, and crash the process running it)."""
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    digest, code = stored[:20], stored[20:]
    if not code or hashlib.sha1(code).digest() != digest:
        return None
    used(path)
    return code


_ENGINES: list[Any] = []  # (kept alive: their code is called by address)


def jit_symbol(text: str, symbol: str) -> int:
    """The address of ``symbol`` in ``text`` compiled on its own (its engine kept alive);
    the caller compiles each text once (``wispecial.py``)."""
    engine = _engine(text)
    with _LOCK:
        _ENGINES.append(engine)
    return int(engine.get_function_address(symbol))


_JITTED: dict[str, JitLeaf] = {}
_LOCK = threading.Lock()


def jit_leaf(native: NativeLeaf) -> JitLeaf:
    """The JIT-compiled clone, once per clone (by digest)."""
    with _LOCK:
        found = _JITTED.get(native.digest)
        if found is None:
            found = _JITTED[native.digest] = JitLeaf(native)
        return found
