"""The leaf IR's verifier: what must hold of any leaf IR, built, parsed or transformed.

* types agree: every expression has the type its constructor gives it (``rules.retyped``),
  every variable the type it is declared with, assignments, stores and returns put values
  of the place's own type (conversions are explicit ``Cast``s), conditions are scalars,
  loop bounds integers;
* names are defined before use: a variable is read only after some statement earlier in
  the leaf assigns it (Python's stricter rule, assigned on *every* path, is checked when the
  leaf runs: a builder or parser cannot always decide it);
* intrinsics keep their rules: arity and operand types (``rules.intrinsic``), the
  statement-only ones (``barrier``) as statements of their own, and — given the number of
  dimensions the leaf's node is replicated in — no query of an axis the node lacks (nor a
  context read standing for one, in a lowered leaf);
* ``break`` and ``continue`` only inside loops; every statement has a source line.

Problems are reported together, each naming the leaf's file and line, as one
``VerificationError``.
"""

from __future__ import annotations

from ...errors import VerificationError
from .. import instance_context as ictx
from ..intrinsics import INTRINSICS, query_problem
from ..types import ScalarType
from . import ops, rules

#: The query a context field of the ids and extents stands for.
_QUERY_OF_FIELD = {offset: name for name, offset in ictx.QUERY_OFFSETS.items()}


def verify_leaf(ir: ops.LeafIR, dims: int | None = None) -> None:
    """Raise ``VerificationError`` listing every problem of ``ir`` (see the module doc);
    ``dims``: the node's number of replicated dimensions, if known (queries are checked)."""
    problems = leaf_problems(ir, dims)
    if problems:
        raise VerificationError(problems)


def leaf_problems(ir: ops.LeafIR, dims: int | None = None) -> list[str]:
    """Every problem of ``ir``, formatted with its file and line (empty: it verifies)."""
    return _Checker(ir, dims).run()


class _Checker:
    def __init__(self, ir: ops.LeafIR, dims: int | None):
        self.ir = ir
        self.dims = dims
        self.problems: list[str] = []
        self.defined = {p.name for p in ir.params}
        self.loops = 0
        self.handles: dict[str, int | None] = {}  # node-handle variable -> ancestor level

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"{self.ir.file}:{line}: leaf '{self.ir.name}': {message}")

    def run(self) -> list[str]:
        seen: set[str] = {p.name for p in self.ir.params}
        if len(seen) != len(self.ir.params):
            self.problem(self.ir.line, "two parameters have the same name")
        for name, _ in self.ir.locals:
            if name in seen:
                self.problem(self.ir.line, f"'{name}' is declared twice")
            seen.add(name)
        self._find_handles()
        self.block(self.ir.body)
        return self.problems

    def _find_handles(self) -> None:
        """The ancestor level each node-handle variable assigned exactly once holds."""
        assigns = ops.handle_assignments(self.ir.body)
        for _ in range(len(assigns) + 1):
            for name, values in assigns.items():
                self.handles[name] = self.level(values[0]) if len(values) == 1 else None

    def level(self, e: ops.Expr) -> int | None:
        if isinstance(e, ops.Var):
            return self.handles.get(e.name)
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_node":
            return 0
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_parent_node":
            inner = self.level(e.args[0])
            return None if inner is None else inner + 1
        return None

    # -- statements -----------------------------------------------------------------------

    def block(self, block: ops.Block) -> None:
        for stmt in block:
            self.stmt(stmt)

    def stmt(self, s: ops.Stmt) -> None:
        line = s.line
        if line <= 0:
            self.problem(self.ir.line, f"a statement without a source line: {type(s).__name__}")
        if isinstance(s, ops.Assign):
            self.expr(s.value, line)
            self.var(s.target, line, store=True)
            if s.value.type != s.target.type:
                self.problem(line, f"'{s.target.name}' ({s.target.type}) is assigned a {s.value.type}")
        elif isinstance(s, ops.Store):
            for e in (s.array, *s.indices, s.value):
                self.expr(e, line)
            why = rules.store_problem(s.array, s.indices, s.value)
            if why is not None:
                self.problem(line, why)
        elif isinstance(s, ops.For):
            self._for(s)
        elif isinstance(s, (ops.While, ops.If)):
            self.condition(s.test, line)
            if isinstance(s, ops.While):
                self.loop(s.body)
            else:
                self.block(s.body)
                self.block(s.orelse)
        elif isinstance(s, ops.Return):
            self._return(s)
        elif isinstance(s, ops.Raise):
            pass  # (an opaque exception: nothing typed to check)
        elif isinstance(s, (ops.Break, ops.Continue)):
            if not self.loops:
                self.problem(line, f"'{type(s).__name__.lower()}' outside a loop")
        elif isinstance(s, ops.ExprStmt):
            self.expr(s.value, line, statement=True)
        else:
            self.problem(line, f"not a leaf IR statement: {s!r}")

    def loop(self, body: ops.Block) -> None:
        self.loops += 1
        self.block(body)
        self.loops -= 1

    def _for(self, s: ops.For) -> None:
        for e in (s.start, s.stop, s.step):
            self.expr(e, s.line)
        try:
            vtype = rules.range_var((s.start, s.stop, s.step))
        except rules.TypeProblem as e:
            self.problem(s.line, str(e))
        else:
            if rules.unify(s.var.type, vtype) != s.var.type:
                self.problem(s.line, f"the loop variable '{s.var.name}' is {s.var.type}, not {vtype}")
        if isinstance(s.step, ops.Const) and s.step.value == 0:
            self.problem(s.line, "range() with a step of zero")
        self.var(s.var, s.line, store=True)
        self.loop(s.body)

    def _return(self, s: ops.Return) -> None:
        outs = self.ir.outputs
        if len(s.values) != len(outs):
            self.problem(s.line, f"return gives {len(s.values)} value(s) for {len(outs)} output(s)")
        for k, (v, t) in enumerate(zip(s.values, outs)):
            self.expr(v, s.line)
            if v.type != t:
                self.problem(s.line, f"output {k} is {t} but the return gives {v.type}")

    def condition(self, e: ops.Expr, line: int) -> None:
        self.expr(e, line)
        if not isinstance(e.type, ScalarType):
            self.problem(line, f"a condition of type {e.type}")

    # -- expressions ----------------------------------------------------------------------

    def var(self, v: ops.Var, line: int, store: bool = False) -> None:
        declared = self.ir.type_of(v.name)
        if declared is None:
            self.problem(line, f"'{v.name}' is neither a parameter nor a declared local")
        elif declared != v.type:
            self.problem(line, f"'{v.name}' is used as {v.type} but declared {declared}")
        if store:
            self.defined.add(v.name)
        elif v.name not in self.defined:
            self.problem(line, f"'{v.name}' is read before any statement assigns it")

    def expr(self, e: ops.Expr, line: int, statement: bool = False) -> None:
        for k, sub in enumerate(ops.walk_expr(e)):
            if isinstance(sub, ops.Var):
                self.var(sub, line)
                continue
            try:
                again = rules.retyped(sub)
            except rules.TypeProblem as problem:
                self.problem(line, str(problem))
                continue
            if again.type != sub.type:
                self.problem(
                    line, f"{type(sub).__name__} typed {sub.type}, but its operands give {again.type}"
                )
            if isinstance(sub, ops.IntrinsicOp):
                self._intrinsic(sub, line, statement and k == 0)
            elif isinstance(sub, ops.CtxRead):
                self._ctx_read(sub, line)

    def _ctx_read(self, read: ops.CtxRead, line: int) -> None:
        """A lowered query of the leaf's own node keeps the dimension rule of the query."""
        if self.dims is None or read.level != 0 or read.field >= ictx.DIMS:
            return
        entry = INTRINSICS[_QUERY_OF_FIELD[read.field]]
        why = query_problem(entry, self.dims)
        if why is not None:
            self.problem(line, f"the context read of {entry.spelled}() of the leaf's own node: {why}")

    def _intrinsic(self, op: ops.IntrinsicOp, line: int, statement: bool) -> None:
        entry = op.intrinsic
        if entry.statement and not statement:
            self.problem(line, f"{entry.spelled}() must be a statement of its own")
        if entry.kind == "query" and self.dims is not None and self.level(op.args[0]) == 0:
            why = query_problem(entry, self.dims)
            if why is not None:
                self.problem(line, f"{entry.spelled}() of the leaf's own node: {why}")


__all__ = ["leaf_problems", "verify_leaf"]
