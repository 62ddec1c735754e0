"""Leaves outside the leaf IR's dialect, run with Numba's arithmetic (``arith.py``).

The syntax-tree rewrite itself is ``ir/oplowering.py`` (below the back ends: no back end
reads Python, issue 25); here it is given the interpreter's table of Numba-typed
operations. Leaves in the dialect (barrier leaves, ``raise``, generated bodies included)
do not come here: the interpreter runs Python written from their leaf IR (``from_ir.py``).
``rewrite_arithmetic`` keeps its name for the modules that call it (``barriers.py``, the
``cuda`` simulator).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir.bodies import PYTHON_KINDS
from ...ir.graph import LeafFunction
from ...ir.leafinfo import leaf_namespace, parse_leaf
from ...ir.oplowering import OperatorCalls, lower_operators
from ...ir.recompile import recompile
from . import arith

#: The interpreter's operations: Numba's types (``arith.py``).
CALLS = OperatorCalls(
    arith.BINARY, arith.IN_PLACE, arith.UNARY, arith.setitem, arith.augitem, arith.FUNCTIONS
)


def rewrite_arithmetic(func: Any, env: dict[str, Any], quiet: bool = False) -> dict[str, Any]:
    """Rewrite ``func`` (a leaf's ``def``, a syntax tree) in place to compute with Numba's
    types (``ir/oplowering.lower_operators`` with ``CALLS``); the names to bind."""
    return lower_operators(func, env, CALLS, quiet)


def typed_function(fn: LeafFunction) -> Callable[..., Any]:
    """The leaf's function with its arithmetic rewritten to Numba's types, or the leaf's own
    function when there is no Python source to rewrite (a tensor body runs NumPy's reference
    operations; a function whose source cannot be read runs as written)."""
    pyfunc = fn.pyfunc
    if fn.body_kind not in PYTHON_KINDS or not hasattr(pyfunc, "__code__"):
        return pyfunc
    func = parse_leaf(fn)
    if func is None:
        return pyfunc
    names = rewrite_arithmetic(func, leaf_namespace(fn))
    return recompile(fn, func, names)
