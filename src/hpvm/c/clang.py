"""Clang, as the ``ziglang`` package ships it: C or C++ source to LLVM IR text; and the one
way an LLVM text source (``.ll``) is read.

HPVM's tool chain starts with clang too (``-emit-llvm``); we use zig's bundled clang so no
system compiler is needed. ``-O1 -Xclang -disable-llvm-passes``: ``-O1``'s code
generation without its passes, which ``passes.py`` runs (SSA form without allocas around the
``__hpvm__*`` calls, as the rewrite reads it, with ``int`` index arithmetic widened to 64
bits before instcombine can drop its ``nsw`` flags); ``-g`` the line of every call for error
messages, and
``-fno-discard-value-names`` keeps the C names of parameters and node handles, which become
port and node names. Each source goes to clang by its absolute path, and its debug
information names every file by its absolute path (``absolute_files``) whatever folder hpvm
runs in, so the module text — and all that is compiled and kept from it — is the same from
any working folder. Zig defines ``NDEBUG`` at ``-O1`` and above; ``-UNDEBUG`` keeps the
program's ``assert``s on.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..ir.cache import cache_folder, locked_folder
from ..ir.llvmcontext import own_context
from . import passes, zig
from .errors import HPVMCError

INCLUDE_DIR = Path(__file__).parent / "include"
C_SUFFIXES = frozenset({".c"})
CXX_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".C", ".c++"})
LL_SUFFIXES = frozenset({".ll"})
BASE_FLAGS = (
    "-S",
    "-emit-llvm",
    "-O1",
    "-Xclang",
    "-disable-llvm-passes",
    "-g",
    "-fno-discard-value-names",
    "-UNDEBUG",
)


def include_dir() -> str:
    """The folder holding ``hpvm.h`` (pass it as ``-I``; ``compile`` always does)."""
    return str(INCLUDE_DIR)


def unavailable_reason() -> str | None:
    """Why clang cannot run here (the ``ziglang`` package is missing), or ``None``."""
    if importlib.util.find_spec("ziglang") is None:
        return "the ziglang package is not installed (pip install 'hpvm[c]')"
    return None


def is_cxx(path: Path) -> bool:
    """Whether ``path`` is C++ source (by its suffix, as compilers decide)."""
    return path.suffix in CXX_SUFFIXES


def check_source(path: Path) -> None:
    """``HPVMCError`` unless ``path`` is an existing C, C++ or LLVM text file."""
    if path.suffix not in C_SUFFIXES | CXX_SUFFIXES | LL_SUFFIXES:
        raise HPVMCError(
            f"{path}: not a source file hpvm compiles: give C (.c), C++ (.cc, .cpp, .cxx) or "
            "LLVM text (.ll) files"
        )
    if not path.is_file():
        raise HPVMCError(f"{path}: no such file; give the path of a C, C++ or LLVM text source file")


def to_llvm(
    path: Path, defines: Sequence[str] = (), include_dirs: Sequence[str] = (), flags: Sequence[str] = ()
) -> str:
    """The LLVM IR text clang makes of ``path``; ``HPVMCError`` with clang's messages if it
    fails. ``defines``: ``NAME`` or ``NAME=VALUE``."""
    check_source(path)
    reason = unavailable_reason()
    if reason is not None:
        raise HPVMCError(f"{path}: cannot compile HPVM-C here: {reason}")
    driver = "c++" if is_cxx(path) else "cc"
    cmd = zig.command(driver, [*BASE_FLAGS, f"-I{INCLUDE_DIR}"])
    cmd += [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines] + list(flags)
    cmd.append(os.path.abspath(path))  # (its name in the module: ``source_filename``)
    with _output(cmd) as out:
        done = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True, env=zig.environment())
        if done.returncode != 0 or not out.is_file():
            messages = "\n".join(
                line for line in done.stderr.splitlines() if "argument unused during compilation" not in line
            )
            raise HPVMCError(f"{path}: clang could not compile it:\n{messages.strip()}")
        text = absolute_files(out.read_text())
        out.unlink()  # (zig keeps its own copy, and writes it here again on a hit)
        return _optimized(out.parent, text, str(path))


_DIFILE = re.compile(r'(!DIFile\(filename: ")([^"]*)(", directory: ")([^"]*)(")')


def absolute_files(text: str) -> str:
    """``text`` with every ``DIFile`` named by its absolute path (and no directory): clang
    names a file relative to the folder it ran in when it lies below it (the program's
    sources and headers, zig's libc++ headers under a virtual environment there), so the
    same program compiled from two folders made two modules — and everything hpvm compiles
    and keeps from a module was made again (``examples/c/sgemm.c`` run from another folder:
    4.8 s instead of 1.6 s). Messages name C files by these paths."""

    def absolute(m: re.Match[str]) -> str:
        name, folder = m.group(2), m.group(4) or os.getcwd()
        full = name if os.path.isabs(name) else os.path.normpath(os.path.join(folder, name))
        return f"{m.group(1)}{full}{m.group(3)}{m.group(5)}"

    return _DIFILE.sub(absolute, text)


def _optimized(folder: Path, text: str, file: str) -> str:
    """``passes.optimize(text)``, kept in ``folder`` (clang's, under its lock) by the hash of
    ``text`` (and the versions of the passes and of llvmlite): an unchanged file costs a
    read, not llvmlite's parsing and passes (0.1-0.3 s for an example)."""
    import llvmlite

    key = hashlib.sha256(f"{passes.VERSION}\0{llvmlite.__version__}\0{text}".encode()).hexdigest()
    kept, stamp = folder / "passes.ll", folder / "passes.key"
    if stamp.is_file() and stamp.read_text() == key and kept.is_file():
        return kept.read_text()
    done = passes.optimize(text, file)
    stamp.unlink(missing_ok=True)
    kept.write_text(done)
    stamp.write_text(key)
    return done


@contextmanager
def _output(cmd: list[str]) -> Iterator[Path]:
    """Where clang writes the text of ``cmd``: one path per command (and folder it runs in),
    held under a lock (``cache.locked_folder``: pruned to the most recently used). Zig
    caches each compilation keyed by its whole command line, the output path included: a
    fresh temporary path would never be found again, a stable one is (zig checks the source
    and every header it read), so an unchanged file compiles in a fraction of a second."""
    key = hashlib.sha256("\0".join([os.getcwd(), *cmd]).encode()).hexdigest()[:32]
    with locked_folder(cache_folder("c-ir"), key) as folder:
        out = folder / "out.ll"
        out.unlink(missing_ok=True)  # (a failed compile must not leave the last one's text)
        yield out


def ll_to_llvm(path: Path) -> str:
    """An ``.ll`` file — clang's output for an HPVM-C program, of any LLVM from 9 on (HPVM's
    release is built on LLVM 9) — as the LLVM 22 text clang gives GenHPVM here: upgraded
    (``hpvm.llvm.upgrade``) and printed by llvmlite, so that old forms GenHPVM's line reader
    does not expect (``llvm.dbg.value`` calls, pointer bitcasts) are in LLVM 22's spelling.
    Every ``.ll`` source comes in through here."""
    from ..llvm import LLVMImportError, upgrade

    check_source(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise HPVMCError(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise HPVMCError(f"{path}: cannot read it as LLVM text (bitcode is not read here): {e}") from None
    try:
        upgraded = upgrade(text, str(path))
    except LLVMImportError as e:
        raise HPVMCError(str(e)) from None
    if upgraded is text:
        return text
    with own_context() as parse:  # (types keep their names: llvmcontext.py)
        return str(parse(upgraded))


__all__ = ["check_source", "include_dir", "is_cxx", "ll_to_llvm", "to_llvm", "unavailable_reason"]
