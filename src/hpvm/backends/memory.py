"""The memory tracker of seed 000: which arrays the runtime manages, and where they are valid.

Arrays passed to a launch must be tracked. Memory has several address spaces: the host's
(``"host"``) and one per device (``"cuda"``, ``"opencl"``: a back end's ``device``). Each
tracked array records the address spaces holding a valid copy (``valid_on``) and its
device copies. Data moves only when it must:

* a GPU back end asks for the device copy of an argument (``device_copy``): it is made on
  first use and kept, and copied again only if the host (or another device) wrote the
  array since; kernels that may write it mark the device copy the only valid one
  (``device_wrote``);
* ``request_memory`` (and ``untrack_memory``, which never loses data) copies a stale host
  copy back from a device that holds the valid one;
* host back ends (``cpu``, ``interp``) compute in host memory: around each run the runtime
  calls ``prepare_for`` (stale host copies of the arguments are brought back) and
  ``finished`` (arrays the graph may write are then valid only on the host);
* the host declares its own writes with ``hpvm.mark_host_modified(array)``, which makes
  the host copy the only valid one, so the next GPU launch copies it again;
* every such change — a declared host write, a device or host run that may have written
  the array, tracking it anew — gives the array a new ``version`` (unique in the process):
  a back end that keeps data *derived* from an argument (the ``tensor`` back end's folded
  and prepacked weights) keys it on the versions and derives again when one changes, under
  the same contract as a device copy.

Bytes moved are counted per run, in the ``Transfers`` of the run's ``RunContext`` (the
runtime puts it on the launch handle as ``handle.transfers``), and in total per tracker
(``totals()``; ``hpvm.memory_stats()`` for the runtime's tracker). Nothing here is global:
each runtime owns a tracker, and a back end reaches it through the run context it is
handed, so a back end also runs where no runtime exists (a tracker with nothing tracked).

An array is identified by its memory: a view or slice of a tracked array counts as tracked
(its device counterpart is a view of the tracked array's device copy).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ..errors import MemoryTrackingError
from .replays import ReplayRecords

HOST = "host"
_VERSIONS = itertools.count(1)  # array versions, unique in the process (never reused)


class DeviceMemory(Protocol):
    """What the tracker needs from a device (``backends/gpu/device.py`` implements it)."""

    name: str

    def to_device(self, host: np.ndarray) -> Any: ...

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None: ...

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None: ...

    def view(self, base_handle: Any, base: np.ndarray, view: np.ndarray) -> Any: ...


@dataclass
class Transfers:
    """Bytes copied between address spaces (for one launch, or in total).

    ``to_device`` / ``to_host``: tracked arrays (the data the program works on);
    ``internal_to_device`` / ``internal_to_host``: what a GPU launch moves for its own
    book-keeping (instance tables, values on edges, ``malloc`` pools).
    """

    to_device: int = 0
    to_host: int = 0
    internal_to_device: int = 0
    internal_to_host: int = 0
    copies: int = 0  # number of tracked-array copies, both directions

    @property
    def total(self) -> int:
        return self.to_device + self.to_host + self.internal_to_device + self.internal_to_host

    def add(self, other: Transfers) -> None:
        self.to_device += other.to_device
        self.to_host += other.to_host
        self.internal_to_device += other.internal_to_device
        self.internal_to_host += other.internal_to_host
        self.copies += other.copies

    def since(self, earlier: Transfers) -> Transfers:
        """What was moved between the snapshot ``earlier`` and this one."""
        return Transfers(
            self.to_device - earlier.to_device,
            self.to_host - earlier.to_host,
            self.internal_to_device - earlier.internal_to_device,
            self.internal_to_host - earlier.internal_to_host,
            self.copies - earlier.copies,
        )

    def __str__(self) -> str:
        return (
            f"{_bytes(self.to_device)} to device, {_bytes(self.to_host)} to host in {self.copies} "
            f"array cop{'y' if self.copies == 1 else 'ies'}; internal {_bytes(self.internal_to_device)} "
            f"to device, {_bytes(self.internal_to_host)} to host"
        )


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _extent(array: np.ndarray) -> tuple[int, int]:
    """The byte range an array's elements occupy (views with any strides included)."""
    low, high = byte_bounds(array)
    return low, high


def _layout(array: np.ndarray) -> tuple[Any, ...]:
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


@dataclass
class TrackedArray:
    array: np.ndarray
    start: int
    end: int
    valid_on: set[str] = field(default_factory=lambda: {HOST})
    users: int = 0  # running launches that use it
    #: one token per replayed run using it (``MemoryTracker.hold_replay``): appended and
    #: popped without the lock — each a single step, so two threads never lose a count
    holds: list[None] = field(default_factory=list)
    abandoned: bool = False  # a launch using it was interrupted (Ctrl-C): clear() copies nothing back
    copies: dict[str, tuple[DeviceMemory, Any]] = field(default_factory=dict)  # device name -> copy
    views: dict[tuple[str, tuple[Any, ...]], Any] = field(default_factory=dict)  # device views of views
    version: int = field(default_factory=lambda: next(_VERSIONS))  # new whenever the contents may change


@dataclass
class RunToken:
    """What ``prepare_for`` hands to ``finished``: the arguments a host run may write."""

    host: bool
    written: list[np.ndarray]


#: The token of a run with nothing to record at ``finished``.
_NOTHING_WRITTEN = RunToken(False, [])


class MemoryTracker(ReplayRecords):
    """Tracked arrays, keyed by their base memory."""

    def __init__(self) -> None:
        self._entries: dict[int, TrackedArray] = {}
        # Reentrant: untrack and hold look entries up and update them as one step, so that a
        # launch starting on another thread cannot slip in between.
        self._lock = threading.RLock()
        self._device_entries = 0  # entries with a device copy: 0 lets host runs skip all work
        self._versioned = False  # a back end asked for versions: host runs must record their writes
        # id(array) -> (weak reference, byte range) of arrays found before: a launch finds the
        # same arrays again and again, and NumPy takes microseconds to give a byte range. (A
        # dead reference means the id may be another array's now.)
        self._extents: dict[int, tuple[weakref.ref, int, int]] = {}
        # id(array) -> its entry, for each array tracked itself (not a view of one): what a
        # repeated launch passes. Kept in step with ``_entries`` (an entry dropped or replaced
        # leaves it), and an entry holds its array, so an id found here is still that array's.
        # One dictionary look-up instead of ``_extents``' weak reference and ``_entries``':
        # after a step that streams megabytes through the core's caches, every object a
        # launch touches is a cache miss (docs/backends/cpu.md).
        self._direct: dict[int, TrackedArray] = {}
        # Launches that may be repeated without finding and checking their arrays again
        # (``runtime/plan.py``, ``Replay``: key -> record holding the entries it found). Held
        # here, not by the plan, because a record is valid only while its entries are: it is
        # emptied whenever an entry is replaced, untracked or cleared (so a record never
        # keeps an untracked array alive, and an id in its key is still its array's).
        self.replays: dict[Any, Any] = {}
        #: counts the times ``replays`` was emptied: a record kept in another is no longer
        #: valid (``hold_replay`` checks it after holding the entries, without the lock)
        self.replay_epoch = 0
        #: counts every change of ``replays`` (a record kept, the table emptied): a record
        #: found before under the same key is still the one it holds while this is unchanged
        #: (the compiled replay, ``runtime/fastpath.py``, finds it again without the key)
        self.replays_version = 0
        self._totals = Transfers()  # everything this tracker's runs and requests moved
        self._totals_lock = threading.Lock()

    # -- counting ---------------------------------------------------------------------------

    def record(
        self,
        into: Transfers | None,
        to_device: int = 0,
        to_host: int = 0,
        internal: bool = False,
        copies: int = 0,
    ) -> None:
        """Count bytes moved: in this tracker's totals and, for a run, in the run's ``into``."""
        t = Transfers()
        if internal:
            t.internal_to_device, t.internal_to_host = to_device, to_host
        else:
            t.to_device, t.to_host, t.copies = to_device, to_host, copies
        if into is not None:
            into.add(t)
        with self._totals_lock:
            self._totals.add(t)

    def totals(self) -> Transfers:
        """Bytes moved between host and devices since this tracker was made (a copy)."""
        with self._totals_lock:
            snapshot = Transfers()
            snapshot.add(self._totals)
            return snapshot

    def clear(self) -> list[str]:
        """Forget every array (cleanup); host copies are brought up to date first.

        Never raises: an array whose device copy cannot be copied back (a read-only host
        array, a failing device) is forgotten all the same — otherwise cleanup could never
        finish, and every later cleanup would fail on it again. Returns what went wrong, one
        message per such array, for the caller to report once.
        """
        lost: list[str] = []
        with self._lock:
            for entry in list(self._entries.values()):
                if entry.abandoned:
                    continue  # an interrupted run may still be writing it: a copy would wait for that
                try:
                    self._to_host(entry, None)
                except MemoryTrackingError as e:
                    lost.append(str(e))
            self._entries.clear()
            self._direct.clear()
            self._drop_replays()
            self._device_entries = 0
            # (versions asked for were of arrays forgotten now: host runs need not record
            # writes until a back end asks again — and quick launches may be replayed again)
            self._versioned = False
        return lost

    def __len__(self) -> int:
        return len(self._entries)

    def track(self, array: Any) -> None:
        self._require_array(array, "track_memory")
        start, end = _extent(array)
        with self._lock:
            entry = self._entries.get(start)
            if entry is not None and entry.end >= end:
                return  # already tracked: tracking twice is harmless
            if entry is not None:
                self._to_host(entry, None)
                self._drop_copies(entry)
                self._direct.pop(id(entry.array), None)
                self._drop_replays()
            entry = self._entries[start] = TrackedArray(array, start, end)
            self._direct[id(array)] = entry

    def untrack(self, array: Any) -> None:
        self._require_array(array, "untrack_memory")
        with self._lock:
            entry = self.find(array)
            if entry is None:
                raise MemoryTrackingError(
                    f"untrack_memory(): {_describe(array)} is not tracked; only arrays given to "
                    "hpvm.track_memory() can be untracked"
                )
            # First: a replayed run that holds the entry from here on finds its record gone
            # (``hold_replay``); one that held it before is counted below.
            self._drop_replays()
            if entry.users or entry.holds:
                raise MemoryTrackingError(
                    f"untrack_memory(): {_describe(array)} is in use by {entry.users + len(entry.holds)} "
                    "running launch(es); hpvm.wait() for them first"
                )
            self._to_host(entry, None)  # never lose what a device computed
            self._drop_copies(entry)
            self._entries.pop(entry.start, None)
            self._direct.pop(id(entry.array), None)

    def request(self, array: Any) -> np.ndarray:
        self._require_array(array, "request_memory")
        with self._lock:
            entry = self.find(array)
            if entry is None:
                raise MemoryTrackingError(
                    f"request_memory(): {_describe(array)} is not tracked; track it with "
                    "hpvm.track_memory() before passing it to a graph"
                )
            self._to_host(entry, None)
        return array

    def host_modified(self, array: Any) -> None:
        """The host wrote ``array``: its device copies are stale (copied again on next use)."""
        self._require_array(array, "mark_host_modified")
        with self._lock:
            entry = self.find(array)
            if entry is None:
                raise MemoryTrackingError(
                    f"mark_host_modified(): {_describe(array)} is not tracked; track it with "
                    "hpvm.track_memory() before passing it to a graph"
                )
            if HOST not in entry.valid_on:
                where = ", ".join(sorted(entry.valid_on))
                raise MemoryTrackingError(
                    f"mark_host_modified(): the host copy of {_describe(array)} was not current (its "
                    f"latest contents are on {where}), so host writes to it would lose the device's "
                    "results; call hpvm.request_memory() on it before writing to it on the host"
                )
            entry.valid_on = {HOST}
            entry.version = next(_VERSIONS)

    def version(self, array: np.ndarray) -> int | None:
        """The version of ``array``'s contents (``None`` when it is not tracked): it changes
        whenever the contents may have changed — a declared host write
        (``mark_host_modified``), a run that may write the array, tracking it anew. Data
        derived from the array stays valid while its version does (the contract of device
        copies: host writes must be declared)."""
        with self._lock:
            entry = self.find(array)
            if entry is None:
                return None
            self._versioned = True
            return entry.version

    def find(self, array: np.ndarray) -> TrackedArray | None:
        with self._lock:
            return self._find(array)

    def _find(self, array: np.ndarray) -> TrackedArray | None:
        """``find``, the lock held by the caller."""
        entry = self._direct.get(id(array))
        if entry is not None and entry.array is array:
            return entry
        seen = self._extents.get(id(array))
        if seen is not None and seen[0]() is array:
            _, start, end = seen
        else:
            start, end = _extent(array)
            if len(self._extents) >= 64:
                self._extents.clear()
            self._extents[id(array)] = (weakref.ref(array), start, end)
        entry = self._entries.get(start)  # the usual case: the tracked array itself
        if entry is not None and end <= entry.end:
            return entry
        for entry in self._entries.values():  # a view into a tracked array
            if entry.start <= start and end <= entry.end:
                return entry
        return None

    def hold(self, entries: list[TrackedArray]) -> list[TrackedArray]:
        """Mark the entries of a launch's arrays in use until ``release`` (``untrack``
        refuses them meanwhile). ``launch.check_args`` found them; one untracked since, by
        another thread, is refused here, under the lock ``untrack`` takes, as if never found."""
        with self._lock:
            for entry in entries:
                if self._entries.get(entry.start) is not entry:
                    raise MemoryTrackingError(
                        f"launch(): {_describe(entry.array)} was untracked by another thread while "
                        "this launch started; track it again (hpvm.track_memory) before launching"
                    )
            for entry in entries:
                entry.users += 1
        return entries

    def hold_arrays(self, arrays: list[np.ndarray]) -> list[TrackedArray] | None:
        """``find`` and ``hold`` of a launch's arrays under one lock (what a repeated launch
        does: one lock instead of one per array and another to hold them); ``None``, with
        nothing held, when one of them is not tracked (``launch.check_args`` then says which)."""
        with self._lock:
            direct, entries = self._direct, []
            for a in arrays:
                entry = direct.get(id(a))  # (``_find``'s first look, without its call)
                if entry is None or entry.array is not a:
                    entry = self._find(a)
                    if entry is None:
                        return None
                entries.append(entry)
            for entry in entries:
                entry.users += 1
        return entries

    def abandon(self, arrays: list[np.ndarray]) -> None:
        """A run using ``arrays`` was interrupted (Ctrl-C in ``wait``, ``pop``...) and may
        still run on its device for hours: ``clear`` forgets these arrays without copying
        their device contents back (a copy would queue behind that run)."""
        with self._lock:
            for a in arrays:
                entry = self.find(a)
                if entry is not None:
                    entry.abandoned = True

    def release(self, entries: list[TrackedArray]) -> None:
        with self._lock:
            for entry in entries:
                if entry.users:  # (none left when cleared meanwhile)
                    entry.users -= 1

    # -- devices ------------------------------------------------------------------------

    def residency(self, array: np.ndarray) -> set[str]:
        """The address spaces holding a valid copy of ``array`` (for tests and tools)."""
        with self._lock:
            entry = self.find(array)
            if entry is None:
                raise MemoryTrackingError(f"{_describe(array)} is not tracked")
            return set(entry.valid_on)

    def device_copy(self, array: np.ndarray, device: DeviceMemory, into: Transfers | None) -> Any | None:
        """The valid copy of ``array`` on ``device`` (made or refreshed now if needed, the
        bytes counted in ``into``), or ``None`` when the array is not tracked (the caller
        makes a temporary copy)."""
        with self._lock:
            entry = self.find(array)
            if entry is None:
                return None
            copy = entry.copies.get(device.name)
            if device.name not in entry.valid_on:
                self._to_host(entry, into)
                nbytes = entry.array.nbytes
                if copy is None:
                    handle = device.to_device(entry.array)
                    entry.copies[device.name] = (device, handle)
                    self._device_entries += len(entry.copies) == 1
                else:
                    device.copy_to_device(entry.array, copy[1])
                self.record(into, to_device=nbytes, copies=1)
                entry.valid_on.add(device.name)
            handle = entry.copies[device.name][1]
            if array is entry.array or _layout(array) == _layout(entry.array):
                return handle
            key = (device.name, _layout(array))
            view = entry.views.get(key)
            if view is None:
                view = entry.views[key] = device.view(handle, entry.array, array)
            return view

    def device_wrote(self, array: np.ndarray, device: DeviceMemory) -> None:
        """A kernel on ``device`` may write ``array``: only the device copy stays valid."""
        with self._lock:
            entry = self.find(array)
            if entry is not None:
                entry.valid_on = {device.name}
                entry.version = next(_VERSIONS)

    # -- around a back end's run -----------------------------------------------------------

    def host_only(self) -> bool:
        """Whether no array has a device copy and no back end asked for versions: then
        ``prepare_for`` and ``finished`` have nothing to do for a host run."""
        return not (self._device_entries or self._versioned)

    def prepare_for(self, backend: Any, root: Any, args: Any, into: Transfers | None) -> RunToken:
        """Call before ``backend`` runs ``root`` with ``args`` (a whole graph or a stage).

        For a host back end, brings stale host copies of the array arguments back from the
        devices (counted in ``into``). GPU back ends need nothing here (they ask for device
        copies as they go). A back end that is neither (the mixed dispatch, device
        ``"mixed"``) gets no residency handling: it must call this around each part it
        runs, with the part's own back end.
        """
        host = getattr(backend, "device", HOST) == HOST
        if not host or self.host_only():
            return _NOTHING_WRITTEN  # (shared: nothing is added to it; most runs end here)
        token = RunToken(host, [])
        written = written_params(root) if getattr(backend, "writes_arguments", True) else set()
        with self._lock:
            for i, a in enumerate(args):
                if not isinstance(a, np.ndarray):
                    continue
                entry = self.find(a)
                if entry is None:
                    continue
                self._to_host(entry, into)
                if i in written:
                    token.written.append(a)
        return token

    def finished(self, token: RunToken) -> None:
        """Call after the run (also when it failed): what a host run wrote is valid only on
        the host now."""
        if token.written:
            with self._lock:
                for a in token.written:
                    entry = self.find(a)
                    if entry is not None:
                        entry.valid_on = {HOST}
                        entry.version = next(_VERSIONS)

    # -- internals ----------------------------------------------------------------------

    def _to_host(self, entry: TrackedArray, into: Transfers | None) -> None:
        """Copy the device's valid contents back into the host array; a host array that
        cannot take them, or a device that fails to copy, is a ``MemoryTrackingError``
        naming the array (the device copy stays the valid one)."""
        if HOST in entry.valid_on:
            return
        for name in sorted(entry.valid_on):
            device, handle = entry.copies[name]
            if not entry.array.flags.writeable:
                raise MemoryTrackingError(
                    f"{_describe(entry.array)} is read-only (its flags.writeable is False), so its "
                    f"latest contents, computed on {name}, cannot be copied back into it; make it "
                    "writeable (array.flags.writeable = True) before it is copied back "
                    "(hpvm.request_memory, untrack_memory or cleanup)"
                )
            try:
                device.copy_to_host(handle, entry.array)
            except Exception as e:  # the device library's own error, whatever it is
                raise MemoryTrackingError(
                    f"copying {_describe(entry.array)} back from {name} failed: {type(e).__name__}: {e}"
                ) from e
            self.record(into, to_host=entry.array.nbytes, copies=1)
            entry.valid_on.add(HOST)
            return
        raise MemoryTrackingError(f"{_describe(entry.array)} has no valid copy anywhere (internal error)")

    def _drop_copies(self, entry: TrackedArray) -> None:
        if entry.copies:
            self._device_entries -= 1
        entry.copies.clear()
        entry.views.clear()
        entry.valid_on = {HOST}

    @staticmethod
    def _require_array(array: Any, api: str) -> None:
        if not isinstance(array, np.ndarray):
            raise MemoryTrackingError(f"{api}() takes a NumPy array, not {type(array).__name__}")


def written_params(root: Any) -> set[int]:
    """Indices of the root's array parameters that running it may write (conservative).

    A parameter is read-only when it reaches, through input binds, only leaf parameters that
    are not in the leaf's ``outs``, of leaves that return no arrays (a returned array may be
    written downstream). Cached on the root function.
    """
    cached = getattr(root, "_hpvm_written_params", None)
    if cached is not None:
        return cached
    from ..ir.graph import InternalFunction, LeafFunction
    from ..ir.types import ArrayType

    def writes(fn: Any, port: int, depth: int = 0) -> bool:
        if isinstance(fn, LeafFunction):
            if any(isinstance(t, ArrayType) for t in fn.out_types):
                return True
            return fn.params[port].name in fn.outs
        if not isinstance(fn, InternalFunction) or depth > 64:
            return True
        return any(writes(b.dst.function, b.ic, depth + 1) for b in fn.graph.in_binds if b.ip == port)

    result = {i for i, p in enumerate(root.params) if isinstance(p.type, ArrayType) and writes(root, i)}
    try:
        root._hpvm_written_params = result
    except AttributeError:
        pass
    return result


def _describe(array: np.ndarray) -> str:
    return f"the {array.shape} {array.dtype} array at {hex(array.__array_interface__['data'][0])}"
