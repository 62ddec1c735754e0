"""Which children the cpu back end fuses into one loop nest (``ir.analysis.fusion_groups``).

A streaming edge is a pipeline boundary: its source and its sink never share a loop, even
when the edge is one-to-one and the graph is launched without streaming. (The cpu back
end once fused across it; the GPU lowering did not.) The sink below reads what *another*
instance of its source wrote, so fused — sink instance *i* right after source instance
*i* — it would read elements not yet written; in separate loops it reads them all.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@hpvm.leaf(outs=("a",))
def fill(a: hpvm.i64[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = i + 1
    return i


@hpvm.leaf(ins=("a",), outs=("b",))
def mirror(i: hpvm.i64, a: hpvm.i64[:], b: hpvm.i64[:]):
    b[i] = a[a.shape[0] - 1 - i]


def _root(stream: bool):  # type: ignore[no-untyped-def]
    @hpvm.internal()
    def root(a: hpvm.i64[:], b: hpvm.i64[:], n: hpvm.i64):
        src = hpvm.create_node_1d(fill, n)
        dst = hpvm.create_node_1d(mirror, n)
        hpvm.bind_in(src, 0, 0)
        hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 0, 0, stream=stream)
        hpvm.bind_in(dst, 0, 1)
        hpvm.bind_in(dst, 1, 2)

    return root


def _loops(root) -> int:  # type: ignore[no-untyped-def]
    """The number of parallel loop nests in the root's generated graph function."""
    return "\n".join(get_backend("cpu").prepare(root).gen.sources).count("__hpvm_parallel_for(")


def _run(root, target: str, n: int = 4096) -> np.ndarray:  # type: ignore[no-untyped-def]
    a, b = np.zeros(n, np.int64), np.zeros(n, np.int64)
    hpvm.track_memory(a)
    hpvm.track_memory(b)
    hpvm.wait(hpvm.launch(root, (a, b, n), target=target))
    return hpvm.request_memory(b).copy()


def test_one_to_one_edges_fuse():
    assert _loops(_root(stream=False)) == 1


def test_no_fusion_across_a_streaming_edge():
    root = _root(stream=True)
    assert _loops(root) == 2
    expected = _run(root, "interp")
    np.testing.assert_array_equal(expected, np.arange(4096, 0, -1))
    np.testing.assert_array_equal(_run(root, "cpu"), expected)
