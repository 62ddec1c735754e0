"""Shared by the barrier-leaf tests (tests/llvm, tests/c): which lowering a barrier leaf's
clone took (``NativeLeaf.barrier_lowering``), and a fixture running a test on both."""

from __future__ import annotations

from typing import Any

import pytest

from hpvm.backends.llvm_native import native
from hpvm.ir.graph import LeafFunction, functions


@pytest.fixture(params=["workitem", "coroutine"])
def lowering(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test with barrier leaves as work-item loops where they allow it, then with work-item
    loops off (every barrier leaf a coroutine)."""
    monkeypatch.setattr(native, "WORKITEM_LOOPS", request.param == "workitem")
    return str(request.param)


def barrier_leaf(root: Any) -> native.NativeLeaf:
    """The clone of the one leaf under ``root`` that reaches a barrier."""
    leaves = [native.native_leaf(f) for f in functions(root) if isinstance(f, LeafFunction)]
    (found,) = [n for n in leaves if n.uses_barrier]
    return found
