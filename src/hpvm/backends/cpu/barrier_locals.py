"""Which of a barrier leaf's locals can be recomputed or shared rather than kept per
instance (``barriers.py``).

A varying local that a later region reads costs an array slot per instance, loaded and
stored around every region; when it is pure arithmetic on instance ids and unchanging
values (``lid = get_node_instance_id_x(node)``) it is cheaper to recompute it where it is
needed (``remat``). And a local every instance assigns alike is safe across a barrier only
if it names memory all instances share (a parameter or a view of one: ``shared_ref``).
"""

from __future__ import annotations

import ast

from ...ir.pyast import walk_own as _walk_own
from ...passes.uniformity import stores as _stores
from .barrier_plan import DIMS, EXTENTS, IDS, PARENT, VIEW_METHODS, Region


class Locals:
    """The locals of one barrier leaf's body (``body``, parameters ``params``, the varying
    names ``varying``, its regions ``regions``): which are rebound, which are recomputed."""

    def __init__(self, body: list[ast.stmt], params: list[str], varying: set[str], regions: list[Region]):
        self.body, self.params, self.varying, self.regions = body, params, varying, regions
        self.rebound = {n for s in body for n in _stores(s)}  # locals, and parameters reassigned
        self.locals = set(params) | self.rebound
        self.remat = self._rematerializable()

    def _single_assignments(self) -> dict[str, ast.Assign]:
        """Locals bound exactly once, by a plain ``name = expr``, mapped to that statement."""
        count: dict[str, int] = {}
        simple: dict[str, ast.Assign] = {}
        for s in self.body:
            for n in _walk_own(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    count[n.id] = count.get(n.id, 0) + 1
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    simple[n.targets[0].id] = n
        return {n: a for n, a in simple.items() if count[n] == 1 and n not in self.params}

    def _rematerializable(self) -> dict[str, ast.Assign]:
        """Varying locals that are pure arithmetic on instance ids and unchanging values.

        Recomputing them where a region needs them is cheaper than an array slot per instance.
        Only definitions every instance runs (a region's own statements, not inside an ``if``
        or loop) qualify, so a recomputed ``10 // lid`` cannot raise where the original did not.
        """
        singles = self._single_assignments()
        unconditional = {id(s) for r in self.regions for s in r.stmts}
        # Operands whose value is the same wherever they are read: ids, extents, parameters
        # never reassigned, and uniform locals assigned once.
        fixed = set(IDS) | set(EXTENTS) | {DIMS} | (set(self.params) - self.rebound)
        fixed |= {n for n in singles if n not in self.varying}
        remat: dict[str, ast.Assign] = {}
        allowed = (
            ast.Constant,
            ast.BinOp,
            ast.UnaryOp,
            ast.Compare,
            ast.BoolOp,
            ast.IfExp,
            ast.operator,
            ast.unaryop,
            ast.cmpop,
            ast.boolop,
            ast.expr_context,
        )
        changed = True
        while changed:
            changed = False
            for name, stmt in singles.items():
                if name in remat or name not in self.varying or id(stmt) not in unconditional:
                    continue
                ok = True
                for n in ast.walk(stmt.value):
                    if isinstance(n, ast.Name):
                        ok = ok and (n.id in fixed or n.id in remat)
                    elif isinstance(n, ast.Subscript):  # parent context reads only
                        ok = ok and isinstance(n.value, ast.Name) and n.value.id == PARENT
                    elif not isinstance(n, allowed):
                        ok = False
                if ok:
                    remat[name] = stmt
                    changed = True
        return remat

    def shared_ref(self, expr: ast.AST, seen: set[str]) -> bool:
        """Whether ``expr`` names memory every instance shares (a parameter, a view of one)."""
        if isinstance(expr, ast.Name):
            if expr.id not in self.rebound:
                return True  # a parameter never reassigned, or a global
            if expr.id in seen:
                return True
            values = self._assigned_values(expr.id)
            return values is not None and all(self.shared_ref(v, seen | {expr.id}) for v in values)
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            return self.shared_ref(expr.value, seen)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in VIEW_METHODS
        ):
            return self.shared_ref(expr.func.value, seen)
        return False

    def _assigned_values(self, name: str) -> list[ast.expr] | None:
        """The values ``name`` is assigned, or None if it is bound any other way."""
        values: list[ast.expr] = []
        for s in self.body:
            for n in _walk_own(s):
                if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in n.targets
                ):
                    values.append(n.value)
                elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
                    continue  # in place on an array: the reference is unchanged
                elif isinstance(n, ast.stmt) and not isinstance(n, ast.Assign) and name in stores_shallow(n):
                    return None
        return values

    # -- emission -------------------------------------------------------------------------


def stores_shallow(stmt: ast.stmt) -> set[str]:
    """Names a statement binds itself (not in the statements it contains)."""
    if isinstance(stmt, ast.For):
        return _stores(stmt.target)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return _stores(stmt.target)
    if isinstance(stmt, ast.With):
        return {
            n for item in stmt.items if item.optional_vars is not None for n in _stores(item.optional_vars)
        }
    return set()
