"""Where hpvm keeps what it builds for later processes: ``$HPVM_CACHE_DIR``, else
``~/.cache/hpvm``.

One place for every layer that caches on disk (the ``cpu`` back end's generated graph
code and its jammed LLVM leaves under ``llvm-jam/``; HPVM-C's clang output under ``c-ir/``
and host libraries under ``c-host/``), so one
variable moves them all.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

_LOCK = threading.Lock()
_fallback: Path | None = None


def cache_root() -> Path:
    """hpvm's cache folder (not created here)."""
    return Path(os.environ.get("HPVM_CACHE_DIR") or Path.home() / ".cache" / "hpvm")


def cache_folder(name: str) -> Path:
    """The folder ``name`` in the cache, created; when the cache cannot be written (a
    read-only home), a temporary folder of this process instead (nothing is reused then, so
    it is removed when the process ends: it would otherwise be left in the temporary
    directory by every such process)."""
    global _fallback
    folder = cache_root() / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
        return folder
    except OSError:
        with _LOCK:
            if _fallback is None:
                _fallback = Path(tempfile.mkdtemp(prefix="hpvm-cache-"))
                atexit.register(shutil.rmtree, _fallback, True)
        folder = _fallback / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a temporary file beside it, then
    renamed over it, so that a process reading the cache (or racing to write the same
    entry) never sees half a file. Raises ``OSError`` as writing does, the temporary file
    removed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # (as a plain write leaves it: mkstemp's file is private)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["cache_folder", "cache_root", "write_whole"]
