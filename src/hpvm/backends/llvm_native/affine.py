"""Affine forms in the instance ids of a leaf's node and its ancestors', and their range
over every instance of a launch.

Why. An HPVM-C leaf often finds its element from several ids at once: its own x and its
parent's x and y (``__hpvm__getParentNode``), as parboil's LBM indexes its grid,
``e*TOTAL + x + y*PADDED_X + z*PADDED_X*PADDED_Y``. No single id's stride says whether the
last instance stays inside the array; the whole form's range does, and that is known at
launch: each id ranges over ``0 .. extent - 1`` of its level (the node's own sizes, its
parent's, ...), every combination of them runs (every parent instance runs all of its
children), so a form ``c + sum(k * id)`` takes exactly the values from ``c + sum of the
negative k*(extent - 1)`` to ``c + sum of the positive ones`` — both ends reached by an
instance. ``span`` computes that; ``Affine`` is the form ``access.py`` builds while it
follows an LLVM index back to the id calls, with the conditions under which it equals
the value LLVM computes (no operation on the way wraps or is cut off).

A term is ``(level, dim, k)``: ``k`` times the id along ``dim`` (0, 1, 2: x, y, z) of the
node ``level`` steps up from the leaf's (0: its own, 1: its parent, ...). ``dim`` 3, 4, 5
is the *global* id along x, y, z over ``level`` and the one above it — the parent's id
times the instances along that dimension plus the own id, ``blockIdx.x * blockDim.x +
threadIdx.x`` as HPVM's GPU-convention leaves find their element (``ix = gx * gridx + lx``
with ``gridx = __hpvm__getNumNodeInstances_x(thisNode)``) —, whose extent is the product
of the two levels' (``extent``): every value from 0 to that product less one is some
instance's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

#: ``dim`` of the global id along x (then y, z): ``GLOBAL + d``.
GLOBAL = 3

Term = tuple[int, int, int]
#: ``terms``, the lowest and highest constant, and the range ``[low, high]`` the form must
#: stay in over the box for a fact to hold (an integer width it was computed in).
Guard = tuple[tuple[Term, ...], int, int, int, int]


def extent(extents: Sequence[Sequence[int]], level: int, dim: int) -> int:
    """The number of instances along ``dim`` at ``level`` (1 past the node's dimensions);
    of a global id (``dim`` ≥ ``GLOBAL``), the product of its two levels'."""
    if dim >= GLOBAL:
        return extent(extents, level, dim - GLOBAL) * extent(extents, level + 1, dim - GLOBAL)
    sizes = extents[level]
    return sizes[dim] if dim < len(sizes) else 1


def span(terms: Sequence[Term], low: int, high: int, extents: Sequence[Sequence[int]]) -> tuple[int, int]:
    """The least and the greatest value of ``c + sum(k * id)`` over the box ``extents``
    (per level, its sizes; every extent > 0), ``c`` ranging over ``low .. high``: each
    term's extreme on its side (a term's ids are independent of the others')."""
    for level, dim, k in terms:
        top = k * (extent(extents, level, dim) - 1)
        if top < 0:
            low += top
        else:
            high += top
    return low, high


def holds(limits: Sequence[Term], guards: Sequence[Guard], extents: Sequence[Sequence[int]]) -> bool:
    """Whether a fact's conditions hold over the box: each id within its limit
    (``(level, dim, largest id)``), each guarded form within its range."""
    for level, dim, limit in limits:
        if extent(extents, level, dim) - 1 > limit:
            return False
    for terms, c_low, c_high, low, high in guards:
        lo, hi = span(terms, c_low, c_high, extents)
        if lo < low or hi > high:
            return False
    return True


def _merged_limits(a: tuple[Term, ...], b: tuple[Term, ...]) -> tuple[Term, ...]:
    out: dict[tuple[int, int], int] = {}
    for level, dim, limit in (*a, *b):
        out[(level, dim)] = min(limit, out.get((level, dim), limit))
    return tuple((level, dim, limit) for (level, dim), limit in sorted(out.items()))


def merged_guards(guards: Sequence[Guard]) -> tuple[Guard, ...]:
    """``guards`` with those on the same terms and range made one (the constants' hull)."""
    out: dict[tuple[tuple[Term, ...], int, int], tuple[int, int]] = {}
    for terms, c_low, c_high, low, high in guards:
        key = (terms, low, high)
        was = out.get(key, (c_low, c_high))
        out[key] = (min(was[0], c_low), max(was[1], c_high))
    return tuple((terms, cl, ch, low, high) for (terms, low, high), (cl, ch) in sorted(out.items()))


@dataclass(frozen=True)
class Affine:
    """A value equal to ``c + sum(k * id)`` (``terms``, sorted, no zero ``k``) wherever every
    id is within its ``limits`` and every form of ``guards`` stays in its range."""

    terms: tuple[Term, ...] = ()
    c: int = 0
    limits: tuple[Term, ...] = ()
    guards: frozenset[Guard] = field(default_factory=frozenset)

    @staticmethod
    def id(level: int, dim: int) -> Affine:
        return Affine(((level, dim, 1),))

    def within(self, low: int, high: int) -> Affine | None:
        """The same value where it stays in ``[low, high]`` (an integer width: past it the
        operation wraps), or ``None`` if the first instance (every id 0) already leaves it.
        One id: a limit on that id; several: a guard, evaluated over the box at launch."""
        if not low <= self.c <= high:
            return None
        if not self.terms:
            return self
        if len(self.terms) == 1:
            level, dim, k = self.terms[0]
            limit = (high - self.c) // k if k > 0 else (self.c - low) // -k
            return replace(self, limits=_merged_limits(self.limits, ((level, dim, limit),)))
        return replace(self, guards=self.guards | {(self.terms, self.c, self.c, low, high)})

    def plus(self, other: Affine) -> Affine:
        ks: dict[tuple[int, int], int] = {}
        for level, dim, k in (*self.terms, *other.terms):
            ks[(level, dim)] = ks.get((level, dim), 0) + k
        terms = tuple((level, dim, k) for (level, dim), k in sorted(ks.items()) if k)
        return Affine(
            terms, self.c + other.c, _merged_limits(self.limits, other.limits), self.guards | other.guards
        )

    def times(self, factor: int) -> Affine:
        terms = tuple((level, dim, k * factor) for level, dim, k in self.terms) if factor else ()
        return replace(self, terms=terms, c=self.c * factor)

    def conditions(self) -> Affine:
        """Zero, under this value's conditions (to keep them when its value is used up)."""
        return Affine(limits=self.limits, guards=self.guards)

    def divided(self, d: int) -> Affine | None:
        """The exact quotient by ``d`` > 0, or ``None`` if some instance's value is not a
        multiple of it (every ``k`` and ``c`` must be)."""
        if self.c % d or any(k % d for _, _, k in self.terms):
            return None
        return replace(self, terms=tuple((level, dim, k // d) for level, dim, k in self.terms), c=self.c // d)
