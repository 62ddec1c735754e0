"""A leaf that raises a Python exception for some inputs, and its one-node root: what the
error tests of several back-end paths run (``tests/cpu/test_cpu_exceptions.py``, a run on
one thread, the native call) to compare the words of an error. ``MARKS.at("picky")`` is
the ``raise``'s ``file:line``, as messages write it."""

from __future__ import annotations

import hpvm
from markers import SourceMarkers

MARKS = SourceMarkers(__file__)


@hpvm.leaf(ins=("a",))
def picky(a: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if a[i] < 0:
        raise ValueError("negative input")  # @picky


@hpvm.internal()
def picky_root(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(node, 0, 0)
