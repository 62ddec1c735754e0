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


@hpvm.leaf(ins=("x",), outs=("x",))
def spin_each(x: hpvm.f64[:], n: hpvm.i64) -> hpvm.f64[:]:
    """``spin`` in each instance, over ``x``."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    s = 0.0
    for k in range(n):
        s += (k % 7) * 1e-9
    x[i] = s
    return x


@hpvm.internal
def stream_stages(x: hpvm.f64[:], n: hpvm.i64):
    """Three replicated stages of ``spin_each``: on cpu, with more stages than cores, one
    stage thread runs them all (``streaming.one_stage``)."""
    nodes = [hpvm.create_node_1d(spin_each, x.shape[0]) for _ in range(3)]
    hpvm.bind_in(nodes[0], 0, 0, stream=True)
    for node in nodes:
        hpvm.bind_in(node, 1, 1, stream=True)
    for a, b in zip(nodes, nodes[1:]):
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_out(nodes[-1], 0, 0, stream=True)
