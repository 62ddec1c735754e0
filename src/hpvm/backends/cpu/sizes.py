"""A loop group's replication sizes and their run-time checks, as generated code.

Every size of a graph function is computed, and checked, before any child runs
(``graphgen.py``): a size that divides by zero (compiled code divides with NumPy's error
model, so ``n // 0`` would silently be 0), a negative size, fused members whose grids differ,
and arrays the leaves would index past (``backends/bounds.py``) each raise a ``LaunchError``
naming the node. A flattened node (``flatten.py``) computes its children's sizes once, under
its own input names: hence ``names``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir import instance_context as ictx
from ...ir.expr import ROUNDING, BinOp, Call, divides, divisors
from ...ir.graph import InternalFunction, LeafFunction, Node
from ...passes.clone_leaves import CTX_PARAM, LeafClone
from ..bounds import bound_accesses, check_lines, span_bounds
from ..span_code import span_check_lines
from .block import INDENT
from .graphscope import Group, Names, Scope, input_name, message, renamed, render


def divisor_checks(node: Node, expr: Any, fn: InternalFunction, names: Names | None) -> list[str]:
    """Lines raising a LaunchError when a replication size would divide by zero. ``fn``,
    ``names``: as for ``graphscope.render``."""
    out: list[str] = []
    for d in divisors(renamed(expr, fn, names)):
        out.append(f"if ({d}) == 0:")
        out.append(
            INDENT + f"raise __hpvm_LaunchError({message(node, f'replication size {expr} divides by zero')})"
        )
    return out


def truncating_text(expr: Any) -> str:
    """``expr`` as generated code dividing as LLVM does (``__hpvm_tdiv``/``__hpvm_trem``:
    ``expr.truncated``'s meaning), its inputs already renamed."""
    if isinstance(expr, BinOp):
        left, right = truncating_text(expr.lhs), truncating_text(expr.rhs)
        if expr.op in ("//", "%"):
            return f"{'__hpvm_tdiv' if expr.op == '//' else '__hpvm_trem'}({left}, {right})"
        return f"({left} {expr.op} {right})"
    if isinstance(expr, Call):
        return f"{expr.fn}({', '.join(truncating_text(a) for a in expr.args)})"
    return f"({expr})"


def truncation_helpers() -> dict[str, Any]:
    """``__hpvm_tdiv``/``__hpvm_trem`` for ``truncating_text``'s code: LLVM's ``sdiv`` and
    ``srem`` (a zero divisor gives 0: the divisor checks ran before, with Python's meaning,
    and a divisor that is 0 only when truncated makes the two values differ anyway)."""
    import numba

    @numba.njit(inline="always")
    def tdiv(a, b):  # type: ignore[no-untyped-def]
        if b == 0:
            return a - a
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    @numba.njit(inline="always")
    def trem(a, b):  # type: ignore[no-untyped-def]
        return a - b * tdiv(a, b)

    return {"__hpvm_tdiv": tdiv, "__hpvm_trem": trem}


#: Where an ancestor's extent is, for a leaf's check (``span_code.span_check_lines``).
Ancestor = Callable[[int, int], "str | None"]


def context_extents(levels: int, parents: list[str] | None = None) -> Ancestor:
    """``Ancestor`` for checks in a graph function whose context tuple (``levels`` levels)
    starts with the checked leaf's parent — or, given ``parents`` (the sizes of the
    flattened node whose instances are the leaf's parents, ``flatten.py``), with its
    grandparent."""
    shift = 1 if parents is None else 2

    def extent(level: int, dim: int) -> str | None:
        if parents is not None and level == 1:
            return parents[dim] if dim < len(parents) else "1"
        at = level - shift
        return f"{CTX_PARAM}[{ictx.index(at, ictx.EXTENT + dim)}]" if 0 <= at < levels else None

    return extent


def size_lines(
    scope: Scope,
    group: Group,
    clones: dict[int, LeafClone],
    ancestor: Ancestor,
    names: Names | None = None,
) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """The group's sizes (``__hn<k>_s<axis>``, the head's: variable and expression pairs),
    the guards that must run before they are computed (no divisor of a size is 0), and the
    checks on them: not negative, fused members' grids equal, no array indexed past its
    end (``backends/bounds.py``; ``ancestor``: where the leaves' ancestors' extents are,
    ``context_extents``). ``names``: ``scope.fn``'s inputs under other names."""
    fn = scope.fn
    guards: list[str] = []
    assigns: list[tuple[str, str]] = []
    checks: list[str] = []
    head = group.nodes[0]
    sizes = [f"__hn{scope.index[id(head)]}_s{a}" for a in range(head.dims)]
    for a, expr in enumerate(head.sizes):
        guards += divisor_checks(head, expr, fn, names)
        assigns.append((sizes[a], render(expr, fn, names)))
        if divides(expr):  # (the same value with LLVM's truncating division: ir/expr.py)
            checks.append(f"if {truncating_text(renamed(expr, fn, names))} != {sizes[a]}:")
            what = f"replication size {expr} differs in Python and in HPVM-C and LLVM: {ROUNDING}"
            checks.append(INDENT + f"raise __hpvm_LaunchError({message(head, what)})")
        checks.append(f"if {sizes[a]} < 0:")
        checks.append(
            INDENT + f"raise __hpvm_LaunchError({message(head, f'replication size {expr} is negative')})"
        )
    # Fused members share the head's grid; their sizes are checked equal at run time.
    for node in group.nodes[1:]:
        for a, expr in enumerate(node.sizes):
            guards += divisor_checks(node, expr, fn, names)
            checks.append(f"if ({render(expr, fn, names)}) != {sizes[a]}:")
            checks.append(
                INDENT
                + f"raise __hpvm_LaunchError({message(node, 'one-to-one edge between grids of different extents')})"
            )

    def name_of(i: int) -> str | None:  # the variable holding fn's input i, if set by now
        if names is None:
            return input_name(fn.params[i].name)
        return names.params[i] if i in names.ready else None

    for node in group.nodes:
        if isinstance(node.function, LeafFunction):
            bounds = bound_accesses(node, fn, scope.feeds[id(node)], clones.get(id(node.function)))
            checks += check_lines(node, fn, bounds, sizes, name_of)
            spans = span_bounds(node, fn, scope.feeds[id(node)])
            checks += span_check_lines(node, fn, spans, sizes, ancestor, name_of)
    return guards, assigns, checks
