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

A *scaled* term is an id times a product of scalar arguments of the leaf, ``(level, dim,
k, args)``: ``k * id`` times each argument of ``args`` (sorted, a repeat squares one) — a
row-major index with a run-time width, ``a[i * cols + j]``, as every 2-D HPVM-C leaf writes
one, or ``(z * ny + y) * nx + x`` in 3-D — and with ``level`` ``ALONE``, ``k`` times the
arguments alone (``(i + 1) * cols``: ``cols``). The arguments' values are one for every
instance and known at launch, so the range is still each id's extreme on its side, once
the product has joined ``k``: ``span`` takes the values (``values[arg]``), sums the
coefficients of each id over its plain and scaled terms (``i * cols + i`` is one id with
one coefficient), and adds the terms without an id to both ends. ``args`` are the LLVM
arguments' indices in ``access.py``'s facts; ``bounds.py`` renames them to the graph
inputs they are bound from. At most ``DEGREE`` arguments a term.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

#: ``dim`` of the global id along x (then y, z): ``GLOBAL + d``.
GLOBAL = 3

Term = tuple[int, int, int]
#: ``(level, dim, k, args)``: ``k * id`` times the arguments, or with ``level`` ``ALONE``,
#: ``k`` times the arguments alone.
Scaled = tuple[int, int, int, tuple[int, ...]]
#: The ``level`` of a scaled term that is arguments alone (no id).
ALONE = -1
#: The most arguments one scaled term multiplies (a 3-D grid's two widths, and one more).
DEGREE = 3


def product(args: Sequence[int], values: Mapping[int, int] | Sequence[int]) -> int:
    """The arguments' values multiplied."""
    out = 1
    for arg in args:
        out *= values[arg]
    return out


#: ``terms``, the lowest and highest constant, the range ``[low, high]`` the form must stay
#: in over the box for a fact to hold (an integer width it was computed in), and the form's
#: scaled terms.
Guard = tuple[tuple[Term, ...], int, int, int, int, tuple[Scaled, ...]]


def extent(extents: Sequence[Sequence[int]], level: int, dim: int) -> int:
    """The number of instances along ``dim`` at ``level`` (1 past the node's dimensions);
    of a global id (``dim`` ≥ ``GLOBAL``), the product of its two levels'."""
    if dim >= GLOBAL:
        return extent(extents, level, dim - GLOBAL) * extent(extents, level + 1, dim - GLOBAL)
    sizes = extents[level]
    return sizes[dim] if dim < len(sizes) else 1


def span(
    terms: Sequence[Term],
    low: int,
    high: int,
    extents: Sequence[Sequence[int]],
    scaled: Sequence[Scaled] = (),
    values: Mapping[int, int] | Sequence[int] = (),
    ranges: Mapping[tuple[int, int], tuple[int, int]] | None = None,
) -> tuple[int, int]:
    """The least and the greatest value of ``c + sum(k * id)`` (and the ``scaled`` terms,
    their arguments' ``values``) over the box ``extents`` (per level, its sizes; every
    extent > 0), ``c`` ranging over ``low .. high``: each id's extreme on its side (an id's
    range is independent of the others'), its coefficient summed over its terms first.
    ``ranges``: ids whose range is narrower than ``0 .. extent - 1`` (``clipped``)."""
    ks = {(level, dim): k for level, dim, k in terms}
    for level, dim, k, args in scaled:
        if level == ALONE:
            low, high = low + k * product(args, values), high + k * product(args, values)
        else:
            ks[(level, dim)] = ks.get((level, dim), 0) + k * product(args, values)
    for (level, dim), k in ks.items():
        first, last = (ranges or {}).get((level, dim), (0, extent(extents, level, dim) - 1))
        low, high = low + min(k * first, k * last), high + max(k * first, k * last)
    return low, high


#: A condition under which an access is made (the guard of the block it is in): ``k * id +
#: c`` plus the arguments' products of ``scaled`` (``ALONE`` terms) is ``<= 0`` (``relation``
#: ``LE``) or ``== 0`` (``EQ``), for the id ``(level, dim)``; ``level`` ``ALONE``: no id (one
#: truth for every instance of a launch). ``(level, dim, k, c, scaled, relation)``.
Clip = tuple[int, int, int, int, tuple[Scaled, ...], int]
LE, EQ = 0, 1


def clipped(
    clips: Sequence[Clip],
    extents: Sequence[Sequence[int]],
    values: Mapping[int, int] | Sequence[int] = (),
) -> dict[tuple[int, int], tuple[int, int]] | None:
    """The range of each id ``clips`` narrow (an id whose range the clips leave as it is is
    left out), or ``None`` where no instance of the box meets every clip: the guarded access
    is then made by none. The instances meeting them are the box with those ranges — each
    clip reads one id — so ``span`` over the ranges is exact."""
    ranges: dict[tuple[int, int], tuple[int, int]] = {}
    for level, dim, k, c, scaled, relation in clips:
        rest = c + sum(kk * product(args, values) for _, _, kk, args in scaled)
        if level == ALONE:
            if rest > 0 or (relation == EQ and rest != 0):
                return None
            continue
        first, last = ranges.get((level, dim), (0, extent(extents, level, dim) - 1))
        if relation == EQ:  # k*id == -rest
            if rest % k:
                return None
            first, last = max(first, -rest // k), min(last, -rest // k)
        elif k > 0:  # id <= floor(-rest / k)
            last = min(last, -rest // k)
        else:  # id >= ceil(rest / -k)
            first = max(first, -(-rest // -k))
        if first > last:
            return None
        ranges[(level, dim)] = (first, last)
    return ranges


def holds(
    limits: Sequence[Term],
    guards: Sequence[Guard],
    extents: Sequence[Sequence[int]],
    values: Mapping[int, int] | Sequence[int] = (),
) -> bool:
    """Whether a fact's conditions hold over the box: each id within its limit
    (``(level, dim, largest id)``), each guarded form within its range (its scaled terms'
    arguments: ``values``)."""
    for level, dim, limit in limits:
        if extent(extents, level, dim) - 1 > limit:
            return False
    for terms, c_low, c_high, low, high, scaled in guards:
        lo, hi = span(terms, c_low, c_high, extents, scaled, values)
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
    out: dict[tuple[tuple[Term, ...], int, int, tuple[Scaled, ...]], tuple[int, int]] = {}
    for terms, c_low, c_high, low, high, scaled in guards:
        key = (terms, low, high, scaled)
        was = out.get(key, (c_low, c_high))
        out[key] = (min(was[0], c_low), max(was[1], c_high))
    return tuple(
        (terms, cl, ch, low, high, scaled) for (terms, low, high, scaled), (cl, ch) in sorted(out.items())
    )


@dataclass(frozen=True)
class Affine:
    """A value equal to ``c + sum(k * id)`` (``terms``, sorted, no zero ``k``) plus its
    ``scaled`` terms (sorted, no zero ``k``: ids times an argument, or an argument alone)
    wherever every id is within its ``limits`` and every form of ``guards`` stays in its
    range."""

    terms: tuple[Term, ...] = ()
    c: int = 0
    limits: tuple[Term, ...] = ()
    guards: frozenset[Guard] = field(default_factory=frozenset)
    scaled: tuple[Scaled, ...] = ()

    @staticmethod
    def id(level: int, dim: int) -> Affine:
        return Affine(((level, dim, 1),))

    @staticmethod
    def argument(arg: int) -> Affine:
        """The value of integer argument ``arg`` (one for every instance)."""
        return Affine(scaled=((ALONE, 0, 1, (arg,)),))

    @property
    def constant(self) -> bool:
        """Whether it is ``c`` alone (under its conditions)."""
        return not self.terms and not self.scaled

    def within(self, low: int, high: int) -> Affine | None:
        """The same value where it stays in ``[low, high]`` (an integer width: past it the
        operation wraps), or ``None`` if the first instance (every id 0) already leaves it.
        One id: a limit on that id; several, or an argument: a guard, evaluated over the
        box at launch."""
        if self.scaled:
            return replace(self, guards=self.guards | {(self.terms, self.c, self.c, low, high, self.scaled)})
        if not low <= self.c <= high:
            return None
        if not self.terms:
            return self
        if len(self.terms) == 1:
            level, dim, k = self.terms[0]
            limit = (high - self.c) // k if k > 0 else (self.c - low) // -k
            return replace(self, limits=_merged_limits(self.limits, ((level, dim, limit),)))
        return replace(self, guards=self.guards | {(self.terms, self.c, self.c, low, high, ())})

    def plus(self, other: Affine) -> Affine:
        ks: dict[tuple[int, int], int] = {}
        for level, dim, k in (*self.terms, *other.terms):
            ks[(level, dim)] = ks.get((level, dim), 0) + k
        terms = tuple((level, dim, k) for (level, dim), k in sorted(ks.items()) if k)
        by_args: dict[tuple[int, int, tuple[int, ...]], int] = {}
        for level, dim, k, args in (*self.scaled, *other.scaled):
            by_args[(level, dim, args)] = by_args.get((level, dim, args), 0) + k
        scaled = tuple((level, dim, k, args) for (level, dim, args), k in sorted(by_args.items()) if k)
        return Affine(
            terms,
            self.c + other.c,
            _merged_limits(self.limits, other.limits),
            self.guards | other.guards,
            scaled,
        )

    def times(self, factor: int) -> Affine:
        terms = tuple((level, dim, k * factor) for level, dim, k in self.terms) if factor else ()
        scaled = (
            tuple((level, dim, k * factor, args) for level, dim, k, args in self.scaled) if factor else ()
        )
        return replace(self, terms=terms, c=self.c * factor, scaled=scaled)

    @property
    def id_free(self) -> bool:
        """Whether no id is in it: a constant and arguments' products (one value for every
        instance)."""
        return not self.terms and all(level == ALONE for level, *_ in self.scaled)

    def times_form(self, other: Affine) -> Affine | None:
        """The product with ``other`` where one of the two has no id (``id_free``): the
        other's every term times each of its parts, under both's conditions; ``None`` where
        both have ids (not affine) or a term would multiply more than ``DEGREE``
        arguments."""
        for free, form in ((other, self), (self, other)):
            if not free.id_free:
                continue
            made = form.times(free.c).plus(free.conditions())
            for _, _, k, args in free.scaled:
                part = form.scaled_by(args)
                if part is None:
                    return None
                made = made.plus(part.times(k))
            return made
        return None

    def scaled_by(self, args: tuple[int, ...]) -> Affine | None:
        """Every part times the arguments ``args`` (its conditions kept), or ``None`` past
        ``DEGREE`` arguments a term."""
        scaled = [(level, dim, k, args) for level, dim, k in self.terms]
        scaled += [(level, dim, k, tuple(sorted((*mine, *args)))) for level, dim, k, mine in self.scaled]
        scaled += [(ALONE, 0, self.c, args)] if self.c else []
        if any(len(term[3]) > DEGREE for term in scaled):
            return None
        return self.conditions().plus(Affine(scaled=tuple(scaled)))

    def conditions(self) -> Affine:
        """Zero, under this value's conditions (to keep them when its value is used up)."""
        return Affine(limits=self.limits, guards=self.guards)

    def divided(self, d: int) -> Affine | None:
        """The exact quotient by ``d`` > 0, or ``None`` if some instance's value is not a
        multiple of it (every ``k`` and ``c`` must be)."""
        if self.c % d or any(k % d for _, _, k in self.terms) or any(s[2] % d for s in self.scaled):
            return None
        return replace(
            self,
            terms=tuple((level, dim, k // d) for level, dim, k in self.terms),
            c=self.c // d,
            scaled=tuple((level, dim, k // d, args) for level, dim, k, args in self.scaled),
        )
