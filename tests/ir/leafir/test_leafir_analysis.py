"""Analyses as cached passes: computed on demand, once per leaf IR, dropped when a pass
changes the leaf; what a leaf does to its arrays (effects, purity, atomic-only arrays).
The back ends' answers on every suite leaf: ``test_analyses_answers.py``."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

import hpvm
from hpvm.backends.cpu.privatize import atomic_only_params
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops
from hpvm.ir.leafir.analyses import (
    AnalysisManager,
    ArrayEffects,
    ArrayUse,
    AtomicOnlyArrays,
    IndexFacts,
    OwnershipByInstance,
    Uniformity,
    effects,
    ownership,
)
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


def test_a_leaf_outside_the_dialect_is_not_privatized() -> None:
    @hpvm.leaf(outs=("bins",))
    def sliced(bins: hpvm.i64[:]) -> None:
        hpvm.atomic_add(bins, 0, 1)
        bins.dtype  # noqa: B018  (outside the dialect)

    with pytest.raises(LeafIRUnsupported):
        leaf_ir(sliced)
    assert atomic_only_params(clone_of(sliced, "cpu")) == {}  # the conservative answer


def test_every_analysis_is_computed_once_and_recomputed_after_a_changing_pass() -> None:
    manager = AnalysisManager()
    analyses = [ArrayEffects(), AtomicOnlyArrays(), IndexFacts(), Uniformity(), OwnershipByInstance()]
    ir = replace(leaf_ir(mixed_uses))  # (a copy: a fresh cache)
    first = [manager.get(a, ir) for a in analyses]
    again = [manager.get(a, ir) for a in analyses]
    assert all(x is y for x, y in zip(first, again))
    # ownership and uniformity asked for the index facts and the effects: still once each
    assert set(manager.computed.values()) == {1}
    changed = manager.run_pass(_DropFirst(), ir)
    assert ir.analyses == {}
    for a in analyses:
        manager.get(a, changed)
    assert set(manager.computed.values()) == {2}


def test_a_parametrized_analysis_caches_one_result_per_parameter() -> None:
    manager = AnalysisManager()
    ir = replace(leaf_ir(mixed_uses))
    manager.get(OwnershipByInstance(frozenset({"bins"})), ir)
    manager.get(OwnershipByInstance(frozenset({"bins"})), ir)
    manager.get(OwnershipByInstance(frozenset()), ir)
    assert manager.computed["ownership-by-instance"] == 2


@hpvm.leaf(ins=("m", "buffer", "unused"), outs=("out", "buffer"))
def views(m: hpvm.f64[:, :], buffer: hpvm.u8[:], out: hpvm.f64[:], unused: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    row = m[i]
    shared = buffer.view(hpvm.f64)
    shared[i] = row[0]
    out[i] = shared[i] + unused.shape[0]


@hpvm.leaf(ins=("x",), outs=("y",))
def pure_reader(x: hpvm.f64[:], y: hpvm.f64[:]) -> hpvm.f64:
    tmp = np.zeros(4, np.float64)
    tmp[0] = x[0]
    return tmp[0]


def test_effects_follow_views_and_tell_purity() -> None:
    found = effects(leaf_ir(views))
    assert found.arrays == {
        "m": ArrayUse(read=True),
        "buffer": ArrayUse(read=True, written=True),
        "out": ArrayUse(written=True),
        "unused": ArrayUse(),
    }
    assert not found.pure
    assert effects(leaf_ir(pure_reader)).pure  # (stores only into its own local array)
    mixed = effects(leaf_ir(mixed_uses))
    assert mixed.arrays["hits"].atomics == {"add", "sub"} and not mixed.pure


def test_a_changed_leaf_source_drops_its_ir_and_every_analysis_of_it() -> None:
    """The program-level invalidation: program passes replace leaves (a new leaf, a new IR);
    a leaf whose source changes in place (``set_source``) forgets its IR with its other facts."""

    @hpvm.leaf(ins=("x",), outs=("y",))
    def shifted(x: hpvm.i64[:], y: hpvm.i64[:]) -> None:
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        y[i] = x[i + 1]

    before = leaf_ir(shifted)
    assert ownership(before, frozenset({"y"})).rows == {"x": (1, 1), "y": (0, 0)}
    shifted.set_source(shifted.source.replace("x[i + 1]", "x[i + 2]"), shifted.source_line)
    after = leaf_ir(shifted)
    assert after is not before
    assert ownership(after, frozenset({"y"})).rows == {"x": (2, 2), "y": (0, 0)}
