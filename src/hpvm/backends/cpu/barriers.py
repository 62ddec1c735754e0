"""Barriers on the CPU: the work-item-loop transformation (PoCL's idea, on the Python AST).

A leaf that calls ``hpvm.barrier()`` synchronizes its instances within one parent instance.
A CPU thread cannot wait for instances that have not run yet, so instead of one call per
instance the back end runs all instances of the leaf (within one parent instance) in one
generated *group function*. Its body is the leaf's body cut at every barrier into
*regions*; each region becomes a loop over the instances (a "work-item loop"), so every
instance finishes region *n* before any starts region *n + 1* — exactly what the barrier
between them promises.

What crosses a barrier:

* **Uniform** values (the same for every instance: parameters, instance counts, parent
  ids, constants and what is computed from them) stay ordinary locals. Every instance
  computes the same value, so after a region's loop the local holds it for the next
  region and for the driver code between regions. A region that only assigns uniform
  locals from call-free expressions (``stride //= 2``) runs once instead of once per
  instance: it has no other effect, so once is the same as every time. A region that both
  reads and updates a uniform local starts every instance from the value it had when the
  region began, so the update is applied once, not once per instance.
* **Varying** values (derived from the instance id, an atomic, ``malloc``, an array read at
  a varying index, or assigned under varying control) that a later region reads are
  *privatized*: one slot per instance in an array indexed by the instance's flat index,
  loaded when a region starts and stored when it ends. Their types come from Numba's type
  inference on the leaf with the barriers stubbed out. A varying value that is a pure
  expression of the instance id (``lid = get_node_instance_id_x(node)``) is recomputed in
  each region instead. Only scalars are privatized; a per-instance array or other object
  that lives across a barrier is a ``CompileError``.

Barriers inside ``if``/``while``/``for`` are supported when the condition (or the loop's
iterable) is uniform: the statement runs once in the driver and its body is split
recursively (PoCL's barrier loops; ``break``/``continue`` of such a loop must be uniform
too). A barrier under a condition that depends on the instance id is a ``CompileError``
naming the leaf, the barrier's line and the condition's line: on a GPU it would be
undefined behaviour and the interpreter reports it as a ``BarrierError``.

``return`` is allowed only after the leaf's last top-level barrier; the group function
returns what the last instance returns (DESIGN.md's last-instance rule).

The work is shared out: ``barrier_plan.py`` (the plan's pieces and the group function's
names), ``barrier_types.py`` (Numba's types of the locals), ``barrier_locals.py`` (locals
recomputed or shared rather than kept per instance), ``barrier_emit.py`` (the source);
this module analyses the leaf and checks what the back end cannot do.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir.pyast import walk_own as _walk_own
from ...ir.types import PortType
from ...passes.clone_leaves import CTX_PARAM, LeafClone
from ...passes.uniformity import Uniformity as _Uniformity
from ...passes.uniformity import barrier_lines as _barrier_lines
from ...passes.uniformity import escaping_jump as _escaping_jump
from ...passes.uniformity import is_barrier as _is_barrier
from ...passes.uniformity import loads as _loads
from ...passes.uniformity import reads_varying as _reads_varying
from .barrier_emit import GroupSource
from .barrier_locals import Locals
from .barrier_plan import IDS, Driver, Region, Scan, SubstituteCtx, is_noop
from .barrier_types import infer_types, is_mutable, is_scalar


def group_function(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> tuple[str, str]:
    """(symbol, python source) of the group function of a barrier leaf.

    The source defines ``def <symbol>(<leaf params>, __hpvm_ctx_parent, __hpvm_s0,
    __hpvm_s1, __hpvm_s2, __hpvm_dims)`` (after an ``import numpy as __hpvm_np`` line). It
    runs every instance of the leaf within one parent instance, phase by phase, and
    returns what the last instance (flat index ``s0*s1*s2 - 1``) returns; with no instances
    it runs nothing and returns zeros / empty arrays of the declared output types. It
    compiles with ``numba.njit(nogil=True, cache=True)`` in the leaf's globals plus the
    back end's ``__hpvm_atomic_*`` / ``__hpvm_malloc`` helpers. Raises ``CompileError``
    for barriers under divergent control, misplaced returns and per-instance objects that
    cross a barrier.
    """
    return _GroupBuilder(clone, param_types, ctx_levels).build()


# ---------------------------------------------------------------------------------------
# The builder


class _GroupBuilder:
    """One leaf's group function: analyse (uniformity, plan, live-ins, types) and check what
    the back end cannot do, then have ``barrier_emit.GroupSource`` write it."""

    def __init__(self, clone: LeafClone, param_types: list[PortType], ctx_levels: int):
        self.clone, self.leaf = clone, clone.user
        self.param_types, self.ctx_levels = list(param_types), ctx_levels
        func = copy.deepcopy(clone.func)
        self.params = [a.arg for a in func.args.args[:-1]]
        if len(self.params) != len(self.param_types) or func.args.args[-1].arg != CTX_PARAM:
            raise CompileError(f"leaf '{self.leaf.name}': group_function needs one port type per parameter")
        if ctx_levels < max(1, clone.levels):
            raise CompileError(
                f"leaf '{self.leaf.name}' reads {clone.levels} context levels, not {ctx_levels}"
            )
        parent_len = ictx.STRIDE * (ctx_levels - 1)
        self.body = [
            ast.fix_missing_locations(SubstituteCtx(self._fail, parent_len).visit(s)) for s in func.body
        ]
        self.symbol = clone.symbol.replace("__hpvm_leaf_", "__hpvm_group_", 1)
        if self.symbol == clone.symbol:
            self.symbol = f"__hpvm_group_{clone.symbol}"

    # -- errors ---------------------------------------------------------------------------

    def _fail(self, line: int, what: str) -> CompileError:
        return CompileError(f"leaf '{self.leaf.name}' ({self.leaf.location.file}:{line}): {what}")

    def _line_text(self, line: int) -> str:
        try:
            lines = self.leaf.source.splitlines()
        except (OSError, TypeError):
            return ""
        index = line - self.leaf.source_line
        return lines[index].strip() if 0 <= index < len(lines) else ""

    def _divergent(self, stmt: ast.stmt, cond: ast.AST, inner_line: int, what: str, fix: str) -> CompileError:
        names = sorted({n.id for n in _loads(cond) if n.id in self.varying and not n.id.startswith("__hpvm")})
        through = f" (through {', '.join(f'`{n}`' for n in names)})" if names else ""
        return self._fail(
            inner_line,
            f"{what} is under a condition that differs between instances: line {stmt.lineno} "
            f"(`{self._line_text(stmt.lineno)}`) depends on the instance id{through}. Every instance "
            "must reach the same barriers, so the cpu back end needs barriers under uniform "
            f"conditions only (parameters, instance counts, constants) — {fix}, or run with "
            "target='interp'",
        )

    # -- analysis -------------------------------------------------------------------------

    def build(self) -> tuple[str, str]:
        self.varying = _Uniformity(set(IDS)).run(self.body)
        self.plan = self._plan(self.body, in_loop=False)
        if self.plan and isinstance(self.plan[-1], Region):
            self.plan[-1].final = True
        self.regions = list(self._regions(self.plan))
        for r in self.regions:
            self._check_returns(r)
            scan = Scan()
            r.definite = scan.block(r.stmts, set())
            r.exposed, r.assigned = scan.exposed, scan.assigned
        facts = Locals(self.body, self.params, self.varying, self.regions)
        self.remat = facts.remat
        live_in = {n: line for r in self.regions for n, line in r.exposed.items()}
        assigned = set().union(*(r.assigned for r in self.regions))
        self.private = {
            n
            for n in self.varying & facts.locals
            if n in live_in and n not in self.remat and not n.startswith("__hpvm")
        }
        crossing = {n for n in facts.locals - self.varying if n in live_in and n in assigned}
        self.types = infer_types(self.clone, self.param_types, self.ctx_levels)
        for name in sorted(self.private):
            t = self.types.get(name)
            if t is None or not is_scalar(t):
                raise self._fail(
                    live_in[name],
                    f"local '{name}' ({t}) differs between instances and is used after a barrier; "
                    "the cpu back end keeps only scalars per instance across barriers — keep it in "
                    "an array indexed by the instance id, or run with target='interp'",
                )
        for name in sorted(crossing):
            t = self.types.get(name)
            if t is not None and is_mutable(t) and not facts.shared_ref(ast.Name(name, ast.Load()), set()):
                raise self._fail(
                    live_in[name],
                    f"local '{name}' ({t}) is created by every instance and used after a barrier; "
                    "each instance would need its own copy, which the cpu back end does not support "
                    "— allocate it outside the leaf (an allocation node) or run with target='interp'",
                )
        source = GroupSource(
            self.symbol, self.leaf, self.params, self.body, self.plan, self.private, self.types, facts
        ).source()
        return self.symbol, source

    def _plan(self, stmts: list[ast.stmt], in_loop: bool) -> list[Region | Driver]:
        """Cut ``stmts`` at barriers; statements holding barriers become driver statements."""
        items: list[Region | Driver] = []
        run: list[ast.stmt] = []
        for s in stmts:
            if _is_barrier(s):
                items, run = self._flush(items, run), []
            elif not (_barrier_lines(s) or _escaping_jump(s)):
                run.append(s)
            else:
                items, run = self._flush(items, run), []
                items.append(self._driver(s, in_loop))
        return self._flush(items, run)

    @staticmethod
    def _flush(items: list[Region | Driver], run: list[ast.stmt]) -> list[Region | Driver]:
        return [*items, Region(run)] if any(not is_noop(s) for s in run) else items

    def _driver(self, s: ast.stmt, in_loop: bool) -> Driver:
        if isinstance(s, (ast.Break, ast.Continue)):
            return Driver(s, [], [])
        barriers = _barrier_lines(s)
        if not isinstance(s, (ast.If, ast.While, ast.For)):
            kind = type(s).__name__.lower()
            raise self._fail(
                barriers[0] if barriers else s.lineno,
                f"hpvm.barrier() inside a `{kind}` statement is not supported by the cpu back end "
                "(only inside `if`, `while` and `for`) — run with target='interp'",
            )
        cond = s.iter if isinstance(s, ast.For) else s.test
        if _reads_varying(cond, self.varying):
            if barriers:
                what = f"hpvm.barrier() on line {barriers[0]}"
                raise self._divergent(
                    s, cond, barriers[0], what, "move the barrier out of the branch or loop"
                )
            jump = _escaping_jump(s)
            assert jump is not None
            word = type(jump).__name__.lower()
            what = f"`{word}` on line {jump.lineno} of a loop with barriers"
            raise self._divergent(s, cond, jump.lineno, what, f"make the `{word}` condition uniform")
        loop = in_loop or isinstance(s, (ast.For, ast.While))
        return Driver(s, self._plan(s.body, loop), self._plan(s.orelse, in_loop))

    def _regions(self, items: list[Region | Driver]) -> Iterator[Region]:
        for item in items:
            if isinstance(item, Region):
                yield item
            else:
                yield from self._regions(item.body)
                yield from self._regions(item.orelse)

    def _check_returns(self, region: Region) -> None:
        if region.final:
            return
        for s in region.stmts:
            for n in _walk_own(s):
                if isinstance(n, ast.Return):
                    raise self._fail(
                        n.lineno,
                        f"`return` before the leaf's last hpvm.barrier() (line {max(self.clone.barrier_lines)}) "
                        "or inside a loop or `if` holding barriers; the cpu back end runs a barrier leaf "
                        "phase by phase and supports `return` only after its last top-level barrier",
                    )
