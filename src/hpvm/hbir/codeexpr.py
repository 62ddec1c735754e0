"""HBIR expressions → Python expressions of a leaf body, with C's meaning: ints divide
truncating and ``%`` takes the dividend's sign, ``&&``/``||``/``!`` give bools, values
convert as C converts them on assignment, and provably non-negative indices that read a
local are unsigned (``codegen.py``'s module doc says why).

Why a class of its own: expressions are written the same way in every statement, loop
bound and tile index; what they need of the block is the scope and the set of globals
and arrays they read (the leaf's parameters).
"""

from __future__ import annotations

from . import ast as A
from .symbols import Scope, expr_type, resolve_ref


def _ignore(node: A.Node, message: str) -> None:  # the checker has reported everything already
    pass


class ExprWriter:
    """Writes expressions; ``reads``: the arrays and globals they read, added to as it
    writes."""

    def __init__(self, reads: set[str]):
        self.reads = reads

    def type_of(self, e: A.Expr, scope: Scope) -> str | None:
        return expr_type(e, scope, _ignore)

    def expr(self, e: A.Expr, scope: Scope) -> str:
        if isinstance(e, A.IntLit):
            return str(e.value)
        if isinstance(e, A.FloatLit):
            return repr(e.value)
        if isinstance(e, A.BoolLit):
            return "True" if e.value else "False"
        if isinstance(e, A.Ref):
            sym = resolve_ref(e, scope)
            assert sym is not None, e
            if sym.kind in ("const", "target"):
                return repr(sym.value)
            if sym.kind == "global":
                self.reads.add(e.parts[-1])
            return sym.python
        if isinstance(e, A.Index):
            base, indices = A.index_chain(e)
            sym = resolve_ref(base, scope)  # type: ignore[arg-type]
            assert sym is not None and sym.rank > 0
            self.reads.add(sym.python)
            return f"{sym.python}[{', '.join(self.index(i, scope) for i in indices)}]"
        if isinstance(e, A.Unary):
            inner = self.expr(e.operand, scope)
            return f"(not {inner})" if e.op == "!" else f"(-{inner})"
        if isinstance(e, A.Binary):
            a, b = self.expr(e.left, scope), self.expr(e.right, scope)
            if e.op in ("&&", "||"):
                word = "and" if e.op == "&&" else "or"
                return f"(bool({a}) {word} bool({b}))"
            ints = self.type_of(e.left, scope) == "int" and self.type_of(e.right, scope) == "int"
            if ints and e.op == "/":
                return f"((abs({a}) // abs({b})) * (1 if (({a}) < 0) == (({b}) < 0) else -1))"
            if ints and e.op == "%":
                return f"((abs({a}) % abs({b})) * (-1 if ({a}) < 0 else 1))"
            return f"({a} {e.op} {b})"
        if isinstance(e, A.Cond):
            kind = self.type_of(e, scope)
            then, orelse = self.converted(e.then, kind, scope), self.converted(e.orelse, kind, scope)
            return f"({then} if {self.expr(e.cond, scope)} else {orelse})"
        raise TypeError(f"cannot generate code for {e!r}")

    def index(self, i: A.Expr, scope: Scope) -> str:
        """An array index: unsigned when it is provably non-negative and reads a local (see
        the module doc); an index of coordinates and constants alone stays as it is, for the
        ``cpu`` back end's bounds pre-check (``backends/cpu/bounds.py``) to read."""
        text = self.expr(i, scope)
        return f"np.uint64({text})" if _reads_local(i, scope) and nonneg(i, scope) else text

    def converted(self, value: A.Expr, to: str, scope: Scope) -> str:
        """``value`` as C converts it to type ``to`` on assignment."""
        text = self.expr(value, scope)
        have = self.type_of(value, scope)
        return text if have == to else f"{to}({text})"


def constant_value(e: A.Expr, scope: Scope) -> object:
    """The value of an expression of literals, data constants, extents and target fields
    (``None`` when it has others): a C ``for``'s step that is known before the loop runs."""
    from .consteval import c_div, c_rem

    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Ref):
        sym = resolve_ref(e, scope)
        return sym.value if sym is not None and sym.kind in ("const", "extent", "target") else None
    if isinstance(e, A.Unary) and e.op == "-":
        v = constant_value(e.operand, scope)
        return -v if isinstance(v, int) else None
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
        a, b = constant_value(e.left, scope), constant_value(e.right, scope)
        if not (isinstance(a, int) and isinstance(b, int)) or (e.op in "/%" and b == 0):
            return None
        ops = {"+": a + b, "-": a - b, "*": a * b}
        return ops[e.op] if e.op in ops else (c_div(a, b) if e.op == "/" else c_rem(a, b))
    return None


def nonneg(e: A.Expr, scope: Scope) -> bool:
    """Whether the int expression ``e`` is never negative, by its form (module doc)."""
    value = constant_value(e, scope)
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    if isinstance(e, A.IntLit):
        return e.value >= 0
    if isinstance(e, A.Ref):
        sym = resolve_ref(e, scope)
        if sym is None or sym.elem != "int":
            return False
        if sym.kind in ("const", "extent", "target"):
            return isinstance(sym.value, int) and sym.value >= 0
        return sym.kind in ("coord", "group") or (sym.kind == "local" and sym.nonneg)
    if isinstance(e, A.Binary) and e.op in ("+", "*", "/", "%"):
        return nonneg(e.left, scope) and nonneg(e.right, scope)
    if isinstance(e, A.Cond):
        return nonneg(e.then, scope) and nonneg(e.orelse, scope)
    return False


def _reads_local(e: A.Expr, scope: Scope) -> bool:
    for x in A.sub_exprs(e):
        if isinstance(x, A.Ref):
            sym = resolve_ref(x, scope)
            if sym is not None and sym.kind == "local":
                return True
    return False


def has_index(e: A.Expr) -> bool:
    return any(isinstance(x, A.Index) for x in A.sub_exprs(e))


def uses_global(e: A.Expr, scope: Scope) -> bool:
    for x in A.sub_exprs(e):
        if isinstance(x, A.Ref):
            sym = resolve_ref(x, scope)
            if sym is not None and sym.kind == "global":
                return True
    return False
