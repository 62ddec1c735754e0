"""What ``wait`` returns for a root's scalar outputs: NumPy scalars of each port's dtype,
on every back end (docs/api.md, docs/semantics.md §12 — which once said ``cpu`` returned
Python numbers)."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import needs_backend


@hpvm.leaf()
def several(
    x: hpvm.f32, n: hpvm.i32, b: hpvm.bool_
) -> tuple[hpvm.f32, hpvm.i32, hpvm.bool_, hpvm.f64, hpvm.u8]:
    return x * 2, n + 1, b, 1.5, 7


@hpvm.internal
def root(x: hpvm.f32, n: hpvm.i32, b: hpvm.bool_):
    node = hpvm.create_node(several)
    for port in range(3):
        hpvm.bind_in(node, port, port)
    for port in range(5):
        hpvm.bind_out(node, port, port)


@pytest.mark.parametrize(
    "target",
    [
        "interp",
        "cpu",
        pytest.param("cuda", marks=needs_backend("cuda")),
        pytest.param("opencl", marks=needs_backend("opencl")),
    ],
)
def test_root_scalars_are_numpy_scalars_of_the_port_dtype(target: str) -> None:
    hpvm.init()
    try:
        outputs = hpvm.wait(hpvm.launch(root, (np.float32(1.5), 2, True), target=target))
    finally:
        hpvm.cleanup()
    assert [type(v) for v in outputs] == [np.float32, np.int32, np.bool_, np.float64, np.uint8]
    assert outputs == (3.0, 3, True, 1.5, 7)
