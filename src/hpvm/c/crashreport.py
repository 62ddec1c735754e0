"""Which function a crashing C program was in: ``runtime/crash_report.c``, built once.

A segmentation fault in a C program's host code or leaves kills the Python process that
runs it (as it would kill the C program). Before it dies, the handler of
``crash_report.c`` prints ``hpvm: prog.c: segmentation fault in function f (at ...)`` on
stderr, then hands the signal on (to Python's ``faulthandler`` when it is enabled, else to
the default action). The library is built by zig's clang into hpvm's cache the first time
a program runs, loaded once per process and never unloaded (a handler must outlive every
program that installed it); ``reporting(label)`` installs the handler while a ``main`` runs.
Where it cannot be built (no ``ziglang``: then no program runs either), nothing is
reported and nothing else changes.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..ir.cache import cache_folder
from . import zig

SOURCE = Path(__file__).parent / "runtime" / "crash_report.c"
_LOCK = threading.Lock()
_LIBRARY: list[Any] = []  # the loaded library, once (or None when it cannot be built)


def _library() -> Any:
    with _LOCK:
        if not _LIBRARY:
            _LIBRARY.append(_load())
        return _LIBRARY[0]


def _load() -> Any:
    text = SOURCE.read_bytes()
    target = cache_folder("c-crash") / f"crash-{hashlib.sha256(text).hexdigest()[:16]}.so"
    if not target.is_file():
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            out = Path(tmp) / "crash.so"
            cmd = zig.command("cc", ["-shared", "-fPIC", "-O2", str(SOURCE), "-o", str(out)])
            done = subprocess.run(cmd, capture_output=True, text=True, env=zig.environment())
            if done.returncode != 0 or not out.is_file():
                return None
            os.replace(out, target)
    try:
        lib = ctypes.CDLL(str(target))
    except OSError:
        return None
    lib.hpvm_crash_report_install.argtypes = [ctypes.c_char_p]
    lib.hpvm_crash_report_install.restype = ctypes.c_int
    lib.hpvm_crash_report_remove.argtypes = []
    lib.hpvm_crash_report_remove.restype = None
    return lib


@contextmanager
def reporting(label: str) -> Iterator[None]:
    """A fatal signal while the block runs (a program's ``main``) is reported naming the
    function it hit and ``label`` (the program's files), then handed on."""
    lib = _library()
    if lib is None:
        yield
        return
    lib.hpvm_crash_report_install(label.encode(errors="replace"))
    try:
        yield
    finally:
        lib.hpvm_crash_report_remove()


__all__ = ["reporting"]
