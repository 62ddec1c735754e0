"""Child process of ``test_ctrl_c.py``: runs a short launch (to compile; three times, so that
the long launch follows quick ones with the same arrays), then a long one
in the way named on the command line, and reports on stdout how Ctrl-C (sent by the test
once it reads ``ready``) ended it and how long ``cleanup`` took afterwards."""

from __future__ import annotations

import sys
import time

import numpy as np
from spin_program import root, stream_root

import hpvm

target, how, long_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = np.zeros(2)
hpvm.init()
hpvm.track_memory(x)
if how == "wait":
    for _ in range(3):  # compiles, then quick runs (cpu: in launch itself, runtime/quick.py)
        hpvm.wait(hpvm.launch(root, (x, 10), target=target))
else:
    handle = hpvm.launch(stream_root, None, stream=True, target=target)
    hpvm.push(handle, (x, 10))
    hpvm.pop(handle)
print("ready", flush=True)
start = time.monotonic()
try:
    if how == "wait":
        hpvm.wait(hpvm.launch(root, (x, long_n), target=target))
    else:
        hpvm.push(handle, (x, long_n))
        hpvm.pop(handle)
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {time.monotonic() - start:.3f}", flush=True)
start = time.monotonic()
hpvm.cleanup()
print(f"cleanup {time.monotonic() - start:.3f}", flush=True)
