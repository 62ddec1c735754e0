"""The expression half of the leaf IR's builder (``build.py`` holds the statements).

``ExprBuilder`` turns one Python expression of a leaf into a typed expression of the dialect,
through the constructors of ``rules.py``; names resolve in what the leaf's code sees. What
the dialect lacks raises ``LeafIRUnsupported`` with the construct and its line.
"""

from __future__ import annotations

import ast
import builtins
import math
from typing import Any

import numpy as np

from .. import numeric as nt
from ..graph import LeafFunction
from ..intrinsics import INTRINSICS
from ..leafinfo import intrinsic_name, visible_names
from ..types import ArrayType, NodeHandleType, PortType, ScalarType, scalar_type
from . import ops, rules
from .ops import LeafIRUnsupported

BINARY = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class Untyped(Exception):
    """A local read before any assignment gave it a type (this round)."""


class PyObj:
    """A Python object a name or attribute denotes (a module, a function, a NumPy type)."""

    def __init__(self, obj: Any):
        self.obj = obj


#: NumPy's functions making a local array, by what they fill it with.
_ALLOCATORS = ((np.zeros, "zeros"), (np.ones, "ones"), (np.empty, "empty"))

#: Modules whose import a leaf's module text may be trusted to bind before it runs.
_TRUSTED = {"numpy": np, "math": math}


def _trusted_imports(fn: LeafFunction) -> dict[str, Any]:
    """For a body whose module text has not run (a program file, generated code): the names
    bound by its top-level ``import numpy as np`` / ``import math``, when nothing else in
    the text binds them (``ModuleText.static_names`` leaves every non-hpvm import unknown;
    these two modules are what the leaf language calls, and importing them runs no user
    code)."""
    pending = fn.pending_code
    if pending is None:
        return {}
    found: dict[str, Any] = {}
    others: set[str] = set()
    for stmt in pending.tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                name = alias.asname or alias.name
                if alias.name in _TRUSTED and "." not in name:
                    found[name] = _TRUSTED[alias.name]
                else:
                    others.add(name.split(".")[0])
    for node in ast.walk(pending.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            others.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            others.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            others.update(a.asname or a.name for a in node.names)
    return {k: v for k, v in found.items() if k not in others}


def _stored_names(func: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


#: Bits of the significand of each float type (what an integer converts to exactly).
_SIGNIFICAND = {4: 24, 8: 53}


def _exact(narrow: PortType, wide: PortType) -> bool:
    """Whether every value of the scalar type ``narrow`` converts to ``wide`` and back
    unchanged (a bool to anything, integers to wider integers, int32 to float64, float32 to
    float64; not int64 to float64)."""
    if not (isinstance(narrow, ScalarType) and isinstance(wide, ScalarType)):
        return False
    a, b = narrow.dtype, wide.dtype
    if a.kind == "b":
        return True
    if a.kind in "iu" and b.kind in "iu":
        return bool(np.can_cast(a, b, "safe"))
    if a.kind in "iu" and b.kind == "f":
        bits = 8 * a.itemsize - (1 if a.kind == "i" else 0)
        return bits <= _SIGNIFICAND.get(b.itemsize, 0)
    return a.kind == "f" and b.kind == "f" and a.itemsize <= b.itemsize


class ExprBuilder:
    """What a leaf's build knows (its names, the types found so far, the flow typing of the
    last round) and how it reads expressions."""

    def __init__(self, fn: LeafFunction, func: ast.FunctionDef):
        self.fn = fn
        self.func = func
        self.env: dict[str, Any] = {**builtins.__dict__, **_trusted_imports(fn), **visible_names(fn)}
        self.params: dict[str, PortType] = {p.name: p.type for p in fn.params}
        self.local_names = _stored_names(func) - set(self.params)
        self.temporaries: dict[tuple[int, int, int], str] = {}  # the builder's own locals (a swap's)
        self.types: dict[str, PortType] = {}
        self.changed = False
        self.final = False
        self.loops = 0
        # Flow typing (final round): the type each local holds where it is read, as Numba
        # types it (SSA: versions unified only where control flow merges).
        self.flow: dict[str, PortType] = {}
        self.checking = True

    def fail(self, node: ast.AST, construct: str, hint: str | None = None) -> LeafIRUnsupported:
        line = getattr(node, "lineno", None)
        where = self.fn.where(line) if line is not None else None
        return LeafIRUnsupported(self.fn.name, where, construct, hint)

    def line(self, node: ast.AST) -> int:
        return self.fn.where(node.lineno).line  # type: ignore[attr-defined]

    def typed(self, node: ast.AST, make: Any, *args: Any) -> Any:
        """A rules constructor applied, its refusal reported as unsupported at ``node``."""
        try:
            return make(*args)
        except rules.TypeProblem as e:
            raise self.fail(node, f"'{ast.unparse(node)}' ({e})") from None

    # -- expressions ----------------------------------------------------------------------

    def expr(self, node: ast.expr, statement: bool = False) -> ops.Expr:
        found = self._value(node, statement)
        if isinstance(found, PyObj):
            raise self.fail(node, f"'{ast.unparse(node)}' used as a value ({type(found.obj).__name__})")
        return found

    def _value(self, node: ast.expr, statement: bool = False) -> ops.Expr | PyObj:
        if isinstance(node, ast.Call):
            return self._call(node, statement)
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"the expression '{ast.unparse(node)}' ({type(node).__name__})")
        return method(node)

    def _expr_Constant(self, node: ast.Constant) -> ops.Expr:
        if nt.value_type(node.value) is None:
            raise self.fail(
                node,
                f"the constant {node.value!r}",
                f"the constant {node.value!r} is not supported (numbers and booleans are)",
            )
        return self.typed(node, rules.const, node.value)

    def _expr_Name(self, node: ast.Name) -> ops.Expr | PyObj:
        return self._name(node)

    def _name(self, node: ast.Name) -> ops.Expr | PyObj:
        name = node.id
        if name in self.params:
            return ops.Var(name, self.params[name])
        if name in self.local_names:
            if name not in self.types:
                raise Untyped(name)
            reaching = self.flow.get(name)
            if self.final and reaching is not None and reaching != self.types[name]:
                if _exact(reaching, self.types[name]):
                    # Numba's version here is narrower and the one type holds its values
                    # exactly: read it back in Numba's type
                    return ops.Cast(ops.Var(name, self.types[name]), reaching)  # type: ignore[arg-type]
                if not self.checking:
                    return ops.Var(name, self.types[name])
                raise self.fail(
                    node,
                    f"'{name}' read where Numba types it {reaching}, while the leaf IR gives the "
                    f"variable one type, {self.types[name]} (a local assigned values of several types "
                    "outside a loop or branch that merges them)",
                )
            return ops.Var(name, self.types[name])
        if name not in self.env:
            raise self.fail(
                node,
                f"the name '{name}', which the leaf's code does not see",
                f"the name '{name}' is not defined",
            )
        return self._python(self.env[name], node)

    def _python(self, obj: Any, node: ast.AST) -> ops.Expr | PyObj:
        if isinstance(obj, (bool, int, float, np.bool_, np.integer, np.floating)):
            return self.typed(node, rules.const, obj)
        return PyObj(obj)

    def _resolve(self, node: ast.expr) -> PyObj | None:
        """The Python object a callee denotes (None: a value of the leaf, not an object)."""
        if isinstance(node, ast.Name):
            if node.id in self.params or node.id in self.local_names or node.id not in self.env:
                return None
            return PyObj(self.env[node.id])
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            if base is not None and hasattr(base.obj, node.attr):
                return PyObj(getattr(base.obj, node.attr))
        return None

    def _expr_Attribute(self, node: ast.Attribute) -> ops.Expr | PyObj:
        base = self._value(node.value)
        if isinstance(base, PyObj):
            if not hasattr(base.obj, node.attr):
                raise self.fail(node, f"'{ast.unparse(node)}', which does not exist")
            return self._python(getattr(base.obj, node.attr), node)
        if isinstance(base.type, ArrayType):
            if node.attr == "size":
                return rules.size(base)
            if node.attr == "ndim":
                return rules.const(base.type.rank)
        raise self.fail(node, f"the attribute '{ast.unparse(node)}'")

    def _expr_Subscript(self, node: ast.Subscript) -> ops.Expr:
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            array = self.expr(value.value)
            if not isinstance(array.type, ArrayType):
                raise self.fail(node, f"'{ast.unparse(node)}' of {array.type}")
            axis = node.slice
            if not (isinstance(axis, ast.Constant) and type(axis.value) is int):
                raise self.fail(node, f"'{ast.unparse(node)}' (.shape is indexed by a constant)")
            k = axis.value + array.type.rank if axis.value < 0 else axis.value
            return self.typed(node, rules.shape, array, k)
        array, indices = self._element(node)
        return self.typed(node, rules.load, array, indices)

    def _element(self, node: ast.Subscript) -> tuple[ops.Expr, tuple[ops.Expr, ...]]:
        array = self.expr(node.value)
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for k in keys:
            if isinstance(k, ast.Slice):
                raise self.fail(
                    node,
                    f"the slice '{ast.unparse(node)}'",
                    "slices (a[i:j]) are not supported; index elements or whole rows (a[i])",
                )
        return array, tuple(self.expr(k) for k in keys)

    def _expr_BinOp(self, node: ast.BinOp) -> ops.Expr:
        op = BINARY.get(type(node.op))
        if op is None:
            raise self.fail(node, f"the operator of '{ast.unparse(node)}'")
        left, right = self.expr(node.left), self.expr(node.right)
        for operand in (left, right):
            if not isinstance(operand.type, ScalarType):
                what = (
                    "a node handle"
                    if isinstance(operand.type, NodeHandleType)
                    else f"an array ({operand.type})"
                )
                raise self.fail(
                    node,
                    f"'{ast.unparse(node)}' (arithmetic on {what})",
                    f"arithmetic on {what} (whole-array operations are not supported)",
                )
        return self.typed(node, rules.binary, op, left, right)

    def _expr_UnaryOp(self, node: ast.UnaryOp) -> ops.Expr:
        return self.typed(node, rules.unary, _UNARY[type(node.op)], self.expr(node.operand))

    def _expr_BoolOp(self, node: ast.BoolOp) -> ops.Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        return self.typed(node, rules.boolop, op, [self.expr(v) for v in node.values])

    def _expr_Compare(self, node: ast.Compare) -> ops.Expr:
        names = []
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise self.fail(node, f"the comparison '{ast.unparse(node)}' (is/in)")
            names.append(_COMPARE[type(op)])
        operands = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
        return self.typed(node, rules.compare, names, operands)

    def _expr_IfExp(self, node: ast.IfExp) -> ops.Expr:
        return self.typed(
            node, rules.ifexp, self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        )

    def _call(self, node: ast.Call, statement: bool) -> ops.Expr:
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, f"the starred arguments of '{ast.unparse(node)}'")
        callee = self._resolve(node.func)
        fill = next((f for made, f in _ALLOCATORS if callee is not None and callee.obj is made), None)
        if fill is not None:
            return self._alloc(node, fill)
        if node.keywords:
            raise self.fail(node, f"the keyword arguments of '{ast.unparse(node)}'")
        name = intrinsic_name(node, self.env)
        if name is not None:
            entry = INTRINSICS.get(name)
            if entry is None:
                raise self.fail(node, f"hpvm.{name}(), a graph-building or host call")
            if entry.statement and not statement:
                raise self.fail(
                    node, f"{entry.spelled}() inside an expression (it is a statement of its own)"
                )
            args = list(node.args)
            if entry.kind == "atomic" and len(args) == 3 and isinstance(args[1], ast.Tuple):
                args[1:2] = args[1].elts  # an n-D element: its indices spread out (rules.intrinsic)
            return self.typed(node, rules.intrinsic, entry, [self.expr(a) for a in args])
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "view" and callee is None:
            array = self.expr(func.value)
            elem = self._dtype(node.args[0]) if len(node.args) == 1 else None
            if elem is None:
                raise self.fail(node, f"'{ast.unparse(node)}' (view as one NumPy scalar type)")
            return self.typed(node, rules.retype, array, elem)
        if callee is None:
            hint = None
            if isinstance(func, ast.Attribute):
                hint = f"the array method '.{func.attr}()' is not supported"
            raise self.fail(node, f"the call '{ast.unparse(node)}'", hint)
        args = [self.expr(a) for a in node.args]
        return self._call_object(node, callee.obj, args)

    def _dtype(self, node: ast.expr) -> ScalarType | None:
        """The scalar type a dtype argument names (``np.int32``, ``float``, ``"f4"``), or None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            obj: Any = node.value
        else:
            found = self._resolve(node)
            if found is None:
                return None
            obj = found.obj
        try:
            return scalar_type(np.dtype(obj) if isinstance(obj, str) else obj)
        except TypeError:
            return None

    def _alloc(self, node: ast.Call, fill: str) -> ops.Expr:
        """``np.zeros(shape, dtype)`` (``ones``, ``empty``): the shape an extent or a tuple of
        them, the dtype positional or ``dtype=``, float64 by default (NumPy's and Numba's)."""
        keywords = {k.arg: k.value for k in node.keywords}
        if set(keywords) - {"dtype"} or not 1 <= len(node.args) + len(keywords) <= 2 or not node.args:
            raise self.fail(node, f"the arguments of '{ast.unparse(node)}' (a shape and a dtype are)")
        extents = node.args[0].elts if isinstance(node.args[0], ast.Tuple) else [node.args[0]]
        shape = [self.expr(e) for e in extents]
        dtype = node.args[1] if len(node.args) == 2 else keywords.get("dtype")
        elem = scalar_type("f64") if dtype is None else self._dtype(dtype)
        if elem is None:
            raise self.fail(
                node,
                f"the dtype of '{ast.unparse(node)}' (one NumPy scalar type is)",
                f"np.{fill} with the element type {ast.unparse(dtype)} is not supported",  # type: ignore[arg-type]
            )
        return self.typed(node, rules.alloc, fill, shape, elem)

    def _call_object(self, node: ast.Call, obj: Any, args: list[ops.Expr]) -> ops.Expr:
        def one() -> ops.Expr:
            if len(args) != 1:
                raise self.fail(node, f"'{ast.unparse(node)}' with {len(args)} arguments")
            return args[0]

        if obj is builtins.len:
            return self.typed(node, rules.shape, one(), 0)
        if obj in (builtins.min, builtins.max, builtins.abs, builtins.round):
            return self.typed(node, rules.call, obj.__name__, args)
        if obj in (builtins.int, builtins.float, builtins.bool):
            value = one()
            if not isinstance(value.type, ScalarType):
                raise self.fail(node, f"'{ast.unparse(node)}' of {value.type}")
            if obj is builtins.float and value.type.dtype.kind == "b":
                raise self.fail(node, f"'{ast.unparse(node)}', float() of a bool (Numba refuses it)")
            rule = {
                builtins.int: nt.int_type,
                builtins.float: nt.float_type,
                builtins.bool: lambda t: nt.BOOL,
            }
            return self.typed(node, rules.cast, value, scalar_type(rule[obj](value.type.dtype)))
        if isinstance(obj, type) and issubclass(obj, (np.bool_, np.integer, np.floating)):
            try:
                target = scalar_type(obj)
            except TypeError:
                raise self.fail(node, f"the conversion '{ast.unparse(node)}'") from None
            return self.typed(node, rules.cast, one(), target)
        name = getattr(obj, "__name__", None)
        if name is not None and getattr(math, name, None) is obj:
            return self.typed(node, rules.call, f"math.{name}", args)
        if (
            isinstance(obj, np.ufunc)
            and getattr(np, name or "", None) is obj
            and (name in rules.NUMPY1 or name in rules.NUMPY2)
        ):
            return self.typed(node, rules.call, f"np.{name}", args)
        raise self.fail(
            node,
            f"the call '{ast.unparse(node)}'",
            f"the function {ast.unparse(node.func)}() is not supported in compiled leaves",
        )
