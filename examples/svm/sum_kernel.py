"""The seed's SumKernel: a reduction kept in a kernel's data member, read by control code
after ``kernel_wait`` (when the kernel is no longer WAITING or RUNNING).

    python examples/svm/sum_kernel.py
"""

from __future__ import annotations

import sys

import numpy as np

from hpvm import svm


class SumKernel(svm.Kernel):
    """typedef struct { Kernel kernel; IStream* in; int sum; } SumKernel;"""


def sum_kernel_work(k: SumKernel) -> None:
    while not svm.stream_get_eos(k.in_, 0):
        k.sum += int(svm.stream_pop(k.in_))
    k.sum += int(svm.stream_pop(k.in_))


def sum_init(k: SumKernel, proc_location: str, scratch: svm.Block, in_: svm.IStream) -> None:
    svm.kernel_init(k, proc_location, scratch, sum_kernel_work)
    k.in_ = in_
    k.sum = 0


def run(values: np.ndarray) -> int:
    """Sum 128 int32 values placed in LOCALMEM1 at 0x100 (as "prior code" does in the seed)."""
    svm.init("pca_tiled")
    try:
        s1 = svm.Stream()
        scratch1 = svm.Block()
        sk = SumKernel()
        svm.memory_view("LOCALMEM1", 0x100, 128, np.int32)[:] = values
        svm.stream_init_with_data_ram(s1, "LOCALMEM1", 0x100, 128, np.int32, 128, 1, 0)
        svm.block_init(scratch1, "LOCALMEM1", 0x400, 16, 1)
        sum_init(sk, "PROC1", scratch1, s1)
        svm.kernel_run(sk.kernel)
        svm.kernel_wait(sk.kernel)
        return sk.sum
    finally:
        svm.cleanup()


def main() -> int:
    values = np.arange(128, dtype=np.int32) * 7 - 100
    total = run(values)
    good = total == int(values.sum())
    print(f"sum of 128 values: {total} ({'ok' if good else 'WRONG'})")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
