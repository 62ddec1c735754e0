"""Leaf IR expressions written as text: what the text form (``printer.py``) and the Python
that ``pyemit.py`` emits share.

Why one class: both writers walk the same expressions the same way — operands in
parentheses when compound, one spelling per operator — and differ only in how a few pieces
look (a constant, a scalar type, an allocation, a call, an intrinsic, a context read). A subclass says how
those look; the walk is written once.
"""

from __future__ import annotations

import math

from . import ops

_COMPOUND = (ops.Unary, ops.Binary, ops.Compare, ops.BoolOp, ops.IfExp)


def plain_constant(c: ops.Const) -> str | None:
    """A constant both writers spell as Python does — a bool, a non-negative ``i64``, a
    finite non-negative ``f64`` — or ``None`` when its type must be written out."""
    v, name = c.value, str(c.type)
    if name == "bool":
        return repr(bool(v))
    if name == "i64" and isinstance(v, int) and v >= 0:
        return str(v)
    if name == "f64" and math.isfinite(v) and math.copysign(1.0, v) > 0:
        return repr(float(v))
    return None


class ExprText:
    """Writes expressions; subclasses override the pieces that differ."""

    def constant(self, c: ops.Const) -> str:
        raise NotImplementedError

    def dtype(self, t: ops.ScalarType) -> str:
        return str(t)

    def alloc(self, e: ops.Alloc) -> str:
        raise NotImplementedError

    def call(self, e: ops.Call) -> str:
        raise NotImplementedError

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        raise NotImplementedError

    def ctx_read(self, e: ops.CtxRead) -> str:
        raise NotImplementedError

    def retype(self, e: ops.Retype) -> str:
        """``a.view(dtype)``; a back end may call a cheaper function of its own."""
        return f"{self.atom(e.array)}.view({self.dtype(e.type.elem)})"

    def list(self, exprs: tuple[ops.Expr, ...]) -> str:
        return ", ".join(self.expr(e) for e in exprs)

    def atom(self, e: ops.Expr) -> str:
        """``e`` as an operand: compound expressions in parentheses."""
        text = self.expr(e)
        return f"({text})" if isinstance(e, _COMPOUND) else text

    def expr(self, e: ops.Expr) -> str:
        atom = self.atom
        if isinstance(e, ops.Const):
            return self.constant(e)
        if isinstance(e, ops.Var):
            return e.name
        if isinstance(e, ops.Unary):
            sep = " " if e.op == "not" else ""
            return f"{e.op}{sep}{atom(e.operand)}"
        if isinstance(e, ops.Binary):
            return f"{atom(e.left)} {e.op} {atom(e.right)}"
        if isinstance(e, ops.Compare):
            parts = [atom(e.operands[0])]
            for op, operand in zip(e.ops, e.operands[1:]):
                parts += [op, atom(operand)]
            return " ".join(parts)
        if isinstance(e, ops.BoolOp):
            return f" {e.op} ".join(atom(v) for v in e.values)
        if isinstance(e, ops.IfExp):
            return f"{atom(e.body)} if {atom(e.test)} else {atom(e.orelse)}"
        if isinstance(e, ops.Load):
            return f"{atom(e.array)}[{self.list(e.indices)}]"
        if isinstance(e, ops.Shape):
            return f"{atom(e.array)}.shape[{e.axis}]"
        if isinstance(e, ops.Size):
            return f"{atom(e.array)}.size"
        if isinstance(e, ops.Retype):
            return self.retype(e)
        if isinstance(e, ops.Cast):
            return f"{self.dtype(e.type)}({self.expr(e.value)})"
        if isinstance(e, ops.Alloc):
            return self.alloc(e)
        if isinstance(e, ops.Call):
            return self.call(e)
        if isinstance(e, ops.IntrinsicOp):
            return self.intrinsic(e)
        if isinstance(e, ops.CtxRead):
            return self.ctx_read(e)
        raise TypeError(f"not a leaf IR expression: {e!r}")
