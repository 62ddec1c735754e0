"""A program whose leaf spins for as long as it is told, run by ``test_ctrl_c.py`` in a
child process: Ctrl-C (SIGINT) is sent to it while the host waits, pops or runs it."""

from __future__ import annotations

import hpvm


@hpvm.leaf(ins=("x",), outs=("x",))
def spin(x: hpvm.f64[:], n: hpvm.i64) -> hpvm.f64:
    s = 0.0
    for k in range(n):
        s += (k % 7) * 1e-9
    x[0] = s
    return s


@hpvm.internal
def root(x: hpvm.f64[:], n: hpvm.i64):
    k = hpvm.create_node(spin)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)
    hpvm.bind_out(k, 0, 0)


@hpvm.internal
def stream_root(x: hpvm.f64[:], n: hpvm.i64):
    k = hpvm.create_node(spin)
    hpvm.bind_in(k, 0, 0, stream=True)
    hpvm.bind_in(k, 1, 1, stream=True)
    hpvm.bind_out(k, 0, 0, stream=True)
