"""Python from a leaf IR: the leaf as a ``def`` that runs what the IR says.

Why: a back end that *changes* a leaf (``dask/offsets.py`` shifts a chunk's instance ids)
used to rewrite the leaf's syntax tree; it now changes the leaf IR and emits Python from it,
reading no Python. The text is self-contained: it reads no name of the leaf's module (the
IR resolved them all), only ``np``, ``math`` and ``hpvm``: ``namespace()``, the names to run
it (and analyse it) in; a leaf with a variable of one of those names is not emitted), every
conversion the IR makes explicit is written (``np.float32(x)``), and each
constant not of a literal's own type is written with its type. ``emit_python`` also gives
each emitted line the leaf-file line it stands for (0 for none), the source map a
``GeneratedBody`` takes.

``build(leaf made from emit_python(ir)) == ir`` on every leaf of the suite (a test): the
emitted Python reads back as the same leaf IR.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

from . import ops
from .exprtext import ExprText, plain_constant

NP, MATH, HPVM = "np", "math", "hpvm"


def namespace() -> dict[str, Any]:
    """The names the emitted code reads: NumPy, ``math`` and the ``hpvm`` package, as leaf
    code sees them (the package is looked up when asked: the IR layer does not import the
    front end, the code it emits reads it as user code does)."""
    return {NP: np, MATH: math, HPVM: importlib.import_module("hpvm")}


_INDENT = "    "


def emit_problem(ir: ops.LeafIR) -> str | None:
    """Why ``ir`` cannot be emitted (``None``: it can)."""
    names = {p.name for p in ir.params} | {n for n, _ in ir.locals}
    taken = sorted(names & {NP, MATH, HPVM})
    return f"leaf '{ir.name}' has a variable named '{taken[0]}'" if taken else None


def emit_python(
    ir: ops.LeafIR, name: str | None = None, writer: PythonText | None = None
) -> tuple[str, tuple[int, ...]]:
    """``ir`` as Python text (a ``def`` named ``name``, default the leaf's), and for each
    line of it the line of the leaf's file it stands for (``emit_problem`` first);
    ``writer``: how expressions are written (default: as Python writes them)."""
    out: list[tuple[str, int]] = [
        (f"def {name or ir.name}({', '.join(p.name for p in ir.params)}):", ir.line)
    ]
    BlockWriter(writer).block(ir.body, 1, ir.line, out)
    return "\n".join(text for text, _ in out) + "\n", tuple(line for _, line in out)


class PythonText(ExprText):
    """Python's spellings: NumPy scalar types and functions under the names ``np_name`` and
    ``math_name`` the emitted module gives NumPy and ``math`` (a subclass may rename them)."""

    np_name, math_name = NP, MATH

    def constant(self, c: ops.Const) -> str:
        plain = plain_constant(c)
        if plain is not None:
            return plain
        v = c.value
        text = repr(float(v)) if c.type.is_float else str(int(v))
        if c.type.is_float and not math.isfinite(v):
            text = (
                f"{self.np_name}.{'nan' if v != v else 'inf'}" if v != v or v > 0 else f"-{self.np_name}.inf"
            )
        return f"{self.dtype(c.type)}({text})"

    def dtype(self, t: ops.ScalarType) -> str:
        """The NumPy scalar type of ``t`` as the emitted code names it."""
        return f"{self.np_name}.{'bool_' if t.dtype == np.bool_ else t.dtype.name}"

    def alloc(self, e: ops.Alloc) -> str:
        return f"{self.np_name}.{e.fill}(({self.list(e.shape)},), {self.dtype(e.type.elem)})"

    def call(self, e: ops.Call) -> str:
        module, _, func = e.func.rpartition(".")
        prefix = {"math": f"{self.math_name}.", "np": f"{self.np_name}.", "": ""}[module]
        return f"{prefix}{func}({self.list(e.args)})"

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        return f"{HPVM}.{e.intrinsic.name}({self.list(e.args)})"


class BlockWriter:
    """Writes statements as Python lines, each with the leaf line it stands for; a back end
    that emits a changed leaf (``cpu/barrier_emit.py``) overrides ``stmt`` for the statements
    it writes otherwise and passes its own expression writer ``text``."""

    def __init__(self, text: PythonText | None = None):
        self.text = text or _PYTHON

    def block(self, block: ops.Block, depth: int, line: int, out: list[tuple[str, int]]) -> None:
        before = len(out)
        for stmt in block:
            self.stmt(stmt, depth, out)
        if len(out) == before:
            out.append((f"{_INDENT * depth}pass", line))

    def stmt(self, stmt: ops.Stmt, depth: int, out: list[tuple[str, int]]) -> None:
        pad, t = _INDENT * depth, self.text
        if isinstance(stmt, ops.Assign):
            out.append((f"{pad}{stmt.target.name} = {t.expr(stmt.value)}", stmt.line))
        elif isinstance(stmt, ops.Store):
            out.append(
                (f"{pad}{t.atom(stmt.array)}[{t.list(stmt.indices)}] = {t.expr(stmt.value)}", stmt.line)
            )
        elif isinstance(stmt, ops.For):
            bounds = t.list((stmt.start, stmt.stop, stmt.step))
            out.append((f"{pad}for {stmt.var.name} in range({bounds}):", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.While):
            out.append((f"{pad}while {t.expr(stmt.test)}:", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.If):
            out.append((f"{pad}if {t.expr(stmt.test)}:", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
            if stmt.orelse:
                out.append((f"{pad}else:", stmt.line))
                self.block(stmt.orelse, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.Return):
            out.append((f"{pad}return {t.list(stmt.values)}".rstrip(), stmt.line))
        elif isinstance(stmt, ops.Raise):
            out.append((f"{pad}raise" + ("" if stmt.exc is None else f" {stmt.exc}"), stmt.line))
        elif isinstance(stmt, ops.Break):
            out.append((f"{pad}break", stmt.line))
        elif isinstance(stmt, ops.Continue):
            out.append((f"{pad}continue", stmt.line))
        else:
            out.append((f"{pad}{t.expr(stmt.value)}", stmt.line))


_PYTHON = PythonText()
#: An expression as Python (operands parenthesized when compound).
expr = _PYTHON.expr


__all__ = ["BlockWriter", "PythonText", "emit_problem", "emit_python", "expr", "namespace"]
