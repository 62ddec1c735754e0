"""Data races, found where the interpreter would hide them.

The interpreter runs instances one at a time, so a program whose instances race still
computes an answer here — and another one on a parallel back end. This module finds the
race instead: every element access a leaf instance makes through its checked arrays
(``checked.py``), or an LLVM leaf instance makes to its array arguments (reported by its
instrumented clone, ``llvm_native/instrument.py``, to ``NativeLeafRecorder``), is recorded,
and an access that conflicts with an earlier one that the semantics do not order before it
is a ``DataRaceError`` at once.

**Conflict.** Two accesses to one element by different instances, at least one a write,
not both atomics (an atomic and a plain access of one element do race).

**Order** (docs/semantics.md §6, §10). Instances of one leaf node within one parent
instance are concurrent, except that ``hpvm.barrier()`` orders everything before it before
everything after it. Instances of a replicated internal node are concurrent, whatever
their leaves do. Children of one graph execution run in topological order, except that a
child reached from another through one-to-one edges only runs its instance *i* after
instance *i* of that source, not after its other instances.

**Tables.** The accesses are kept in tables, one per level of that hierarchy, each mapping
an element's address to its *state*: the first two distinct instances per kind of access
(read, write, atomic) that touched it — two, so that an access always finds an earlier
one by another instance when there is one. A state of one access is the packed int
itself, of more a list of six slots. An access is checked against the table of its own leaf
execution's barrier phase, where every other instance is concurrent, and against the tables
of the levels above that hold accesses not ordered before it: earlier instances of a
replicated internal ancestor, and one-to-one sources. A level's table is handed up, with
its actors renamed to the level's instance, only when a level above can still race with
it; so a leaf at the root with no one-to-one sink keeps one phase table, cleared at each
barrier and at its end, and a single-instance leaf there records nothing.

Elements are identified by address. Every recorded site keeps the array it was reached
through alive until the launch ends, so an address is never reused for another array while
records of it exist (two parent instances' ``malloc`` buffers are different memory).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from ...errors import DataRaceError
from ...ir.analysis import one_to_one_sources
from ...ir.graph import InternalFunction, Node

READ, WRITE, ATOMIC = 0, 1, 2

# A record packs one access in an int: its kind (2 bits), its site (where it happened and
# through which array: ``Launch.sites``), the leaf instance that made it (its flat index)
# and its actor: the instance at the level of the table that holds it (the leaf instance
# in its leaf's tables, the parent instance above).
_SITE_SHIFT = 2
_LEAF_SHIFT = 32
_ACTOR_SHIFT = 80
_LOW = (1 << _ACTOR_SHIFT) - 1
_SITE_MASK = (1 << (_LEAF_SHIFT - _SITE_SHIFT)) - 1
_LEAF_MASK = (1 << (_ACTOR_SHIFT - _LEAF_SHIFT)) - 1

# _RACES[new][old]: whether a new access of kind ``new`` races with an old one of ``old``.
_RACES = ((False, True, True), (True, True, True), (True, True, False))
# The slots of a list state to check for a new access, writes first (the slot of kind k
# are 2k and 2k + 1).
_CONFLICT_SLOTS = ((2, 3, 4, 5), (2, 3, 4, 5, 0, 1), (2, 3, 0, 1))
_VERB = ("reads", "writes", "atomically updates")
_PAST = ("read", "wrote", "atomically updated")

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_INTERNAL: dict[str, bool] = {}


def _internal(file: str) -> bool:
    """Whether code of ``file`` is hpvm's or NumPy's, not the user's (cached per file name:
    strings cache their hash, code objects hash their whole contents)."""
    flag = _INTERNAL.get(file)
    if flag is None:
        path = os.path.abspath(file)
        flag = _INTERNAL[file] = path.startswith((_PACKAGE_DIR + os.sep, _NUMPY_DIR + os.sep))
    return flag


# -- element states ------------------------------------------------------------------------


def _records(state: Any) -> list[int]:
    if type(state) is int:
        return [state]
    return [r for r in state if r is not None]


def _put(slots: list[Any], record: int) -> None:
    """Keep ``record`` in its kind's slots if they hold fewer than two distinct actors."""
    s = (record & 3) << 1
    first = slots[s]
    if first is None:
        slots[s] = record
    elif first >> _ACTOR_SHIFT != record >> _ACTOR_SHIFT and slots[s + 1] is None:
        slots[s + 1] = record


def _add(state: Any, record: int) -> Any:
    """``state`` with ``record`` added (a new state when ``state`` is an int or ``None``)."""
    if state is None:
        return record
    if type(state) is int:
        if state >> _ACTOR_SHIFT == record >> _ACTOR_SHIFT and state & 3 == record & 3:
            return state
        slots: list[Any] = [None] * 6
        _put(slots, state)
        _put(slots, record)
        return slots
    _put(state, record)
    return state


def _conflict(state: Any, kind: int, actor: int) -> int | None:
    """The record in ``state`` that a new access of ``kind`` by ``actor`` races with, if
    any: writes first, then atomics, then reads, each kind's earliest actor first."""
    if type(state) is int:
        return state if state >> _ACTOR_SHIFT != actor and _RACES[kind][state & 3] else None
    for slot in _CONFLICT_SLOTS[kind]:
        old = state[slot]
        if old is not None and old >> _ACTOR_SHIFT != actor:
            return old
    return None


def _new(state: Any, kind: int, actor: int) -> bool:
    """Whether ``state`` would keep a record of a new access of ``kind`` by ``actor``."""
    if type(state) is int:
        return state >> _ACTOR_SHIFT != actor or state & 3 != kind
    first = state[kind << 1]
    return first is None or (first >> _ACTOR_SHIFT != actor and state[(kind << 1) + 1] is None)


def _merge(into: dict[int, Any], table: dict[int, Any], actor: int | None = None) -> None:
    """Add every record of ``table`` to ``into``, renamed to ``actor`` when given."""
    for addr, state in table.items():
        current = into.get(addr)
        for record in _records(state):
            if actor is not None:
                record = (actor << _ACTOR_SHIFT) | (record & _LOW)
            current = _add(current, record)
        into[addr] = current


# -- addresses -------------------------------------------------------------------------------


def _layout(view: Any) -> tuple[int, tuple[int, ...]]:
    """The address of ``view``'s first element and its strides, cached on the view."""
    layout = view._hpvm_layout
    if layout is None:
        layout = view._hpvm_layout = (view.__array_interface__["data"][0], view.strides)
    return layout


def _address_1d(view: Any, key: Any) -> int:
    """The address of ``view[key]`` for an integer key on a 1-D view: the common access."""
    ptr, strides = view._hpvm_layout or _layout(view)
    return ptr + key * strides[0]


def _grid(array: np.ndarray) -> np.ndarray:
    """The address of every element of ``array``, in its shape."""
    grid = np.array(array.__array_interface__["data"][0], dtype=np.int64)
    for axis, (n, stride) in enumerate(zip(array.shape, array.strides)):
        shape = [1] * array.ndim
        shape[axis] = n
        grid = grid + (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return np.broadcast_to(grid, array.shape)


def _is_int(k: Any) -> bool:
    return type(k) is int or isinstance(k, np.integer)  # (NumPy's bool is no np.integer)


def _is_basic(key: tuple[Any, ...]) -> bool:
    """Basic indexing: integers, slices, ``None`` and ``...`` (a view, or one element)."""
    return all(_is_int(k) or isinstance(k, slice) or k is None or k is Ellipsis for k in key)


def _element(view: Any, key: Any) -> int | None:
    """The address of the one element ``view[key]`` names, or ``None`` when the key does
    not name exactly one element by integers."""
    if type(key) is tuple:
        if len(key) != view.ndim:
            return None
        ptr, strides = view._hpvm_layout or _layout(view)
        for k, stride in zip(key, strides):
            if type(k) is not int and not isinstance(k, np.integer):
                return None
            ptr += int(k) * stride
        return ptr
    if _is_int(key):
        return _address_1d(view, int(key)) if view.ndim == 1 else None
    return None


def _selected(view: Any, key: Any) -> Any:
    """The addresses of the elements ``view[key]`` selects (any key NumPy accepts), or
    ``None`` when NumPy rejects the key (the access itself then raises NumPy's error)."""
    plain = view.view(np.ndarray)
    keys = key if isinstance(key, tuple) else (key,)
    try:
        if _is_basic(keys):
            if Ellipsis not in keys:
                keys = (*keys, Ellipsis)  # one element too is then a 0-d view, with an address
            return _grid(plain[keys]).ravel()
        return np.asarray(_grid(plain)[key]).ravel()
    except (IndexError, TypeError, ValueError):
        return None


# -- scopes ------------------------------------------------------------------------------------


class Launch:
    """What every scope of one run shares: the sites of the recorded accesses (a site: the
    leaf execution, the file and line, and the leaf's array it went through) and the root's
    array arguments, to name them in messages."""

    def __init__(self, root: InternalFunction, args: list[Any]):
        self.sites: list[tuple[LeafRecorder, str, int, Any, Any] | None] = []
        self.arrays = [(p.name, a) for p, a in zip(root.params, args) if isinstance(a, np.ndarray)]

    def argument(self, addr: int) -> str | None:
        """The root argument holding the element at ``addr`` (an element of it, not a gap
        between a strided argument's elements), if any."""
        for name, array in self.arrays:
            low, high = np.lib.array_utils.byte_bounds(array)
            if low <= addr < high and (_grid(array) == addr).any():
                return name
        return None


class _Level:
    """Why accesses at one level of the hierarchy are concurrent, and what to do about it."""

    def __init__(self, reason: str, fix: str):
        self.reason, self.fix = reason, fix


def _leaf_level(path: str) -> _Level:
    return _Level(
        f"the instances of node {path} run concurrently, and no hpvm.barrier() separates these accesses",
        "Make each instance touch its own elements, update shared elements with hpvm.atomic_*, "
        "or separate the accesses with hpvm.barrier()",
    )


def _parent_level(path: str, name: str) -> _Level:
    return _Level(
        f"they are in different instances of node {path}, which run concurrently "
        "(hpvm.barrier() orders only the instances of one leaf within one parent instance)",
        f"Make each instance of '{name}' touch its own elements, or update shared elements "
        "with hpvm.atomic_*",
    )


def _edge_level(src: Node, dst: Node) -> _Level:
    return _Level(
        f"'{dst.name}' depends on '{src.name}' through one-to-one edges only, which order each "
        f"instance of '{dst.name}' after the same instance of '{src.name}', not after its other "
        "instances (docs/semantics.md §6)",
        f"Connect them with an all-to-all edge, which waits for every instance of '{src.name}', "
        f"or make each instance of '{dst.name}' touch only what the same instance of "
        f"'{src.name}' touched",
    )


#: A table to check accesses against: the table, the instance at its level (``None``: the
#: accessing leaf instance itself) and why its accesses are concurrent with the new one.
Check = tuple[dict[int, Any], int | None, _Level]


def _path(parent: Any, name: str) -> str:
    return f"{parent.path}/{name}" if parent is not None else name


class GraphScope:
    """One execution of a child graph: the tables of its completed children that later
    children can still race with, and what it hands up to its parent node when it ends."""

    def __init__(
        self,
        launch: Launch,
        sources: dict[int, list[Node]],
        handle: Any,
        parent: NodeScope | None = None,
        instance: int = 0,
        retain: bool = False,
    ):
        self.launch, self.sources, self.handle = launch, sources, handle
        self.parent, self.instance, self.retain = parent, instance, retain
        #: children some later child reaches through one-to-one edges only
        self.kept = {id(src) for group in sources.values() for src in group}
        #: id(child) -> its accesses (actor: the child's instance), for those in ``kept``
        self.tables: dict[int, dict[int, Any]] = {}
        #: every access of the completed children (actor: ``instance``) when ``retain``
        self.summary: dict[int, Any] = {}

    @classmethod
    def root(cls, fn: InternalFunction, args: list[Any], handle: Any) -> GraphScope:
        return cls(Launch(fn, args), one_to_one_sources(fn.graph, pipeline=True), handle)

    def keeps(self, node: Node, count: int) -> bool:
        """Whether the accesses of ``node`` (``count`` instances) must outlive it."""
        return self.retain or (count > 1 and id(node) in self.kept)

    def checks(self, node: Node, instance: int | None) -> list[Check]:
        """The tables an access inside ``node``'s instance ``instance`` is checked against."""
        found: list[Check] = []
        for src in self.sources.get(id(node), ()):
            table = self.tables.get(id(src))
            if table:
                found.append((table, instance, _edge_level(src, node)))
        if self.parent is not None:
            found += self.parent.checks(self.instance)
        return found

    def leaf(self, node: Node, contexts: list[Any], kind: type[LeafRecorder] | None = None) -> Any:
        """The recorder of one execution of the leaf ``node`` (one context per instance), or
        ``None`` when none of its accesses can race; ``kind``: its class (an LLVM leaf's:
        ``NativeLeafRecorder``)."""
        count = len(contexts)
        retain = self.keeps(node, count)
        checks = self.checks(node, None)
        if count < 2 and not retain and not checks:
            return None
        return (kind or LeafRecorder)(self, node, contexts, retain, checks)

    def leaf_done(self, node: Node, recorder: LeafRecorder | None) -> None:
        if recorder is not None:
            self._child_done(node, recorder.finish(), len(recorder.contexts))

    def enter(self, node: Node, count: int) -> NodeScope:
        return NodeScope(self, node, count)

    def _child_done(self, node: Node, table: dict[int, Any] | None, count: int) -> None:
        if not table:
            return
        if count > 1 and id(node) in self.kept:
            self.tables[id(node)] = table
        if self.retain:
            _merge(self.summary, table, self.instance)


class NodeScope:
    """One execution of a replicated internal node: the accesses of its completed
    instances, which every later instance can race with."""

    def __init__(self, graph: GraphScope, node: Node, count: int):
        self.graph, self.node, self.count = graph, node, count
        self.retain = graph.keeps(node, count)
        assert isinstance(node.function, InternalFunction)
        self.sources = one_to_one_sources(node.function.graph)
        self.level = _parent_level(_path(graph.handle, node.name), node.name)
        self.table: dict[int, Any] = {}

    def instance(self, flat: int, handle: Any) -> GraphScope:
        keep = self.retain or self.count > 1
        return GraphScope(self.graph.launch, self.sources, handle, self, flat, keep)

    def instance_done(self, scope: GraphScope) -> None:
        if scope.summary:
            _merge(self.table, scope.summary)

    def checks(self, instance: int) -> list[Check]:
        found: list[Check] = [(self.table, instance, self.level)] if self.table else []
        return found + self.graph.checks(self.node, instance)

    def done(self) -> None:
        self.graph._child_done(self.node, self.table, self.count)


class LeafRecorder:
    """The accesses of one execution of a leaf node (its instances within one parent
    instance), phase by phase; its checked views call it."""

    def __init__(self, graph: GraphScope, node: Node, contexts: list[Any], retain: bool, checks: list[Check]):
        self.graph, self.node, self.contexts = graph, node, contexts
        self.retain, self.checks = retain, checks
        self.sites = graph.launch.sites
        #: (id of the code, its instruction, id of the leaf's array) -> site, shifted in place
        self.site_ids: dict[tuple[int, int, int], int] = {}
        self.code_file = node.function.code_file  # type: ignore[union-attr]
        self.level = _leaf_level(_path(graph.handle, node.name))
        self.phase: dict[int, Any] = {}
        self.summary: dict[int, Any] = {}
        self.actor = self.mine = 0
        self.ctx: Any = None

    # -- the executor's calls --

    def enter(self, flat: int, ctx: Any) -> None:
        """Instance ``flat`` (context ``ctx``) runs from now on."""
        self.actor, self.ctx = flat, ctx
        self.mine = (flat << _ACTOR_SHIFT) | (flat << _LEAF_SHIFT)  # its records' high bits

    def barrier(self) -> None:
        """Every instance reached a barrier: what comes after is ordered after what came before."""
        if self.retain:
            _merge(self.summary, self.phase)
        self.phase = {}

    def finish(self) -> dict[int, Any] | None:
        """The leaf execution ended: its accesses when a level above needs them (else its
        sites are let go, and with them its contexts and arrays)."""
        self.barrier()
        if self.retain:
            return self.summary
        for site in self.site_ids.values():
            self.sites[site >> _SITE_SHIFT] = None
        return None

    # -- the checked views' calls --

    def read(self, view: Any, key: Any) -> None:
        """``view[key]`` was read: an access when it yields elements, not a view of them."""
        if type(key) is int and view.ndim == 1:
            self.touch(_address_1d(view, key), READ, view)
            return
        addr = _element(view, key)
        if addr is not None:
            self.touch(addr, READ, view)
            return
        keys = key if isinstance(key, tuple) else (key,)
        if not _is_basic(keys):  # an index array or a mask copies the elements it selects
            self._touch_all(_selected(view, key), READ, view)

    def write(self, view: Any, key: Any, value: Any) -> None:
        """``view[key] = value``: ``value``'s elements read (when it is a recorded array),
        the selected elements written."""
        if getattr(value, "_hpvm_races", None) is not None:
            value._hpvm_races.read_all(value)
        if type(key) is int and view.ndim == 1:
            self.touch(_address_1d(view, key), WRITE, view)
            return
        addr = _element(view, key)
        if addr is not None:
            self.touch(addr, WRITE, view)
        else:
            self._touch_all(_selected(view, key), WRITE, view)

    def atomic(self, view: Any, index: Any) -> None:
        addr = _element(view, index)
        if addr is not None:
            self.touch(addr, ATOMIC, view)
        else:
            self._touch_all(_selected(view, index), ATOMIC, view)

    def read_all(self, view: Any) -> None:
        self._touch_all(_grid(view.view(np.ndarray)).ravel(), READ, view)

    def write_all(self, view: Any) -> None:
        self._touch_all(_grid(view.view(np.ndarray)).ravel(), WRITE, view)

    def write_picked(self, view: Any, pick: Any) -> None:
        """Writes of the elements ``pick`` takes from the addresses of ``view``'s elements (a
        NumPy function writing some of them); all of them when ``pick`` fails."""
        grid = _grid(view.view(np.ndarray))
        try:
            addresses = np.asarray(pick(grid)).ravel()
        except (IndexError, TypeError, ValueError):
            addresses = grid.ravel()
        self._touch_all(addresses, WRITE, view)

    def _touch_all(self, addresses: Any, kind: int, view: Any) -> None:
        if addresses is not None:
            for addr in addresses.tolist():
                self.touch(addr, kind, view)

    # -- the check --

    def touch(self, addr: int, kind: int, view: Any) -> None:
        """One access of the element at ``addr``: checked, then recorded."""
        table = self.phase
        state = table.get(addr)
        actor = self.actor
        if state is None:
            table[addr] = self._record(kind, view)
        else:
            old = _conflict(state, kind, actor)
            if old is not None:
                self._race(old, addr, kind, view, self.level)
            if _new(state, kind, actor):
                table[addr] = _add(state, self._record(kind, view))
        for checked, instance, level in self.checks:
            state = checked.get(addr)
            if state is not None:
                old = _conflict(state, kind, actor if instance is None else instance)
                if old is not None:
                    self._race(old, addr, kind, view, level)

    def _frame(self, frame: Any) -> Any:
        """The frame of the user's code making the access (past hpvm's and NumPy's), from
        the frame of the checked view's caller or one below it."""
        internal = _INTERNAL
        while frame.f_back is not None:
            file = frame.f_code.co_filename
            flag = internal.get(file)
            if flag is None:
                flag = _internal(file)
            if not flag or file == self.code_file:
                break
            frame = frame.f_back
        return frame

    def _record(self, kind: int, view: Any) -> int:
        """A record of an access by the running instance, its site interned by the
        instruction that made it (its line is looked up once per site). Keyed by the ids
        of the code and the array, which the site keeps alive, so that they stay unique."""
        # Every way here passes through ``touch``, a method that took the access and the
        # checked view's method: the user's frame is above them.
        frame = sys._getframe(4)
        internal = _INTERNAL
        file = frame.f_code.co_filename
        if internal.get(file, True) and file != self.code_file:
            frame = self._frame(frame)
        code, origin = frame.f_code, view._hpvm_origin
        key = (id(code), frame.f_lasti, id(origin))
        site = self.site_ids.get(key)
        if site is None:
            site = self.site_ids[key] = len(self.sites) << _SITE_SHIFT
            self.sites.append((self, code.co_filename, frame.f_lineno, origin, code))
        return self.mine | site | kind

    def _race(self, old: int, addr: int, kind: int, view: Any, level: _Level) -> None:
        site = self.sites[(old >> _SITE_SHIFT) & _SITE_MASK]
        assert site is not None  # a record's site lives as long as the record
        recorder, old_file, old_line, old_origin, _ = site
        old_ctx = recorder.contexts[(old >> _LEAF_SHIFT) & _LEAF_MASK]
        origin = view._hpvm_origin
        name = origin._hpvm_name
        argument = self.graph.launch.argument(addr)
        root = f" (root argument '{argument}')" if argument else ""
        other = old_origin._hpvm_name
        through = f" (as '{other}')" if other != name else ""
        place = self._place_now()
        old_place = recorder._place(old_ctx, old_file, old_line, site[4])
        fix = level.fix
        if ATOMIC in (kind, old & 3):
            fix = (
                "An atomic is ordered only with other atomics: update the element with "
                "hpvm.atomic_* in both places, or order the accesses"
            )
        raise DataRaceError(
            f"{place}: data race: {_VERB[kind]} array '{name}'{root} at index "
            f"{_index(origin, addr)}, which {old_place} {_PAST[old & 3]}"
            f"{through}; {level.reason}. {fix}"
        )

    def _place_now(self) -> str:
        """Where the running instance makes the access being checked: the user's frame above
        ``_race``, ``touch`` and the checked view's method."""
        frame = self._frame(sys._getframe(5))
        return self.ctx.where(frame.f_lineno, frame.f_code.co_filename)

    def _place(self, ctx: Any, file: str, line: int, code: Any) -> str:
        """Where a recorded site is, in instance ``ctx``."""
        return ctx.where(line, file)


class NativeLeafRecorder(LeafRecorder):
    """The accesses of one execution of an LLVM leaf, reported by its instrumented clone
    (``llvm_native/instrument.py``: the sink its reports go to): each access that falls
    into one of the instance's array arguments is recorded as a Python leaf's access to
    that array's elements, the site being the LLVM instruction (its ``.c``/``.ll`` line
    from the debug metadata, else the instruction's text)."""

    def __init__(self, graph: GraphScope, node: Node, contexts: list[Any], retain: bool, checks: list[Check]):
        super().__init__(graph, node, contexts, retain, checks)
        from ..llvm_native.instrument import instrumented

        body = node.function.body  # type: ignore[union-attr]
        found = instrumented(body)  # (None: a module that does not parse, which the clone reports)
        self.native_sites = found.sites if found is not None else ()
        self.arrays: list[tuple[int, int, int, Any]] = []  # (low, high, item size, view)
        self.values: list[Any] = []  # the last call's inputs, which ``arrays`` are of
        self.views: dict[tuple[int, str], Any] = {}
        self.reached: dict[int, int] = {}  # instance -> barriers it reached
        self.phase_number = 0
        self.site = 0
        self.names = [p.name for p in node.function.params]  # type: ignore[union-attr]

    def enter_call(self, values: list[Any]) -> None:
        from .checked import checked_view, unwrap

        if len(values) == len(self.values) and all(a is b for a, b in zip(values, self.values)):
            return  # (the common case: every instance gets the same arrays)
        self.values = values
        arrays = []
        for name, value in zip(self.names, values):
            if isinstance(value, np.ndarray) and value.size:
                plain = unwrap(value)
                key = (id(plain), name)
                view = self.views.get(key)
                if view is None:
                    view = self.views[key] = checked_view(plain, name, True, self)
                low = plain.__array_interface__["data"][0]
                arrays.append((low, low + plain.nbytes, plain.itemsize, view))
        self.arrays = arrays

    def access(self, flat: int, address: int, size: int, code: int) -> None:
        kind = code & 3
        if kind == 3:  # the instance reached a barrier: its next accesses are a new phase
            self.reached[flat] = self.reached.get(flat, 0) + 1
            return
        phase = self.reached.get(flat, 0)
        if phase != self.phase_number:  # every instance reached it (they run in lockstep)
            self.barrier()
            self.phase_number = phase
        if flat != self.actor or self.ctx is None:
            self.enter(flat, self.contexts[flat])
        for low, high, item, view in self.arrays:
            if low <= address < high:
                self.site = code >> 2
                first = low + (address - low) // item * item
                for element in range(first, min(address + size, high), item):
                    self.touch(element, kind, view)
                return

    def _record(self, kind: int, view: Any) -> int:
        origin = view._hpvm_origin
        key = (-1, self.site, id(origin))
        site = self.site_ids.get(key)
        if site is None:
            where = self.native_sites[self.site]
            site = self.site_ids[key] = len(self.sites) << _SITE_SHIFT
            self.sites.append((self, where.file, where.line, origin, where.instruction))  # type: ignore[arg-type]
        return self.mine | site | kind

    def _place_now(self) -> str:
        where = self.native_sites[self.site]
        return self._place(self.ctx, where.file, where.line, where.instruction)  # type: ignore[arg-type]

    def _place(self, ctx: Any, file: str | None, line: int | None, code: Any) -> str:
        if file is None or line is None:
            fn = ctx.fn
            return f"{ctx.where(fn.location.line, fn.location.file)} at `{code}`"
        return ctx.where(line, file)


def _index(origin: Any, addr: int) -> str:
    """The index of the element at ``addr`` in ``origin`` (a leaf's array), as ``[i, j]``."""
    plain = origin.view(np.ndarray)
    found = np.argwhere(_grid(plain) == addr)
    if len(found):
        return "[" + ", ".join(str(int(i)) for i in found[0]) + "]"
    low = np.lib.array_utils.byte_bounds(plain)[0]
    return f"byte offset {addr - low}"
