"""Two kernels joined by a stream, with no explicit dependence: the stream's stalls
synchronise them (the seed's k1 writes s, k2 reads s). The stream lives in a hardware
FIFO between neighbouring tiles of the ``pca_tiled`` machine.

    python examples/svm/pipeline.py
"""

from __future__ import annotations

import sys

import numpy as np

from hpvm import svm


class Square(svm.Kernel):
    """k1: reads numbers from local memory, writes their squares into the FIFO."""


class Accumulate(svm.Kernel):
    """k2: reads the FIFO, writes running sums into its local memory."""


def square_work(k: Square) -> None:
    while True:
        eos = svm.stream_peek_eos(k.in_, 0)
        x = svm.stream_pop(k.in_)
        if eos:
            svm.stream_push_with_eos(k.out, x * x)
            return
        svm.stream_push(k.out, x * x)


def accumulate_work(k: Accumulate) -> None:
    total = 0
    while True:
        eos = svm.stream_peek_eos(k.in_, 0)
        total += int(svm.stream_pop(k.in_))
        svm.stream_push(k.out, total)
        if eos:
            return


def run(values: np.ndarray) -> np.ndarray:
    svm.init("pca_tiled", check=True)
    try:
        src, s, dst = svm.Stream(), svm.Stream(), svm.Stream()
        k1, k2 = Square(), Accumulate()
        n = len(values)
        svm.memory_view("LOCALMEM1", 0, n, np.int32)[:] = values
        svm.stream_init_with_data_ram(src, "LOCALMEM1", 0, n, np.int32, n, True)
        svm.stream_init_fifo(s, "FIFO12", np.int32)  # 64 elements: k1 stalls until k2 pops
        svm.stream_init_ram(dst, "LOCALMEM2", 0, n, np.int64)

        svm.kernel_init(k1, "PROC1", None, square_work)
        k1.in_, k1.out = src, s
        svm.kernel_run(k1)

        svm.kernel_init(k2, "PROC2", None, accumulate_work)
        k2.in_, k2.out = s, dst
        svm.kernel_run(k2)

        svm.kernel_wait(k2)
        svm.kernel_wait(k1)
        return svm.memory_view("LOCALMEM2", 0, n, np.int64).copy()
    finally:
        svm.cleanup()


def main() -> int:
    values = np.arange(500, dtype=np.int32) % 17
    result = run(values)
    good = np.array_equal(result, np.cumsum(values.astype(np.int64) ** 2))
    print(f"squares and running sums of {len(values)} values through FIFO12: {'ok' if good else 'WRONG'}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
