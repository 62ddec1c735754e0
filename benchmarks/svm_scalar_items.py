"""Small scalar items through the HLC mapping: what passing values through SVM memory costs.

``tests/runtime/test_streaming.py``'s ``three_stages`` (three i64 stages; every edge and
both outputs travel by value, in structured records) launched with ``target="svm"`` on
this computer, leaves on ``cpu``; 20,000 items pushed from a producer thread while the host
pops them, the last result checked. Prints items/s for three runs and their median. Run it
on two checkouts (``PYTHONPATH=src python benchmarks/svm_scalar_items.py``), alternating,
to compare them: the number depends on how much of the cores other jobs leave.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

from test_streaming import expect, three_stages  # noqa: E402

import hpvm  # noqa: E402

ITEMS = 20_000


def once(count: int) -> float:
    """Items/s of one stream of ``count`` items (a producer thread pushes, the host pops)."""
    h = hpvm.launch(three_stages, None, stream=True, target="svm")

    def produce() -> None:
        for x in range(count):
            hpvm.push(h, (x,))

    start = time.perf_counter()
    producer = threading.Thread(target=produce)
    producer.start()
    got = [hpvm.pop(h) for _ in range(count)]
    producer.join()
    hpvm.wait(h)
    seconds = time.perf_counter() - start
    if got[0] != expect(0) or got[-1] != expect(count - 1):
        raise AssertionError(f"wrong results: {got[0]}, {got[-1]}")
    return count / seconds


def main() -> None:
    os.environ.setdefault("HPVM_SVM_LEAVES", "cpu")
    hpvm.init()
    try:
        once(2_000)  # compiles the stages
        rates = [once(ITEMS) for _ in range(3)]
    finally:
        hpvm.cleanup()
    shown = ", ".join(f"{r:,.0f}" for r in rates)
    print(
        f"three_stages, {ITEMS:,} scalar items, target=svm: {shown} items/s; median {statistics.median(rates):,.0f}"
    )


if __name__ == "__main__":
    main()
