"""The ``cpu`` back end's bounds pre-check of affine facts as generated code
(``bounds.SpanAccess``): ``span_check_lines`` writes, into a graph function, what
``bounds.check_spans`` does on the host — each fact's range over the launch's box of ids,
narrowed by its clips, against the array's bytes (a Python leaf's
guarded index: its length along the axis). Split from ``bounds.py`` (the size bar):
the facts and the host check there, their code here; property tests hold the code to
``llvm_native/affine.py``'s ``span`` and ``clipped`` (``tests/llvm/test_llvm_affine.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..ir.graph import InternalFunction, Node
from .bounds import SpanBound, argument_code, span_message


def span_check_lines(
    node: Node,
    fn: InternalFunction,
    bounds: Sequence[SpanBound],
    sizes: list[str],
    ancestor: Callable[[int, int], str | None],
    name_of: Callable[[int], str | None],
) -> list[str]:
    """``check_spans`` as generated code: ``sizes`` the variables of ``node``'s sizes,
    ``ancestor(level, dim)`` the expression of an ancestor's extent (``None``: unknown,
    the fact is not checked). The conditions of a fact (its limits and guards) are
    evaluated only when its range leaves the array: nothing more per launch otherwise.

    Each extent, clipped range and end of a range is computed once, into a variable
    (``Bindings``), and read by every fact and side that needs it: a leaf with many facts
    under clamps (a blur's nine neighbours) repeats the same ranges in each, and written
    out in full its checks took Numba 17 of an 18-second compile."""
    from .llvm_native.affine import ALONE

    lines: list[str] = []
    bind = Bindings(lines)
    for access, i in bounds:
        name = name_of(i)
        ids = [
            (lv, d)
            for lv, d, *_ in (*access.terms, *access.limits, *access.scaled, *access.clips)
            if lv != ALONE
        ]
        for terms, *_, scaled in access.guards:
            ids += [(lv, d) for lv, d, *_ in (*terms, *scaled) if lv != ALONE]
        extents = {key: _extent_code(*key, sizes, ancestor) for key in ids}
        arguments = {j: argument_code(j, name_of) for j in access.arguments()}
        if name is None or None in extents.values() or None in arguments.values():
            continue
        extents = {key: bind(code) for key, code in extents.items()}  # type: ignore[arg-type]
        ranges, reached = clipped_code(access.clips, extents, arguments, bind)  # type: ignore[arg-type]
        lo, hi = span_code(access.terms, access.first, access.last, extents, access.scaled, arguments, ranges)  # type: ignore[arg-type]
        lo, hi = bind(lo), bind(hi)
        conditions = reached + [
            f"{extents[(lv, d)]} - 1 <= {limit}" for lv, d, limit in access.limits if limit < 2**63 - 1
        ]  # (a limit at int64's end holds for any extent)
        for terms, c_low, c_high, low, high, scaled in access.guards:
            g_lo, g_hi = span_code(terms, c_low, c_high, extents, scaled, arguments)  # type: ignore[arg-type]
            # (int64's own ends bound nothing in int64 arithmetic: such a side is left out)
            conditions += [f"{g_lo} >= {low}"] if low > -(2**63) else []
            conditions += [f"{g_hi} <= {high}"] if high < 2**63 - 1 else []
        shown = [extents[(lv, d)] for lv, d, _ in access.dims()] + [
            f"({arguments[j]})" for j in access.arguments()
        ]
        length = f"{name}.nbytes" if access.axis is None else f"{name}.shape[{access.axis}]"
        values = ", ".join([lo, hi, length, *shown])  # type: ignore[list-item]
        # (else lo >= 0 always)
        below = access.first < 0 or any(k < 0 for _, _, k in access.terms) or bool(access.scaled)
        for low_side, test in ((True, f"{lo} < 0"), (False, f"{hi} >= {length}")):
            if low_side and not below:
                continue
            # (the conditions without short cuts: one block for all, where `and` made one each)
            lines.append(
                f"if {test}{''.join(f' and ({c})' for c in conditions[:1])}{''.join(f' & ({c})' for c in conditions[1:])}:"
            )
            lines.append(
                f"    raise __hpvm_SizeOutOfBounds({span_message(node, fn, access, i, low_side)!r}, {values})"
            )
    if not lines:
        return []
    instances = " and ".join(f"{s} > 0" for s in sizes) or "True"
    return [f"if {instances}:", *("    " + line for line in lines)]


class Bindings:
    """Common subexpressions of generated checks: ``bind(code)`` appends ``__hs_<hash> =
    code`` to ``lines`` the first time it meets ``code`` and returns the variable (a name or
    a number is returned as it is). Named by the code's hash, so that the checks of several
    nodes in one function share a variable where their code is the same (assigned again,
    the same value: the code reads only sizes, inputs and extents fixed by then)."""

    _PLAIN = re.compile(r"\(?-?[\w.]+\)?")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.names: dict[str, str] = {}

    def __call__(self, code: str) -> str:
        if self._PLAIN.fullmatch(code):
            return code
        name = self.names.get(code)
        if name is None:
            name = "__hs_" + hashlib.sha1(code.encode()).hexdigest()[:12]
            self.names[code] = name
            self.lines.append(f"{name} = {code}")
        return name


def _extent_code(
    level: int, dim: int, sizes: list[str], ancestor: Callable[[int, int], str | None]
) -> str | None:
    from .llvm_native.affine import GLOBAL

    if dim >= GLOBAL:  # (a global id: its two levels' extents multiplied)
        own = _extent_code(level, dim - GLOBAL, sizes, ancestor)
        up = _extent_code(level + 1, dim - GLOBAL, sizes, ancestor)
        return f"({own} * {up})" if own is not None and up is not None else None
    if level == 0:
        return f"({sizes[dim]})" if dim < len(sizes) else "1"
    found = ancestor(level, dim)
    return f"({found})" if found is not None else None


def _product_code(k: int, args: Sequence[int], arguments: dict[int, str] | None) -> str:
    return "*".join([str(k), *(f"({(arguments or {})[arg]})" for arg in args)])


def clipped_code(
    clips: Sequence[tuple[Any, ...]],
    extents: dict[tuple[int, int], str | None],
    arguments: dict[int, str],
    bind: Callable[[str], str] = str,
) -> tuple[dict[tuple[int, int], tuple[str, str]], list[str]]:
    """``affine.clipped`` as code: each clipped id's first and last value as expressions,
    and the conditions under which some instance meets every clip (its range not empty, an
    id-free clip true). Python's ``//`` floors, as ``clipped`` does. ``bind``: what each
    range's ends go through (``Bindings``: computed once)."""
    from .llvm_native.affine import ALONE, EQ

    ranges: dict[tuple[int, int], tuple[str, str]] = {}
    reached: list[str] = []
    for level, dim, k, c, scaled, relation in clips:
        rest = " + ".join([str(c), *(_product_code(kk, args, arguments) for *_, kk, args in scaled)])
        if level == ALONE:
            reached.append(f"({rest}) {'==' if relation == EQ else '<='} 0")
            continue
        first, last = ranges.get((level, dim), ("0", f"({extents[(level, dim)]} - 1)"))
        if relation == EQ:
            reached.append(f"({rest}) % {k} == 0")
            first, last = f"max({first}, -({rest}) // {k})", f"min({last}, -({rest}) // {k})"
        elif k > 0:
            last = f"min({last}, -({rest}) // {k})"
        else:
            first = f"max({first}, -(-({rest}) // {-k}))"
        ranges[(level, dim)] = (first, last)
    ranges = {key: (bind(first), bind(last)) for key, (first, last) in ranges.items()}
    reached += [f"{first} <= {last}" for first, last in ranges.values()]
    return ranges, reached


def span_code(
    terms: Sequence[tuple[int, int, int]],
    low: int,
    high: int,
    extents: dict[tuple[int, int], str | None],
    scaled: Sequence[tuple[int, int, int, tuple[int, ...]]] = (),
    arguments: dict[int, str] | None = None,
    ranges: dict[tuple[int, int], tuple[str, str]] | None = None,
) -> tuple[str, str]:
    """``affine.span`` as two expressions: an id's coefficient summed over its plain and
    scaled terms (``arguments``: the variables of the scaled terms' arguments), its side
    by its sign — a constant's known here, one with an argument's in the code. ``ranges``:
    the first and last value of the ids a guard narrows (``clipped_code``)."""
    from .llvm_native.affine import ALONE

    lo, hi = str(low), str(high)
    coefficients: dict[tuple[int, int], list[str]] = {}
    known: dict[tuple[int, int], int] = {}
    for level, dim, k in terms:
        known[(level, dim)] = k
    for level, dim, k, args in scaled:
        product = _product_code(k, args, arguments)
        if level == ALONE:
            lo, hi = f"{lo} + {product}", f"{hi} + {product}"
        else:
            coefficients.setdefault((level, dim), []).append(product)
    for key in sorted({*known, *coefficients}):
        if key in (ranges or {}):
            first, last = (ranges or {})[key]
            k_code = f"({' + '.join([str(known.get(key, 0)), *coefficients.get(key, [])])})"
            ends = f"{k_code}*{first}, {k_code}*{last}"
            lo, hi = f"{lo} + min({ends})", f"{hi} + max({ends})"
            continue
        extent = f"({extents[key]} - 1)"
        if key not in coefficients:
            k = known[key]
            if k < 0:
                lo += f" - {-k}*{extent}"
            else:
                hi += f" + {k}*{extent}"
            continue
        top = f"({' + '.join([str(known.get(key, 0)), *coefficients[key]])})*{extent}"
        lo, hi = f"{lo} + min(0, {top})", f"{hi} + max(0, {top})"
    return f"({lo})", f"({hi})"
