"""Child process of ``test_ctrl_c.py``: runs a short launch (to compile; three times, so that
the long launch follows quick ones with the same arrays), then a long one
in the way named on the command line (``wait``, ``pop``, ``pop-stages``: a pipeline of
replicated stages, or ``pop-replicas``: two long items of one stage running at once on its
replicas, ``runtime/replicas.py``), and reports on stdout how Ctrl-C (sent by the test
once it reads ``ready``) ended it and how long ``cleanup`` took afterwards."""

from __future__ import annotations

import sys
import time

import numpy as np
from spin_program import root, stream_root, stream_stages

import hpvm
from hpvm.runtime import streaming

target, how, long_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = np.zeros(2)
hpvm.init()
hpvm.track_memory(x)
if how == "wait":
    for _ in range(3):  # compiles, then quick runs (cpu: in launch itself, runtime/quick.py)
        hpvm.wait(hpvm.launch(root, (x, 10), target=target))
elif how == "pop-replicas":  # items of a few milliseconds, each with an array of its own
    streaming.machine_cores = lambda: 2
    handle = hpvm.launch(stream_root, None, stream=True, target=target)
    own = [np.zeros(2) for _ in range(6)]
    for a in own:
        hpvm.track_memory(a)
    for a in own[:4]:
        hpvm.push(handle, (a, 10**7))
    for _ in range(4):
        hpvm.pop(handle)
    hpvm.push(handle, (own[4], long_n))  # two long items at once: the stage and a replica
    hpvm.push(handle, (own[5], long_n))
    if target == "cpu":
        import threading

        names: list[str] = []
        for _ in range(100):
            names = [t.name for t in threading.enumerate() if t.name.startswith(streaming.THREAD_PREFIX)]
            if len(names) == 2:
                break
            time.sleep(0.05)
        assert len(names) == 2, f"expected a stage thread and its replica, found {names}"
else:
    if how == "pop-stages":  # three replicated stages, on cpu one stage thread: one core here
        streaming.machine_cores = lambda: 1
    program = stream_stages if how == "pop-stages" else stream_root
    handle = hpvm.launch(program, None, stream=True, target=target)
    if how == "pop-stages" and target == "cpu":
        import threading

        threads = [t.name for t in threading.enumerate() if t.name.startswith(streaming.THREAD_PREFIX)]
        assert len(threads) == 1, f"expected one stage thread, found {threads}"
    hpvm.push(handle, (x, 10))
    hpvm.pop(handle)
print("ready", flush=True)
start = time.monotonic()
try:
    if how == "wait":
        hpvm.wait(hpvm.launch(root, (x, long_n), target=target))
    elif how == "pop-replicas":
        hpvm.pop(handle)
    else:
        hpvm.push(handle, (x, long_n))
        hpvm.pop(handle)
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {time.monotonic() - start:.3f}", flush=True)
start = time.monotonic()
hpvm.cleanup()
print(f"cleanup {time.monotonic() - start:.3f}", flush=True)
