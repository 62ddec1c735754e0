"""The host code of an HPVM-C program as a shared library: built by zig's clang from the host
module (``hosttext.py``), cached by content, and loaded once per run.

Why a shared library, not llvmlite's JIT (what ``hostjit.py`` used until issue 20): a
program's host code is C or C++ as a compiler takes it — iostreams, ``std::vector``,
virtual functions, static objects, exceptions — and needs what a linker gives it: the C++
library (zig's clang uses libc++, ``std::__1``), its ABI library and unwinder, the
registration of unwind tables, static constructors. The JIT can call only what the Python
process has loaded (libc, not libc++), registers no unwind tables the C++ runtime would
find and runs no constructors. ``zig c++ -shared`` links libc++, libc++abi and libunwind
statically into the library; the loader registers its unwind tables; ``libc`` stays the
process's own (one ``malloc``, one ``stdout``). Measured here (2 shared cores;
docs/hpvm-c.md): the first C++ link on a machine builds zig's libc++ (158 s, once: zig
caches it), then a link takes 0.4 s (C) to 0.8 s (C++), and a program already built is
found in the cache by the hash of its host module (1–2 ms).

**Flags.** ``-O2``: the host module is clang's ``-O1`` output, optimized again and
compiled with the release build of libc++. ``--strip-debug``: a tenth of the size
(libc++'s debug information), so the cache stays small and each run's private copy is
quick. ``-Wl,-Bsymbolic``: the library's references to its own symbols (``operator new``,
the program's functions) bind inside it, never to another library the process loaded.
``-Wl,-z,defs``: a function no source defines is the link's error (naming the function and
the line that calls it), not a failed ``dlopen``. The flags are fixed: zig keys its build of
libc++ on some of them (``-O2``, ``-s``), and a new build takes minutes.

**The cache**: hpvm's (``$HPVM_CACHE_DIR``, else ``~/.cache/hpvm``: ``hpvm.ir.cache``,
where the ``cpu`` back end keeps its generated code), libraries under ``c-host/``, named
by the SHA-256 of the host module, the link command and zig's version. Written to a
temporary name and renamed, so concurrent builds are safe; the ``KEEP`` most recently
used are kept (``prune``); an unwritable cache falls back to a temporary folder for the
process.

**One instance per run.** ``dlopen`` of a path already loaded returns the loaded instance,
with its globals as the last run left them; a C program expects fresh ones. Each run loads
a private copy (copied, opened ``RTLD_LOCAL``, and unlinked at once), so two programs — or
two runs of one program — in one process never share a global, a callback or a jump
buffer; ``close`` unloads it when ``main`` has finished.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..ir import cache
from ..ir.cache import cache_folder
from . import zig
from .errors import HPVMCError

LINK_FLAGS = ("-shared", "-fPIC", "-O2", "-Wl,-Bsymbolic", "-Wl,-z,defs", "-Wl,--strip-debug")
KEEP = 256  # libraries kept in the cache, the most recently used
_FORMAT = "hpvm-c host library 1"  # changes when hosttext.py's output changes meaning


def cache_dir() -> Path:
    """Where built host libraries are kept (see the module docstring), created."""
    return cache_folder("c-host")


def library_key(text: str, cxx: bool) -> str:
    """The cache name of the library of ``text``."""
    h = hashlib.sha256()
    for part in (_FORMAT, zig.zig_version(), "c++" if cxx else "cc", *LINK_FLAGS, text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def build(text: str, cxx: bool, label: str) -> Path:
    """The shared library of the host module ``text``, from the cache or linked now.
    ``cxx``: link the C++ library (a C program's library does without it). ``label``
    names the program in errors."""
    folder = cache_dir()
    target = folder / f"{library_key(text, cxx)}.so"
    if target.is_file():
        cache.used(target)  # (recently used: kept by prune)
        return target
    with tempfile.TemporaryDirectory(prefix="hpvm-c-link-", dir=folder) as tmp:
        out = link(text, cxx, label, Path(tmp))
        os.replace(out, target)
    prune(folder)
    return target


def link(text: str, cxx: bool, label: str, folder: Path) -> Path:
    """Link the host module ``text`` into ``folder``/host.so with zig, bypassing the cache.
    The first C++ link of a zig installation builds its libc++ (kept in that installation's
    zig cache, ``zig.py``, so a fresh environment pays it once): the toolchain warm-up calls this
    directly so that ``make install``, not a user's first program, pays it."""
    source = folder / "host.ll"
    source.write_text(text)
    out = folder / "host.so"
    cmd = zig.command("c++" if cxx else "cc", [*LINK_FLAGS, str(source), "-o", str(out)])
    done = subprocess.run(cmd, capture_output=True, text=True, env=zig.environment())
    if done.returncode != 0 or not out.is_file():
        raise link_error(done.stderr, label)
    return out


def prune(folder: Path, keep: int = KEEP) -> None:
    """Remove all but the ``keep`` most recently used libraries (tests and edits make a new
    one for every version of a program)."""
    cache.prune(folder, "*.so", keep)


_UNDEFINED = re.compile(r"undefined symbol: (.+)")
_REFERENCED = re.compile(r">>> referenced by ([^\s(]+:\d+)")


def link_error(stderr: str, label: str) -> HPVMCError:
    """The linker's complaint as an ``HPVMCError``: a function no source defines is named
    with the line that calls it."""
    lines = stderr.splitlines()
    for k, line in enumerate(lines):
        m = _UNDEFINED.search(line)
        if m is None:
            continue
        where = next((r.group(1) for r in map(_REFERENCED.search, lines[k + 1 : k + 4]) if r), label)
        return HPVMCError(
            f"{where}: the host code calls {m.group(1)}, which no source file of the program "
            f"({label}) defines; add the file that defines it (hpvm c run main.cc io.cc ...), or "
            "define it"
        )
    message = "\n".join(ln for ln in lines if "argument unused during compilation" not in ln).strip()
    return HPVMCError(f"{label}: the host code could not be linked into a library:\n{message}")


class LoadedLibrary:
    """One private instance of a host library (see the module docstring)."""

    def __init__(self, path: Path):
        fd, copy = tempfile.mkstemp(prefix="hpvm-host-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                shutil.copyfileobj(src, out)
            self.lib: Any = ctypes.CDLL(copy, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as e:
            raise HPVMCError(f"{path}: the host library cannot be loaded: {e}") from None
        finally:
            os.unlink(copy)
        self.closed = False

    def address(self, name: str) -> int:
        """The address of the symbol ``name`` (0 if the library does not define it)."""
        try:
            return int(ctypes.cast(self.lib[name], ctypes.c_void_p).value or 0)
        except AttributeError:
            return 0

    def variable(self, ctype: Any, name: str) -> Any:
        """The library's global ``name`` as a ctypes object of ``ctype`` (shares its memory)."""
        return ctype.in_dll(self.lib, name)

    def close(self) -> None:
        """Unload it (its static destructors have run in ``finish``; see hosttext.py)."""
        if not self.closed:
            import _ctypes

            self.closed = True
            _ctypes.dlclose(self.lib._handle)


__all__ = ["LoadedLibrary", "build", "cache_dir", "library_key", "link", "link_error", "prune"]
