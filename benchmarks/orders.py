"""The order in which a benchmark takes its sides' samples.

What one run leaves behind is paid by the run after it: the caches full of its arrays, the
OpenMP team asleep after PyTorch's last operation when Numba's team runs next, the worker
threads parked. A row that samples its sides in one fixed order (``a, b, c, a, b, c…``)
charges each side for the same neighbour every time. The tensor row showed it: ResNet-18's
prepared graph sampled right after eager PyTorch read 0.91× eager's time, and 0.86× sampled
in balanced orders in the same process. So every multi-side row takes its rounds in the
rows of a Williams design, where each side follows each other equally often.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def balanced_rows(count: int) -> list[list[int]]:
    """Orders of ``range(count)`` in which every item directly follows every other equally
    often (a Williams design: the balanced Latin square of crossover trials; an odd count
    needs the rows reversed too). Each item is also first in as many rows as any other."""
    steps = [0] + [(j + 1) // 2 if j % 2 else count - j // 2 for j in range(1, count)]
    rows = [[(r + step) % count for step in steps] for r in range(count)]
    return rows + [row[::-1] for row in rows] if count % 2 else rows


def interleaved_times(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each call of each run, one call of each per round, the rounds in the
    orders of ``balanced_rows`` (a shared machine's load then weighs on every side alike,
    and no side always pays for the same neighbour). Round ``r``'s samples are each list's
    entry ``r``, so per-round ratios pair samples taken side by side."""
    names = list(runs)
    rows = balanced_rows(len(names))
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for i in rows[r % len(rows)]:
            start = time.perf_counter()
            runs[names[i]]()
            times[names[i]].append(time.perf_counter() - start)
    return times


def interleaved_medians(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each run over ``interleaved_times``' rounds."""
    return {name: statistics.median(ts) for name, ts in interleaved_times(runs, rounds).items()}


def round_ratio(times: dict[str, list[float]], over: str, under: str) -> float:
    """The median over the rounds of ``over``'s sample divided by ``under``'s from the same
    round (``times`` as ``interleaved_times`` returns them).

    Why a row's verdict takes this and not the ratio of the two medians: the two samples of
    a round ran next to each other, so a host whose speed drifts between rounds (a neighbour
    on a shared machine taking the L3 or the cores for a while) moves both sides of each
    ratio alike. On a noisy 2-core host the LLVM stencil row's ratio of medians read 1.29×
    and 0.84× in two runs of the same code, its samples spread over 10–21 ms."""
    pairs = zip(times[over], times[under], strict=True)
    return statistics.median(a / b for a, b in pairs)


__all__ = ["balanced_rows", "interleaved_medians", "interleaved_times", "round_ratio"]
