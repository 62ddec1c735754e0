"""Barriers in the interpreter: leaves become generators that pause at each barrier.

A leaf that calls ``hpvm.barrier()`` runs as a generator function with every barrier
statement ``yield <line>``: written from its leaf IR when the dialect covers it
(``from_ir.py``), else — here — its syntax tree recompiled with each barrier statement
replaced (``ir/barrier_yield.py``). The interpreter then runs all instances of the
leaf within one parent instance in lock step: each phase advances every instance to its
next barrier. That gives barriers their real semantics deterministically, and lets the
interpreter catch instances that reach different barriers, or that finish while others wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir.barrier_yield import yielding_def
from ...ir.graph import LeafFunction
from ...ir.leafinfo import leaf_namespace
from .arith_rewrite import rewrite_arithmetic
from .recompile import recompile


def barrier_generator(fn: LeafFunction) -> Callable[..., Any]:
    """``fn`` as a generator function that yields the line of each barrier it reaches, its
    arithmetic rewritten to Numba's types as every leaf's is (``arith_rewrite.py``)."""
    func = yielding_def(fn)
    names = rewrite_arithmetic(func, leaf_namespace(fn))
    return recompile(fn, func, names)
