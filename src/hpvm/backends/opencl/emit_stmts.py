"""One leaf's IR as the body of an OpenCL C function: the statements, the driver that runs
the emission to a fixed point of the value bounds, and the declarations.

Why rounds: the leaf IR gives every local its one type, so nothing is inferred here but a
lower bound of each integer local (an index known to be non-negative needs no wrap). Bounds
only go down (widened to unknown after three steps), so a few emissions of the whole body
settle them; the last emission is the one kept. A local array variable is a view assigned
in one place; its view is known from the round that emitted that assignment on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import CompileError
from ...ir.graph import LeafFunction
from ...ir.leafir import ops
from ...ir.types import ArrayType, NodeHandleType, ScalarType
from . import cltypes as ct
from .emit_arrays import ArrayEmitter
from .emit_exprs import ExprEmitter
from .emit_intrinsics import Handle, IntrinsicEmitter, handle_levels, level_of
from .helpers import Helpers
from .values import OUT_PREFIX, CNames, Val, View, cast, fail, simple

_ROUNDS = 20
_LOWERINGS = 3  # a bound lowered more often than this is widened to unknown (a loop counting down)


class LeafEmitter(ExprEmitter, ArrayEmitter, IntrinsicEmitter):
    """Emits one leaf's body; ``run()`` returns its C lines (each with its source line)."""

    def __init__(self, leaf: LeafFunction, ir: ops.LeafIR, specs: list[Any], queries: Any, names: CNames):
        self.leaf = leaf
        self.ir = ir
        self.specs = specs
        self.queries = queries
        self.cname = names
        self.scalar_locals = {n: t.dtype for n, t in ir.locals if isinstance(t, ScalarType)}
        self.handles = handle_levels(ir)
        self.lower: dict[str, Any] = {}  # lower bounds of scalar locals (None: unknown)
        self.lowered: dict[str, int] = {}
        self.written: set[str] = set()
        self.final = False
        self.changed = False
        self.array_locals: dict[str, View] = {}
        self.private_arrays: dict[str, View] = {}
        self._updated: tuple[ops.Store, list[Val]] | None = None  # the store a[i] op= v being emitted
        self._check_array_locals()

    # -- driver ------------------------------------------------------------------------------------

    def run(self) -> list[tuple[str, int | None]]:
        for _ in range(_ROUNDS):
            self.changed = False
            self._emit_body()
            if not self.changed:
                break
        self.final = True
        return self._emit_body()

    def _emit_body(self) -> list[tuple[str, int | None]]:
        self.out: list[tuple[str, int | None]] = []
        self.indent = 1
        self.line = self.ir.line
        self.tmp_count = 0
        self.helpers = Helpers()
        self.array_outputs: dict[int, str] = {}
        self.max_level = -1
        self.level_lines: dict[int, int] = {}
        self.uses_barrier = False
        self.uses_ctx = False
        self.used_types: list[np.dtype] = []
        self.in_condition = False
        self.param_views: dict[str, View] = {}
        prologue: list[tuple[str, int | None]] = []
        for p, spec in zip(self.leaf.params, self.specs):
            if isinstance(p.type, ArrayType):
                self.param_views[p.name] = self.param_view(p.name, spec, prologue)
        self._block(self.ir.body)
        decls = [(f"    {ct.c_name(t)} {self.cname(n)} = 0;", None) for n, t in self.scalar_locals.items()]
        return prologue + decls + self.private_declarations() + self.out

    def _check_array_locals(self) -> None:
        """Each local array variable is assigned in one place (its view is fixed there)."""
        seen: set[str] = set()
        for s in ops.walk_stmts(self.ir.body):
            if isinstance(s, ops.Assign) and isinstance(s.target.type, ArrayType):
                name = s.target.name
                if name in seen:
                    self.line = s.line
                    what = "array" if isinstance(s.value, ops.Alloc) else "array variable"
                    raise self.fail_at(
                        f"array variable '{name}' is assigned in more than one place (assign each {what} once)"
                    )
                seen.add(name)

    # -- helpers of the parts ----------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.out.append(("    " * self.indent + text, self.line))

    def tmp(self, dtype: np.dtype, code: str) -> str:
        if self.in_condition:
            raise self.fail_at("an and/or with side effects inside a condition is not supported")
        self.tmp_count += 1
        name = f"hpvm__t{self.tmp_count}"
        self.emit(f"{ct.c_name(dtype)} {name} = {code};")
        return name

    def fail_at(self, what: str) -> CompileError:
        return fail(self.leaf, self.ir.where(self.line), what)

    def describe(self, v: Any) -> str:
        if isinstance(v, View):
            return f"an array ({v.dtype}, {v.rank}-D)"
        if isinstance(v, Val):
            return f"a {v.dtype} value"
        if isinstance(v, Handle):
            return "a node handle"
        return repr(v)

    def _expr_Var(self, e: ops.Var) -> Any:
        name, t = e.name, e.type
        if isinstance(t, NodeHandleType):
            level = self.handles.get(name)
            if level is None:
                raise self.fail_at(f"the node handle '{name}' is not known at compile time")
            return Handle(level)
        if name in self.param_views:
            return self.param_views[name]
        if isinstance(t, ArrayType):
            return self.array_var(name, t)
        assert isinstance(t, ScalarType)
        if name not in self.scalar_locals:
            return Val(self.cname(name), t.dtype, 0 if t.dtype.kind in "ub" else None)  # a parameter
        return Val(self.cname(name), t.dtype, self.lower.get(name))

    # -- statements --------------------------------------------------------------------------------

    def _block(self, block: ops.Block) -> None:
        for stmt in block:
            self.line = stmt.line
            getattr(self, f"_stmt_{type(stmt).__name__}")(stmt)

    def _nested(self, block: ops.Block) -> None:
        self.indent += 1
        self._block(block)
        self.indent -= 1

    def _stmt_Raise(self, s: ops.Raise) -> None:
        raise self.fail_at(
            "a 'Raise' statement is not supported (OpenCL C has no exceptions: check the condition on "
            "the host)"
        )

    def _stmt_Break(self, s: ops.Break) -> None:
        self.emit("break;")

    def _stmt_Continue(self, s: ops.Continue) -> None:
        self.emit("continue;")

    def _stmt_ExprStmt(self, s: ops.ExprStmt) -> None:
        e = s.value
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "barrier":
            self.uses_barrier = True
            self.emit("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
            return
        v = self.expr(e)
        if isinstance(v, Val):
            self.emit(f"(void)({v.code});")

    def _stmt_Assign(self, s: ops.Assign) -> None:
        name, t = s.target.name, s.target.type
        if isinstance(t, NodeHandleType):
            if level_of(s.value, self.handles) is None:
                raise self.fail_at(f"node handle '{name}' is assigned something else")
            return
        if isinstance(t, ArrayType):
            if name in self.param_views:
                raise self.fail_at(
                    f"assigning an array to the array parameter '{name}' is not supported (use a new name)"
                )
            if isinstance(s.value, ops.Alloc):
                self.private_array(name, s.value)
            else:
                self.view_local(name, self.view(s.value))
            return
        self._assign_scalar(name, t.dtype, self.scalar(s.value))

    def _assign_scalar(self, name: str, dtype: np.dtype, value: Val) -> None:
        if name in self.scalar_locals:
            self._bound(name, value.lb if ct.is_integral(value.dtype) else None)
        self.emit(f"{self.cname(name)} = {cast(value, dtype)};")

    def _bound(self, name: str, lb: Any) -> None:
        """Merge a new assignment's lower bound into the variable's (loops widen to unknown)."""
        if name not in self.lower:
            self.lower[name] = lb
            self.changed = True
            return
        old = self.lower[name]
        new = None if old is None or lb is None else min(old, lb)
        if new != old:
            if self.final:  # cannot happen after the fixed point; guards the rounds
                raise self.fail_at(f"internal error: the bound of '{name}' changed after the last round")
            self.lowered[name] = self.lowered.get(name, 0) + 1
            self.lower[name] = None if self.lowered[name] > _LOWERINGS else new
            self.changed = True

    def _stmt_Store(self, s: ops.Store) -> None:
        view = self.view(s.array)
        indices = self.indices(s.indices)
        if _updates(s):  # a[i] += v: the index is computed once, as Python does
            indices = [
                i if simple(i.code) else Val(self.tmp(i.dtype, i.code), i.dtype, i.lb) for i in indices
            ]
            self._updated = (s, indices)
        value = self.scalar(s.value)
        self._updated = None
        self.written.add(view.base)
        self.emit(f"{self.ref(view, indices)} = {self.store_value(value, view.dtype)};")

    def _expr_Load(self, e: ops.Load) -> Any:
        updated = self._updated
        if updated is not None and _reads_target(updated[0], e):
            return self.load(self.view(e.array), updated[1])
        return ArrayEmitter._expr_Load(self, e)

    def _stmt_If(self, s: ops.If) -> None:
        self.emit(f"if ({self.condition(s.test)}) {{")
        self._nested(s.body)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ops.If):
            self.line = orelse[0].line
            self.emit(f"}} else if ({self.condition(orelse[0].test)}) {{")
            self._nested(orelse[0].body)
            orelse = orelse[0].orelse
        if orelse:
            self.emit("} else {")
            self._nested(orelse)
        self.emit("}")

    def _stmt_While(self, s: ops.While) -> None:
        self.emit(f"while ({self.condition(s.test)}) {{")
        self._nested(s.body)
        self.emit("}")

    def _stmt_For(self, s: ops.For) -> None:
        start, stop, step = self.scalar(s.start), self.scalar(s.stop), self.scalar(s.step)
        var_t = s.var.type.dtype  # type: ignore[union-attr]
        loop_t = var_t if ct.is_int(var_t) else ct.range_type([start.dtype, stop.dtype, step.dtype])
        self.tmp_count += 1
        k = self.tmp_count
        ctype = ct.c_name(loop_t)
        counter, stop_c = f"hpvm__i{k}", f"hpvm__stop{k}"
        self.emit("{")
        self.indent += 1
        self.emit(f"const {ctype} {stop_c} = {cast(stop, loop_t)};")
        if step.const is not None:
            cond = f"{counter} {'<' if step.const > 0 else '>'} {stop_c}"
            incr = f"{counter} += {cast(step, loop_t)}"
        else:
            step_c = f"hpvm__step{k}"
            self.emit(f"const {ctype} {step_c} = {cast(step, loop_t)};")
            cond = f"({step_c} > 0 ? {counter} < {stop_c} : ({step_c} < 0 && {counter} > {stop_c}))"
            incr = f"{counter} += {step_c}"
        self.emit(f"for ({ctype} {counter} = {cast(start, loop_t)}; {cond}; {incr}) {{")
        lb = None
        if step.const is not None and step.const > 0:
            lb = start.lb
        elif step.const is not None and stop.lb is not None:
            lb = stop.lb + 1
        self.indent += 1
        self._assign_scalar(s.var.name, var_t, Val(counter, loop_t, 0 if loop_t.kind == "u" else lb))
        self._block(s.body)
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def _stmt_Return(self, s: ops.Return) -> None:
        for k, (e, t) in enumerate(zip(s.values, self.ir.outputs)):
            v = self.expr(e)
            if isinstance(t, ScalarType):
                self.emit(f"*{OUT_PREFIX}{k} = {cast(v, t.dtype)};")
                continue
            if v.space == "private":
                raise self.fail_at(
                    f"output {k} returns the leaf's own array '{v.base}', which ends with the leaf "
                    "on a GPU; copy it into an array parameter and return that"
                )
            base = self.array_outputs.setdefault(k, v.base)
            if base != v.base:
                raise self.fail_at(
                    f"output {k} returns a view of '{v.base}' here and of '{base}' elsewhere; the "
                    "opencl back end needs each array output to come from one parameter"
                )
            for j, part in enumerate([v.off, *v.shape, *v.strides]):
                self.emit(f"{OUT_PREFIX}{k}[{j}] = {part};")
        self.emit("return;")


def _updates(s: ops.Store) -> bool:
    """``a[i] op= v``: the stored value reads the element it stores into."""
    return any(_reads_target(s, e) for e in ops.walk_expr(s.value))


def _reads_target(s: ops.Store, e: ops.Expr) -> bool:
    return isinstance(e, ops.Load) and e.array == s.array and e.indices == s.indices
