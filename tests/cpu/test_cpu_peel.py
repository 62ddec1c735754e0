"""A replicated node whose output leaves its loop (bound out, or over an all-to-all edge)
sends the value of its last instance by id; the cpu back end runs that instance after the
nest ("peeled"). The nest stops its innermost loop one short where every outer id is at its
last, instead of testing every instance in the body (the test kept LLVM from vectorizing:
``examples/c/vector_add.c``, whose leaf returns its size, ran 2.2× the same loop without the
return). Every instance still runs exactly once, and the value sent is the last one's, in
1-, 2- and 3-D nodes, on every size including ones where a chunk or a loop is empty.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends import get_backend

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@hpvm.leaf(outs=("hits",))
def count_1d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    hits[0, 0, x] += 1
    return x


@hpvm.leaf(outs=("hits",))
def count_2d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    node = hpvm.get_node()
    x, y = hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)
    hits[0, y, x] += 1
    return 1000 * y + x


@hpvm.leaf(outs=("hits",))
def count_3d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    node = hpvm.get_node()
    x, y = hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
    hits[z, y, x] += 1
    return 1000000 * z + 1000 * y + x


@hpvm.internal()
def root_1d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    n = hpvm.create_node_1d(count_1d, hits.shape[2])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


@hpvm.internal()
def root_2d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    n = hpvm.create_node_2d(count_2d, hits.shape[2], hits.shape[1])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


@hpvm.internal()
def root_3d(hits: hpvm.i64[:, :, :]) -> hpvm.i64:
    n = hpvm.create_node_3d(count_3d, hits.shape[2], hits.shape[1], hits.shape[0])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


ROOTS = {1: root_1d, 2: root_2d, 3: root_3d}


def run(dims: int, shape: tuple[int, int, int]) -> tuple[np.ndarray, int]:
    hits = np.zeros(shape, np.int64)
    hpvm.track_memory(hits)
    try:
        (last,) = hpvm.wait(hpvm.launch(ROOTS[dims], (hits,), target="cpu"))
        hpvm.request_memory(hits)
    finally:
        hpvm.untrack_memory(hits)
    return hits, int(last)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_the_nest_has_no_per_instance_test(dims: int) -> None:
    source = "\n".join(get_backend("cpu").prepare(ROOTS[dims]).gen.sources)
    assert "continue" not in source
    assert " - 1 if " in source or dims == 1  # the innermost loop's end where outer ids are last


@settings(max_examples=25, deadline=None)
@given(
    dims=st.integers(1, 3),
    nx=st.integers(1, 9),
    ny=st.integers(1, 4),
    nz=st.integers(1, 3),
)
def test_every_instance_runs_once_and_the_last_by_id_is_sent(dims: int, nx: int, ny: int, nz: int) -> None:
    shape = (nz if dims == 3 else 1, ny if dims >= 2 else 1, nx)
    hits, last = run(dims, shape)
    assert (hits == 1).all()
    z, y, x = (s - 1 for s in shape)
    assert last == 1000000 * z + 1000 * y + x
