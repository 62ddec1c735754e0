"""CloneLeaves' query lowering as a pass on the leaf IR (seed 001, DFG2LLVM_CPU step 1).

Why here, once: every Numba back end (``cpu``, ``cuda``) compiles a leaf as its *clone*, a
function that receives its instance context (``ir/instance_context.py``) instead of
walking node handles. Lowering the queries on the leaf IR gives one lowered leaf that each
back end emits (``pyemit.emit_python(..., clone=True)``) or rewrites further, instead of
each rewriting Python. ``lower_queries``:

* every structure query (``get_node_instance_id_x(h)``, ``get_num_node_instances_y(h)``,
  ``get_num_dims(h)``) becomes a ``CtxRead`` of the level ``h`` names (0: the leaf's node,
  1 its parent...) — the handle must be known statically: ``hpvm.get_node()``,
  ``hpvm.get_parent_node(...)`` of one, or a variable assigned only such values;
* node-handle variables and their assignments disappear (handles exist only at compile time);
* everything else is kept: atomics, ``malloc`` and ``barrier`` stay ``IntrinsicOp`` nodes
  (the emitter spells them as the back end's names).

The mistakes the syntax-tree cloner (``passes/clone_leaves.py``) reports are reported here
the same way, as ``CompileError`` messages naming the leaf's file and line (``lowering_error``,
shared by both).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import CompileError
from .. import instance_context as ictx
from ..types import node_t
from . import ops, rules
from .rewrite import rewrite_own_exprs


@dataclass(frozen=True)
class LoweredLeaf:
    """A leaf IR with its queries lowered (see the module doc): ``levels``, how many context
    levels it reads (max level + 1; 0 if none); ``barrier_lines``, the lines of its
    barriers in order."""

    ir: ops.LeafIR
    levels: int
    barrier_lines: tuple[int, ...]


def lowering_error(leaf: str, file: str, line: int, backend: str, what: str) -> CompileError:
    """A leaf the lowering refuses: ``what`` is wrong at ``file:line``, and ``backend`` cannot
    compile it (the interpreter runs node handles as they are)."""
    return CompileError(
        f"leaf '{leaf}' ({file}:{line}): {what}; the {backend} back end cannot compile this — try target='interp'"
    )


def lower_queries(ir: ops.LeafIR, backend: str = "cpu") -> LoweredLeaf:
    """``ir`` with its structure queries lowered to context reads (the module doc);
    ``backend`` names the back end in the ``CompileError`` of a leaf that cannot be lowered."""
    return _Lowering(ir, backend).run()


class _Lowering:
    def __init__(self, ir: ops.LeafIR, backend: str):
        self.ir = ir
        self.backend = backend
        self.handles: dict[str, int | None] = {}  # handle variable -> level (None: not static)
        self.max_level = -1
        self.barriers: list[int] = []

    def fail(self, line: int, what: str) -> CompileError:
        return lowering_error(self.ir.name, self.ir.file, line, self.backend, what)

    def run(self) -> LoweredLeaf:
        self._find_handles()
        body = self._block(self.ir.body)
        locals_ = tuple((name, t) for name, t in self.ir.locals if t != node_t)
        lowered = replace(self.ir, locals=locals_, body=body)
        return LoweredLeaf(lowered, self.max_level + 1, tuple(self.barriers))

    # -- node handles ---------------------------------------------------------------------

    def _find_handles(self) -> None:
        """The level each handle variable holds: that of its assignments when they all
        agree (to a fixpoint, for chains of handle variables), else ``None``."""
        assigns = ops.handle_assignments(self.ir.body)
        for _ in range(len(assigns) + 1):
            for name, values in assigns.items():
                levels = {self.level(v) for v in values}
                self.handles[name] = levels.pop() if len(levels) == 1 else None

    def level(self, e: ops.Expr) -> int | None:
        """The ancestor level a node-handle expression names, if known statically."""
        if isinstance(e, ops.Var):
            return self.handles.get(e.name)
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_node":
            return 0
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_parent_node" and len(e.args) == 1:
            inner = self.level(e.args[0])
            return None if inner is None else inner + 1
        return None

    # -- statements -----------------------------------------------------------------------

    def _block(self, block: ops.Block) -> ops.Block:
        out: list[ops.Stmt] = []
        for stmt in block:
            if isinstance(stmt, ops.Assign) and stmt.target.type == node_t:
                if self.level(stmt.value) is None:
                    raise self.fail(stmt.line, f"node handle '{stmt.target.name}' is assigned something else")
                continue  # handles exist only at compile time
            if isinstance(stmt, ops.ExprStmt) and _is_barrier(stmt.value):
                self.barriers.append(stmt.line)
                out.append(stmt)
                continue
            nested = {}
            if isinstance(stmt, (ops.For, ops.While, ops.If)):
                nested["body"] = self._block(stmt.body)
            if isinstance(stmt, ops.If):
                nested["orelse"] = self._block(stmt.orelse)
            stmt = replace(stmt, **nested) if nested else stmt
            stmt = rewrite_own_exprs(stmt, lambda e, line=stmt.line: self._expr(e, line))
            own = ops.stmt_exprs(stmt)[1:] if isinstance(stmt, ops.Assign) else ops.stmt_exprs(stmt)
            for e in own:
                self._check_no_handle(e, stmt.line)
            out.append(stmt)
        return tuple(out)

    def _expr(self, e: ops.Expr, line: int) -> ops.Expr:
        """One expression, its operands already lowered (bottom-up): a query becomes a
        context read; a handle left anywhere else is a misuse."""
        if isinstance(e, ops.IntrinsicOp):
            name = e.intrinsic.name
            if name in ictx.QUERY_OFFSETS:
                if len(e.args) != 1:
                    raise self.fail(line, f"hpvm.{name}() takes one node handle")
                level = self.level(e.args[0])
                if level is None:
                    raise self.fail(
                        line,
                        f"the node handle passed to hpvm.{name}() is not known at compile time "
                        "(use hpvm.get_node() / hpvm.get_parent_node(...) directly or through a variable)",
                    )
                self.max_level = max(self.max_level, level)
                return rules.ctx_read(level, ictx.QUERY_OFFSETS[name])
            if e.intrinsic.kind == "barrier":
                raise self.fail(line, "hpvm.barrier() must be a statement of its own")
            if e.intrinsic.kind == "handle":
                return e  # (a handle's operand is a handle: consumed by the query around it)
        for sub in ops.operands(e):
            self._check_no_handle(sub, line)
        return e

    def _check_no_handle(self, e: ops.Expr, line: int) -> None:
        """``e``, an operand of something other than a query, is not a node handle."""
        if isinstance(e, ops.Var) and e.type == node_t:
            raise self.fail(
                line, f"node handle '{e.name}' is used other than as the argument of a structure query"
            )
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "handle":
            raise self.fail(line, f"hpvm.{e.intrinsic.name}() is used other than in a structure query")


def _is_barrier(e: ops.Expr) -> bool:
    return isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "barrier"


__all__ = ["LoweredLeaf", "lower_queries", "lowering_error"]
