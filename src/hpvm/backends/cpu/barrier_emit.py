"""A barrier leaf's group function as Python source, from its plan (``barriers.py``).

Each region becomes a work-item loop over the instances (x innermost, its bound narrowed
when the whole region is ``if lid < u:``), with the per-instance slots of the varying
locals that cross barriers loaded before and stored after it, recomputed locals rebuilt,
uniform locals reset per instance, and statements every instance computes alike hoisted
out; driver statements run once around their planned bodies; the final region's
``return`` becomes the value the group function returns (the last instance's).
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from ...ir.graph import LeafFunction
from ...ir.pyast import walk_own as _walk_own
from ...ir.types import ArrayType, ScalarType
from ...passes.uniformity import loads as _loads
from ...passes.uniformity import reads_varying as _reads_varying
from .barrier_locals import Locals
from .barrier_plan import (
    DIMS,
    DONE,
    EXTENTS,
    FLAT,
    IDS,
    NP,
    PARENT,
    PURE_BUILTINS,
    RET,
    TOTAL,
    VIEW_METHODS,
    Driver,
    Region,
    is_noop,
    np_dtype,
    parse,
)
from .narrow import MASK


class GroupSource:
    """Writes one barrier leaf's group function ``symbol`` (``leaf``'s, with parameters
    ``params``, planned as ``plan``; ``private``: the varying locals kept per instance, of
    Numba types ``types``; ``facts``: its locals)."""

    def __init__(
        self,
        symbol: str,
        leaf: LeafFunction,
        params: list[str],
        body: list[ast.stmt],
        plan: list[Region | Driver],
        private: set[str],
        types: dict[str, Any],
        facts: Locals,
    ):
        self.symbol, self.leaf, self.params, self.body, self.plan = symbol, leaf, params, body, plan
        self.private, self.types, self.facts = private, types, facts
        self.varying, self.remat = facts.varying, facts.remat

    def source(self) -> str:
        from numba.np.numpy_support import as_dtype

        params = [*self.params, PARENT, *EXTENTS, DIMS]
        returns_value = any(
            isinstance(n, ast.Return)
            and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)
            for s in self.body
            for n in _walk_own(s)
        )
        head = [
            f"{TOTAL} = {' * '.join(EXTENTS)}",
            f"if {TOTAL} == 0:",
            f"    return {self._empty_result()}",
        ]
        for name in sorted(self.private):
            head.append(f"__hpvm_p_{name} = {NP}.empty({TOTAL}, {np_dtype(as_dtype(self.types[name]))})")
            if name in self.params:
                head.append(f"__hpvm_p_{name}[:] = {name}")
        body = parse("\n".join(head)) + self._emit_items(self.plan)
        if returns_value:
            body += parse(f"return {RET}")
        func = parse(f"def {self.symbol}({', '.join(params)}):\n    pass")[0]
        assert isinstance(func, ast.FunctionDef)
        func.body = body
        module = ast.Module(body=[*parse(f"import numpy as {NP}"), func], type_ignores=[])
        return ast.unparse(ast.fix_missing_locations(module)) + "\n"

    def _empty_result(self) -> str:
        """What a grid with no instances returns: zeros of the declared output types."""
        values = []
        for t in self.leaf.out_types:
            if isinstance(t, ArrayType):
                values.append(f"{NP}.empty(({', '.join(['0'] * t.rank)},), {np_dtype(t.dtype)})")
            elif isinstance(t, ScalarType):
                values.append("False" if t.dtype.kind == "b" else f"{np_dtype(t.dtype)}(0)")
            else:
                values.append("None")
        if len(values) == 1:
            return values[0]
        return f"({', '.join(values)},)" if values else ""

    def _emit_items(self, items: list[Region | Driver]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for item in items:
            if isinstance(item, Region):
                out += self._emit_region(item)
            elif isinstance(item.stmt, (ast.Break, ast.Continue)):
                out.append(item.stmt)
            else:
                node = copy.copy(item.stmt)
                node.body = self._emit_items(item.body) or [ast.Pass()]
                node.orelse = self._emit_items(item.orelse)
                out.append(node)
        return out

    def _runs_once(self, region: Region) -> bool:
        """A region that only assigns uniform locals from pure expressions: run it once."""
        for s in region.stmts:
            if is_noop(s):
                continue
            if not isinstance(s, (ast.Assign, ast.AugAssign)):
                return False
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if not all(isinstance(t, ast.Name) and t.id not in self.varying for t in targets):
                return False
            for n in ast.walk(s.value):
                if isinstance(n, ast.Name) and n.id in self.varying:
                    return False
                if isinstance(n, ast.Call) and not (
                    isinstance(n.func, ast.Name) and n.func.id in PURE_BUILTINS
                ):
                    return False
        return True

    def _hoistable(self, stmt: ast.stmt, region: Region) -> bool:
        """A leading ``name = expr`` every instance computes alike, without reading memory:
        run it once before the instance loop (``shared = buffer.view(np.float32)`` per
        instance costs more than the reduction itself)."""
        if not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            return False
        name = stmt.targets[0].id
        if name in self.varying or name in self.private:
            return False
        stores = sum(
            1
            for s in region.stmts
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        )
        if stores != 1:
            return False
        for n in ast.walk(stmt.value):
            if isinstance(n, ast.Name) and (n.id in self.varying or n.id == name):
                return False
            if isinstance(n, ast.Subscript) and not (isinstance(n.value, ast.Name) and n.value.id == PARENT):
                return False  # a memory read: other instances may write it first (the ctx tuple is immutable)
            if isinstance(n, ast.Call):
                func = n.func
                pure = isinstance(func, ast.Name) and func.id in PURE_BUILTINS
                view = (
                    isinstance(func, ast.Attribute)
                    and func.attr in VIEW_METHODS
                    and self.facts.shared_ref(func.value, set())
                )
                if not (pure or view):
                    return False
        return True

    def _emit_region(self, region: Region) -> list[ast.stmt]:
        if self._runs_once(region):
            return region.stmts
        # Top-level uniform assignments whose inputs the region has not changed before them
        # run once, before the instance loop.
        hoisted: list[ast.stmt] = []
        kept: list[ast.stmt] = []
        stored: set[str] = set()
        for stmt in region.stmts:
            reads = (
                {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
                if isinstance(stmt, ast.Assign)
                else set()
            )
            if not (reads & stored) and self._hoistable(stmt, region):
                hoisted.append(stmt)
                continue
            kept.append(stmt)
            stored |= {
                n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        if hoisted:
            region.stmts = kept
            return hoisted + self._emit_region(region)
        exposed = set(region.exposed)
        remat = self._remat_closure(exposed & set(self.remat))
        resets = sorted((exposed & region.assigned & self.facts.locals) - self.varying)
        loads = sorted(self.private & (exposed | (region.assigned - region.definite)))
        stores = [] if region.final else sorted(self.private & region.assigned)
        pre = [f"{n} = __hpvm_u_{n}" for n in resets]
        if loads or stores:
            pre.append(f"{FLAT} = ({IDS[0]} * {EXTENTS[1]} + {IDS[1]}) * {EXTENTS[2]} + {IDS[2]}")
        pre += [f"{n} = __hpvm_p_{n}[{FLAT}]" for n in loads]
        inner = (
            [copy.deepcopy(self.remat[n]) for n in remat]
            + parse("\n".join(pre))
            + self._final_returns(region)
        )
        inner += parse("\n".join(f"__hpvm_p_{n}[{FLAT}] = {n}" for n in stores))
        # x innermost: the instances of a region may run in any order, and with x inside LLVM
        # can vectorize the common 1-D case (its y and z loops run once).
        # (and its id through __hpvm_narrow, for the same reason: narrow.py).
        loop = parse(
            f"for {IDS[2]} in range({EXTENTS[2]}):\n"
            f"    for {IDS[1]} in range({EXTENTS[1]}):\n"
            f"        for {IDS[0]}_w in range({self._x_bound(inner)}):\n"
            f"            {IDS[0]} = __hpvm_narrow({IDS[0]}_w, {EXTENTS[0]} <= {MASK})"
        )[0]
        innermost = loop.body[0].body[0]  # type: ignore[attr-defined]
        innermost.body = innermost.body + inner
        return parse("\n".join(f"__hpvm_u_{n} = {n}" for n in resets)) + [loop]

    def _x_bound(self, inner: list[ast.stmt]) -> str:
        """The x extent, narrowed when the whole region is ``if lid < u:`` (``lid`` the x id,
        ``u`` uniform): a tree reduction's phases then visit only the active instances."""
        bound = EXTENTS[0]
        body = [s for s in inner if not is_noop(s)]
        ids = {
            name
            for name, stmt in self.remat.items()
            if isinstance(stmt.value, ast.Name) and stmt.value.id == IDS[0]
        }
        while (
            body
            and isinstance(body[0], ast.Assign)
            and all(isinstance(t, ast.Name) and t.id in self.remat for t in body[0].targets)
        ):
            body = body[1:]  # recomputed locals (lid = __hpvm_i, ...)
        if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse:
            return bound
        test = body[0].test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Lt, ast.LtE, ast.Eq))
            and isinstance(test.left, ast.Name)
            and (test.left.id in ids or test.left.id == IDS[0])
            and not _reads_varying(test.comparators[0], self.varying)
            and not any(isinstance(n, ast.Call) for n in ast.walk(test.comparators[0]))
        ):
            return bound
        limit = ast.unparse(test.comparators[0])
        if isinstance(test.ops[0], (ast.LtE, ast.Eq)):  # lid == u: instances 0..u, one active
            limit = f"({limit}) + 1"
        if isinstance(test.ops[0], (ast.Lt, ast.LtE)) and plain_arithmetic(test.comparators[0]):
            # Every instance the loop visits passes ``lid < u``: ``u`` reads only names, which
            # hold their region-start values in every instance (uniform locals the region
            # assigns are reset per instance), so it is the value the bound was computed
            # from. Without the guard the loop body is straight-line code LLVM vectorizes.
            inner[inner.index(body[0])] = ast.copy_location(
                ast.If(ast.Constant(True), body[0].body, []), body[0]
            )
        return f"max(0, min({bound}, {limit}))"

    def _remat_closure(self, names: set[str]) -> list[str]:
        """``names`` and the recomputed locals they read, in definition order."""
        todo, found = list(names), set()
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo += [m.id for m in _loads(self.remat[n].value) if m.id in self.remat]
        return sorted(found, key=lambda n: (self.remat[n].lineno, self.remat[n].col_offset))

    def _final_returns(self, region: Region) -> list[ast.stmt]:
        """The final region with ``return v`` turned into ``__hpvm_ret = v`` + leaving the instance."""
        stmts = region.stmts
        returns = [n for s in stmts for n in _walk_own(s) if isinstance(n, ast.Return)]
        if not returns:
            return stmts
        if len(returns) == 1 and stmts[-1] is returns[0]:
            return stmts[:-1] + self._ret_assign(returns[0])
        body, uses_done = self._rewrite_returns(stmts, in_loop=False)
        once = parse("for __hpvm_once in range(1):\n    pass")[0]
        assert isinstance(once, ast.For)
        once.body = body
        return (parse(f"{DONE} = False") if uses_done else []) + [once]

    def _ret_assign(self, ret: ast.Return) -> list[ast.stmt]:
        if ret.value is None or (isinstance(ret.value, ast.Constant) and ret.value.value is None):
            return []
        return [ast.copy_location(ast.Assign([ast.Name(RET, ast.Store())], ret.value), ret)]

    def _rewrite_returns(self, stmts: list[ast.stmt], in_loop: bool) -> tuple[list[ast.stmt], bool]:
        """Returns leave a one-iteration loop; inside user loops a flag carries them out."""
        out: list[ast.stmt] = []
        uses_done = False
        for s in stmts:
            if isinstance(s, ast.Return):
                out += self._ret_assign(s)
                if in_loop:
                    out += parse(f"{DONE} = True")
                    uses_done = True
                out.append(ast.Break())
            elif isinstance(s, (ast.For, ast.While)):
                has_return = any(isinstance(n, ast.Return) for b in s.body for n in _walk_own(b))
                s.body, d1 = self._rewrite_returns(s.body, in_loop=True)
                s.orelse, d2 = self._rewrite_returns(s.orelse, in_loop)
                out.append(s)
                if has_return:
                    out += parse(f"if {DONE}:\n    break")
                uses_done = uses_done or d1 or d2
            elif isinstance(s, ast.If):
                s.body, d1 = self._rewrite_returns(s.body, in_loop)
                s.orelse, d2 = self._rewrite_returns(s.orelse, in_loop)
                out.append(s)
                uses_done = uses_done or d1 or d2
            else:
                out.append(s)
        return out, uses_done


def plain_arithmetic(expr: ast.expr) -> bool:
    """Names, constants and arithmetic only: nothing that reads memory or calls."""
    allowed = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
    return all(isinstance(n, allowed) for n in ast.walk(expr))
