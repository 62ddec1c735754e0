"""Build a leaf's IR from its Python body, once per leaf (``leaf_ir``).

The leaf's ``def`` is read as the verifier reads it (``leafinfo.parse_leaf``: real file
lines; a generated body's lines map to the foreign file through ``LeafFunction.where``) and
its names are resolved in what its code sees (``leafinfo.visible_names``: nothing runs).

Typing follows Numba: a local variable has one type, the unification of everything
assigned to it (``rules.unify``), so the builder runs to a fixed point — each round types
what it can, a statement reading a variable not typed yet waits for the next round — and a
last round builds the IR with the settled types, making every implicit conversion an
explicit ``Cast``. Parameters keep their port types.

One type per local is what the leaf IR can say; Numba (SSA) types each assignment's version
apart and unifies versions only where control flow merges (an ``if``'s join, a loop's
head). The two agree when every read sees the unified type; the last round follows the
types reaching each read (``flow``) and refuses a leaf where they do not
(``x = 0; y = x // 2; x = 1.5``: Numba's ``y`` is int64, one type for ``x`` would make it
float64) rather than type it differently.

Anything outside the dialect raises ``LeafIRUnsupported`` naming the construct and line;
nothing is silently approximated. The result (or the refusal) is cached on the leaf and
dropped with the leaf's other facts when its source changes (``LeafFunction._forget_facts``).
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
from ..leafinfo import intrinsic_name, parse_leaf, visible_names
from ..types import ArrayType, PortType, ScalarType, scalar_type
from . import ops, rules
from .ops import LeafIRUnsupported

_CACHE_KEY = "_leaf_ir"

_BINARY = {
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


def leaf_ir(fn: LeafFunction) -> ops.LeafIR:
    """The leaf's IR, built the first time it is asked for and cached on the leaf (a
    refusal too: asking again raises the same ``LeafIRUnsupported`` without rebuilding)."""
    cached = fn.__dict__.get(_CACHE_KEY)
    if cached is None:
        try:
            cached = build(fn)
        except LeafIRUnsupported as e:
            cached = e
        fn.__dict__[_CACHE_KEY] = cached
    if isinstance(cached, LeafIRUnsupported):
        raise LeafIRUnsupported(cached.leaf, cached.where, cached.construct)
    return cached


def build(fn: LeafFunction) -> ops.LeafIR:
    """Build ``fn``'s IR now (uncached; ``leaf_ir`` is the cached entry point)."""
    func = parse_leaf(fn)
    if func is None:
        raise LeafIRUnsupported(fn.name, None, f"a {fn.body_kind} body without Python source")
    return _Builder(fn, func).run()


def _merge(a: dict[str, PortType], b: dict[str, PortType]) -> dict[str, PortType]:
    """The types reaching a point where two paths meet (Numba's phi: unified)."""
    merged = dict(a)
    for name, t in b.items():
        merged[name] = t if name not in a else (rules.unify(a[name], t) or a[name])
    return merged


class _Untyped(Exception):
    """A local read before any assignment gave it a type (this round)."""


class _PyObj:
    """A Python object a name or attribute denotes (a module, a function, a NumPy type)."""

    def __init__(self, obj: Any):
        self.obj = obj


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


class _Builder:
    """One leaf's build: the rounds of typing, then the final round making the IR."""

    def __init__(self, fn: LeafFunction, func: ast.FunctionDef):
        self.fn = fn
        self.func = func
        self.env: dict[str, Any] = {**builtins.__dict__, **_trusted_imports(fn), **visible_names(fn)}
        self.params: dict[str, PortType] = {p.name: p.type for p in fn.params}
        self.local_names = _stored_names(func) - set(self.params)
        self.types: dict[str, PortType] = {}
        self.changed = False
        self.final = False
        self.loops = 0
        # Flow typing (final round): the type each local holds where it is read, as Numba
        # types it (SSA: versions unified only where control flow merges).
        self.flow: dict[str, PortType] = {}
        self.checking = True

    # -- driver ---------------------------------------------------------------------------

    def run(self) -> ops.LeafIR:
        self._check_signature()
        for _ in range(32):  # types only widen, so this settles in a few rounds
            self.changed = False
            self._block(self.func.body)
            if not self.changed:
                break
        self.final = True
        self.flow = {}
        body = self._block(self.func.body)
        where = self.fn.where(self.func.lineno)
        return ops.LeafIR(
            self.fn.name,
            tuple(self.fn.params),
            tuple(self.fn.out_types),
            tuple(self.types.items()),
            body,
            where.file,
            where.line,
        )

    def _check_signature(self) -> None:
        args = self.func.args
        names = [a.arg for a in args.args]
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise self.fail(
                self.func, "a signature with defaults, *args, **kwargs or keyword-only parameters"
            )
        if names != [p.name for p in self.fn.params]:
            raise self.fail(
                self.func, f"a def whose parameters ({', '.join(names)}) are not the leaf's ports"
            )

    def fail(self, node: ast.AST, construct: str) -> LeafIRUnsupported:
        line = getattr(node, "lineno", None)
        where = self.fn.where(line) if line is not None else None
        return LeafIRUnsupported(self.fn.name, where, construct)

    def line(self, node: ast.AST) -> int:
        return self.fn.where(node.lineno).line  # type: ignore[attr-defined]

    def typed(self, node: ast.AST, make: Any, *args: Any) -> Any:
        """A rules constructor applied, its refusal reported as unsupported at ``node``."""
        try:
            return make(*args)
        except rules.TypeProblem as e:
            raise self.fail(node, f"'{ast.unparse(node)}' ({e})") from None

    # -- statements -----------------------------------------------------------------------

    def _block(self, stmts: list[ast.stmt]) -> ops.Block:
        out: list[ops.Stmt] = []
        for stmt in stmts:
            try:
                out.extend(self._stmt(stmt))
            except _Untyped as e:
                if self.final:
                    raise self.fail(stmt, f"'{e}' read before any assignment gives it a type") from None
                self.changed = True  # typed in a later round
        return tuple(out)

    def _stmt(self, node: ast.stmt) -> list[ops.Stmt]:
        method = getattr(self, f"_stmt_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"a '{type(node).__name__}' statement")
        return method(node)

    def _stmt_Pass(self, node: ast.Pass) -> list[ops.Stmt]:
        return []

    def _stmt_Break(self, node: ast.Break) -> list[ops.Stmt]:
        return [ops.Break(self.line(node))]

    def _stmt_Continue(self, node: ast.Continue) -> list[ops.Stmt]:
        return [ops.Continue(self.line(node))]

    def _stmt_Expr(self, node: ast.Expr) -> list[ops.Stmt]:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return []  # a docstring or a string used as a comment
        return [ops.ExprStmt(self.expr(node.value, statement=True), self.line(node))]

    def _stmt_Assign(self, node: ast.Assign) -> list[ops.Stmt]:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            return self._unpack(node.targets[0], node.value, node)
        if len(node.targets) > 1 and not isinstance(node.value, (ast.Constant, ast.Name)):
            raise self.fail(node, "a chained assignment of a computed value (a = b = f(x))")
        value = self.expr(node.value)
        return [self._assign(t, value, node) for t in node.targets]

    def _stmt_AnnAssign(self, node: ast.AnnAssign) -> list[ops.Stmt]:
        if node.value is None:
            return []
        return [self._assign(node.target, self.expr(node.value), node)]

    def _unpack(self, target: ast.Tuple, value: ast.expr, node: ast.stmt) -> list[ops.Stmt]:
        """``a, b = x, y`` as assignments in order, when no value reads a target (else the
        order would matter: Python evaluates every value first)."""
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            raise self.fail(node, "an unpacking assignment of something other than a tuple of as many values")
        written = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = {n.id for v in value.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
        if written & read:
            raise self.fail(node, "an unpacking assignment whose values read its targets (a, b = b, a)")
        return [self._assign(t, self.expr(v), node) for t, v in zip(target.elts, value.elts)]

    def _assign(self, target: ast.expr, value: ops.Expr, node: ast.stmt) -> ops.Stmt:
        if isinstance(target, ast.Name):
            return ops.Assign(
                self._define(target.id, value, node), self._coerce(value, target.id, node), self.line(node)
            )
        if isinstance(target, ast.Subscript):
            array, indices = self._element(target)
            elem = self.typed(target, rules.load, array, indices).type
            if not isinstance(elem, ScalarType):
                raise self.fail(
                    node, f"a store into a view of '{ast.unparse(target)}' (index every dimension)"
                )
            return ops.Store(array, indices, self.typed(node, rules.convert, value, elem), self.line(node))
        raise self.fail(node, f"an assignment to '{ast.unparse(target)}'")

    def _define(self, name: str, value: ops.Expr, node: ast.AST) -> ops.Var:
        """The variable ``name`` after it is assigned ``value``: a parameter keeps its port
        type; a local's type unifies with the value's (the fixed point settles it)."""
        if name in self.params:
            ptype = self.params[name]
            if value.type != ptype:
                raise self.fail(
                    node,
                    f"assigning {value.type} to the parameter '{name}' of type {ptype} (Numba would "
                    "retype the parameter)",
                )
            return ops.Var(name, ptype)
        if value.type is None:
            raise self.fail(node, f"assigning a call without a value to '{name}'")
        old = self.types.get(name)
        new = value.type if old is None else rules.unify(old, value.type)
        if new is None:
            raise self.fail(node, f"'{name}' holding {old} and {value.type}")
        if new != old:
            if self.final:  # cannot happen after the fixed point; guards the inference
                raise self.fail(node, f"internal error: the type of '{name}' changed after inference")
            self.types[name] = new
            self.changed = True
        self.flow[name] = value.type
        return ops.Var(name, new)

    def _coerce(self, value: ops.Expr, name: str, node: ast.AST) -> ops.Expr:
        target = self.params.get(name) or self.types[name]
        return self.typed(node, rules.convert, value, target)

    def _stmt_AugAssign(self, node: ast.AugAssign) -> list[ops.Stmt]:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise self.fail(node, f"the operator of '{ast.unparse(node)}'")
        rhs = self.expr(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            current = self._name(ast.Name(target.id, ast.Load(), lineno=node.lineno, col_offset=0))
            result = self.typed(node, rules.binary, op, current, rhs)
            return [self._assign(target, result, node)]
        if isinstance(target, ast.Subscript):
            array, indices = self._element(target)
            current = self.typed(target, rules.load, array, indices)
            result = self.typed(node, rules.binary, op, current, rhs)
            return [self._assign(target, result, node)]
        raise self.fail(node, f"an augmented assignment to '{ast.unparse(target)}'")

    def _stmt_If(self, node: ast.If) -> list[ops.Stmt]:
        test = self.expr(node.test)
        before = dict(self.flow)
        body = self._block(node.body)
        after_body, self.flow = self.flow, before
        orelse = self._block(node.orelse)
        self.flow = _merge(after_body, self.flow)
        return [ops.If(test, body, orelse, self.line(node))]

    def _stmt_While(self, node: ast.While) -> list[ops.Stmt]:
        if node.orelse:
            raise self.fail(node, "'while ... else'")
        test = self.expr(node.test)
        return [ops.While(test, self._loop_body(node.body), self.line(node))]

    def _loop_body(self, body: list[ast.stmt]) -> ops.Block:
        """A loop's body. In the final round, the types reaching its head are found first
        (entry merged with the end of the body, to a fixed point, reads unchecked), then the
        body is built once from that head."""
        self.loops += 1
        try:
            if self.final:
                checking, self.checking = self.checking, False
                for _ in range(16):
                    head = dict(self.flow)
                    self._block(body)
                    self.flow = _merge(head, self.flow)
                    if self.flow == head:
                        break
                self.checking = checking
            head = dict(self.flow)
            block = self._block(body)
            self.flow = _merge(head, self.flow)
            return block
        finally:
            self.loops -= 1

    def _stmt_For(self, node: ast.For) -> list[ops.Stmt]:
        if node.orelse:
            raise self.fail(node, "'for ... else'")
        call = node.iter
        callee = self._resolve(call.func) if isinstance(call, ast.Call) else None
        if not (isinstance(call, ast.Call) and isinstance(callee, _PyObj) and callee.obj is builtins.range):
            raise self.fail(node, f"a loop over '{ast.unparse(node.iter)}' (loops run over range(...))")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.fail(node, "range() with other than 1 to 3 positional arguments")
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, f"the loop target '{ast.unparse(node.target)}' (a plain name is)")
        bounds = [self.expr(a) for a in call.args]
        vtype = self.typed(call, rules.range_var, bounds)
        if len(bounds) == 1:
            bounds = [rules.const(0), bounds[0], rules.const(1)]
        elif len(bounds) == 2:
            bounds.append(rules.const(1))
        if isinstance(bounds[2], ops.Const) and bounds[2].value == 0:
            raise self.fail(call, "range() with a step of zero")
        counter = ops.Const(0, vtype)  # stands for the loop variable's values, to type it
        var = self._define(node.target.id, counter, node)
        if var.type != vtype and node.target.id in self.params:
            raise self.fail(node, f"the parameter '{node.target.id}' as a loop variable")
        body = self._loop_body(node.body)
        return [ops.For(var, bounds[0], bounds[1], bounds[2], body, self.line(node))]

    def _stmt_Return(self, node: ast.Return) -> list[ops.Stmt]:
        outs = self.fn.out_types
        if node.value is None:
            values: list[ast.expr] = []
        elif isinstance(node.value, ast.Tuple) and len(outs) != 1:
            values = list(node.value.elts)
        else:
            values = [node.value]
        if len(values) != len(outs):
            raise self.fail(
                node, f"a return of {len(values)} value(s) from a leaf with {len(outs)} output(s)"
            )
        converted = tuple(self.typed(v, rules.convert, self.expr(v), t) for v, t in zip(values, outs))
        return [ops.Return(converted, self.line(node))]

    # -- expressions ----------------------------------------------------------------------

    def expr(self, node: ast.expr, statement: bool = False) -> ops.Expr:
        found = self._value(node, statement)
        if isinstance(found, _PyObj):
            raise self.fail(node, f"'{ast.unparse(node)}' used as a value ({type(found.obj).__name__})")
        return found

    def _value(self, node: ast.expr, statement: bool = False) -> ops.Expr | _PyObj:
        if isinstance(node, ast.Call):
            return self._call(node, statement)
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"the expression '{ast.unparse(node)}' ({type(node).__name__})")
        return method(node)

    def _expr_Constant(self, node: ast.Constant) -> ops.Expr:
        return self.typed(node, rules.const, node.value)

    def _expr_Name(self, node: ast.Name) -> ops.Expr | _PyObj:
        return self._name(node)

    def _name(self, node: ast.Name) -> ops.Expr | _PyObj:
        name = node.id
        if name in self.params:
            return ops.Var(name, self.params[name])
        if name in self.local_names:
            if name not in self.types:
                raise _Untyped(name)
            reaching = self.flow.get(name)
            if self.final and self.checking and reaching is not None and reaching != self.types[name]:
                raise self.fail(
                    node,
                    f"'{name}' read where Numba types it {reaching}, while the leaf IR gives the "
                    f"variable one type, {self.types[name]} (a local assigned values of several types "
                    "outside a loop or branch that merges them)",
                )
            return ops.Var(name, self.types[name])
        if name not in self.env:
            raise self.fail(node, f"the name '{name}', which the leaf's code does not see")
        return self._python(self.env[name], node)

    def _python(self, obj: Any, node: ast.AST) -> ops.Expr | _PyObj:
        if isinstance(obj, (bool, int, float, np.bool_, np.integer, np.floating)):
            return self.typed(node, rules.const, obj)
        return _PyObj(obj)

    def _resolve(self, node: ast.expr) -> _PyObj | None:
        """The Python object a callee denotes (None: a value of the leaf, not an object)."""
        if isinstance(node, ast.Name):
            if node.id in self.params or node.id in self.local_names or node.id not in self.env:
                return None
            return _PyObj(self.env[node.id])
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            if base is not None and hasattr(base.obj, node.attr):
                return _PyObj(getattr(base.obj, node.attr))
        return None

    def _expr_Attribute(self, node: ast.Attribute) -> ops.Expr | _PyObj:
        base = self._value(node.value)
        if isinstance(base, _PyObj):
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
                raise self.fail(node, f"the slice '{ast.unparse(node)}'")
        return array, tuple(self.expr(k) for k in keys)

    def _expr_BinOp(self, node: ast.BinOp) -> ops.Expr:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise self.fail(node, f"the operator of '{ast.unparse(node)}'")
        return self.typed(node, rules.binary, op, self.expr(node.left), self.expr(node.right))

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
        if node.keywords:
            raise self.fail(node, f"the keyword arguments of '{ast.unparse(node)}'")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, f"the starred arguments of '{ast.unparse(node)}'")
        name = intrinsic_name(node, self.env)
        if name is not None:
            entry = INTRINSICS.get(name)
            if entry is None:
                raise self.fail(node, f"hpvm.{name}(), a graph-building or host call")
            if entry.statement and not statement:
                raise self.fail(
                    node, f"{entry.spelled}() inside an expression (it is a statement of its own)"
                )
            return self.typed(node, rules.intrinsic, entry, [self.expr(a) for a in node.args])
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "view" and self._resolve(func) is None:
            return self._view(node, func)
        callee = self._resolve(func)
        if callee is None:
            raise self.fail(node, f"the call '{ast.unparse(node)}'")
        args = [self.expr(a) for a in node.args]
        return self._call_object(node, callee.obj, args)

    def _view(self, node: ast.Call, func: ast.Attribute) -> ops.Expr:
        array = self.expr(func.value)
        dtype = self._resolve(node.args[0]) if len(node.args) == 1 else None
        try:
            elem = scalar_type(dtype.obj) if dtype is not None else None
        except TypeError:
            elem = None
        if elem is None:
            raise self.fail(node, f"'{ast.unparse(node)}' (view as one NumPy scalar type)")
        return self.typed(node, rules.retype, array, elem)

    def _call_object(self, node: ast.Call, obj: Any, args: list[ops.Expr]) -> ops.Expr:
        def one() -> ops.Expr:
            if len(args) != 1:
                raise self.fail(node, f"'{ast.unparse(node)}' with {len(args)} arguments")
            return args[0]

        if obj is builtins.len:
            return self.typed(node, rules.shape, one(), 0)
        if obj in (builtins.min, builtins.max, builtins.abs):
            return self.typed(node, rules.call, obj.__name__, args)
        if obj in (builtins.int, builtins.float, builtins.bool):
            value = one()
            if not isinstance(value.type, ScalarType):
                raise self.fail(node, f"'{ast.unparse(node)}' of {value.type}")
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
        if isinstance(obj, np.ufunc) and getattr(np, name or "", None) is obj and name in rules.NUMPY1:
            return self.typed(node, rules.call, f"np.{name}", args)
        raise self.fail(node, f"the call '{ast.unparse(node)}'")


__all__ = ["build", "leaf_ir"]
