"""The leaf IR's text form: Python-like, one statement per line, each with its source line.

Why this shape: a reader sees the leaf they wrote, with what the IR adds made visible — the
type of every local (``var`` lines), every implicit conversion (``f32(...)``), each
statement's line (``145:``); a ``return`` ends with ``;``. ``leafir/parser.py`` reads it
back: ``parse(print(ir)) == ir``.

Expression types are not written: the parser re-derives them with the same constructors
(``leafir/rules.py``). A constant of a literal's own type (non-negative ``i64`` and finite
``f64``, ``True``/``False``) is written as Python writes it; any other is ``#<type>(value)``
(``#f32(0.25)``, ``#i64(-3)``, ``#f64(nan)``). A local array is ``np.zeros<f32>(n, 4)``.
Compound operands are parenthesized, so no precedence rules are needed to read the text back.

    leaf saxpy(x: f32[:], y: f32[:], a: f32) -> () at "programs.py":142 {
      var i: i64
      144: i = hpvm.get_node_instance_id_x(hpvm.get_node())
      145: y[i] = (a * x[i]) + y[i]
    }
"""

from __future__ import annotations

import json
import math

from . import ops

INDENT = "  "


def print_leaf(ir: ops.LeafIR) -> str:
    """The text form of ``ir``, ending with a newline."""
    params = ", ".join(str(p) for p in ir.params)  # with its data layout, if any
    outputs = ", ".join(str(t) for t in ir.outputs)
    lines = [f"leaf {ir.name}({params}) -> ({outputs}) at {json.dumps(ir.file)}:{ir.line} {{"]
    lines += [f"{INDENT}var {name}: {t}" for name, t in ir.locals]
    _block(ir.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _block(block: ops.Block, depth: int, lines: list[str]) -> None:
    pad = INDENT * depth
    for stmt in block:
        head = f"{pad}{stmt.line}: "
        if isinstance(stmt, ops.Assign):
            lines.append(f"{head}{stmt.target.name} = {expr(stmt.value)}")
        elif isinstance(stmt, ops.Store):
            lines.append(f"{head}{_atom(stmt.array)}[{_list(stmt.indices)}] = {expr(stmt.value)}")
        elif isinstance(stmt, ops.For):
            bounds = _list((stmt.start, stmt.stop, stmt.step))
            lines.append(f"{head}for {stmt.var.name} in range({bounds}) {{")
            _block(stmt.body, depth + 1, lines)
            lines.append(f"{pad}}}")
        elif isinstance(stmt, ops.While):
            lines.append(f"{head}while {expr(stmt.test)} {{")
            _block(stmt.body, depth + 1, lines)
            lines.append(f"{pad}}}")
        elif isinstance(stmt, ops.If):
            lines.append(f"{head}if {expr(stmt.test)} {{")
            _block(stmt.body, depth + 1, lines)
            lines.append(f"{pad}}} else {{")
            _block(stmt.orelse, depth + 1, lines)
            lines.append(f"{pad}}}")
        elif isinstance(stmt, ops.Return):
            lines.append(f"{head}return {_list(stmt.values)}".rstrip() + ";")
        elif isinstance(stmt, ops.Raise):
            lines.append(f"{head}raise" + ("" if stmt.exc is None else f" {json.dumps(stmt.exc)}"))
        elif isinstance(stmt, ops.Break):
            lines.append(f"{head}break")
        elif isinstance(stmt, ops.Continue):
            lines.append(f"{head}continue")
        else:
            lines.append(f"{head}{expr(stmt.value)}")


def _list(exprs: tuple[ops.Expr, ...]) -> str:
    return ", ".join(expr(e) for e in exprs)


def constant(c: ops.Const) -> str:
    """A constant as the text writes it (see the module docstring)."""
    v, name = c.value, str(c.type)
    if name == "bool":
        return repr(bool(v))
    if name == "i64" and isinstance(v, int) and v >= 0:
        return str(v)
    if name == "f64" and math.isfinite(v) and math.copysign(1.0, v) > 0:
        return repr(float(v))
    text = repr(float(v)) if c.type.is_float else str(int(v))
    return f"#{name}({text})"


def _atom(e: ops.Expr) -> str:
    """``e`` as an operand: compound expressions in parentheses."""
    text = expr(e)
    compound = isinstance(e, (ops.Unary, ops.Binary, ops.Compare, ops.BoolOp, ops.IfExp))
    return f"({text})" if compound else text


def expr(e: ops.Expr) -> str:
    """An expression as the text writes it (operands parenthesized when compound)."""
    if isinstance(e, ops.Const):
        return constant(e)
    if isinstance(e, ops.Var):
        return e.name
    if isinstance(e, ops.Unary):
        sep = " " if e.op == "not" else ""
        return f"{e.op}{sep}{_atom(e.operand)}"
    if isinstance(e, ops.Binary):
        return f"{_atom(e.left)} {e.op} {_atom(e.right)}"
    if isinstance(e, ops.Compare):
        parts = [_atom(e.operands[0])]
        for op, operand in zip(e.ops, e.operands[1:]):
            parts += [op, _atom(operand)]
        return " ".join(parts)
    if isinstance(e, ops.BoolOp):
        return f" {e.op} ".join(_atom(v) for v in e.values)
    if isinstance(e, ops.IfExp):
        return f"{_atom(e.body)} if {_atom(e.test)} else {_atom(e.orelse)}"
    if isinstance(e, ops.Load):
        return f"{_atom(e.array)}[{_list(e.indices)}]"
    if isinstance(e, ops.Shape):
        return f"{_atom(e.array)}.shape[{e.axis}]"
    if isinstance(e, ops.Size):
        return f"{_atom(e.array)}.size"
    if isinstance(e, ops.Retype):
        return f"{_atom(e.array)}.view({e.type.elem})"
    if isinstance(e, ops.Cast):
        return f"{e.type}({expr(e.value)})"
    if isinstance(e, ops.Alloc):
        return f"np.{e.fill}<{e.type.elem}>({_list(e.shape)})"
    if isinstance(e, ops.Call):
        return f"{e.func}({_list(e.args)})"
    if isinstance(e, ops.IntrinsicOp):
        return f"{e.intrinsic.spelled}({_list(e.args)})"
    raise TypeError(f"not a leaf IR expression: {e!r}")


__all__ = ["constant", "expr", "print_leaf"]
