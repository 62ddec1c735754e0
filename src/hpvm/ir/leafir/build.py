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

from ..graph import LeafFunction
from ..leafinfo import parse_leaf
from ..types import PortType, ScalarType
from . import ops, rules
from .exprs import BINARY, ExprBuilder, PyObj, Untyped
from .ops import LeafIRUnsupported

_CACHE_KEY = "_leaf_ir"


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
        raise LeafIRUnsupported(cached.leaf, cached.where, cached.construct, cached.hint)
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


class _Builder(ExprBuilder):
    """One leaf's build: the rounds of typing, then the final round making the IR; the
    statements here, the expressions in ``ExprBuilder``."""

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

    # -- statements -----------------------------------------------------------------------

    def _block(self, stmts: list[ast.stmt]) -> ops.Block:
        out: list[ops.Stmt] = []
        for stmt in stmts:
            try:
                out.extend(self._stmt(stmt))
            except Untyped as e:
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
        """``a, b = x, y`` as assignments in order when no value reads a target; else (a swap,
        ``a, b = b, a``) each value first goes to a temporary local of its own, as Python
        evaluates every value before assigning any."""
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            raise self.fail(node, "an unpacking assignment of something other than a tuple of as many values")
        written = {n.id for t in target.elts for n in ast.walk(t) if isinstance(n, ast.Name)}
        read = {n.id for v in value.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
        if not written & read:
            return [self._assign(t, self.expr(v), node) for t, v in zip(target.elts, value.elts)]
        temps = [self._temporary(node, k) for k in range(len(value.elts))]
        out = [self._assign(ast.Name(t, ast.Store()), self.expr(v), node) for t, v in zip(temps, value.elts)]
        for t, name in zip(target.elts, temps):
            read_back = self._name(ast.Name(name, ast.Load(), lineno=node.lineno, col_offset=0))
            out.append(self._assign(t, read_back, node))  # type: ignore[arg-type]
        return out

    def _temporary(self, node: ast.stmt, k: int) -> str:
        """The temporary local holding value ``k`` of the unpacking at ``node`` (the same name
        in every round; a name the leaf does not use)."""
        key = (node.lineno, node.col_offset, k)
        name = self.temporaries.get(key)
        if name is None:
            name = f"unpacked_{node.lineno}_{k}"
            while name in self.local_names or name in self.params or name in self.env:
                name += "_"
            self.temporaries[key] = name
            self.local_names.add(name)
        return name

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
                    f"assigning {value.type} to the parameter '{name}' is not supported (a scalar "
                    "parameter keeps its type; use a new name)",
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
        op = BINARY.get(type(node.op))
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
        if not (isinstance(call, ast.Call) and isinstance(callee, PyObj) and callee.obj is builtins.range):
            raise self.fail(
                node,
                f"a loop over '{ast.unparse(node.iter)}' (loops run over range(...))",
                "only loops over range(...) are supported (for i in range(a, b, step))",
            )
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

    def _stmt_Raise(self, node: ast.Raise) -> list[ops.Stmt]:
        if node.cause is not None:
            raise self.fail(node, "'raise ... from ...'")
        return [ops.Raise(None if node.exc is None else ast.unparse(node.exc), self.line(node))]

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


__all__ = ["build", "leaf_ir"]
