"""HBIR loops → Python loops of a leaf body: a C ``for`` as a ``range`` when it plainly
counts (else a ``while`` whose ``continue``\\ s run the step first), ``iterator<n, L, x, y>``
as this tile's share of ``0..n`` under layout L, and wait loops (``waits.py``) that keep
the tile's row of ``hbir_wait`` for the run's watchdog and leave when it aborts the run.

Why a class of its own: loops are where the generated code's speed and its deadlock
handling are decided; they write through the block's writer (``BlockWriter``: its output,
names and statements) and add only the loop forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import ast as A
from .codeexpr import constant_value, has_index, nonneg, uses_global
from .model import Model
from .symbols import Scope

if TYPE_CHECKING:
    from .codegen import BlockWriter

#: The columns of a tile's row of ``hbir_wait``: the line of the wait loop it is in (0:
#: none), the turns it took in wait loops, whether it is inside a block. The last row's
#: first column is the abort flag the watchdog raises (concurrent.py).
WAITING, TURNS, RUNNING = 0, 1, 2
WAIT_COLUMNS = 3


class LoopWriter:
    """Writes the loops of the block ``w`` writes."""

    def __init__(self, w: BlockWriter):
        self.w = w

    def c_for(self, s: A.For, scope: Scope, depth: int) -> None:
        scope.push()
        counted = self.counting(s, scope)
        if counted is not None:
            var, start, stop, step = counted
            python = self.w.declare(var, "int", scope, nonneg(s.init.init, scope))  # type: ignore[union-attr,arg-type]
            args = f"{start}, {stop}" + ("" if step == "1" else f", {step}")
            self.w.steps.append(None)
            self.w.emit(depth, s.line, f"for {python} in range({args}):")
            self.w.body(s.body, scope, depth + 1, s.line)
            self.w.steps.pop()
            scope.pop()
            return
        if s.init is not None:
            self.w.stmt(s.init, scope, depth)
        cond = "True" if s.cond is None else self.w.exprs.expr(s.cond, scope)
        self.w.steps.append([s.step] if s.step is not None else [])  # type: ignore[list-item]

        def body() -> None:
            self.w.body(s.body, scope, depth + 1, s.line)
            if s.step is not None:
                self.w.stmt(s.step, scope, depth + 1)

        self.wait_loop(s, cond, depth, body)
        self.w.steps.pop()
        scope.pop()

    def counting(self, s: A.For, scope: Scope) -> tuple[str, str, str, str] | None:
        """``(var, start, stop, step)`` of a C for that is a plain ``range`` loop, else None."""
        init, cond, step = s.init, s.cond, s.step
        if not (isinstance(init, A.VarDecl) and init.elem == "int" and init.init is not None):
            return None
        var = init.name
        if not (isinstance(cond, A.Binary) and cond.op in ("<", "<=") and cond.left == A.Ref((var,))):
            return None
        if not (isinstance(step, A.Assign) and step.target == A.Ref((var,)) and step.op == "+="):
            return None
        stride = constant_value(step.value, scope)
        if not isinstance(stride, int) or isinstance(stride, bool) or stride <= 0:
            return None
        if (
            self.w.exprs.type_of(init.init, scope) != "int"
            or self.w.exprs.type_of(cond.right, scope) != "int"
        ):
            return None
        changed = _assigned(s.body)
        bound_names = A.ref_names(cond.right)
        if var in changed or bound_names & changed or has_index(cond.right) or uses_global(cond.right, scope):
            return None
        start = self.w.exprs.expr(init.init, scope)
        stop = self.w.exprs.expr(cond.right, scope)
        if cond.op == "<=":
            stop = f"({stop}) + 1"
        return var, start, stop, str(stride)

    def wait_loop(self, s: A.While | A.For, cond: str, depth: int, body: Callable[[], None]) -> None:
        """``while cond: body``; a wait loop (``waits.py``) also keeps the tile's row of
        ``hbir_wait`` — the line it waits at while inside, and a count of its turns, for
        the run's watchdog — and returns from the block when the watchdog raises the abort
        flag (the last row), so a deadlocked run can end."""
        if id(s) not in self.w.waits:
            self.w.emit(depth, s.line, f"while {cond}:")
            body()
            return
        self.w.waiting = True
        turns = f"hpvm.atomic_add(hbir_wait, (hbir_tile, {TURNS}), 1)"
        abort = f"hpvm.atomic_add(hbir_wait, ({_prod_all(self.w.model)}, 0), 0)"
        self.w.emit(depth, s.line, f"hbir_wait[hbir_tile, {WAITING}] = {s.line}")
        self.w.emit(depth, s.line, f"while {cond}:")
        self.w.emit(depth + 1, s.line, f"{turns}")
        self.w.emit(depth + 1, s.line, f"if {abort} != 0:")
        self.leave(depth + 2, s.line)
        body()
        self.w.emit(depth, s.line, f"hbir_wait[hbir_tile, {WAITING}] = 0")

    def leave(self, depth: int, line: int) -> None:
        """``return`` from the block; in a program with wait loops the tile first marks
        that it no longer runs (its ``hbir_wait`` row: the watchdog's view)."""
        if self.w.waiting:
            self.w.emit(depth, line, f"hbir_wait[hbir_tile, {RUNNING}] = 0")
        self.w.emit(depth, line, "return")

    def iterator(self, s: A.ForIn, scope: Scope, depth: int) -> None:
        n_expr, layout_ref, *coords = s.args
        name = layout_ref.parts[0]  # type: ignore[union-attr]
        layout = self.w.model.layouts.get(name)
        kind = layout.kind if layout is not None else ("strided" if name == "striped" else name)
        chunk = layout.chunk if layout is not None else None
        dims = self.w.group.dims
        tiles = self.w.group.size
        n = self.w.fresh("n")
        self.w.emit(depth, s.line, f"{n} = {self.w.exprs.expr(n_expr, scope)}")
        scope.push()
        var = self.w.declare(s.var, "int", scope, s.var not in self.w.reassigned)  # shares start at >= 0
        self.w.steps.append(None)
        inner = depth + 1
        if kind == "replicated":
            self.w.emit(depth, s.line, f"for {var} in range({n}):")
        else:
            t = self.w.fresh("t")
            coord = [self.w.exprs.expr(cexpr, scope) for cexpr in coords]
            self.w.emit(depth, s.line, f"{t} = {row_major(coord, dims)}")
            if kind == "strided":
                self.w.emit(depth, s.line, f"for {var} in range({t}, {n}, {tiles}):")
            elif kind == "chunked" and chunk is not None:
                if _breaks(s.body):  # one loop, so that break leaves the whole share
                    c, full, rem, j = (self.w.fresh(x) for x in ("c", "full", "rem", "j"))
                    self.w.emit(depth, s.line, f"{c} = {chunk}")
                    self.w.emit(depth, s.line, f"{full} = {n} // ({tiles} * {c})")
                    self.w.emit(depth, s.line, f"{rem} = {n} - {full} * {tiles} * {c}")
                    count = f"{full} * {c} + min(max({rem} - {t} * {c}, 0), {c})"
                    self.w.emit(depth, s.line, f"for {j} in range({count}):")
                    self.w.emit(
                        depth + 1, s.line, f"{var} = ({j} // {c}) * ({tiles} * {c}) + {t} * {c} + {j} % {c}"
                    )
                else:  # chunk by chunk
                    first = self.w.fresh("s")
                    self.w.emit(depth, s.line, f"for {first} in range({t} * {chunk}, {n}, {tiles * chunk}):")
                    self.w.emit(
                        depth + 1, s.line, f"for {var} in range({first}, min({first} + {chunk}, {n})):"
                    )
                    inner = depth + 2
            else:  # block, and plain chunked: one contiguous chunk per tile
                c = self.w.fresh("c")
                self.w.emit(depth, s.line, f"{c} = max(1, ({n} + {tiles - 1}) // {tiles})")
                self.w.emit(depth, s.line, f"for {var} in range({t} * {c}, min({n}, {t} * {c} + {c})):")
        self.w.body(s.body, scope, inner, s.line)
        self.w.steps.pop()
        scope.pop()


def row_major(coords: list[str], dims: tuple[int, ...]) -> str:
    """The expression of the row-major number of ``coords`` in a grid of ``dims``."""
    text = f"({coords[0]})"
    for c, d in zip(coords[1:], dims[1:]):
        text = f"({text} * {d} + ({c}))"
    return text


def _prod_all(model: Model) -> int:
    """How many physical tiles there are: ``hbir_wait``'s row of the abort flag."""
    return sum(grid_size(dims) for dims in model.tile_arrays.values())


def grid_size(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def _breaks(stmts: tuple[A.Stmt, ...]) -> bool:
    """Whether a ``break`` of the loop these statements are the body of is among them
    (inside its ifs and braces, not inside loops of its own)."""
    for s in stmts:
        if isinstance(s, A.Break):
            return True
        if isinstance(s, A.If) and (_breaks(s.then) or _breaks(s.orelse or ())):
            return True
        if isinstance(s, A.Compound) and _breaks(s.body):
            return True
    return False


def _assigned(stmts: tuple[A.Stmt, ...]) -> set[str]:
    out = set()
    for s in A.walk_stmts(stmts):
        if isinstance(s, A.Assign) and isinstance(s.target, A.Ref):
            out.add(s.target.parts[-1])
        elif isinstance(s, A.VarDecl):
            out.add(s.name)
    return out
