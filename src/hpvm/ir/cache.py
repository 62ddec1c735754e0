"""Where hpvm keeps what it builds for later processes: ``$HPVM_CACHE_DIR``, else
``~/.cache/hpvm``.

One place for every layer that caches on disk (the ``cpu`` back end's generated graph
code; what LLVM leaves' preparation builds from their text, under ``llvm-clone/``,
``llvm-jam/``, ``llvm-checked/``, ``llvm-bounded/``, ``llvm-printed/`` and ``llvm-object/``; HPVM-C's clang
output under ``c-ir/`` and host libraries under ``c-host/``), so one variable moves them
all; and the two ways to write into it: ``write_whole`` (a file whole or not at all) and
``stored_json`` (an answer built once from a text, for every later process).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

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


def write_whole(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes) to ``path`` whole or not at all: into a temporary file beside
    it, then renamed over it, so that a process reading the cache (or racing to write the
    same entry) never sees half a file. Raises ``OSError`` as writing does, the temporary
    file removed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # (as a plain write leaves it: mkstemp's file is private)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stored_json(
    folder: str,
    version: str,
    key: list[Any],
    text: str,
    fields: dict[str, type | tuple[type, ...]],
    build: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """``build()``'s answer, a JSON-able dict of ``fields`` (name → the type its JSON value
    has), from ``folder`` in the cache, else built and stored there.

    For what a later process would otherwise build again from the same text (an LLVM
    leaf's clone, its analyses). The file is named by everything the answer depends on:
    ``version`` (the code that builds it: ``code_digest``), ``key`` (JSON-able) and
    ``text`` (the module it is built from). A file that cannot be read or written is built
    again, never an error, and so is one of other fields or types (damaged); a build that
    raises (a leaf hpvm refuses) stores nothing, so the error is raised again, the same, by
    every process."""
    name = hashlib.sha1(json.dumps([version, *key]).encode() + text.encode()).hexdigest()
    path = cache_folder(folder) / f"{name}.json"
    try:
        found = json.loads(path.read_text())
        if (
            isinstance(found, dict)
            and set(found) == set(fields)
            and all(isinstance(found[name], kind) for name, kind in fields.items())
        ):
            used(path)
            return found
    except (OSError, ValueError):
        pass
    answer = build()
    with contextlib.suppress(OSError):  # (not stored: built again next time)
        write_whole(path, json.dumps(answer))
        prune(path.parent, "*.json")
    return answer


#: Files kept in each folder of answers (``stored_json``) or object code, the most recently
#: used: each edit of a program makes new ones, and nothing else would ever remove the old.
KEEP = 1024


def used(path: Path) -> None:
    """Mark ``path`` recently used, so that ``prune`` keeps it."""
    with contextlib.suppress(OSError):  # (another process pruned it: it is built again)
        os.utime(path)


def prune(folder: Path, pattern: str, keep: int | None = None) -> list[Path]:
    """Remove all but the ``keep`` (``KEEP``) most recently used files of ``folder``
    matching ``pattern`` (what ``used`` marks, or was written last); the files removed."""
    keep = KEEP if keep is None else keep
    found = []
    for p in folder.glob(pattern):
        try:
            found.append((p.stat().st_mtime, p))
        except OSError:  # (another process pruned it)
            continue
    removed = []
    for _, p in sorted(found, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed


#: Generated graph modules kept in the cache, the most recently used (``prune_graphs``), and
#: how many more may gather before they are pruned (so that a write seldom pays for it).
GRAPH_KEEP = 4096
GRAPH_SLACK = 256


def prune_graphs(folder: Path) -> None:
    """Once ``folder`` holds ``GRAPH_SLACK`` more than ``GRAPH_KEEP`` graph modules of the
    ``cpu`` back end (``hpvm_graph_*.py``: ``backends/cpu/compiler.py``, which marks each
    one it loads used), remove all but the ``GRAPH_KEEP`` most recently used, and Numba's
    cache of each one removed (``__pycache__/<its name>.*``).

    Why: each new graph, and each edit of a leaf, writes a module and Numba's index and
    code for its functions, and nothing removed them: 3,358 modules and 634 MB of Numba's
    cache in this machine's cache after some weeks of tests. Counting is one directory
    read per module written; the pruning (a stat of each) runs once per ``GRAPH_SLACK``."""
    try:
        with os.scandir(folder) as entries:
            count = sum(1 for e in entries if e.name.startswith("hpvm_graph_") and e.name.endswith(".py"))
    except OSError:
        return
    if count <= GRAPH_KEEP + GRAPH_SLACK:
        return
    for gone in prune(folder, "hpvm_graph_*.py", GRAPH_KEEP):
        for entry in (folder / "__pycache__").glob(f"{gone.stem}.*"):
            with contextlib.suppress(OSError):
                entry.unlink()


def code_digest(files: Iterable[Path], extra: str = "") -> str:
    """The SHA-1 of ``files``' bytes and ``extra`` (a library's version, the host CPU): the
    ``version`` of ``stored_json``, so that a change to the code that builds an answer never
    meets an answer stored by the code before it."""
    digest = hashlib.sha1(extra.encode())
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


__all__ = ["KEEP", "cache_folder", "cache_root", "code_digest", "prune", "stored_json", "used", "write_whole"]
