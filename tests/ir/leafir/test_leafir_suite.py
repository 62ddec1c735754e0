"""Every Python leaf of the shared programs either builds, verifies and reads back from its
text, or raises ``LeafIRUnsupported``; the unsupported ones are listed, so coverage is
visible and a change in it shows up here."""

from __future__ import annotations

import re

import pytest

import leaf_suite
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir
from hpvm.ir.leafir.parser import parse_leaf_ir
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import verify_leaf

#: Leaves outside today's dialect: (origin, leaf) -> what the refusal names.
UNSUPPORTED: dict[tuple[str, str], str] = {}


LEAVES = leaf_suite.LEAVES


def test_the_suite_has_leaves_of_every_origin() -> None:
    origins = {origin for origin, _ in LEAVES}
    assert {"programs", "gpu_convention", "histogram", "reduction", "matmul.hbir"} <= origins
    assert len(LEAVES) > 80


@pytest.mark.parametrize("key", sorted(LEAVES), ids=lambda k: f"{k[0]}:{k[1]}")
def test_leaf_builds_verifies_and_reads_back_or_is_listed(key: tuple[str, str]) -> None:
    fn = LEAVES[key]
    if key in UNSUPPORTED:
        with pytest.raises(
            LeafIRUnsupported, match=rf"leaf '{fn.name}' \(.+:\d+\): .*{re.escape(UNSUPPORTED[key])}"
        ):
            leaf_ir(fn)
        return
    ir = leaf_ir(fn)
    verify_leaf(ir)
    assert parse_leaf_ir(print_leaf(ir)) == ir
    assert leaf_ir(fn) is ir  # built once


def test_the_unsupported_list_names_only_leaves_of_the_suite() -> None:
    assert set(UNSUPPORTED) <= set(LEAVES)
