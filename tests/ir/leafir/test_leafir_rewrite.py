"""``rewrite.rewrite_stmts``, the walk of the statement-level leaf passes (privatization,
private arrays): on every suite leaf in the dialect, keeping every statement gives the same
IR, and a rule replacing each kind of statement reaches every such statement at any depth
exactly once (its replacements are not visited again)."""

from __future__ import annotations

import pytest

import leaf_suite
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops
from hpvm.ir.leafir.rewrite import rewrite_stmts

IRS = {}
for _key, _fn in sorted(leaf_suite.LEAVES.items()):
    try:
        IRS[f"{_key[0]}:{_key[1]}"] = leaf_ir(_fn)
    except LeafIRUnsupported:
        pass


@pytest.mark.parametrize("key", sorted(IRS))
def test_keeping_every_statement_gives_the_same_ir(key: str) -> None:
    ir = IRS[key]
    assert rewrite_stmts(ir.body, lambda s: None) == ir.body


@pytest.mark.parametrize("key", sorted(IRS))
def test_a_rule_reaches_every_statement_of_its_kind_once(key: str) -> None:
    ir = IRS[key]
    stores = [s for s in ops.walk_stmts(ir.body) if isinstance(s, ops.Store)]
    seen: list[ops.Stmt] = []

    def twice(s: ops.Stmt) -> list[ops.Stmt] | None:
        if not isinstance(s, ops.Store):
            return None
        seen.append(s)
        return [s, s]  # (a replacement visited again would be counted again)

    body = rewrite_stmts(ir.body, twice)
    assert len(seen) == len(stores)
    assert sum(isinstance(s, ops.Store) for s in ops.walk_stmts(body)) == 2 * len(stores)
