"""The leaf IR's text form: Python-like, one statement per line, each with its source line.

Why this shape: a reader sees the leaf they wrote, with what the IR adds made visible — the
type of every local (``var`` lines), every implicit conversion (``f32(...)``), each
statement's line (``145:``); a ``return`` ends with ``;``. A lowered leaf's context reads
(``CtxRead``) are ``@ctx[<level>].<field>`` (``@ctx[1].count_x``: the parent's number of
instances along x). ``leafir/parser.py`` reads it
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

from ..instance_context import FIELD_NAMES
from . import ops
from .exprtext import ExprText, plain_constant

INDENT = "  "


def print_leaf(ir: ops.LeafIR) -> str:
    """The text form of ``ir``, ending with a newline."""
    params = ", ".join(str(p) for p in ir.params)  # with its data layout, if any
    outputs = ", ".join(str(t) for t in ir.outputs)
    lines = [f"leaf {ir.name}({params}) -> ({outputs}) at {json.dumps(ir.file)}:{ir.line} {{"]
    lines += [f"{INDENT}var {name}: {t}" for name, t in ir.locals]
    block_lines(ir.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def compound_head(stmt: ops.For | ops.While | ops.If) -> str:
    """The head of a compound statement, without its line and its ``{``: ``while x > 0``."""
    if isinstance(stmt, ops.For):
        return f"for {stmt.var.name} in range({_list((stmt.start, stmt.stop, stmt.step))})"
    return f"{'while' if isinstance(stmt, ops.While) else 'if'} {expr(stmt.test)}"


def block_lines(block: ops.Block, depth: int, lines: list[str]) -> None:
    """Appends the text of ``block``'s statements, indented ``depth`` levels, to ``lines``."""
    pad = INDENT * depth
    for stmt in block:
        head = f"{pad}{stmt.line}: "
        if isinstance(stmt, ops.Assign):
            lines.append(f"{head}{stmt.target.name} = {expr(stmt.value)}")
        elif isinstance(stmt, ops.Store):
            lines.append(f"{head}{_atom(stmt.array)}[{_list(stmt.indices)}] = {expr(stmt.value)}")
        elif isinstance(stmt, (ops.For, ops.While, ops.If)):
            lines.append(f"{head}{compound_head(stmt)} {{")
            block_lines(stmt.body, depth + 1, lines)
            if isinstance(stmt, ops.If):
                lines.append(f"{pad}}} else {{")
                block_lines(stmt.orelse, depth + 1, lines)
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


def constant(c: ops.Const) -> str:
    """A constant as the text writes it (see the module docstring)."""
    plain = plain_constant(c)
    if plain is not None:
        return plain
    text = repr(float(c.value)) if c.type.is_float else str(int(c.value))
    return f"#{c.type}({text})"


class _TextForm(ExprText):
    """The text form's spellings: ``#i32(3)``, ``np.zeros<f32>(n)``, intrinsics as written."""

    def constant(self, c: ops.Const) -> str:
        return constant(c)

    def alloc(self, e: ops.Alloc) -> str:
        return f"np.{e.fill}<{e.type.elem}>({self.list(e.shape)})"

    def call(self, e: ops.Call) -> str:
        return f"{e.func}({self.list(e.args)})"

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        return f"{e.intrinsic.spelled}({self.list(e.args)})"

    def ctx_read(self, e: ops.CtxRead) -> str:
        return f"@ctx[{e.level}].{FIELD_NAMES[e.field]}"


_TEXT = _TextForm()
#: An expression as the text writes it (operands parenthesized when compound).
expr = _TEXT.expr
_list = _TEXT.list
_atom = _TEXT.atom


__all__ = ["block_lines", "compound_head", "constant", "expr", "print_leaf"]
