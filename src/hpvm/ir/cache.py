"""Where hpvm keeps what it builds for later processes: ``$HPVM_CACHE_DIR``, else
``~/.cache/hpvm``.

One place for every layer that caches on disk (the ``cpu`` back end's generated graph
code; what LLVM leaves' preparation builds from their text, under ``llvm-clone/``,
``llvm-jam/``, ``llvm-checked/``, ``llvm-bounded/``, ``llvm-printed/`` and ``llvm-object/``; HPVM-C's clang
output under ``c-ir/`` and host libraries under ``c-host/``), so one variable moves them
all; and the ways to write into it: ``write_whole`` (a file whole or not at all),
``stored_json`` (an answer built once from a text, for every later process) and
``locked_folder`` (a folder one process at a time works in). Each kind is pruned to its
most recently used entries (``prune``, ``prune_graphs``, ``locked_folder``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
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


def prune(
    folder: Path, pattern: str, keep: int | None = None, remove: Callable[[Path], None] = Path.unlink
) -> list[Path]:
    """Remove all but the ``keep`` (``KEEP``) most recently used files of ``folder``
    matching ``pattern`` (what ``used`` marks, or was written last); the files removed.
    ``remove`` removes one (``OSError``: it is kept)."""
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
            remove(p)
            removed.append(p)
    return removed


def _more_than(folder: Path, limit: int, counted: Callable[[os.DirEntry[str]], bool]) -> bool:
    """Whether ``folder`` holds more than ``limit`` entries that ``counted`` accepts: one
    directory read, what a write pays before deciding to prune."""
    try:
        with os.scandir(folder) as entries:
            return sum(1 for e in entries if counted(e)) > limit
    except OSError:
        return False


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
    if not _more_than(
        folder,
        GRAPH_KEEP + GRAPH_SLACK,
        lambda e: e.name.startswith("hpvm_graph_") and e.name.endswith(".py"),
    ):
        return
    for gone in prune(folder, "hpvm_graph_*.py", GRAPH_KEEP):
        for entry in (folder / "__pycache__").glob(f"{gone.stem}.*"):
            with contextlib.suppress(OSError):
                entry.unlink()


#: Locked folders kept in a folder of them (``locked_folder``), the most recently used, and how
#: many more may gather before they are pruned.
FOLDER_KEEP = 512
FOLDER_SLACK = 64


@contextlib.contextmanager
def locked_folder(parent: Path, name: str) -> Iterator[Path]:
    """The folder ``parent``/``name``, made if missing and held under its ``lock`` file (an
    exclusive ``flock``) while the block runs: for work that another process or thread may
    be doing on the same folder at once (HPVM-C's clang output, ``c/clang.py``). Using it
    marks it used; making a new one prunes ``parent`` to the ``FOLDER_KEEP`` most recently
    used once ``FOLDER_SLACK`` more gather, each folder removed only under its own lock.

    Why the loop: a pruning process removes a folder's lock file while holding it, so a
    process that was waiting on that lock, or that opened the folder just before it was
    removed, finds its lock no longer in place, and makes the folder again."""
    folder = parent / name
    while True:
        try:
            folder.mkdir()
            made = True
        except FileExistsError:
            made = False
        try:
            lock = open(folder / "lock", "a")  # noqa: SIM115 (held across the yield)
        except FileNotFoundError:  # (the folder was pruned since)
            continue
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _in_place(lock.fileno(), folder / "lock"):
                continue
            os.utime(lock.fileno())
            yield folder
        break
    if made and _more_than(parent, FOLDER_KEEP + FOLDER_SLACK, lambda e: e.is_dir()):
        prune(parent, "*/lock", FOLDER_KEEP, _remove_locked_folder)


def _in_place(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is still the file at ``path`` (not removed by a pruning
    process while this one waited for its lock)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _remove_locked_folder(lock_path: Path) -> None:
    """Remove the folder of ``lock_path`` (a ``locked_folder``), unless a process holds its
    lock: ``OSError`` then, and it is kept. Its lock file goes last, while held, so that a
    process waiting for it finds it gone (``_in_place``) rather than working in a folder
    that is being removed."""
    fd = os.open(lock_path, os.O_RDWR)  # (not made again: a folder pruned meanwhile is gone)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _in_place(fd, lock_path):
            raise FileNotFoundError(lock_path)
        for entry in lock_path.parent.iterdir():
            if entry != lock_path:
                entry.unlink()
        lock_path.unlink()
    finally:
        os.close(fd)
    lock_path.parent.rmdir()  # (OSError if a process made a new lock there meanwhile: kept)


def code_digest(files: Iterable[Path], extra: str = "") -> str:
    """The SHA-1 of ``files``' bytes and ``extra`` (a library's version, the host CPU): the
    ``version`` of ``stored_json``, so that a change to the code that builds an answer never
    meets an answer stored by the code before it."""
    digest = hashlib.sha1(extra.encode())
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


__all__ = [
    "KEEP",
    "cache_folder",
    "cache_root",
    "code_digest",
    "locked_folder",
    "prune",
    "stored_json",
    "used",
    "write_whole",
]
