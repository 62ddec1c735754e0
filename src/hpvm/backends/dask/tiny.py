"""Split launches whose chunks take next to no time run whole, on one worker.

Why. A small launch's chunks go straight to the workers (``direct.py``), one call each. On
the 2-core machine of BENCHMARKS.md the 2-element vector add split over two workers took
2.6–3.2 ms a launch, and the same launch as one call to one worker 2.1–2.2 ms (interleaved
with one Dask task each, medians of 150): a call costs far more than chunks that each run
in microseconds, and a second call in flight costs the host and the workers' event loops
more than the work it takes off the first.

What. The workers time each chunk's run (``tasks.run_chunk``: the compiled run, not its
first compilation). After a direct launch split with every chunk under ``TINY_CHUNK_S``,
the next direct launch of the root with the same replication sizes runs whole on one
worker (``DaskBackend._whole``, its note saying why); while that whole run stays under
``count × TINY_CHUNK_S`` it stays whole, else the next one splits again. Results do not
depend on the split (each instance runs as on ``cpu``); only where it runs does.
``TINY_CHUNK_S = 0`` splits every launch that can be split (tests of the split itself).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

#: A chunk that ran in less than this (seconds, on its worker) counts as tiny: less than a
#: quarter of what one more direct call costs on local sockets (0.5–1 ms).
TINY_CHUNK_S = 2e-4


@dataclass(frozen=True)
class Tiny:
    """The decision to run a launch of ``sizes`` whole instead of in ``count`` chunks."""

    sizes: tuple[int, ...]
    count: int

    @property
    def reason(self) -> str:
        return (
            f"its {self.count} chunks each ran in under {TINY_CHUNK_S * 1e6:.0f} µs last time "
            f"(one call to one worker costs less than {self.count})"
        )


class ChunkTimes:
    """One root's measured chunks, by the replication sizes of its split node: the sizes
    whose last direct launch was tiny (``Tiny``), and how many chunks it had."""

    def __init__(self) -> None:
        self._tiny: dict[tuple[int, ...], int] = {}
        self._lock = threading.Lock()

    def whole(self, sizes: tuple[int, ...], count: int) -> Tiny | None:
        """Whether a launch of ``sizes`` about to split into ``count`` chunks runs whole."""
        if TINY_CHUNK_S <= 0:
            return None
        with self._lock:
            return Tiny(sizes, count) if sizes in self._tiny else None

    def split_ran(self, sizes: tuple[int, ...], seconds: Sequence[float | None]) -> None:
        """A split launch of ``sizes`` ran: each chunk's run time (``None``: it compiled)."""
        tiny = bool(seconds) and all(s is not None and s < TINY_CHUNK_S for s in seconds)
        with self._lock:
            if tiny:
                self._tiny[sizes] = len(seconds)
            else:
                self._tiny.pop(sizes, None)

    def whole_ran(self, tiny: Tiny, seconds: float | None) -> None:
        """The launch ``tiny`` decided ran whole in ``seconds`` (``None``: the worker compiled
        the whole root first, so the next one is timed): no longer tiny past ``count ×
        TINY_CHUNK_S`` (the next launch splits, and is measured again)."""
        if seconds is not None and seconds >= tiny.count * TINY_CHUNK_S:
            with self._lock:
                self._tiny.pop(tiny.sizes, None)


__all__ = ["TINY_CHUNK_S", "ChunkTimes", "Tiny"]
