"""Read-only arrays indexed without the instance id x go whole to every chunk (broadcast),
as the right-hand matrix of a row-split matrix product; results against ``interp``."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask.ownership import analyse
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def matmul_element(a: hpvm.f64[:, :], b: hpvm.f64[:, :], c: hpvm.f64[:, :], k: hpvm.i64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    total = 0.0
    for t in range(k):
        total += a[i, t] * b[t, j]
    c[i, j] = total


@hpvm.internal
def matmul(a: hpvm.f64[:, :], b: hpvm.f64[:, :], c: hpvm.f64[:, :], k: hpvm.i64):
    node = hpvm.create_node_2d(matmul_element, a.shape[0], b.shape[1])
    for port in range(4):
        hpvm.bind_in(node, port, port)


@hpvm.leaf(ins=("a",), outs=("out",))
def minus_first(a: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = a[i] - a[0]


@hpvm.leaf(ins=("a",), outs=("out",))
def writes_first(a: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[0] = a[i]


def test_the_shared_matrix_is_broadcast():
    found = analyse(matmul_element)
    assert found.problem is None and found.broadcast == {"b"} and found.rows == {"a": (0, 0), "c": (0, 0)}


@pytest.mark.parametrize(
    "leaf, fragment",
    [
        (minus_first, "indexes 'a' both by its instance id x and without it"),
        (writes_first, "writes 'out' at elements that do not follow its instance id x"),
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_arrays_indexed_both_ways_or_written_apart_are_refused(leaf, fragment):
    problem = analyse(leaf).problem
    assert problem is not None and fragment in problem, problem


def test_a_row_split_matrix_product_matches_interp(dask_runtime):
    rng = np.random.default_rng(0)
    a, b = rng.random((9, 4)), rng.random((4, 5))
    c, want = np.zeros((9, 5)), np.zeros((9, 5))
    for x in (a, b, c, want):
        hpvm.track_memory(x)
    handle = hpvm.launch(matmul, (a, b, c, 4), target="dask")
    hpvm.wait(handle)
    hpvm.wait(hpvm.launch(matmul, (a, b, want, 4), target="interp"))
    np.testing.assert_allclose(c, want, rtol=1e-12)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
    assert "split into 2 chunk(s) of rows [0, 4), [4, 9)" in handle.notes[0]


@pytest.mark.slow
def test_the_broadcast_matrix_reaches_worker_processes(process_cluster):
    import sys

    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        rng = np.random.default_rng(1)
        a, b, c = rng.random((6, 3)), rng.random((3, 4)), np.zeros((6, 4))
        for x in (a, b, c):
            hpvm.track_memory(x)
        handle = hpvm.launch(matmul, (a, b, c, 3), target="dask")
        hpvm.wait(handle)
        np.testing.assert_allclose(c, a @ b, rtol=1e-12)
        # a's rows and c's rows once, b once per worker, c's rows back
        assert handle.transfers.to_device == a.nbytes + c.nbytes + 2 * b.nbytes
        assert handle.transfers.to_host == c.nbytes
    finally:
        hpvm.cleanup()
        client.close()
