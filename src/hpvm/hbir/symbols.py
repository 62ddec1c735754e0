"""Names and types inside code blocks: what a name stands for and what an expression's type is.

The checker and the code generator walk the same statements with the same scopes, so both
use this module: ``Scope`` maps names to ``Symbol``s (C block scoping: a declaration is
visible to the end of its braces), and ``expr_type`` gives the type of an expression in a
scope (``int``, ``float`` or ``bool``), reporting what does not type through ``problem``.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable
from dataclasses import dataclass

from . import ast as A

#: Names a program may not use: Python's keywords and the few builtins generated code calls.
RESERVED = frozenset(keyword.kwlist) | {
    "range",
    "abs",
    "int",
    "float",
    "bool",
    "min",
    "max",
    "hpvm",
    "np",
    "not",
}


def reserved_problem(name: str) -> str | None:
    """Why ``name`` cannot name something in HBIR here (``None`` if it can)."""
    if name in RESERVED or "__" in name or name.startswith("hbir_"):
        return (
            f"'{name}' is reserved (a Python keyword or builtin, a name with '__', or one starting "
            "with 'hbir_', which the generated code uses); rename it"
        )
    return None


@dataclass(frozen=True)
class Symbol:
    """What a name means in a code block.

    ``kind``: ``local`` (a variable; a local array when ``rank`` > 0), ``global`` (shared by all tiles), ``array`` (a data
    array of ``rank`` dimensions), ``const`` (a data constant, ``value``), ``coord`` (a
    tile coordinate, ``value`` = its grid dimension), ``extent`` (``x_max``...),
    ``target`` (a target field, ``value``), ``group`` (``grid.x`` of an enclosing group).
    """

    kind: str
    elem: str
    rank: int = 0
    value: object = None
    python: str = ""  # how generated code spells it
    nonneg: bool = False  # a local int the code generator proved never negative (codegen.py)


class Scope:
    """Nested scopes of symbols."""

    def __init__(self, outer: dict[str, Symbol]):
        self.frames: list[dict[str, Symbol]] = [dict(outer)]

    def push(self) -> None:
        self.frames.append({})

    def pop(self) -> None:
        self.frames.pop()

    def declare(self, name: str, sym: Symbol) -> None:
        self.frames[-1][name] = sym

    def declared_here(self, name: str) -> bool:
        return name in self.frames[-1] and len(self.frames) > 1

    def lookup(self, name: str) -> Symbol | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None


INT_MAX = 2**63 - 1  # locals and constants are 64-bit in generated code (docs/hbir.md)
INT_MIN = -(2**63)
ARITH = {"+", "-", "*", "/", "%"}
COMPARE = {"==", "!=", "<", "<=", ">", ">="}
LOGIC = {"&&", "||"}


def resolve_ref(ref: A.Ref, scope: Scope) -> Symbol | None:
    """The symbol a (possibly dotted) reference names: ``i``, ``data.A``, ``grid.x``,
    ``target.t.x_max``, ``config.tg.x`` (the same as ``tg.x``)."""
    parts = ref.parts
    if len(parts) == 1:
        return scope.lookup(parts[0])
    if parts[0] == "data" and len(parts) == 2:
        sym = scope.lookup(parts[1])
        return sym if sym is not None and sym.kind in ("array", "const") else None
    if parts[0] == "config":
        parts = parts[1:]
    return scope.lookup(".".join(parts))


def expr_type(
    e: A.Expr, scope: Scope, problem: Callable[[A.Node, str], None], allow_array: bool = False
) -> str | None:
    """The type of ``e`` (``None`` when it has none; each reason goes to ``problem``)."""
    if isinstance(e, A.IntLit):
        if e.value > INT_MAX:
            problem(e, f"the integer {e.value} does not fit in 64 bits (at most {INT_MAX}); make it smaller")
            return None
        return "int"
    if isinstance(e, A.FloatLit):
        if not math.isfinite(e.value):
            problem(
                e, "this float literal is too large for a double (at most about 1.8e308); make it smaller"
            )
            return None
        return "float"
    if isinstance(e, A.BoolLit):
        return "bool"
    if isinstance(e, A.StrLit):
        problem(e, "a string can only be printf's format")
        return None
    if isinstance(e, A.Ref):
        sym = resolve_ref(e, scope)
        if sym is None:
            problem(
                e,
                f"'{e.dotted}' is not declared; declare it (data constant, array, global or local variable) before its use",
            )
            return None
        if sym.rank and not allow_array:
            problem(e, f"array '{e.dotted}' is used without indices; write {e.dotted}" + "[i]" * sym.rank)
            return None
        return sym.elem
    if isinstance(e, A.Index):
        base, indices = A.index_chain(e)
        sym = resolve_ref(base, scope) if isinstance(base, A.Ref) else None
        if sym is None or not sym.rank:
            if isinstance(base, A.Ref) and sym is None:
                problem(base, f"'{base.dotted}' is not declared; only arrays can be indexed")
            else:
                problem(e, "only arrays (data arrays and local arrays) can be indexed")
            for i in indices:
                expr_type(i, scope, problem)
            return None
        if len(indices) != sym.rank:
            problem(
                e,
                f"array '{base.dotted}' has {sym.rank} dimension(s) but is indexed with {len(indices)}; "
                f"write {base.dotted}" + "[i]" * sym.rank,
            )
        for i in indices:
            t = expr_type(i, scope, problem)
            if t not in (None, "int"):
                problem(i, f"an array index is an int, not a {t}")
        return sym.elem
    if isinstance(e, A.Unary):
        t = expr_type(e.operand, scope, problem)
        if e.op == "!":
            return "bool"
        if t == "bool":
            problem(e, "unary minus of a bool; use an int or a float")
            return None
        return t
    if isinstance(e, A.Binary):
        lt = expr_type(e.left, scope, problem)
        rt = expr_type(e.right, scope, problem)
        if e.op in LOGIC:
            return "bool"
        if e.op in COMPARE:
            return "bool"
        if lt is None or rt is None:
            return None
        if "bool" in (lt, rt):
            problem(e, f"'{e.op}' on a bool; arithmetic takes ints and floats")
            return None
        if e.op == "%" and "float" in (lt, rt):
            problem(e, "'%' takes ints; the remainder of floats is not HBIR")
            return None
        return "float" if "float" in (lt, rt) else "int"
    if isinstance(e, A.Cond):
        expr_type(e.cond, scope, problem)
        a, b = expr_type(e.then, scope, problem), expr_type(e.orelse, scope, problem)
        if a is None or b is None:
            return None
        if a == b:
            return a
        if "bool" in (a, b):
            problem(e, f"the two branches of '?:' are {a} and {b}; make both bool or both numbers")
            return None
        return "float"
    if isinstance(e, A.Call):
        problem(e, f"'{e.name}(...)' is not an expression; printf and bsg_finish are statements of their own")
        return None
    raise TypeError(f"not an expression: {e!r}")


__all__ = [
    "INT_MAX",
    "INT_MIN",
    "RESERVED",
    "Scope",
    "Symbol",
    "expr_type",
    "reserved_problem",
    "resolve_ref",
]
