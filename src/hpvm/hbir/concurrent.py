"""Groups run at once: each group's blocks on a thread of its own, with a progress watchdog.

On the hardware the groups of a program run concurrently, so a block may wait for what
another group's block writes (``while (flag == 0) { }``). A program with such wait loops
(``waits.py``) runs here as one launch per group — that group's blocks, in program order —
all launched at once on the same arrays, so a flag one group sets is seen by the others.

**The watchdog.** The generated wait loops keep, per tile, the line they wait at and a
count of their turns (``hbir_wait``). The run is declared deadlocked when, at
``STABLE_CHECKS`` successive checks (``FIRST_INTERVAL`` apart at first, then doubling to
``MAX_INTERVAL``): every group still running has a tile inside a block, every tile inside
a block sits in a wait loop and has taken new turns since the last check (it is spinning,
re-reading shared memory), no group finished, no tile entered or left a block or a wait
loop, and the shared memory (data arrays and globals) is byte-for-byte the same. A wait
loop writes nothing shared, so while all running tiles spin in one nothing can change what
they read: they would spin forever. Time only spaces the checks; a tile that still
computes, however slowly, is not in a wait loop, so the run never looks stuck while it
does. The watchdog
then raises the abort flag (the last row of ``hbir_wait``), the wait loops return, and the
run ends in ``HBIRDeadlockError`` naming each waiting group, tile and line. A group that
fails raises the same flag, so the others stop waiting for it and the run ends in that
group's error.

**The flag is re-asserted until every group has returned.** The wait loops read it with an
atomic read-modify-write (``atomic_add(flag, 0)``) so that no compiler hoists the read out
of the loop; a back end whose atomics are a lock around a read and a write (``interp``) can
then write back the 0 it read just before the host's store of 1 — the abort would be lost
and the run would end in a deadlock error instead of the group's own error.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import numpy as np

from ..ir.graph import InternalFunction
from .checker import HBIRCheckError
from .codegen import RUNNING, TURNS, WAITING
from .model import GroupInfo, Model

FIRST_INTERVAL = 0.02
MAX_INTERVAL = 0.2
STABLE_CHECKS = 4
#: How long a deadlock's groups get to return once the abort flag is set (their wait loops
#: read it each turn): far more than they need, for a machine loaded enough to starve them.
ABORT_JOIN_S = 60.0


class HBIRDeadlockError(HBIRCheckError):
    """Groups of an HBIR program wait on each other forever; ``problems`` names each
    waiting group, its tile and the line of the loop it waits in."""


def tile_numbers(model: Model) -> dict[str, list[tuple[int, str]]]:
    """Per group of tiles, its tiles' numbers (row-major over the tile arrays in
    declaration order, the rows of ``hbir_wait`` and of the printf log) with their names."""
    offsets, at = {}, 0
    for name, dims in model.tile_arrays.items():
        offsets[name] = at
        at += int(np.prod(dims))
    out: dict[str, list[tuple[int, str]]] = {}
    for g in model.groups.values():
        if g.tile_array is None:
            continue
        dims = model.tile_arrays[g.tile_array]
        out[g.name] = [
            (
                offsets[g.tile_array] + int(np.ravel_multi_index(tile, dims)),
                f"{_member(g, member)} (tile target.{g.tile_array}{''.join(f'[{c}]' for c in tile)})",
            )
            for member, tile in g.members.items()
        ]
    return out


def _member(g: GroupInfo, member: tuple) -> str:
    return ".".join(f"{c.name}{''.join(f'[{i}]' for i in m)}" for c, m in zip(g.chain, member))


def run_groups(
    model: Model,
    roots: dict[str, InternalFunction],
    values: dict[str, np.ndarray],
    hpvm: Any,
    target: str | None,
) -> None:
    """Launch every group's root at once on ``values`` (tracked by the caller) and wait for
    all of them, watching for a deadlock (module doc)."""
    wait = values["hbir_wait"]
    abort_row = wait.shape[0] - 1
    shared = [v for k, v in values.items() if not k.startswith("hbir_")]
    failures: dict[str, BaseException] = {}
    failed = threading.Event()

    def run(group: str, root: InternalFunction) -> None:
        try:
            args = tuple(values[p.name] for p in root.params)
            hpvm.wait(hpvm.launch(root, args, target=target))
        except BaseException as e:  # delivered to the caller below
            failures[group] = e
            wait[abort_row, 0] = 1  # the others stop waiting for a group that failed
            failed.set()

    threads = {
        g: threading.Thread(target=run, args=(g, r), name=f"hbir group {g}", daemon=True)
        for g, r in roots.items()
    }
    for t in threads.values():
        t.start()
    try:
        _watch(model, threads, wait, shared, failed)
    except BaseException:  # a deadlock, or Ctrl-C while watching: let the wait loops return
        _abort(wait, threads)
        raise
    if failures:
        first = next(g for g in roots if g in failures)  # program order
        raise failures[first]


def _watch(
    model: Model,
    threads: dict[str, threading.Thread],
    wait: np.ndarray,
    shared: list[np.ndarray],
    failed: threading.Event,
) -> None:
    """Wait for the groups' threads; ``HBIRDeadlockError`` when they can never end (module
    doc), after the abort flag has let them return. Once a group has ``failed``, only
    abort the others."""
    tiles = tile_numbers(model)
    interval, stable = FIRST_INTERVAL, 0
    last: tuple | None = None
    last_turns = wait[:, TURNS].copy()
    while True:
        for t in threads.values():
            t.join(interval / max(len(threads), 1))
        alive = sorted(g for g, t in threads.items() if t.is_alive())
        if not alive:
            break
        if failed.is_set():
            _abort(wait, threads)
            return
        rows = wait.copy()
        running = {g: [(n, name) for n, name in tiles[g] if rows[n, RUNNING]] for g in alive}
        spinning = all(running[g] for g in alive) and all(
            rows[n, WAITING] and rows[n, TURNS] > last_turns[n] for g in alive for n, _ in running[g]
        )
        state = (tuple(alive), rows[:, WAITING].tobytes(), rows[:, RUNNING].tobytes(), _digest(shared))
        stable = stable + 1 if spinning and state == last else 0
        last, last_turns = state, rows[:, TURNS].copy()
        if stable >= STABLE_CHECKS:
            _abort(wait, threads)
            raise HBIRDeadlockError(_deadlock_problems(model, running, rows, threads))
        interval = min(interval * 2, MAX_INTERVAL)


def _abort(wait: np.ndarray, threads: dict[str, threading.Thread]) -> None:
    """Raise the abort flag and keep it raised until every group has returned (module doc:
    a back end's atomic read of it may write back the 0 it read) — on a thread of its own,
    so that the groups stop even when the caller stops waiting for them after
    ``ABORT_JOIN_S``."""
    abort_row = wait.shape[0] - 1
    wait[abort_row, 0] = 1
    alive = [t for t in threads.values() if t.is_alive()]
    if not alive:
        return

    def keep_raised() -> None:
        for t in alive:
            while t.is_alive():
                wait[abort_row, 0] = 1
                t.join(FIRST_INTERVAL)

    threading.Thread(target=keep_raised, name="hbir abort", daemon=True).start()
    deadline = time.monotonic() + ABORT_JOIN_S
    for t in alive:
        t.join(max(deadline - time.monotonic(), 0.0))


def _deadlock_problems(
    model: Model,
    waiting: dict[str, list[tuple[int, str]]],
    rows: np.ndarray,
    threads: dict[str, threading.Thread],
) -> list[str]:
    done = [g for g in threads if g not in waiting]
    out = []
    for g, tiles in waiting.items():
        group = model.groups[g]
        n, name = tiles[0]
        line = int(rows[n, WAITING])
        more = f" (and {len(tiles) - 1} more of its tiles)" if len(tiles) > 1 else ""
        out.append(
            f"{model.filename}:{line}: group '{g}' (line {group.line}) waits forever: its tile {name}{more} "
            f"spins in the loop at line {line}, and every group still running "
            f"({', '.join(repr(w) for w in waiting)}) waits too, so nothing it reads can change"
            + (f" (finished: {', '.join(repr(d) for d in done)})" if done else "")
            + "; make some group set what the others wait for before it waits itself"
        )
    return out


def _digest(arrays: list[np.ndarray]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(np.ascontiguousarray(a).view(np.uint8).data)
    return h.digest()


__all__ = ["HBIRDeadlockError", "run_groups", "tile_numbers"]
