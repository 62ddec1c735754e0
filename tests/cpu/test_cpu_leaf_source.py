"""Leaf source in any shape Python allows compiles: docstrings and statements that span lines
(the clone read back from the IR maps its lines to the leaf's file one by one)."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import needs_backend
from running import run_tracked

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@hpvm.leaf(ins=("a",), outs=("b",))
def documented(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    """Double each element.

    A docstring of several lines: the generated clone has none of them.
    """
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    # fmt: off
    b[i] = (
        a[i]
        + a[i]
    )  # a statement over several lines
    # fmt: on


@hpvm.internal(ins=("a",), outs=("b",))
def documented_root(a: hpvm.f32[:], b: hpvm.f32[:]):
    node = hpvm.create_node_1d(documented, a.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@pytest.mark.parametrize("target", [pytest.param("cpu"), pytest.param("cuda", marks=needs_backend("cuda"))])
def test_a_leaf_with_a_docstring_and_a_multi_line_statement_runs(target):
    a = np.arange(6, dtype=np.float32)
    b = np.zeros(6, np.float32)
    run_tracked(documented_root, (a, b), target)
    hpvm.request_memory(b)
    np.testing.assert_array_equal(b, 2 * a)
