"""A leaf's Python rewritten so that every operator calls a function of a given table.

Why here, below the back ends: the interpreter, the reference, must run every leaf, also
those outside the leaf IR's dialect (slices, helper calls, tuple unpacking...), and it runs
them with Numba's arithmetic by rewriting their syntax tree. That rewrite is a front-end
level lowering of Python source (like ``passes/clone_leaves.py``), not a back end reading
Python: it takes the functions to call as a table (``OperatorCalls``; the interpreter's
are ``backends/interp/arith.py``'s), so no back end walks a tree (issue 25).

Every arithmetic operator becomes a call (``a * b`` → ``__hpvm_op_mul(a, b)``), augmented
assignments too (``s += x`` → ``s = __hpvm_op_iadd(s, x)``, in place for arrays; ``a[i] += x``
→ ``__hpvm_augitem(__hpvm_op_iadd, a, i, x)``), stores into subscripts go through the table's
``setitem`` (``a[i] = v`` → ``__hpvm_setitem(a, i, v)``), and the calls the table lists call
their replacements (``min``, ``max``, ``int``, ``float``, ``round``, ``math.sqrt`` ...).
Comparisons, boolean operators, conditions and every other call are left as written.
Operations on literals are folded first, as CPython's compiler folds them. Each new node
takes the location of the node it replaces, so tracebacks and messages name the user's line.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import pyast
from .leafir.pyemit import OPERATOR_NAMES, UNARY_NAMES


@dataclass(frozen=True)
class OperatorCalls:
    """The functions the rewritten code calls: per operator symbol (``numeric.BINARY_OPS``,
    ``-``/``+``/``~``) for ``x op y``, ``x op= y`` and ``op x``; ``setitem(a, key, v)``,
    ``augitem(op, a, key, v)``; and the replacement of each function object listed."""

    binary: Mapping[str, Callable[[Any, Any], Any]]
    in_place: Mapping[str, Callable[[Any, Any], Any]]
    unary: Mapping[str, Callable[[Any], Any]]
    setitem: Callable[[Any, Any, Any], None]
    augitem: Callable[..., None]
    functions: Mapping[Any, Callable[..., Any]]


# Python's operator nodes and their symbols; each operation's name is the one the leaf IR's
# operator-call writer uses (``pyemit.OPERATOR_NAMES``, ``UNARY_NAMES``): one table of names.
_BINARY_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
}  # fmt: skip
_BINARY = {node: (sym, OPERATOR_NAMES[sym]) for node, sym in _BINARY_SYMBOLS.items()}
_UNARY = {
    node: (sym, UNARY_NAMES[sym]) for node, sym in {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}.items()
}


def _quiet() -> Any:
    return np.errstate(all="ignore")


class _Rewriter(ast.NodeTransformer):
    def __init__(self, env: dict[str, Any], local_names: set[str], calls: OperatorCalls):
        self.env, self.local_names, self.calls = env, local_names, calls
        self.functions = {id(f): (f, helper) for f, helper in calls.functions.items()}
        self.used: dict[str, Any] = {}

    def _name(self, name: str, value: Any) -> ast.Name:
        self.used[f"__hpvm_{name}"] = value
        return ast.Name(f"__hpvm_{name}", ast.Load())

    def _call(self, name: str, value: Any, args: list[ast.expr], where: ast.AST) -> ast.Call:
        return ast.copy_location(ast.Call(self._name(name, value), args, []), where)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op = _BINARY.get(type(node.op))
        if op is None:  # @
            return node
        folded = _fold(node, node.left, node.right)
        if folded is not None:
            return folded
        return self._call(f"op_{op[1]}", self.calls.binary[op[0]], [node.left, node.right], node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        op = _UNARY.get(type(node.op))
        if op is None:  # not
            return node
        folded = _fold(node, node.operand)
        if folded is not None:
            return folded
        return self._call(f"op_{op[1]}", self.calls.unary[op[0]], [node.operand], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        op = _BINARY.get(type(node.op))
        target = node.target
        if op is None or not isinstance(target, (ast.Name, ast.Subscript)):
            return node
        in_place = self._name(f"op_i{op[1]}", self.calls.in_place[op[0]])
        if isinstance(target, ast.Name):
            value = ast.Call(in_place, [ast.Name(target.id, ast.Load()), node.value], [])
            return ast.copy_location(ast.Assign([ast.Name(target.id, ast.Store())], value), node)
        args = [in_place, target.value, self._key(target.slice), node.value]
        return ast.copy_location(ast.Expr(self._call("augitem", self.calls.augitem, args, node)), node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return node
        target = node.targets[0]
        args = [target.value, self._key(target.slice), node.value]
        return ast.copy_location(ast.Expr(self._call("setitem", self.calls.setitem, args, node)), node)

    def _key(self, key: ast.expr) -> ast.expr:
        """A subscript's key as an expression (``a[1:n]``'s slice as ``slice(1, n)``)."""
        if isinstance(key, ast.Slice):
            parts = [p if p is not None else ast.Constant(None) for p in (key.lower, key.upper, key.step)]
            return ast.copy_location(ast.Call(self._name("slice", builtins.slice), parts, []), key)
        if isinstance(key, ast.Tuple):
            return ast.copy_location(ast.Tuple([self._key(k) for k in key.elts], ast.Load()), key)
        return key

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        called = self._resolve(node.func)
        entry = self.functions.get(id(called))
        if entry is None or entry[0] is not called:
            return node
        helper = entry[1]
        node.func = ast.copy_location(self._name(helper.__name__, helper), node.func)
        return node

    def _resolve(self, expr: ast.expr) -> Any:
        """The object a function expression names (``min``, ``math.sqrt``), if it is a global
        name or an attribute of a module; None for locals and anything else."""
        if isinstance(expr, ast.Name):
            if expr.id in self.local_names:
                return None
            return self.env[expr.id] if expr.id in self.env else getattr(builtins, expr.id, None)
        if isinstance(expr, ast.Attribute):
            base = self._resolve(expr.value)
            return getattr(base, expr.attr, None) if isinstance(base, types.ModuleType) else None
        return None


def _fold(node: ast.expr, *operands: ast.expr) -> ast.Constant | None:
    """An operation on literals computed now, with Python's semantics, as CPython's compiler
    folds it before Numba ever sees the code (``~True`` is -2 there, ``2**63`` a uint64
    literal); None when it is not one CPython folds."""
    if not all(isinstance(o, ast.Constant) and type(o.value) in (bool, int, float) for o in operands):
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift)):
        exponent = operands[1].value  # type: ignore[attr-defined]
        if type(exponent) is int and abs(exponent) > 128:  # CPython does not fold these either
            return None
    try:
        value = eval(pyast.compile_tree(ast.Expression(ast.copy_location(node, node)), "<fold>", "eval"), {})
    except Exception:  # 1 / 0 and friends are left to run (and not raise)
        return None
    if type(value) not in (bool, int, float) or (type(value) is int and value.bit_length() > 128):
        return None
    return ast.copy_location(ast.Constant(value), node)


def _local_names(func: ast.FunctionDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not func:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def lower_operators(
    func: ast.FunctionDef, env: dict[str, Any], calls: OperatorCalls, quiet: bool = False
) -> dict[str, Any]:
    """Rewrite ``func`` (a leaf's ``def``) in place so that every operator, store and listed
    call is a call of ``calls``; ``env`` is what its global names refer to. Returns the names
    the rewritten code calls, with their values, for the caller to bind. ``quiet``: run the
    body with NumPy's floating-point warnings off (for callers that cannot set that around
    the call: each thread of numba-cuda's simulator starts with NumPy's defaults)."""
    rewriter = _Rewriter(env, _local_names(func), calls)
    func.body = [rewriter.visit(stmt) for stmt in func.body]
    if quiet and func.body:
        first, last = func.body[0], func.body[-1]
        with_items = [ast.withitem(ast.Call(rewriter._name("quiet", _quiet), [], []))]
        block = ast.With(with_items, func.body)
        block.lineno, block.col_offset = first.lineno, first.col_offset
        block.end_lineno, block.end_col_offset = last.end_lineno, last.end_col_offset
        func.body = [ast.fix_missing_locations(block)]
    for stmt in func.body:
        ast.fix_missing_locations(stmt)
    return rewriter.used


def lower_expression(
    text: str, env: dict[str, Any], local_names: set[str], calls: OperatorCalls
) -> tuple[str, dict[str, Any]]:
    """An expression's Python text lowered as ``lower_operators`` lowers a leaf's body, and
    the global names the result reads that ``env`` holds, with their values: the operation
    names it calls and the names of ``env`` it reads, no more (Python finds the others, the
    builtins, itself). Why: a leaf IR keeps a ``raise``'s exception as opaque text
    (``leafir/ops.Raise``), and the interpreter running that IR must compute it as it did
    when it rewrote the leaf's syntax tree. ``local_names``: the leaf's variables, which the
    text reads as locals (neither resolved in ``env`` nor bound)."""
    tree = pyast.parse(text, "<raise>", "eval")
    inner = set(local_names) | {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    rewriter = _Rewriter(env, inner, calls)
    body = ast.fix_missing_locations(rewriter.visit(tree.body))
    names = {name: env[name] for name in sorted(reads - inner) if name in env}
    return ast.unparse(body), {**names, **rewriter.used}


__all__ = ["OperatorCalls", "lower_expression", "lower_operators"]
