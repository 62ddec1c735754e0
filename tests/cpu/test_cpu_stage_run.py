"""A streamed stage's run on ``cpu`` is resolved once per stage (``backends/cpu/stagerun.py``):
the compiled stage function is looked up once, not per item, and what changes per item —
the scalars' types, the upstream values — still gives the interpreter's results."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend

N = 16


@hpvm.leaf(ins=("x",), outs=("y",))
def scale(x: hpvm.f64[:], k: hpvm.i64, y: hpvm.f64[:]) -> hpvm.f64[:]:
    for i in range(x.shape[0]):
        y[i] = x[i] * k
    return y


@hpvm.leaf(ins=("y",), outs=("z",))
def shift(y: hpvm.f64[:], c: hpvm.f32, z: hpvm.f64[:]) -> tuple[hpvm.f64[:], hpvm.f32]:
    total = 0.0
    for i in range(y.shape[0]):
        z[i] = y[i] + c
        total += z[i]
    return z, total


@hpvm.internal()
def scaled_shifted(x: hpvm.f64[:], k: hpvm.i64, y: hpvm.f64[:], c: hpvm.f32, z: hpvm.f64[:]):
    a = hpvm.create_node(scale)
    b = hpvm.create_node(shift)
    for name in ("x", "k", "y"):
        hpvm.bind_in(a, name, name, stream=True)
    for name in ("c", "z"):
        hpvm.bind_in(b, name, name, stream=True)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, "y", stream=True)
    hpvm.bind_out(b, 0, 0, stream=True)
    hpvm.bind_out(b, 1, 1, stream=True)


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")

#: (k, c) per item: scalars of the port's type, of the type Numba gives it, and of others
SCALARS = [(3, 0.5), (np.int64(-2), np.float32(1.25)), (np.int32(5), 2.0), (np.int8(7), np.float64(-0.75))]


def streamed(target: str) -> list[tuple[np.ndarray, object]]:
    handle = hpvm.launch(scaled_shifted, None, stream=True, target=target)
    for m, (k, c) in enumerate(SCALARS):
        x = np.arange(N, dtype=np.float64) + m
        arrays = (x, np.zeros(N), np.zeros(N))
        for a in arrays:
            hpvm.track_memory(a)
        hpvm.push(handle, (x, k, arrays[1], c, arrays[2]))
    out = [hpvm.pop(handle) for _ in SCALARS]
    hpvm.wait(handle)
    return [(z.copy(), total) for z, total in out]


def test_items_with_scalars_of_any_type_give_the_interpreters_results():
    hpvm.init()
    expected = streamed("interp")
    got = streamed("cpu")
    for m, ((z, total), (z_ref, total_ref)) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(z, z_ref, err_msg=f"item {m}")
        assert type(total) is type(total_ref) is np.float32, f"item {m}"
        assert total == total_ref, f"item {m}"


def test_the_compiled_stage_is_looked_up_once_per_stage(monkeypatch):
    hpvm.init()
    backend = get_backend("cpu")
    looked_up: list[tuple[str, ...]] = []
    stage = backend.compiler.stage

    def counted(program, spec):  # type: ignore[no-untyped-def]
        looked_up.append(tuple(n.name for n in spec.nodes))
        return stage(program, spec)

    monkeypatch.setattr(backend.compiler, "stage", counted)
    backend.prepare(scaled_shifted).stage_runs.clear()  # (an earlier test may have made them)
    for _ in range(2):
        streamed("cpu")
    # 8 items per stage over two streams: one look-up each (the program keeps its runs)
    assert sorted(looked_up) == [("scale",), ("shift",)]
