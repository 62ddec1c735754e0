"""Replication sizes that would index past an array, refused before the node's leaves run —
the same check, with the same message, on every back end that cannot check inside a leaf.

Why. Compiled code does not check bounds: ``hpvm run examples/vector_add.py ... --arg
n=100`` with 4-element arrays wrote past them and killed the process on ``cpu`` (exit 139),
``opencl`` wrote past its device buffers and reported success, a Dask worker crashed, and
an HPVM-C leaf overwrote the memory after its array even under ``interp`` (which checks
Python leaves' indices itself, but runs LLVM code as it is). Most leaves index their arrays
with their own instance id, ``c[i] = a[i] + b[i]``, and sizes are bare parameters or simple
expressions: whether the last instance stays in bounds is then known from the sizes and the
shapes alone, before anything runs.

What. One analysis per kind of leaf gives *facts* (``Access``): every instance indexes
array parameter ``param`` at ``stride * id + offset`` (along ``axis``, or in bytes), for ids
up to ``limit``.

* Python leaves (and generated Python: HBIR, the clones of the ``CloneLeaves`` pass, read
  through the leaf they were made from): ``ir_accesses`` reads the leaf IR's cached index
  facts (``ir/leafir/analyses/indices.py``): the accesses of its array parameters that
  *every* instance evaluates and whose index along some axis is the instance id x, y or z
  (of the leaf's own node) plus a constant — directly, or through variables assigned such a
  value (``k = id + 1``, then ``a[k + 1]``: the id plus 2). Stride 1, no limit. A leaf outside
  the IR's dialect has no facts (not checked before it runs; ``interp`` checks its indices
  as it runs, compiled back ends do not). Its *guarded* accesses (``if i < n: c[i] = ...``,
  in a top-level ``if`` testing an affine id against a constant, a scalar parameter or an
  array parameter's length (``x < d.shape[1]``: ``shape_argument``), its ``else``, or after an early exit ``if x >= w or y >= h: return``) are ``SpanAccess``
  facts (``python_spans``), one per axis (``d[y, x]``: ``y`` against the rows, ``x``
  against the columns), in elements, under the test's clips: checked as an LLVM leaf's
  are, by ``cpu`` (``interp`` checks Python indices as it runs; the GPU back ends and
  ``dask`` read the plain facts only).
* LLVM leaves (HPVM-C, ``.ll``): ``llvm_native/access.py``'s ``every_instance_accesses``,
  loads and stores of the blocks every call runs to their end (the entry block, and each
  block on every path from it to an end of the call) at ``stride*id + c`` bytes from a
  pointer argument;
  here in bytes of the whole array (``axis`` is ``None``), the highest byte touched. Its
  ``affine_accesses``, whose offsets combine several ids (the node's own and its
  ancestors'), are ``SpanAccess`` facts: checked by ``check_spans`` (``interp``) and
  ``span_code.span_check_lines`` (``cpu``), which take the form's range over the launch's box of ids
  (``llvm_native/affine.py``) against both ends of the array; the ancestors' extents come
  from the instance the check runs in.

One place turns facts, the node's sizes and the actual arrays into the
``OutOfBoundsError``: the last instance's index, ``past_end``, against the array's extent,
when the node has instances (``message`` is its text). Back ends call it where they know
the node's sizes, before the node runs: ``cpu`` in its generated graph code
(``check_lines``: the same ``past_end``, compiled, and ``SizeOutOfBounds``), the GPU
lowering on the host before each kernel launch (``check``, ``gpu/plan.py``), ``dask`` on the
host with the whole arrays before it sends anything (``check_graph``: every level the
launch's arguments decide; ``dask/backend.py``), ``interp`` for LLVM leaves
(``interp/executor.py``). Only arrays the enclosing graph passes in (input
binds) are checked: what arrives over an edge is known only while the graph runs. One
comparison per access per execution of the node: nothing measurable.

Sound: the error is raised only for a run that would certainly index out of bounds. For
Python the access must be in a top-level statement of the leaf (not under ``if``, ``for``
or ``while``, nor on a branch of ``x if c else y`` or ``and``/``or``), with no ``return``
in any statement before it — so every instance reaches it (an exception raised earlier
fails the run anyway); the id variables are assigned once, at the top level, and the array
parameter never (``indices.py``); a guarded one is in a statement directly in a branch of
a top-level ``if`` every instance reaches (or after early exits), and is made by every
instance that passes the test, whose clips are exactly those instances. A fact's
``where`` is its statement's first line. For LLVM, see ``access.py``. Tests other than
comparisons of an id with a constant, a scalar or an array's length (an ``if`` on ``or``
or ``!=``, an exit on ``and``), indices computed otherwise (``tile * 16 + i``) and arrays
not passed in by the enclosing graph are not checked: the interpreter reports those (for
Python leaves).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import CompileError, HPVMError, OutOfBoundsError
from ..ir.analysis import Feed, FeedTable, feed_table
from ..ir.bodies import LLVM, PYTHON_KINDS, GeneratedBody, llvm_abi_types
from ..ir.graph import InternalFunction, LeafFunction, Node
from ..ir.leafir import LeafIRUnsupported, leaf_ir
from ..ir.leafir.analyses import index_facts
from ..ir.types import ArrayType, ScalarType
from ..passes.clone_bounds import clone_accesses
from ..passes.clone_leaves import LeafClone, clone_of

#: The largest id a Python fact holds for: any the back ends can run (and far from int64's
#: end, so that ``size - 1 + offset`` cannot wrap in compiled code).
PYTHON_LIMIT = 2**62


@dataclass(frozen=True)
class Access:
    """Every instance of leaf ``leaf`` indexes its array parameter ``param`` (``array``) at
    ``stride * id + offset``, ``id`` its instance id ``dim`` (0, 1, 2: x, y, z), for ids up to
    ``limit``: along ``axis``, or — ``axis`` ``None``, an LLVM leaf — in bytes of the whole
    array, ``offset`` then the highest of the ``width`` bytes it touches. ``where``: the
    access's ``file:line``."""

    leaf: str
    param: int
    array: str
    dim: int
    offset: int
    where: str
    axis: int | None = 0
    stride: int = 1
    limit: int = PYTHON_LIMIT
    width: int = 1

    def extent(self, shape: Sequence[int], itemsize: int) -> int | None:
        """The array's extent this access is measured against: its length along ``axis``,
        or its bytes (``None`` when it has no such axis)."""
        if self.axis is None:
            return math.prod(shape) * itemsize
        return shape[self.axis] if self.axis < len(shape) else None

    def extent_code(self, name: str) -> str:
        """``extent`` in generated code, for the array in variable ``name``."""
        return f"{name}.nbytes" if self.axis is None else f"{name}.shape[{self.axis}]"


def past_end(size: int, stride: int, offset: int, limit: int, extent: int) -> bool:
    """Whether the last of ``size`` instances (ids ``0 .. size - 1``; ``size`` > 0) indexes
    ``stride * id + offset`` at or past ``extent``, for a fact that holds for ids up to
    ``limit``. Plain integer code: generated ``cpu`` code calls it compiled by Numba."""
    last = size - 1
    return last <= limit and last * stride + offset >= extent


# -- facts ------------------------------------------------------------------------------

_FACTS: weakref.WeakKeyDictionary[LeafFunction, tuple[Access, ...]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def leaf_accesses(leaf: LeafFunction, clone: LeafClone | None = None) -> tuple[Access, ...]:
    """The facts of ``leaf`` (module doc), found once per leaf (a Python leaf's come from its
    leaf IR's cached index facts); ``clone``: the Python leaf's clone when the caller has it
    (its ``user`` is the leaf as written). None for a leaf of another kind, or one outside
    the leaf IR's dialect."""
    with _LOCK:
        found = _FACTS.get(leaf)
    if found is not None:
        return found
    if leaf.body_kind == LLVM:
        found = _llvm_accesses(leaf)
    elif leaf.body_kind in PYTHON_KINDS:
        user = _user(leaf, clone)
        found = ir_accesses(user) if user is not None else ()
        if found is None:  # outside the leaf IR's dialect: the clone's syntax tree
            found = _clone_fallback(leaf, clone)
    else:
        found = ()
    with _LOCK:
        _FACTS[leaf] = found
    return found


def _user(leaf: LeafFunction, clone: LeafClone | None) -> LeafFunction | None:
    """The leaf as written, whose leaf IR has the facts: the clone's user, the leaf a
    ``CloneLeaves`` clone was made from (``None`` when that is not in memory: a program
    read back from its text; such a clone has no facts), or ``leaf`` itself."""
    if clone is not None:
        return clone.user
    body = leaf.body
    if isinstance(body, GeneratedBody) and body.context is not None:
        return body.cloned_from  # type: ignore[no-any-return]
    return leaf


def _llvm_accesses(leaf: LeafFunction) -> tuple[Access, ...]:
    """An LLVM leaf's byte facts (``access.py``), on its ports: a pointer argument is the
    first LLVM argument of an array port (``llvm_abi_types``)."""
    from .llvm_native.access import every_instance_accesses

    assert leaf.body is not None
    owner = _argument_ports(leaf, _is_array)
    found = []
    for fact in every_instance_accesses(leaf.body):  # type: ignore[arg-type]
        p = owner.get(fact.argument)
        if p is None:
            continue
        found.append(
            Access(
                leaf.name,
                p,
                leaf.params[p].name,
                fact.dim,
                fact.last,
                fact.where or str(leaf.location),
                axis=None,
                stride=fact.stride,
                limit=fact.limit,
                width=fact.last - fact.first + 1,
            )
        )
    return tuple(found)


def _clone_fallback(leaf: LeafFunction, clone: LeafClone | None) -> tuple[Access, ...]:
    """The facts of a leaf outside the leaf IR's dialect, read from its clone
    (``passes/clone_bounds.py``), so that such a leaf is still checked before it runs."""
    try:
        clone = clone if clone is not None else clone_of(leaf)
    except CompileError:
        return ()  # (the back end that compiles it reports that)
    return tuple(
        Access(clone.user.name, p, leaf.params[p].name, dim, offset, str(clone.user.locate(None, line)), axis)
        for p, axis, dim, offset, line in clone_accesses(clone)
    )


def ir_accesses(user: LeafFunction) -> tuple[Access, ...] | None:
    """A Python leaf's facts read off its leaf IR's index facts (``ir/leafir/analyses/
    indices.py``): the unconditional accesses of array parameters the leaf never assigns,
    indexed along some axis by an own instance id plus a constant (stride 1), the largest
    offset per (param, axis, dim); ``None`` for a leaf outside the IR's dialect (whose facts
    ``leaf_accesses`` reads from its clone instead)."""
    try:
        ir = leaf_ir(user)
    except LeafIRUnsupported:
        return None
    info = index_facts(ir)
    params = {p.name: k for k, p in enumerate(ir.params)}
    found: dict[tuple[int, int, int], Access] = {}
    for access in info.accesses:
        if not access.unconditional or info.assigned[access.array]:
            continue
        param = params[access.array]
        for axis, term in enumerate(access.affine):
            if term is None or term.stride != 1:
                continue
            key = (param, axis, term.dim)
            if key not in found or term.offset > found[key].offset:
                where = str(ir.where(access.line))
                found[key] = Access(ir.name, param, access.array, term.dim, term.offset, where, axis)
    return tuple(found.values())


# -- the check ---------------------------------------------------------------------------

#: A fact about a node's leaf and the input of the enclosing graph its array comes from.
Bound = tuple[Access, int]


def bound_accesses(
    node: Node, fn: InternalFunction, feeds: Sequence[Feed | None], clone: LeafClone | None = None
) -> list[Bound]:
    """The facts of ``node``'s leaf (``node``: a child of ``fn``, ``feeds`` its row of
    ``fn``'s feed table) on arrays bound from ``fn``'s inputs, with the input's index: what
    the node's sizes and ``fn``'s arguments decide."""
    leaf = node.function
    if not isinstance(leaf, LeafFunction):
        return []
    found = []
    for access in leaf_accesses(leaf, clone):
        feed = feeds[access.param] if access.param < len(feeds) else None
        if access.dim >= node.dims or feed is None or feed[0] != "bind":
            continue
        given = fn.params[feed[1]].type
        if not isinstance(given, ArrayType) or (access.axis is not None and access.axis >= given.rank):
            continue  # (a[i, j] of a 1-D array: the compiler refuses it)
        found.append((access, feed[1]))
    return found


def check(
    node: Node,
    fn: InternalFunction,
    bounds: Sequence[Bound],
    sizes: Sequence[int],
    inputs: Sequence[Any],
    shape_of: Callable[[Any], tuple[Sequence[int], int] | None] | None = None,
) -> None:
    """Raise ``OutOfBoundsError`` when ``node``, with ``sizes`` instances (the largest of
    its grids, where it has several), would index an array past its end. ``inputs``: the
    values of ``fn``'s inputs, whose arrays ``shape_of`` (default ``array_shape``) gives the
    shape and item size of (``None``: unknown here, not checked)."""
    if not bounds or min(sizes) <= 0:
        return
    shape = shape_of or array_shape
    for access, i in bounds:
        found = shape(inputs[i])
        if found is None:
            continue
        extent = access.extent(*found)
        size = sizes[access.dim]
        if extent is not None and past_end(size, access.stride, access.offset, access.limit, extent):
            raise OutOfBoundsError(message(node, fn, access, i).format(size, extent))


_FEEDS: weakref.WeakKeyDictionary[InternalFunction, FeedTable] = weakref.WeakKeyDictionary()


def check_graph(fn: InternalFunction, args: Sequence[Any]) -> None:
    """``check`` on the host for every leaf node below ``fn`` whose sizes and arrays the
    values ``args`` of ``fn``'s inputs decide: through input binds alone (what arrives over
    an edge is computed while the graph runs: ``None`` here), into every internal node that
    has instances (they all receive the same bound values). ``dask`` calls it with a
    launch's arguments before it sends anything."""
    with _LOCK:
        feeds = _FEEDS.get(fn)
        if feeds is None:
            feeds = _FEEDS[fn] = feed_table(fn.graph)
    env = {p.name: a for p, a in zip(fn.params, args) if a is not None}
    for node in fn.graph.nodes:
        try:
            sizes = node.evaluate_sizes(env, "")
        except HPVMError:
            continue  # (an input not known here, or a bad size: the run reports that)
        if isinstance(node.function, LeafFunction):
            check(node, fn, bound_accesses(node, fn, feeds[id(node)]), sizes, args)
        elif all(s > 0 for s in sizes):
            bound = [args[f[1]] if f is not None and f[0] == "bind" else None for f in feeds[id(node)]]
            check_graph(node.function, bound)  # type: ignore[arg-type]


def array_shape(value: object) -> tuple[Sequence[int], int] | None:
    """``check``'s ``shape_of`` answer for a value: a NumPy array's shape and item size."""
    return (value.shape, value.itemsize) if isinstance(value, np.ndarray) else None


def check_lines(
    node: Node,
    fn: InternalFunction,
    bounds: Sequence[Bound],
    sizes: list[str],
    name_of: Callable[[int], str | None],
) -> list[str]:
    """``check`` as generated code: lines raising ``SizeOutOfBounds`` when ``node``, whose
    sizes are in the variables ``sizes``, would index past an array. ``name_of(i)``: the
    variable holding ``fn``'s input ``i`` (``None``: not known there, not checked)."""
    lines: list[str] = []
    instances = " and ".join(f"{s} > 0" for s in sizes)
    for access, i in bounds:
        name = name_of(i)
        if name is None:
            continue
        size, extent = sizes[access.dim], access.extent_code(name)
        lines.append(
            f"if {instances} and __hpvm_past_end({size}, {access.stride}, {access.offset}, "
            f"{access.limit}, {extent}):"
        )
        lines.append(f"    raise __hpvm_SizeOutOfBounds({message(node, fn, access, i)!r}, {size}, {extent})")
    return lines


class SizeOutOfBounds(OutOfBoundsError):
    """Raised by generated code, whose exceptions carry a constant message and run-time
    values: the message's ``{}`` are the values. The back end raises it again as a plain
    ``OutOfBoundsError``."""

    def __init__(self, template: str, *values: int) -> None:
        super().__init__(template.format(*values))


def message(node: Node, fn: InternalFunction, access: Access, given: int) -> str:
    """The error's text, ``{}`` standing for the size and the array's extent (``given``:
    the input of ``fn`` the array comes from)."""

    def text(value: object) -> str:  # literal text of the template
        return str(value).replace("{", "{{").replace("}", "}}")

    name = fn.params[given].name
    source = f"'{name}' of '{fn.name}'" if name != access.array else f"of '{fn.name}'"
    xyz = "xyz"[access.dim]
    if access.axis is None:
        first = access.offset - access.width + 1
        span = f"{_linear(access.stride, xyz, first)} to {_linear(access.stride, xyz, access.offset)}"
        what = f"accesses bytes {span} of '{text(access.array)}' (input {text(source)}, {{}} bytes long)"
        why = "LLVM code checks no bounds as it runs, on any back end, target='interp' included"
    else:
        what = (
            f"indexes '{text(access.array)}' (input {text(source)}, {{}} long on axis {access.axis}) "
            f"with its instance id {_linear(1, xyz, access.offset)}"
        )
        why = "compiled code does not check bounds; target='interp' does"
    return (
        f"node '{text(node.name)}' ({text(node.location)}): replication size "
        f"{text(node.sizes[access.dim])} is {{}}, but every instance of leaf '{text(access.leaf)}' "
        f"{what} ({text(access.where)}): the last instances would index past its end ({why})"
    )


def _linear(stride: int, xyz: str, offset: int) -> str:
    """``stride*x + offset`` as the message writes it: ``x``, ``x + 1``, ``4*x - 2``."""
    term = xyz if stride == 1 else f"{stride}*{xyz}"
    return f"{term} {'+' if offset > 0 else '-'} {abs(offset)}" if offset else term


# -- affine forms of several ids (LLVM leaves) ------------------------------------------


@dataclass(frozen=True)
class SpanAccess:
    """Every instance of LLVM leaf ``leaf`` accesses bytes ``c + sum(k * id)`` (plus its
    ``scaled`` terms) of its array parameter ``param`` (``array``), ``c`` from ``first`` to
    ``last``: ``terms`` are ``(level, dim, k)``, ``level`` 0 the leaf's node, 1 its parent,
    ... (``llvm_native/affine.py``); the fact holds where ``limits`` and ``guards`` do.
    ``where_first`` / ``where_last``: the C lines of the accesses reaching the lowest /
    highest byte. A scaled term ``(level, dim, k, args)`` is ``k * id`` times the arguments
    ``args``, or without the id where ``level`` is ``affine.ALONE``: the arguments are the
    leaf's scalar parameters in ``leaf_spans``' facts, the enclosing graph's inputs they are
    bound from in ``span_bounds``'."""

    leaf: str
    param: int
    array: str
    terms: tuple[tuple[int, int, int], ...]
    first: int
    last: int
    limits: tuple[tuple[int, int, int], ...]
    guards: tuple[tuple[Any, ...], ...]
    where_first: str
    where_last: str
    scaled: tuple[tuple[int, int, int, tuple[int, ...]], ...] = ()
    #: the guard the accesses are under (``affine.Clip``): made by the instances meeting it
    clips: tuple[tuple[Any, ...], ...] = ()
    #: a Python leaf's guarded access (``python_spans``): its index along this axis of the
    #: array, in elements, against the array's length there; ``None``: an LLVM leaf's bytes
    axis: int | None = None

    @property
    def levels(self) -> int:
        """The highest level its ids come from (a global id's: the level above its own)."""
        from .llvm_native.affine import ALONE, GLOBAL

        clipped = [(level, dim, 0) for level, dim, *_ in self.clips if level != ALONE]
        return max((level + (dim >= GLOBAL) for level, dim, _ in (*self.dims(), *clipped)), default=0)

    def dims(self) -> list[tuple[int, int, int]]:
        """Each id of the form once, ``(level, dim, index)``: its plain and scaled terms' in
        order (``index`` counts them: the message's placeholders)."""
        from .llvm_native.affine import ALONE

        seen: dict[tuple[int, int], None] = {}
        for level, dim, *_ in (*self.terms, *(t for t in self.scaled if t[0] != ALONE)):
            seen.setdefault((level, dim))
        return [(level, dim, j) for j, (level, dim) in enumerate(seen)]

    def arguments(self) -> list[int]:
        """The arguments its scaled terms and guards read, once each, in order."""
        seen: dict[int, None] = {}
        clipped = (t for clip in self.clips for t in clip[4])
        for *_, args in (*self.scaled, *(t for guard in self.guards for t in guard[5]), *clipped):
            for arg in args:
                seen.setdefault(arg)
        return list(seen)

    def renamed(self, names: dict[int, int]) -> SpanAccess:
        """The same fact with each argument ``arg`` of its scaled terms (and its guards')
        named ``names[arg]`` instead."""

        def scaled(terms: tuple[tuple[int, int, int, tuple[int, ...]], ...]) -> tuple[Any, ...]:
            return tuple(
                (level, dim, k, tuple(sorted(names[a] for a in args))) for level, dim, k, args in terms
            )

        guards = tuple((*guard[:5], scaled(guard[5])) for guard in self.guards)
        clips = tuple((*clip[:4], scaled(clip[4]), clip[5]) for clip in self.clips)
        return replace(self, scaled=scaled(self.scaled), guards=guards, clips=clips)


_SPANS: weakref.WeakKeyDictionary[LeafFunction, tuple[SpanAccess, ...]] = weakref.WeakKeyDictionary()


def leaf_spans(leaf: LeafFunction) -> tuple[SpanAccess, ...]:
    """An LLVM leaf's affine facts (``access.py``'s ``affine_accesses``) on its array ports,
    found once per leaf; none for a leaf of another kind."""
    with _LOCK:
        found = _SPANS.get(leaf)
    if found is not None:
        return found
    found: tuple[SpanAccess, ...] = ()
    if leaf.body_kind in PYTHON_KINDS:
        user = _user(leaf, None)
        found = python_spans(user) if user is not None else ()
    elif leaf.body_kind == LLVM:
        from .llvm_native.access import affine_accesses

        owner, integers = _argument_ports(leaf, _is_array), _argument_ports(leaf, _is_signed_integer)
        spans = []
        for fact in affine_accesses(leaf.body):  # type: ignore[arg-type]
            p = owner.get(fact.argument)
            if p is not None:
                where = str(leaf.location)
                access = SpanAccess(leaf.name, p, leaf.params[p].name, fact.terms, fact.first, fact.last,
                                    fact.limits, fact.guards, fact.where_first or where, fact.where_last or where,
                                    fact.scaled, fact.clips)  # fmt: skip
                if all(integers.get(arg) is not None for arg in access.arguments()):
                    spans.append(access.renamed(integers))
        found = tuple(spans)
    with _LOCK:
        _SPANS[leaf] = found
    return found


def python_spans(user: LeafFunction) -> tuple[SpanAccess, ...]:
    """A Python leaf's guarded accesses (``indices.py``: ``if i < n: c[i] = ...`` in a
    top-level ``if`` every instance reaches, or after an early exit ``if i >= n: return``)
    of array parameters it never assigns, as affine facts under their guards' clips: every
    instance passing the test indexes the array along axis ``k`` at ``stride * id +
    offset`` — one fact per axis whose index is affine (``d[y, x]``: ``y`` against the
    rows, ``x`` against the columns; the instances passing the test are a box of ids, so
    each axis's range over them is exact), checked as an LLVM leaf's are (``check_spans``,
    ``span_code.span_check_lines``), in elements. None outside the leaf IR's dialect."""
    from .llvm_native.affine import ALONE, EQ, LE

    try:
        ir = leaf_ir(user)
    except LeafIRUnsupported:
        return ()
    info = index_facts(ir)
    params = {p.name: k for k, p in enumerate(ir.params)}
    found: dict[tuple[Any, ...], SpanAccess] = {}
    for access in info.accesses:
        ptype = ir.params[params[access.array]].type
        if (
            not access.guards
            or info.assigned[access.array]
            or not isinstance(ptype, ArrayType)
            or not ptype.sized
            or len(access.affine) > ptype.rank
        ):
            continue
        clips = tuple(
            (0, g.term.dim, g.term.stride, g.term.offset + g.constant,
             ((ALONE, 0, g.k, (_guard_argument(g.scalar, params),)),) if g.scalar is not None else (),
             EQ if g.equal else LE)
            for g in access.guards
        )  # fmt: skip
        where = str(ir.where(access.line))
        for axis, term in enumerate(access.affine):
            if term is None:
                continue
            fact = SpanAccess(ir.name, params[access.array], access.array, ((0, term.dim, term.stride),),
                              term.offset, term.offset, (), (), where, where, (), clips, axis)  # fmt: skip
            found.setdefault((fact.param, axis, fact.terms, fact.first, clips), fact)
    return tuple(found.values())


def _guard_argument(bound: str | tuple[str, int], params: dict[str, int]) -> int:
    """The fact's argument for a guard's bound: a scalar parameter, or an array parameter's
    length along an axis (``d.shape[1]``: ``shape_argument``)."""
    if isinstance(bound, str):
        return params[bound]
    return shape_argument(params[bound[0]], bound[1])


def _argument_ports(leaf: LeafFunction, owns: Callable[[Any], bool]) -> dict[int, int]:
    """Per LLVM argument of ``leaf`` (``llvm_abi_types``: a port may take several), the port
    whose first argument it is, where ``owns(port type)``."""
    owner: dict[int, int] = {}
    at = 0
    for p, param in enumerate(leaf.params):
        if owns(param.type):
            owner[at] = p
        at += len(llvm_abi_types(param.type))
    return owner


def _is_array(ptype: Any) -> bool:
    """An array port: its pointer is its first LLVM argument."""
    return isinstance(ptype, ArrayType)


def _is_signed_integer(ptype: Any) -> bool:
    """A signed integer port: what a scaled term may read (its value in LLVM is the port's,
    read as signed — an unsigned port's value past its sign bit would not be)."""
    return isinstance(ptype, ScalarType) and ptype.is_integer and ptype.dtype.kind == "i"


#: An affine fact about a node's leaf and the input of the enclosing graph its array comes
#: from; its scaled terms read the graph's inputs (``SpanAccess.renamed``).
SpanBound = tuple[SpanAccess, int]

#: The most axes a shape argument names (``shape_argument``).
_AXES = 8


def shape_argument(param: int, axis: int) -> int:
    """The argument of a fact that is array parameter ``param``'s length along ``axis`` (a
    Python leaf's guard ``x < d.shape[1]``): a negative number, where a scalar argument is
    its parameter's index."""
    assert 0 <= axis < _AXES
    return -1 - (param * _AXES + axis)


def shape_of(arg: int) -> tuple[int, int] | None:
    """``(param, axis)`` of a shape argument (``shape_argument``); ``None`` for a scalar's."""
    return None if arg >= 0 else divmod(-1 - arg, _AXES)


def argument_value(arg: int, inputs: Sequence[Any]) -> int | None:
    """A fact's argument's value among a launch's ``inputs``: the scalar, or the array's
    length along the axis (``None``: not known, or not an integer)."""
    shape = shape_of(arg)
    if shape is None:
        return _integer(inputs[arg])
    found = array_shape(inputs[shape[0]])
    return int(found[0][shape[1]]) if found is not None and shape[1] < len(found[0]) else None


def argument_code(arg: int, name_of: Callable[[int], str | None]) -> str | None:
    """A fact's argument in generated code: the variable of the input, or its ``.shape[k]``
    (``name_of``: the variable holding an input, ``None`` where none does)."""
    shape = shape_of(arg)
    if shape is None:
        return name_of(arg)
    name = name_of(shape[0])
    return None if name is None else f"{name}.shape[{shape[1]}]"


def argument_text(fn: InternalFunction, arg: int) -> str:
    """A fact's argument as a message names it: ``n``, or ``d.shape[1]``."""
    shape = shape_of(arg)
    return fn.params[arg].name if shape is None else f"{fn.params[shape[0]].name}.shape[{shape[1]}]"


def span_bounds(node: Node, fn: InternalFunction, feeds: Sequence[Feed | None]) -> list[SpanBound]:
    """``bound_accesses`` for the affine facts: those on arrays bound from ``fn``'s inputs,
    whose scaled terms' arguments are bound from its inputs too (renamed to them)."""
    leaf = node.function
    if not isinstance(leaf, LeafFunction):
        return []

    def bound(p: int) -> int | None:
        feed = feeds[p] if p < len(feeds) else None
        return feed[1] if feed is not None and feed[0] == "bind" else None

    found = []
    for access in leaf_spans(leaf):
        given = bound(access.param)
        if given is None or not isinstance(fn.params[given].type, ArrayType):
            continue
        names: dict[int, int | None] = {}
        for arg in access.arguments():
            shape = shape_of(arg)
            j = bound(arg if shape is None else shape[0])
            wanted = ScalarType if shape is None else ArrayType
            ok = j is not None and isinstance(fn.params[j].type, wanted)
            names[arg] = None if not ok else j if shape is None else shape_argument(j, shape[1])  # type: ignore[arg-type]
        if all(j is not None for j in names.values()):
            found.append((access.renamed(names) if names else access, given))  # type: ignore[arg-type]
    return found


def check_spans(
    node: Node,
    fn: InternalFunction,
    bounds: Sequence[SpanBound],
    sizes: Sequence[int],
    ancestors: Sequence[Sequence[int]],
    inputs: Sequence[Any],
) -> None:
    """Raise ``OutOfBoundsError`` when ``node``'s instances (``sizes``), under ancestors
    whose sizes are ``ancestors`` (the parent's first), would access an array outside it:
    each fact's range over the box of ids (``affine.span``) against the array's bytes. A
    fact reading a level past ``ancestors`` is not checked."""
    from .llvm_native.affine import clipped, extent, holds, span

    if not bounds or min(sizes, default=1) <= 0:
        return
    extents = [sizes, *ancestors]
    for access, i in bounds:
        found = array_shape(inputs[i])
        arguments = {j: argument_value(j, inputs) for j in access.arguments()}
        if found is None or access.levels >= len(extents) or None in arguments.values():
            continue
        ranges = clipped(access.clips, extents, arguments)  # type: ignore[arg-type]
        if ranges is None:
            continue  # (no instance of this launch meets the guard)
        if access.axis is not None and access.axis >= len(found[0]):
            continue
        size = math.prod(found[0]) * found[1] if access.axis is None else found[0][access.axis]
        lo, hi = span(access.terms, access.first, access.last, extents, access.scaled, arguments, ranges)  # type: ignore[arg-type]
        if (lo < 0 or hi >= size) and holds(access.limits, access.guards, extents, arguments):  # type: ignore[arg-type]
            values = [lo, hi, size, *(extent(extents, level, d) for level, d, _ in access.dims())]
            values += [arguments[j] for j in access.arguments()]
            raise OutOfBoundsError(span_message(node, fn, access, i, lo < 0).format(*values))


def _integer(value: Any) -> int | None:
    """A scalar argument's value as a Python integer (``None``: not one, or not known)."""
    return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None


_LEVELS = ("", "parent.", "grandparent.")


def _id_name(level: int, dim: int) -> str:
    from .llvm_native.affine import GLOBAL

    if dim >= GLOBAL:  # (parent.x * instances.x + x)
        own, up = _id_name(level, dim - GLOBAL), _id_name(level + 1, dim - GLOBAL)
        return f"({up}*instances.{own} + {own})"
    return (_LEVELS[level] if level < len(_LEVELS) else f"ancestor{level}.") + "xyz"[dim]


def span_message(node: Node, fn: InternalFunction, access: SpanAccess, given: int, low_side: bool) -> str:
    """The error's text for an affine fact; ``{0}`` .. ``{2}``: the lowest and highest byte
    over the launch's instances and the array's length, then each term's extent."""

    def text(value: object) -> str:
        return str(value).replace("{", "{{").replace("}", "}}")

    name = fn.params[given].name
    source = f"'{name}' of '{fn.name}'" if name != access.array else f"of '{fn.name}'"

    from .llvm_native.affine import ALONE, EQ

    def term(k: int, *factors: str) -> str:
        if k == -1 and factors:
            return "-" + "*".join(factors)
        return "*".join(([] if k == 1 else [str(k)]) + list(factors))

    def form(c: int) -> str:
        parts = [term(k, _id_name(lv, d)) for lv, d, k in access.terms]
        parts += [
            term(k, *(argument_text(fn, arg) for arg in args), *([] if lv == ALONE else [_id_name(lv, d)]))
            for lv, d, k, args in access.scaled
        ]
        text = " + ".join(parts)
        return (f"{text} + {c}" if c else text).replace("+ -", "- ")

    def clip(level: int, dim: int, k: int, c: int, scaled: tuple[Any, ...], relation: int) -> str:
        parts = [] if level == ALONE else [term(k, _id_name(level, dim))]
        parts += [term(kk, *(argument_text(fn, arg) for arg in args)) for *_, kk, args in scaled]
        text = " + ".join(parts + ([str(c)] if c or not parts else [])).replace("+ -", "- ")
        return f"{text} {'==' if relation == EQ else '<='} 0"

    dims = access.dims()
    ranges = ", ".join(
        [f"{_id_name(lv, d)} < {{{3 + j}}}" for lv, d, j in dims]
        + [f"{argument_text(fn, arg)} = {{{3 + len(dims) + j}}}" for j, arg in enumerate(access.arguments())]
    )
    if access.clips:  # (the tests on the way, guards and clamps: only the instances taking it make them)
        ranges += ("; the path: " if access.axis is None else "; the test: ") + " and ".join(
            clip(*c) for c in access.clips
        )
    first, last = access.first, access.last
    where = access.where_first if low_side else access.where_last
    side = "before its start" if low_side else "past its end"
    if access.axis is not None:  # a Python leaf's guarded index, in elements
        return (
            f"node '{text(node.name)}' ({text(node.location)}): every instance of leaf '{text(access.leaf)}' "
            f"that passes the test below indexes '{text(access.array)}' (input {text(source)}) along axis "
            f"{access.axis}, {{2}} long, at {text(form(first))} ({text(where)}); over this launch's "
            f"instances ({ranges}) that is index {{0}} to {{1}}: some instances would index {side} "
            f"(compiled code does not check bounds; target='interp' does). Launch fewer instances (the "
            f"sizes of node '{text(node.name)}'), pass a larger '{text(name)}', or correct the test that "
            f"lets them through"
        )
    return (
        f"node '{text(node.name)}' ({text(node.location)}): every instance of leaf '{text(access.leaf)}' "
        f"{'that takes the path below ' if access.clips else ''}accesses bytes {text(form(first))} to {text(form(last))} of '{text(access.array)}' (input "
        f"{text(source)}, {{2}} bytes long) ({text(where)}); over this launch's instances ({ranges}) that "
        f"is bytes {{0}} to {{1}}: some instances would index {side} (LLVM code checks no bounds as it runs, "
        f"on any back end, target='interp' included). Launch fewer instances (the sizes of node "
        f"'{text(node.name)}' or of its parents) or pass a larger '{text(name)}'"
        + (
            ", or correct the test on the path (a guard or a clamp) that lets them through"
            if access.clips
            else ""
        )
    )
