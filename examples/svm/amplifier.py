"""The seed's amplifier: a user-defined kernel that multiplies a stream by ``N``, in its
two forms — one that stops at the EOS-tagged element, and one for an infinite stream that
control code ends with ``kernel_end``.

    python examples/svm/amplifier.py
"""

from __future__ import annotations

import sys

import numpy as np

from hpvm import svm


class Amplifier(svm.Kernel):
    """typedef struct { Kernel kernel; IStream* in; OStream* out; int N; } Amplifier;"""


def amplifier_work(amp: Amplifier) -> None:
    while not svm.stream_peek_eos(amp.in_, 0):
        x = svm.stream_pop(amp.in_)
        svm.stream_push(amp.out, x * amp.N)
    x = svm.stream_pop(amp.in_)
    svm.stream_push_with_eos(amp.out, x * amp.N)


def amplifier_work_infinite(amp: Amplifier) -> None:
    while True:
        x = svm.stream_pop(amp.in_)
        svm.stream_push(amp.out, x * amp.N)


def amplifier_init(
    amp: Amplifier,
    proc_location: str,
    scratch,
    in_: svm.IStream,
    out: svm.OStream,
    n: int,
    work=amplifier_work,
) -> None:
    svm.kernel_init(amp, proc_location, scratch, work)
    amp.in_ = in_
    amp.out = out
    amp.N = n


def run(samples: np.ndarray, n: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Amplify ``samples`` (float32) through a 16-element output stream that control code
    drains while the kernel runs; then the infinite form on the same streams. Returns both
    outputs."""
    svm.init()  # this computer
    try:
        s_in, s_out = svm.Stream(), svm.Stream()
        amp = Amplifier()
        count = len(samples)
        svm.memory_view("RAM", 0, count, np.float32)[:] = samples
        svm.stream_init_with_data_ram(s_in, "RAM", 0, count, np.float32, count, True)
        svm.stream_init_ram(s_out, "RAM", 1 << 20, 16, np.float32)
        amplifier_init(amp, "PROC0", None, s_in, s_out, n)
        svm.kernel_run(amp.kernel)
        finite = svm.stream_pop_many(s_out, svm.STREAM_LENGTH_ALL)
        svm.kernel_wait(amp.kernel)

        # The infinite form: control code feeds and drains it, then ends it.
        amplifier_init(amp, "PROC0", None, s_in, s_out, n, work=amplifier_work_infinite)
        svm.kernel_run(amp.kernel)
        infinite = []
        for x in samples:
            svm.stream_push(s_in, x)
            infinite.append(svm.stream_pop(s_out))
        svm.kernel_end(amp.kernel)
        svm.kernel_wait(amp.kernel)
        return finite, np.array(infinite, np.float32)
    finally:
        svm.cleanup()


def main() -> int:
    samples = np.linspace(-1, 1, 100, dtype=np.float32)
    finite, infinite = run(samples)
    good = np.array_equal(finite, samples * 3) and np.array_equal(infinite, samples * 3)
    print(f"amplified {len(samples)} samples twice: {'ok' if good else 'WRONG'}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
