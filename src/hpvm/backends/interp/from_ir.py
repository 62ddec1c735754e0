"""Leaves in the leaf IR's dialect, run from their IR (issue 25: back ends as emitters).

The interpreter runs a leaf that its leaf IR covers — Python the user wrote or generated
from a foreign file (HBIR), barrier leaves and leaves with a ``raise`` included — as Python
written from that IR
(``ir/leafir/pyemit.OperatorCallsPython``): every operator a call of the Numba-typed
operation of ``arith.py``, every conversion the IR makes explicit (an assignment to a wider
variable, a store into an array of another element type, a return) a converter chosen once
from the IR's static types (``arith.converter``), each constant in the form its type is
kept in. The code is compiled with the leaf's own file and lines (``ir/leafir/pycompile``),
so the checks that read the running frame — bounds, writes outside ``outs``, data races,
exceptions — name the lines the user wrote, as before. What the IR does not decide stays
dynamic: the operations still pick their plan by the operands' Python types (a value of
one static type may be held as ``int`` or as a NumPy scalar), and arrays are checked as
they are accessed. No syntax tree of the leaf is read here.

Three statements are written the interpreter's way (``_InterpreterBlocks``):

* a barrier is ``yield <its line>``: the leaf becomes the generator function the executor's
  lock-step driver advances phase by phase (``executor._run_lockstep``, ``barriers.py``);
* a ``raise`` keeps the IR's exception text (opaque: an exception is not a typed value),
  its operators lowered to the same operations as the syntax-tree path lowers them
  (``ir/oplowering.lower_expression``), and the code is bound to the names of the leaf's
  module or closure that the text reads, no others (read when the code is made);
* (every statement) a generated body's IR has the foreign file's lines, so its code is
  compiled at the generated text's lines (``GeneratedBody.generated_line``), which the
  executor's messages map back to the foreign file as they map the syntax-tree path's.

Leaves the IR does not cover (``LeafIRUnsupported``: slices, helper calls, tuple values...,
barrier leaves among them), leaves with a variable named ``np``, ``math`` or ``hpvm`` and
context-taking clones run as before, their syntax tree lowered below the back ends
(``arith_rewrite.py``, ``barriers.py``, ``ir/oplowering.py``, ``ir/barrier_yield.py``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import HPVMError
from ...ir.bodies import PYTHON_KINDS, GeneratedBody
from ...ir.graph import LeafFunction
from ...ir.leafinfo import leaf_namespace
from ...ir.leafir import ops
from ...ir.leafir.build import leaf_ir
from ...ir.leafir.pycompile import compile_emitted
from ...ir.leafir.pyemit import BlockWriter, OperatorCallsPython, emit_problem, emit_python, namespace
from ...ir.oplowering import lower_expression
from ...ir.types import ScalarType, parse_type
from . import arith
from .arith_rewrite import CALLS

_MODULES: dict[str, Any] = {"math": math, "np": np, "": builtins}


def ir_function(fn: LeafFunction) -> Callable[..., Any] | None:
    """``fn`` as a function computed from its leaf IR with Numba's arithmetic — for a leaf
    that calls ``hpvm.barrier()`` a generator function yielding each barrier's line, as the
    executor's lock-step driver expects — or ``None`` when it runs from its syntax tree
    instead (the module docstring says which)."""
    if fn.body_kind not in PYTHON_KINDS or not hasattr(fn.pyfunc, "__code__"):
        return None
    body = fn.body
    if isinstance(body, GeneratedBody) and body.context is not None:  # a clone: the passes' only
        return None
    try:
        ir = leaf_ir(fn)
    except HPVMError:  # outside the dialect (or refused): the syntax-tree path runs it
        return None
    if emit_problem(ir) is not None:
        return None
    # A generated body's IR has the foreign file's lines: its code runs at the generated
    # text's lines, as the syntax-tree path's does (messages map them back: LeafFunction.locate).
    code_line = body.generated_line if isinstance(body, GeneratedBody) else _same_line
    writer = OperatorCallsPython()
    variables = {p.name for p in ir.params} | {n for n, _ in ir.locals}
    blocks = _InterpreterBlocks(writer, fn, variables, code_line)
    text, lines = emit_python(ir, writer=writer, blocks=blocks)
    lines = tuple(code_line(line) for line in lines)
    with np.errstate(all="ignore"):  # constants are computed as the leaf runs: quietly
        names = {name: _operation(key) for name, key in writer.needed.items()}
    return compile_emitted(text, lines, fn.code_file, ir.name, {**blocks.names, **namespace(), **names})


class _InterpreterBlocks(BlockWriter):
    """The interpreter's statements: a barrier is ``yield <its line>`` (the leaf becomes the
    generator the lock-step driver advances phase by phase, ``executor._run_lockstep``), and
    a ``raise`` computes its exception as the syntax-tree path does, its operators lowered to
    Numba's operations (``ir/oplowering.lower_expression``). ``names``: what the raises read
    — the operations and the leaf's module names the exception text reads, no more."""

    def __init__(
        self,
        text: OperatorCallsPython,
        fn: LeafFunction,
        variables: set[str],
        code_line: Callable[[int], int],
    ):
        super().__init__(text)
        self.fn, self.variables, self.code_line = fn, variables, code_line
        self.names: dict[str, Any] = {}
        self._env: dict[str, Any] | None = None

    def stmt(self, stmt: ops.Stmt, depth: int, out: list[tuple[str, int]]) -> None:
        pad = "    " * depth
        if isinstance(stmt, ops.ExprStmt) and _is_barrier(stmt.value):
            out.append((f"{pad}yield {self.code_line(stmt.line)}", stmt.line))
        elif isinstance(stmt, ops.Raise) and stmt.exc is not None:
            if self._env is None:
                self._env = leaf_namespace(self.fn)
            text, names = lower_expression(stmt.exc, self._env, self.variables, CALLS)
            self.names.update(names)
            out.append((f"{pad}raise {text}", stmt.line))
        else:
            super().stmt(stmt, depth, out)


def _same_line(line: int) -> int:
    return line


def _is_barrier(e: ops.Expr) -> bool:
    return isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "barrier"


def _operation(key: tuple[Any, ...]) -> Any:
    """What a name of the emitted code stands for (``OperatorCallsPython.needed``)."""
    kind = key[0]
    if kind == "value":
        return _evaluate(key[1])
    if kind == "binary":
        return arith.BINARY[key[1]]
    if kind == "unary":
        return arith.UNARY[key[1]]
    if kind == "cast":
        src, dst = (parse_type(k) for k in key[1:])
        assert isinstance(src, ScalarType) and isinstance(dst, ScalarType)
        return arith.converter(src.dtype, dst.dtype)
    module, _, name = key[1].rpartition(".")
    function = getattr(_MODULES[module], name)
    return arith.FUNCTIONS.get(function, function)


def _evaluate(e: ops.Expr) -> Any:
    """A constant expression's value, computed by the operations the code would call."""
    if isinstance(e, ops.Const):
        t = e.type
        return arith.to_type(t.dtype)(e.value) if isinstance(t, ScalarType) else e.value
    if isinstance(e, ops.Binary):
        return arith.BINARY[e.op](_evaluate(e.left), _evaluate(e.right))
    if isinstance(e, ops.Unary):
        return arith.UNARY[e.op](_evaluate(e.operand))
    assert isinstance(e, ops.Cast) and isinstance(e.value.type, ScalarType) and isinstance(e.type, ScalarType)
    return arith.converter(e.value.type.dtype, e.type.dtype)(_evaluate(e.value))


__all__ = ["ir_function"]
