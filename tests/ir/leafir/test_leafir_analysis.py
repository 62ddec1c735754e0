"""Analyses as cached passes: computed on demand, once per leaf IR, dropped when a pass
changes the leaf; the atomic-only-arrays analysis, and the cpu back end's privatization
reading it with the same answers as its syntax-tree reading."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

import example_modules
import gpu_convention
import hpvm
import programs
from hpvm.backends.cpu.privatize import _atomic_only_params_ast, atomic_only_params
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops
from hpvm.ir.leafir.analyses import AnalysisManager, AtomicOnlyArrays
from hpvm.passes.clone_leaves import clone_of


@hpvm.leaf(ins=("values",), outs=("bins", "hits", "peak", "table"))
def mixed_uses(
    values: hpvm.i64[:], bins: hpvm.i32[:], hits: hpvm.i64[:], peak: hpvm.f64[:], table: hpvm.i64[:]
) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(bins, values[i] % bins.shape[0], 1)  # only atomics and its shape: kept
    hpvm.atomic_add(hits, 0, 1)
    hpvm.atomic_sub(hits, 1, len(hits))  # two operations: kept, with both
    old = hpvm.atomic_max(peak, 0, 1.5)  # the old value is used: left out
    table[0] = old  # indexed: left out
    hpvm.atomic_or(table, 1, 2)


def test_atomic_only_arrays() -> None:
    manager = AnalysisManager()
    found = manager.get(AtomicOnlyArrays(), leaf_ir(mixed_uses))
    assert found == {"bins": frozenset({"add"}), "hits": frozenset({"add", "sub"})}


@dataclass(frozen=True)
class _DropFirst:
    """A leaf pass that removes the first statement (changed), or returns the IR itself
    when the body is empty (unchanged)."""

    name: str = "drop-first"

    def apply(self, ir: ops.LeafIR) -> ops.LeafIR:
        return replace(ir, body=ir.body[1:]) if ir.body else ir


def test_computed_once_per_leaf_ir_and_invalidated_by_a_changing_pass() -> None:
    manager = AnalysisManager()
    analysis = AtomicOnlyArrays()
    ir = leaf_ir(mixed_uses)
    ir.analyses.clear()  # (other tests share the cached leaf IR)
    first = manager.get(analysis, ir)
    assert manager.get(analysis, ir) is first and manager.computed[analysis.name] == 1
    changed = manager.run_pass(_DropFirst(), ir)
    assert changed is not ir and ir.analyses == {}  # the old IR's results are dropped
    manager.get(analysis, changed)
    assert manager.computed[analysis.name] == 2  # the changed leaf is analysed again
    empty = replace(ir, body=())
    manager.get(analysis, empty)
    assert manager.run_pass(_DropFirst(), empty) is empty and analysis in empty.analyses  # unchanged: kept
    assert manager.computed[analysis.name] == 3


def _leaves_with_atomics() -> list[LeafFunction]:
    leaves: dict[int, LeafFunction] = {}
    candidates = [f for p in programs.PROGRAMS for f in functions(p.root)]
    candidates += list(vars(gpu_convention).values()) + [example_modules.load("histogram").bin_value]
    candidates.append(mixed_uses)
    for fn in candidates:
        if isinstance(fn, LeafFunction) and fn.body_kind == "python" and "atomic_" in fn.source:
            leaves[id(fn)] = fn
    return list(leaves.values())


@pytest.mark.parametrize("leaf", _leaves_with_atomics(), ids=lambda f: f.name)
def test_privatization_reads_the_analysis_with_the_syntax_trees_answers(leaf: LeafFunction) -> None:
    clone = clone_of(leaf, "cpu")
    leaf_ir(leaf)  # in the dialect: the analysis answers, not the fallback
    assert atomic_only_params(clone) == _atomic_only_params_ast(clone)


def test_a_leaf_outside_the_dialect_keeps_the_syntax_tree_reading() -> None:
    @hpvm.leaf(outs=("bins",))
    def sliced(bins: hpvm.i64[:]) -> None:
        hpvm.atomic_add(bins, 0, 1)
        bins.dtype  # noqa: B018  (outside the dialect; the syntax tree allows it)

    with pytest.raises(LeafIRUnsupported):
        leaf_ir(sliced)
    assert atomic_only_params(clone_of(sliced, "cpu")) == {0: "add"}
