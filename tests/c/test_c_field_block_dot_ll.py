"""A block dot product as clang 9 -O1 writes an HPVM-C program with HPVM's ``hpvm.h``
(``ll/block_dot_clang9_O1.ll``, before GenHPVM): typed pointers, ``__hpvm__getNode()`` and
``__hpvm__barrier()`` unprototyped and called through ``(...)``, an allocation node's
``__hpvm__malloc`` scratch returned as a pointer and its size, the reduction's rounds a
``phi`` loop of ``sdiv`` halvings with a barrier in each, ``main`` checking every block.

What it runs through: the LLVM 9 text is upgraded and goes through GenHPVM; the barrier
leaf runs as work-item loops on ``cpu`` (its clone optimized, its group runner compiled by
MCJIT); checked mode rewrites it. All of that is kept in hpvm's cache, so a later process
whose builders all raise runs it from what the first stored. Exact on every target.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import (
    STORED_FOLDERS,
    cache_with_the_suites_toolchain,
    needs_clang,
    needs_llvm_leaves,
    stored_runs,
)

import hpvm.backends.cpu as cpu
from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "ll" / "block_dot_clang9_O1.ll"
SAID = re.compile(r"block_dot: total (-?\d+), (\d+) wrong")


def _total() -> int:
    """main's data (a[i] = i % 13 - 6, b[i] = i % 7 - 3 over 256 elements), in NumPy."""
    i = np.arange(256, dtype=np.int64)
    return int(((i % 13 - 6) * (i % 7 - 3)).sum())


@pytest.fixture(scope="module")
def program():  # type: ignore[no-untyped-def]
    return c.compile(PROGRAM)


@pytest.mark.parametrize(("target", "checked"), [("cpu", False), ("cpu", True), ("interp", False)])
def test_every_block_sum_is_the_hosts(program, capfd, target, checked):
    previous = cpu.configure(checked=checked)
    try:
        assert program.run([], target=target) == 0
    finally:
        cpu.configure(**previous)
    said = SAID.search(capfd.readouterr().out)
    assert said is not None and said.groups() == (str(_total()), "0")


def test_the_reduction_runs_as_work_item_loops(program):
    from hpvm.backends.llvm_native.native import native_leaf
    from hpvm.ir.graph import LeafFunction, functions

    leaves = {f.name: f for root in program.roots for f in functions(root) if isinstance(f, LeafFunction)}
    assert native_leaf(leaves["block_dot"]).barrier_lowering == "workitem"


def test_a_later_process_builds_nothing_again(tmp_path):
    cache = cache_with_the_suites_toolchain(tmp_path / "cache")
    first = stored_runs("first", [PROGRAM], [], cache)
    for folder in STORED_FOLDERS:
        assert list((cache / folder).iterdir()), folder
    later = stored_runs("later", [PROGRAM], [], cache)
    said = SAID.findall(first + later)
    assert said == [(str(_total()), "0")] * 4, first + later
