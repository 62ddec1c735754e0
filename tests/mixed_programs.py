"""Programs whose leaves carry different hints (the GPU hint on the middle one), shared by
the mixed-graph tests of the runtime (GPU hint mapped to ``interp``) and of the GPU back ends."""

from __future__ import annotations

import hpvm


@hpvm.leaf(ins=("x",))
def scaled(x: hpvm.f64[:], k: hpvm.f64) -> tuple[hpvm.f64, hpvm.i64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    return x[i] * k, i


@hpvm.leaf(hint=hpvm.GPU_TARGET, outs=("out",))
def shifted(v: hpvm.f64, i: hpvm.i64, out: hpvm.f64[:]) -> hpvm.f64[:]:
    out[i] = v + 1.0
    return out


@hpvm.leaf(ins=("arr",), outs=("total",))
def summed(arr: hpvm.f64[:], total: hpvm.f64[:]) -> hpvm.f64:
    s = 0.0
    for j in range(arr.shape[0]):
        s += arr[j]
    total[0] = s
    return s


@hpvm.internal
def cpu_gpu_cpu(x: hpvm.f64[:], out: hpvm.f64[:], total: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)
    b = hpvm.create_node_1d(shifted, n)
    c = hpvm.create_node(summed)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 3, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)  # per-instance scalars cpu -> interp
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 1, 2)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0)  # an array interp -> cpu
    hpvm.bind_in(c, 2, 1)
    hpvm.bind_out(c, 0, 0)
    hpvm.bind_out(a, 1, 1)  # the last instance's id, from cpu


@hpvm.internal
def streamed(x: hpvm.f64[:], out: hpvm.f64[:], total: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)
    b = hpvm.create_node_1d(shifted, n)
    c = hpvm.create_node(summed)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 3, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 1, 2)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0, stream=True)  # a pipeline stage boundary
    hpvm.bind_in(c, 2, 1)
    hpvm.bind_out(c, 0, 0)
