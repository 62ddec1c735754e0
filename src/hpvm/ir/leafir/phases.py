"""Barrier splitting: a leaf IR cut at its barriers into phases (issue 25, deliverable 3).

Why: a CPU thread cannot wait for instances that have not run yet, so a back end without
real barriers runs all instances of one parent instance together, *phase by phase*: the
leaf's body cut at every ``hpvm.barrier()`` into barrier-free phases, each run by every
instance before any instance starts the next (PoCL's work-item loops). This pass computes
that structure once, on the leaf IR, for any back end to emit (``cpu/barrier_emit.py``
does), and refuses what cannot be split, naming the lines to fix.

* A barrier at the top level, or inside an ``if``/``while``/``for`` whose condition (or
  bounds) is *uniform* (``analyses.Uniformity``: the same in every instance of a group),
  splits: such a statement becomes a ``Driver``, run once around its planned bodies; a
  ``break``/``continue`` leaving a loop with barriers is a driver too (and must be uniform).
* Under a varying condition the barrier is an error naming the barrier's line and the
  condition's; so is a ``return`` before the leaf's last top-level barrier.
* Each ``Phase`` knows what it reads before writing (``exposed``), what it writes and what
  it writes on every path. A varying local a later phase reads must be *kept per instance*
  (``Phases.kept``: scalars only) unless it is pure arithmetic on instance ids and unchanging
  values, then it is recomputed (``Phases.remat``); a uniform local array that crosses a
  barrier must name memory all instances share (a parameter or a view of one), else each
  instance would need its own copy.

``print_phases`` writes the result as text (the golden tests). The messages say which back
end (``backend``) refuses, since the interpreter runs every such leaf.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ...errors import CompileError
from . import ops
from .analyses import ANALYSES, Uniform, Uniformity
from .barrier_check import Divergence, barrier_lines, divergence_message, heads, is_barrier, varies
from .printer import INDENT, block_lines, compound_head


@dataclass(frozen=True)
class Phase:
    """Barrier-free statements every instance runs before the next phase starts."""

    body: ops.Block
    exposed: dict[str, int] = field(default_factory=dict)  # read before written -> line
    assigned: frozenset[str] = frozenset()
    definite: frozenset[str] = frozenset()  # assigned on every path
    final: bool = False  # the leaf's last phase: the only one that may `return`


@dataclass(frozen=True)
class Driver:
    """A uniform ``if``/``while``/``for`` holding barriers (run once, its blocks planned), or a
    ``break``/``continue`` of such a loop (``body``/``orelse`` empty)."""

    stmt: ops.Stmt
    body: tuple[Item, ...] = ()
    orelse: tuple[Item, ...] = ()


Item = Phase | Driver


@dataclass(frozen=True)
class Phases:
    """A leaf split at its barriers (module doc)."""

    ir: ops.LeafIR
    items: tuple[Item, ...]
    uniform: Uniform
    locals: frozenset[str]  # parameters and every variable the leaf assigns
    kept: frozenset[str]  # varying scalars read after a barrier: one slot per instance
    remat: dict[str, ops.Assign]  # varying locals recomputed where a phase needs them

    def shared_ref(self, e: ops.Expr) -> bool:
        """Whether the array ``e`` names memory every instance shares (a parameter, a view of one)."""
        return _shared(e, self.ir, set())


def _phases(items: tuple[Item, ...]) -> Iterator[Phase]:
    for item in items:
        if isinstance(item, Phase):
            yield item
        else:
            yield from _phases(item.body)
            yield from _phases(item.orelse)


def escaping_jump(stmt: ops.Stmt) -> ops.Stmt | None:
    """The first ``break``/``continue`` in ``stmt`` that leaves a loop enclosing ``stmt``."""
    if isinstance(stmt, (ops.Break, ops.Continue)):
        return stmt
    if isinstance(stmt, ops.If):
        found = (escaping_jump(s) for s in (*stmt.body, *stmt.orelse))
        return next((j for j in found if j is not None), None)
    return None  # a loop's own jumps leave the loop itself


def split_phases(ir: ops.LeafIR, backend: str = "cpu") -> Phases:
    """``ir`` cut at its barriers (module doc); ``CompileError`` for what cannot be split.
    ``ir`` is the lowered leaf (``lowering.lower_queries``: queries are context reads), what
    the back ends emit."""
    return _Splitter(ir, backend).run()


class _Splitter:
    def __init__(self, ir: ops.LeafIR, backend: str):
        self.ir, self.backend = ir, backend
        self.uniform = ANALYSES.get(Uniformity(), ir)

    def fail(self, line: int, what: str) -> CompileError:
        return CompileError(f"leaf '{self.ir.name}' ({self.ir.file}:{line}): {what}")

    def run(self) -> Phases:
        items = self._plan(self.ir.body)
        if items and isinstance(items[-1], Phase):
            last = items[-1]
            items = (*items[:-1], Phase(last.body, final=True))
        items = _scanned(items)
        last_barrier = max(barrier_lines(self.ir.body), default=0)
        for phase in _phases(items):
            if not phase.final:
                self._check_returns(phase, last_barrier)
        params = {p.name for p in self.ir.params}
        assigned_anywhere = {n for n, _ in self.ir.locals}
        locals_ = frozenset(params | assigned_anywhere)
        remat = _rematerializable(self.ir, items, self.uniform.varying, params)
        live_in: dict[str, int] = {}
        assigned: set[str] = set()
        for phase in _phases(items):
            live_in.update(phase.exposed)
            assigned |= phase.assigned
        varying = self.uniform.varying
        kept = frozenset(n for n in varying & locals_ if n in live_in and n not in remat)
        for name in sorted(kept):
            t = self.ir.type_of(name)
            if not isinstance(t, ops.ScalarType):
                raise self.fail(
                    live_in[name],
                    f"local '{name}' ({t}) differs between instances and is used after a barrier; "
                    f"the {self.backend} back end keeps only scalars per instance across barriers — keep "
                    "it in an array indexed by the instance id, or run with target='interp'",
                )
        for name in sorted((locals_ - varying) & set(live_in) & assigned):
            t = self.ir.type_of(name)
            if isinstance(t, ops.ArrayType) and not _shared(ops.Var(name, t), self.ir, set()):
                raise self.fail(
                    live_in[name],
                    f"local '{name}' ({t}) is created by every instance and used after a barrier; "
                    f"each instance would need its own copy, which the {self.backend} back end does not "
                    "support — allocate it outside the leaf (an allocation node) or run with target='interp'",
                )
        return Phases(self.ir, items, self.uniform, locals_, kept, remat)

    def _plan(self, block: ops.Block) -> tuple[Item, ...]:
        items: list[Item] = []
        run: list[ops.Stmt] = []
        for s in block:
            if is_barrier(s):
                items, run = _flush(items, run), []
            elif not (barrier_lines((s,)) or escaping_jump(s)):
                run.append(s)
            else:
                items, run = _flush(items, run), []
                items.append(self._driver(s))
        return tuple(_flush(items, run))

    def _driver(self, s: ops.Stmt) -> Driver:
        if isinstance(s, (ops.Break, ops.Continue)):
            return Driver(s)
        if varies(self.uniform, s):
            barriers = barrier_lines((s,))
            if barriers:
                found = Divergence(
                    f"hpvm.barrier() on line {barriers[0]} is",
                    barriers[0],
                    s,
                    "move the barrier out of the branch or loop",
                )
            else:
                jump = escaping_jump(s)
                assert jump is not None
                word = type(jump).__name__.lower()
                what = f"`{word}` on line {jump.line} of a loop with barriers is"
                found = Divergence(what, jump.line, s, f"make the `{word}` condition uniform")
            middle = (
                f"Every instance must reach the same barriers, so the {self.backend} back end needs "
                "barriers under uniform conditions only (parameters, instance counts, constants)"
            )
            raise CompileError(divergence_message(self.ir, found, middle) + ", or run with target='interp'")
        orelse = self._plan(s.orelse) if isinstance(s, ops.If) else ()
        return Driver(s, self._plan(s.body), orelse)  # type: ignore[attr-defined]

    def _check_returns(self, phase: Phase, last_barrier: int) -> None:
        for s in ops.walk_stmts(phase.body):
            if isinstance(s, ops.Return):
                raise self.fail(
                    s.line,
                    f"`return` before the leaf's last hpvm.barrier() (line {last_barrier}) or inside a "
                    f"loop or `if` holding barriers; the {self.backend} back end runs a barrier leaf "
                    "phase by phase and supports `return` only after its last top-level barrier",
                )


def _flush(items: list[Item], run: list[ops.Stmt]) -> list[Item]:
    return [*items, Phase(tuple(run))] if run else items


# ---------------------------------------------------------------------------------------
# What each phase reads before writing (its live-ins) and writes


def _scanned(items: tuple[Item, ...]) -> tuple[Item, ...]:
    out: list[Item] = []
    for item in items:
        if isinstance(item, Phase):
            scan = _Scan()
            definite = scan.block(item.body, frozenset())
            out.append(Phase(item.body, scan.exposed, frozenset(scan.assigned), definite, item.final))
        else:
            out.append(Driver(item.stmt, _scanned(item.body), _scanned(item.orelse)))
    return tuple(out)


class _Scan:
    def __init__(self) -> None:
        self.exposed: dict[str, int] = {}
        self.assigned: set[str] = set()

    def read(self, exprs: tuple[ops.Expr, ...], defined: frozenset[str], line: int) -> None:
        for root in exprs:
            for e in ops.walk_expr(root):
                if isinstance(e, ops.Var) and e.name not in defined:
                    self.exposed.setdefault(e.name, line)

    def block(self, block: ops.Block, defined: frozenset[str]) -> frozenset[str]:
        for s in block:
            defined = self.stmt(s, defined)
        return defined

    def stmt(self, s: ops.Stmt, defined: frozenset[str]) -> frozenset[str]:
        if isinstance(s, ops.Assign):
            self.read((s.value,), defined, s.line)
            self.assigned.add(s.target.name)
            return defined | {s.target.name}
        if isinstance(s, ops.If):
            self.read((s.test,), defined, s.line)
            return self.block(s.body, defined) & self.block(s.orelse, defined)
        if isinstance(s, ops.For):
            self.read(heads(s), defined, s.line)
            self.assigned.add(s.var.name)
            self.block(s.body, defined | {s.var.name})
            return defined  # the body may not run
        if isinstance(s, ops.While):
            self.read((s.test,), defined, s.line)
            self.block(s.body, defined)
            return defined
        self.read(ops.stmt_exprs(s), defined, s.line)
        return defined


# ---------------------------------------------------------------------------------------
# Locals recomputed rather than kept, and arrays every instance shares

_PURE = (ops.Const, ops.Unary, ops.Binary, ops.Compare, ops.BoolOp, ops.IfExp, ops.Cast, ops.CtxRead)


def _rematerializable(
    ir: ops.LeafIR,
    items: tuple[Item, ...],
    varying: frozenset[str],
    params: set[str],
) -> dict[str, ops.Assign]:
    """Varying locals assigned once, in a statement every instance runs (a phase's own, not
    inside an ``if`` or loop, so a recomputed ``10 // lid`` cannot raise where the original did
    not), as pure arithmetic on context reads (``CtxRead``) and unchanging values: recomputing them
    where a phase needs them is cheaper than a slot per instance."""
    count: dict[str, int] = {}
    simple: dict[str, ops.Assign] = {}
    for s in ops.walk_stmts(ir.body):
        if isinstance(s, (ops.Assign, ops.For)):
            name = s.target.name if isinstance(s, ops.Assign) else s.var.name
            count[name] = count.get(name, 0) + 1
            if isinstance(s, ops.Assign):
                simple[name] = s
    singles = {n: a for n, a in simple.items() if count[n] == 1 and n not in params}
    top = {id(s) for phase in _phases(items) for s in phase.body}
    fixed = (params - set(count)) | {n for n in singles if n not in varying}
    remat: dict[str, ops.Assign] = {}
    changed = True
    while changed:
        changed = False
        for name, stmt in singles.items():
            if name in remat or name not in varying or id(stmt) not in top:
                continue
            if all(_recomputable(e, fixed, remat) for e in ops.walk_expr(stmt.value)):
                remat[name] = stmt
                changed = True
    return remat


def _recomputable(e: ops.Expr, fixed: set[str], remat: dict[str, ops.Assign]) -> bool:
    if isinstance(e, ops.Var):
        return e.name in fixed or e.name in remat
    return isinstance(e, _PURE)


def _shared(e: ops.Expr, ir: ops.LeafIR, seen: set[str]) -> bool:
    if isinstance(e, ops.Var):
        if e.name in seen:
            return True
        values = [
            s.value for s in ops.walk_stmts(ir.body) if isinstance(s, ops.Assign) and s.target.name == e.name
        ]
        return all(_shared(v, ir, seen | {e.name}) for v in values)  # a parameter never reassigned: shared
    if isinstance(e, (ops.Load, ops.Retype)):
        return _shared(e.array, ir, seen)
    return False


# ---------------------------------------------------------------------------------------
# Text (the golden tests)


def print_phases(phases: Phases) -> str:
    """The phases as text: each phase's statements in the leaf IR's text form, headed by what
    it reads before writing (``phase (final)``: the last, where ``return`` may be); each
    driver (``driver 62: while stride > 0 {``, run once) with its planned blocks; then the
    locals kept per instance and those recomputed."""
    ir = phases.ir
    lines = [f"phases {ir.name} at {ir.line} {{"]
    _items(phases.items, 1, lines)
    lines.append(f"{INDENT}kept per instance: {', '.join(sorted(phases.kept)) or '-'}")
    lines.append(f"{INDENT}recomputed: {', '.join(sorted(phases.remat)) or '-'}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _items(items: tuple[Item, ...], depth: int, lines: list[str]) -> None:
    pad = INDENT * depth
    for item in items:
        if isinstance(item, Phase):
            reads = ", ".join(sorted(item.exposed)) or "-"
            lines.append(f"{pad}phase{' (final)' if item.final else ''} reads {reads} {{")
            block_lines(item.body, depth + 1, lines)
            lines.append(f"{pad}}}")
            continue
        s = item.stmt
        if isinstance(s, (ops.Break, ops.Continue)):
            block_lines((s,), depth, lines)
            continue
        lines.append(f"{pad}driver {s.line}: {compound_head(s)} {{")  # type: ignore[arg-type]
        _items(item.body, depth + 1, lines)
        if isinstance(s, ops.If):
            lines.append(f"{pad}}} else {{")
            _items(item.orelse, depth + 1, lines)
        lines.append(f"{pad}}}")


__all__ = ["Driver", "Phase", "Phases", "print_phases", "split_phases"]
