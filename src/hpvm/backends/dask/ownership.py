"""Which elements each chunk of a replicated leaf owns, where the leaf's indexing proves it.

Why. Splitting a node's instances over workers is only correct when the result of each
instance depends on, and lands in, elements no other chunk touches. The Dask back end
splits a replicated leaf along its outermost dimension x and hands each chunk *row slices*
of the arrays (``a[lo:hi]``), running the chunk as a node of ``hi - lo`` instances. That is
the same computation exactly when the leaf uses its instance id x for nothing but the first
index of its array parameters: then instance ``lo + k`` of the original node and instance
``k`` of the chunk read and write the same elements, each chunk owns rows ``[lo, hi)`` of
every array, and only those rows come back.

Where the proof is. This module only asks: the proof is the leaf IR's cached analysis
``ir/leafir/analyses/ownership.py`` (on its index facts, ``indices.py``), computed once per
leaf, with no syntax tree read here. A leaf outside the IR's dialect (``LeafIRUnsupported``)
or with a body other than Python is *not owned*: it runs whole on one worker, the
conservative answer.

What ``slicing_problem`` accepts (anything else keeps the node on one worker, and the
returned reason says why): a Python leaf in the leaf IR's dialect, whose every subscript of
an array parameter has, on its first axis, the instance id x (``hpvm.get_node_instance_id_x``
of ``hpvm.get_node()``, directly or through a variable assigned once, at the top level; an
intrinsic imported under another name is recognised as what it is); whose array
parameters are used only so subscripted or as ``a.shape[k]`` with a constant ``k >= 1``
(the first extent changes in a chunk), and never reassigned; whose id x appears nowhere
else (``out[i] = i`` would compute from it); and which does not call the intrinsics whose
meaning spans the whole grid: ``get_num_node_instances_x``, ``barrier`` and ``malloc``
(one buffer per parent instance: here all instances share it). Sound by construction:
false negatives only.

Offsets. The first index may also be the id x plus a constant ``c >= 0`` (``k = id + 1``,
then ``a[k + 1]``: offset 2), as stencils index. Instance ``lo + k`` still matches chunk
instance ``k`` on the slice ``a[lo : hi + cmax]``; ``Ownership.rows`` gives each array's
lowest and highest offset, so a chunk gets the rows past its own that it reads (a halo).
An array the leaf writes must be indexed at one offset ``c`` only: the chunk then owns
rows ``[lo + c, hi + c)`` of it, and no other chunk reads them. A negative offset would be
a negative index into the slice (which wraps), so it is refused.

Broadcast. A read-only array whose subscripts never involve the instance id x (``b[k, j]``
in a matrix product, a lookup table) reads the same elements in every chunk: it is sent
whole to each (``Ownership.broadcast``). An array indexed both ways, or written without
the id, is refused.

Atomics. An array parameter used *only* as the target of commutative atomics — ``add`` /
``sub``, ``min``, ``max``, ``and``, ``or``, ``xor``, one family per array, each call a
statement of its own (its returned old value unused) — is not owned by rows: every chunk
may update any element. ``analyse`` reports it with its family (``COMBINE``); each chunk
then updates a private copy starting at the family's identity (zeros for add/sub/xor; the
array's own values for min/max/and/or, which are idempotent) and the host combines the
copies exactly (integers) or within rounding (floats: the sums are regrouped). ``xchg``,
an atomic whose old value is used, or an atomic array also read or written by subscript
keep the node on one worker.
"""

from __future__ import annotations

from ...ir.graph import LeafFunction
from ...ir.intrinsics import COMMUTING
from ...ir.leafir import LeafIRUnsupported, leaf_ir
from ...ir.leafir.analyses import Ownership, ownership

#: Commutative atomics and the family whose per-chunk results combine into the same array
#: (the intrinsic table's ``Intrinsic.family``).
COMBINE = COMMUTING


def slicing_problem(leaf: LeafFunction) -> str | None:
    """``None`` when the leaf's chunks can run apart (module doc), else why not."""
    return analyse(leaf).problem


def analyse(leaf: LeafFunction) -> Ownership:
    """How the leaf's chunks own their arrays (module doc), read off the leaf IR's cached
    ownership analysis; a leaf outside the IR's dialect is not owned (it stays on one worker)."""
    if leaf.body_kind != "python":
        return Ownership(
            problem=f"leaf '{leaf.name}' has a {leaf.body_kind} body (only Python bodies are analysed)"
        )
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported as refused:
        return Ownership(
            problem=f"leaf '{leaf.name}' is not analysed: {refused.construct} is outside the leaf IR"
        )
    return ownership(ir, frozenset(leaf.outs))
