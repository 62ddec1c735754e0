"""Python emitted from a leaf IR (``ir/leafir/pyemit.py``) reads back as the same leaf IR,
on every leaf of the suite; and the chunk rewrite of ``dask/offsets.py`` made on the IR."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_exec import instance

import hpvm
import leaf_suite
from hpvm.backends.dask.offsets import LO, NX, offset_leaf, offset_problem, shift_queries
from hpvm.ir.graph import LeafFunction, Param
from hpvm.ir.leafir import LeafIRUnsupported, build, leaf_ir
from hpvm.ir.leafir.pyemit import emit_python, namespace
from hpvm.ir.leafir.verify import verify_leaf
from hpvm.ir.pysource import generated_body

IN_DIALECT = {}
for _key, _fn in sorted(leaf_suite.LEAVES.items()):
    try:
        IN_DIALECT[f"{_key[0]}:{_key[1]}"] = (_fn, leaf_ir(_fn))
    except LeafIRUnsupported:
        pass


def _emitted(fn: LeafFunction, ir) -> LeafFunction:
    text, lines = emit_python(ir)
    body = generated_body(fn.name, text, ir.file, lines, namespace=namespace(), static_base=namespace)
    params = [Param(p.name, p.type, p.layout) for p in ir.params]
    return LeafFunction(
        None, fn.name, params, list(fn.outputs), fn.hint, fn.ins, fn.outs, fn.location, body=body
    )


@pytest.mark.parametrize("key", sorted(IN_DIALECT))
def test_emitted_python_reads_back_as_the_same_leaf_ir(key: str) -> None:
    fn, ir = IN_DIALECT[key]
    assert build(_emitted(fn, ir)) == ir


@hpvm.leaf(ins=("x",), outs=("y",))
def blocks(x: hpvm.i64[:], y: hpvm.i64[:]) -> None:
    node = hpvm.get_node()
    first = hpvm.get_node_instance_id_x(node) * 2
    for k in range(2):
        y[first + k] = x[first + k] + hpvm.get_num_node_instances_x(node) * 100


def test_a_chunk_computes_what_its_instances_of_the_whole_node_do() -> None:
    ir = shift_queries(leaf_ir(blocks), 0)
    verify_leaf(ir)
    assert offset_problem(blocks) is None
    chunk = offset_leaf(blocks)
    x = np.arange(12, dtype=np.int64)
    whole, split = np.zeros(12, np.int64), np.zeros(12, np.int64)
    for i in range(6):
        with instance((i, 0, 0), (6, 1, 1)):
            blocks.pyfunc(x, whole)
    for lo, hi in ((0, 2), (2, 6)):  # two chunks, each a node of hi - lo instances
        for k in range(hi - lo):
            with instance((k, 0, 0), (hi - lo, 1, 1)):
                chunk.pyfunc(x, split, lo, 6)
    assert (split == whole).all() and whole[11] == 611
    assert [p.name for p in chunk.params][-2:] == [LO, NX]


def test_a_query_of_a_handle_not_known_statically_is_not_rewritten() -> None:
    @hpvm.leaf(outs=("y",))
    def unknown(y: hpvm.i64[:], s: hpvm.i64) -> None:
        node = hpvm.get_node()
        if s > 0:
            node = hpvm.get_node()
        y[hpvm.get_node_instance_id_x(node)] = 1

    problem = offset_problem(unknown)
    assert problem is not None and "does not assign once, at the top level" in problem
