"""Which ``(ptr, i64)`` argument pairs of an HPVM IR module are one array port: decided by
how the program connects them.

Why. HPVM numbers ports by LLVM argument (and return-struct field): a pointer and its size
are two ports, and a program may connect them separately. HPVM's pipeline benchmark binds a
stage's image pointer from the root while an edge brings its size from the previous stage,
whose leaf returns the size alone (``__hpvm__return(2, bytesIs, bytesIs)``). hpvm's array
ports carry their extent, so a pair that always travels together is best one port —
``u8[:]``, a NumPy array of exactly those bytes — and a pair that does not must be two: a
pointer-only ``u8[*]`` and an ``i64``.

The rule (a fixpoint over the whole module): every *candidate* pair — a ``ptr`` argument
(or field) immediately followed by an ``i64``, neither with an ``"hpvm.port"`` saying what
it is — starts folded. A folded pair stays folded only while every bind and edge touching
either half touches both, joining half *k* to half *k* of one other pair that is itself
folded (or a sized 1-D array port the module declares), through calls of the same kind
between the same nodes with the same flags. Unfolding a pair can break that for the pairs
it connects to, so the check repeats until nothing changes. A root's pairs are connected
by the host, so they stay folded unless a bind inside splits them. The result is
consistent by construction: both ends of every connection are folded, or neither is.

This module works on plain data (``Signature``, ``Link``); ``importer.py`` reads them from
the LLVM module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

IN, OUT = "in", "out"


@dataclass(frozen=True)
class End:
    """One LLVM argument (``side`` ``"in"``) or return-struct field (``"out"``) of a function."""

    function: str
    side: str
    index: int

    def shifted(self, by: int) -> End:
        return End(self.function, self.side, self.index + by)


@dataclass(frozen=True)
class Signature:
    """A function's LLVM arguments or return fields: their LLVM types, and the ports the
    module declares on them (``"hpvm.port"``, ``"hpvm.outputs"``) as first index → arity."""

    types: tuple[str, ...]
    declared: Mapping[int, int]


@dataclass(frozen=True)
class Link:
    """One bind or edge call: LLVM index ``src`` feeds ``dst``. ``call`` identifies what it
    joins (kind, parent, node handles, flags): the two halves of a pair travel together when
    two links of one ``call`` join them."""

    call: tuple[object, ...]
    src: End
    dst: End


@dataclass(frozen=True)
class _Group:
    lead: End
    arity: int
    candidate: bool


def groups(function: str, side: str, sig: Signature) -> list[_Group]:
    """The groups of ``sig``'s indices, in order: declared ports, candidate pairs, singles."""
    found: list[_Group] = []
    k, types = 0, sig.types
    while k < len(types):
        end = End(function, side, k)
        if k in sig.declared:
            group = _Group(end, max(1, sig.declared[k]), False)
        elif types[k] == "ptr" and k + 1 < len(types) and types[k + 1] == "i64" and k + 1 not in sig.declared:
            group = _Group(end, 2, True)
        else:
            group = _Group(end, 1, False)
        found.append(group)
        k += group.arity
    return found


def folded_pairs(signatures: Mapping[tuple[str, str], Signature], links: Iterable[Link]) -> set[End]:
    """The first index of every candidate pair that is one port (the fixpoint above)."""
    owner: dict[End, _Group] = {}
    for (function, side), sig in signatures.items():
        for g in groups(function, side, sig):
            for j in range(g.arity):
                owner[g.lead.shifted(j)] = g
    links = list(links)
    present = {(link.call, link.src, link.dst) for link in links}
    touching: dict[End, list[tuple[Link, bool]]] = {}  # end -> (link, whether the end is its src)
    for link in links:
        touching.setdefault(link.src, []).append((link, True))
        touching.setdefault(link.dst, []).append((link, False))
    folded = {g.lead for g in owner.values() if g.candidate}

    def holds(lead: End) -> bool:
        for offset in (0, 1):
            for link, is_src in touching.get(lead.shifted(offset), ()):
                other = link.dst if is_src else link.src
                g = owner.get(other)
                if g is None or g.arity != 2 or other.index - g.lead.index != offset:
                    return False
                if g.candidate and g.lead not in folded:
                    return False
                mine, theirs = lead.shifted(1 - offset), g.lead.shifted(1 - offset)
                partner = (link.call, mine, theirs) if is_src else (link.call, theirs, mine)
                if partner not in present:
                    return False
        return True

    changed = True
    while changed:
        changed = False
        for lead in sorted(folded, key=lambda e: (e.function, e.side, e.index)):
            if not holds(lead):
                folded.discard(lead)
                changed = True
    return folded


__all__ = ["IN", "OUT", "End", "Link", "Signature", "folded_pairs", "groups"]
