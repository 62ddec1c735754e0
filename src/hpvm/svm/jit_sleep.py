"""``sleep_us(n)``: sleep ``n`` microseconds from compiled code without the GIL (the C
library's ``usleep`` through ctypes, which Numba calls directly).

Why not a Python wait: a compiled kernel that waits for a batch of elements (``jit_ops``'s
batched waits) would otherwise nap in Python, and the other side would have to take the
GIL and the runtime's lock to wake it — on a loaded machine that call was the largest cost
of the FIR pipeline's fastest kernel. A timed sleep needs no wake-up at all: the sleeper
sizes its naps from the rate it observed, and the busy side never leaves compiled code.

Importing this module imports Numba; ``hpvm.svm`` imports it only when a compiled kernel
is run.
"""

from __future__ import annotations

import ctypes

_libc = ctypes.CDLL(None)  # the C library the interpreter is linked with (POSIX)
sleep_us = _libc.usleep
sleep_us.argtypes = [ctypes.c_uint]
sleep_us.restype = ctypes.c_int
