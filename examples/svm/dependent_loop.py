"""The seed's dependent kernels in a loop: each ``kernel_add_dependence(k2, k1)`` makes
k2 wait for the *last* execution of k1, and the first one (k1 still UNSTARTED) is
ignored. The two kernels take turns updating a block, which no stream orders.

    python examples/svm/dependent_loop.py
"""

from __future__ import annotations

import sys

import numpy as np

from hpvm import svm


class K1(svm.Kernel):
    """Doubles every element of the block."""


class K2(svm.Kernel):
    """Adds one to every element of the block."""


def k1_work(k: K1) -> None:
    for i in range(k.b.capacity):
        svm.block_write(k.b, i, svm.block_read(k.b, i) * 2)


def k2_work(k: K2) -> None:
    for i in range(k.b.capacity):
        svm.block_write(k.b, i, svm.block_read(k.b, i) + 1)


def run(initial: np.ndarray, rounds: int) -> np.ndarray:
    svm.init()  # this computer: PROC0 and PROC1 share RAM
    try:
        b = svm.Block()
        svm.block_init(b, "RAM", 0, len(initial), np.int64)
        b.data[:] = initial
        k1, k2 = K1(), K2()
        for _ in range(rounds):
            svm.kernel_wait(k1)
            svm.kernel_init(k1, "PROC0", None, k1_work)
            k1.b = b
            svm.kernel_add_dependence(k1, k2)
            svm.kernel_run(k1)

            svm.kernel_wait(k2)
            svm.kernel_init(k2, "PROC1", None, k2_work)
            k2.b = b
            svm.kernel_add_dependence(k2, k1)
            svm.kernel_run(k2)
        svm.kernel_wait(k2)
        return b.data.copy()
    finally:
        svm.cleanup()


def reference(initial: np.ndarray, rounds: int) -> np.ndarray:
    x = initial.astype(np.int64)
    for _ in range(rounds):
        x = x * 2 + 1
    return x


def main() -> int:
    initial = np.arange(8)
    result = run(initial, 10)
    good = np.array_equal(result, reference(initial, 10))
    print(f"10 rounds of k1 then k2: {result.tolist()} ({'ok' if good else 'WRONG'})")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
