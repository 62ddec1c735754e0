"""Leaf Python rewritten so that its arithmetic follows Numba's typing (``arith.py``).

Every arithmetic operator becomes a call (``a * b`` → ``__hpvm_op_mul(a, b)``), augmented
assignments too (``s += x`` → ``s = __hpvm_op_iadd(s, x)``, in place for arrays; ``a[i] += x``
→ ``__hpvm_augitem(__hpvm_op_iadd, a, i, x)``), stores into subscripts cast to the element
type (``a[i] = v`` → ``__hpvm_setitem(a, i, v)``), and the calls whose result type Python and
Numba disagree on call their Numba-typed versions (``min``, ``max``, ``int``, ``float``,
``round``, ``math.sqrt`` ...). Comparisons, boolean operators, conditions and every other
call are left as written. Each new node takes the location of the node it replaces, so
tracebacks and the interpreter's messages name the user's line.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import pyast
from ...ir.bodies import PYTHON_KINDS
from ...ir.graph import LeafFunction
from ...ir.leafinfo import leaf_namespace, parse_leaf
from . import arith
from .recompile import recompile

_BINARY = {
    ast.Add: ("+", "add"),
    ast.Sub: ("-", "sub"),
    ast.Mult: ("*", "mul"),
    ast.Div: ("/", "truediv"),
    ast.FloorDiv: ("//", "floordiv"),
    ast.Mod: ("%", "mod"),
    ast.Pow: ("**", "pow"),
    ast.LShift: ("<<", "lshift"),
    ast.RShift: (">>", "rshift"),
    ast.BitAnd: ("&", "and"),
    ast.BitOr: ("|", "or"),
    ast.BitXor: ("^", "xor"),
}
_UNARY = {ast.USub: ("-", "neg"), ast.UAdd: ("+", "pos"), ast.Invert: ("~", "invert")}
_FUNCTIONS = {id(f): (f, helper) for f, helper in arith.FUNCTIONS.items()}


def _quiet() -> Any:
    return np.errstate(all="ignore")


class _Rewriter(ast.NodeTransformer):
    def __init__(self, env: dict[str, Any], local_names: set[str]):
        self.env, self.local_names = env, local_names
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
        return self._call(f"op_{op[1]}", arith.BINARY[op[0]], [node.left, node.right], node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        op = _UNARY.get(type(node.op))
        if op is None:  # not
            return node
        folded = _fold(node, node.operand)
        if folded is not None:
            return folded
        return self._call(f"op_{op[1]}", arith.UNARY[op[0]], [node.operand], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        op = _BINARY.get(type(node.op))
        target = node.target
        if op is None or not isinstance(target, (ast.Name, ast.Subscript)):
            return node
        in_place = self._name(f"op_i{op[1]}", arith.IN_PLACE[op[0]])
        if isinstance(target, ast.Name):
            value = ast.Call(in_place, [ast.Name(target.id, ast.Load()), node.value], [])
            return ast.copy_location(ast.Assign([ast.Name(target.id, ast.Store())], value), node)
        args = [in_place, target.value, self._key(target.slice), node.value]
        return ast.copy_location(ast.Expr(self._call("augitem", arith.augitem, args, node)), node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return node
        target = node.targets[0]
        args = [target.value, self._key(target.slice), node.value]
        return ast.copy_location(ast.Expr(self._call("setitem", arith.setitem, args, node)), node)

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
        entry = _FUNCTIONS.get(id(called))
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


def rewrite_arithmetic(func: ast.FunctionDef, env: dict[str, Any], quiet: bool = False) -> dict[str, Any]:
    """Rewrite ``func`` (a leaf's ``def``) in place to compute with Numba's types; ``env`` is
    what its global names refer to. Returns the names the rewritten code calls, with their
    values, for the caller to bind. ``quiet``: run the body with NumPy's floating-point
    warnings off (for callers that cannot set that around the call: each thread of
    numba-cuda's simulator starts with NumPy's defaults)."""
    rewriter = _Rewriter(env, _local_names(func))
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
