"""The reference interpreter: the executable specification of seed 000, and the oracle.

It walks the graph exactly as the semantics say — children in topological order, dynamic
instances in row-major order (x outermost: the loop nest of seed 001), one-to-one edges
instance to instance, all-to-all edges and output binds taking the last instance's value —
and checks what compiled back ends cannot: out-of-bounds indices, writes to arrays missing
from ``outs``, barriers not reached by every instance, all-to-all values that disagree, and
data races between instances that its one-at-a-time order would hide (``races.py``).
"""

from __future__ import annotations

import inspect
import itertools
import os
import threading
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import (
    BarrierError,
    DisagreementError,
    HPVMError,
    IllegalWriteError,
    LaunchError,
    NodeExecutionError,
    OutOfBoundsError,
)
from ...ir import instance_context as ictx
from ...ir.analysis import feed_table
from ...ir.bodies import GENERATED, LLVM, PYTHON, TENSOR
from ...ir.execution import set_context
from ...ir.graph import ALL_TO_ALL, InternalFunction, LeafFunction, Node
from ...ir.intrinsics import FLOAT_ATOMIC_OPS
from ...ir.leafinfo import analyze_leaf
from ...ir.types import ArrayType, ScalarType, check_value
from ...ir.verify import topological_order
from ..base import Backend, PortKey, RunContext, warn
from ..bounds import bound_accesses, check, check_spans, span_bounds
from .arith import cast_scalar
from .arith_rewrite import typed_function
from .barriers import barrier_generator
from .checked import CheckedArray, checked_view, unwrap
from .from_ir import ir_function
from .races import GraphScope, LeafRecorder, NativeLeafRecorder

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ATOMIC_LOCK = threading.Lock()


def _ancestor_sizes(handle: InstanceHandle | None) -> list[tuple[int, ...]]:
    """The sizes of ``handle``'s node and of each node above it: the extents of a child's
    ancestors' ids (parent first)."""
    found = []
    while handle is not None:
        found.append(handle.sizes)
        handle = handle.parent
    return found


@dataclass(frozen=True, eq=False)
class InstanceHandle:
    """What ``hpvm.get_node()`` returns in the interpreter: one dynamic instance of a node."""

    name: str
    ids: tuple[int, ...]
    sizes: tuple[int, ...]
    parent: InstanceHandle | None

    @property
    def dims(self) -> int:
        return len(self.sizes)

    @property
    def path(self) -> str:
        parts = []
        handle: InstanceHandle | None = self
        while handle is not None:
            parts.append(f"{handle.name}{list(handle.ids) if handle.ids else ''}")
            handle = handle.parent
        return "/".join(reversed(parts))

    def __repr__(self) -> str:
        return f"<node instance {self.path}>"


def _root_handle(name: str, instance: Sequence[int]) -> InstanceHandle:
    """The root's handle; ``instance`` (``RunContext.instance``) gives its ids and extents."""
    if not instance:
        return InstanceHandle(name, (), (), None)
    dims = int(instance[ictx.DIMS])
    ids = tuple(int(v) for v in instance[ictx.ID : ictx.ID + dims])
    return InstanceHandle(name, ids, tuple(int(v) for v in instance[ictx.EXTENT : ictx.EXTENT + dims]), None)


@dataclass
class NodeOutputs:
    """The outputs of every dynamic instance of one node, row-major."""

    sizes: tuple[int, ...]
    values: list[tuple[Any, ...]]

    def last(self) -> tuple[Any, ...]:
        return self.values[-1]


class _LeafContext:
    """The execution context the intrinsics see while one leaf instance runs."""

    def __init__(
        self,
        interp: Interpreter,
        fn: LeafFunction,
        handle: InstanceHandle,
        flat: int = 0,
        races: LeafRecorder | None = None,
    ):
        self.interp, self.fn, self.handle = interp, fn, handle
        #: the instance's row-major index, and the recorder of its accesses (races.py)
        self.flat, self.races = flat, races

    def activate(self) -> None:
        """Make this instance the running one: for the intrinsics and the race recorder."""
        set_context(self)
        if self.races is not None:
            self.races.enter(self.flat, self)

    def where(self, line: int, file: str | None = None) -> str:
        """The node instance, the leaf and the place; ``file`` when the line is not in the
        leaf's own file (a helper function defined elsewhere)."""
        return f"node {self.handle.path} (leaf '{self.fn.name}', {self.fn.locate(file, line)})"

    def _caller(self) -> tuple[str, int]:
        for frame in traceback.extract_stack()[::-1]:
            if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR + os.sep):
                return frame.filename, frame.lineno or 0
        return self.fn.location.file, 0

    def _fail(self, message: str, cls: type[NodeExecutionError] = NodeExecutionError) -> NodeExecutionError:
        file, line = self._caller()
        return cls(f"{self.where(line, file)}: {message}")

    def _handle(self, node: Any, api: str) -> InstanceHandle:
        if not isinstance(node, InstanceHandle):
            raise self._fail(f"{api}() needs a node handle from hpvm.get_node(), not {node!r}")
        return node

    def get_node(self) -> InstanceHandle:
        return self.handle

    def get_parent_node(self, node: Any) -> InstanceHandle:
        handle = self._handle(node, "get_parent_node")
        if handle.parent is None:
            raise self._fail(f"get_parent_node(): '{handle.name}' is the root and has no parent")
        return handle.parent

    def get_num_dims(self, node: Any) -> int:
        return self._handle(node, "get_num_dims").dims

    def _axis(self, node: Any, axis: int, api: str) -> InstanceHandle:
        handle = self._handle(node, api)
        if axis >= handle.dims:
            raise self._fail(
                f"{api}_{'xyz'[axis]}() on node '{handle.name}', which is replicated in "
                f"{handle.dims} dimension(s); query only {', '.join('xyz'[: handle.dims]) or 'no dimension'}"
            )
        return handle

    def instance_id(self, node: Any, axis: int) -> int:
        return self._axis(node, axis, "get_node_instance_id").ids[axis]

    def num_instances(self, node: Any, axis: int) -> int:
        return self._axis(node, axis, "get_num_node_instances").sizes[axis]

    def malloc(self, nbytes: Any) -> np.ndarray:
        if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise self._fail(f"malloc() needs a non-negative integer number of bytes, not {nbytes!r}")
        # A checked view, so that the allocating leaf's own accesses are bounds-checked too
        # (its typed views, buf.view(np.int32), keep the name); it leaves the leaf unwrapped.
        return checked_view(np.zeros(int(nbytes), dtype=np.uint8), f"malloc({int(nbytes)})", True)

    def barrier(self) -> None:
        raise self._fail(
            "hpvm.barrier() was called from a helper function; call it in the leaf's own body",
            BarrierError,
        )

    def atomic(self, op: str, array: Any, index: Any, value: Any) -> Any:
        if not isinstance(array, np.ndarray):
            raise self._fail(f"atomic_{op}() needs an array, not {type(array).__name__}")
        name = getattr(array, "_hpvm_name", None) or "array"
        kind, size = array.dtype.kind, array.dtype.itemsize
        if kind not in "iuf" or size not in (4, 8) or (kind == "f" and op not in FLOAT_ATOMIC_OPS):
            allowed = "int32, int64, float32, float64" if op in FLOAT_ATOMIC_OPS else "int32, int64"
            raise self._fail(f"atomic_{op}() on '{name}' of dtype {array.dtype}; it works on {allowed}")
        if not array.flags.writeable:
            raise self._fail(
                f"atomic_{op}() writes array '{name}', which the leaf's outs does not declare; "
                f"add '{name}' to outs=(...)",
                IllegalWriteError,
            )
        if isinstance(array, CheckedArray):
            try:
                array._check(index)
            except OutOfBoundsError:
                raise self._fail(
                    f"atomic_{op}(): index {index!r} is out of bounds for '{name}' with shape {array.shape}",
                    OutOfBoundsError,
                ) from None
        races = getattr(array, "_hpvm_races", None)
        if races is not None:
            races.atomic(array, index)
        plain = array.view(np.ndarray)
        with _ATOMIC_LOCK, np.errstate(all="ignore"):
            old = plain[index]
            v = cast_scalar(value, plain.dtype)
            if op == "add":
                new = old + v
            elif op == "sub":
                new = old - v
            elif op == "min":
                new = min(old, v)
            elif op == "max":
                new = max(old, v)
            elif op == "xchg":
                new = v
            elif op == "and":
                new = old & v
            elif op == "or":
                new = old | v
            else:
                new = old ^ v
            plain[index] = new
        return old


class Interpreter(Backend):
    """The ``interp`` back end."""

    name = "interp"
    # Tensor bodies run on its tensor operations, LLVM ones JIT-compiled (``llvm_native``).
    accepts = frozenset({PYTHON, GENERATED, TENSOR, LLVM})
    pointer_ports = True  # (a NumPy array, as any array port)
    device = "host"
    interruptible_on_host = True  # it runs the graph in Python: Ctrl-C stops it between instances
    outer_instance = True  # run_stage: RunContext.instance as the root handle's ids

    def __init__(self, strict: bool = False, races: bool | None = None):
        #: raise DisagreementError (instead of warning) when the instances of a replicated
        #: node send different values over an all-to-all edge or an output bind; set it for
        #: ``target="interp"`` with ``hpvm.backends.interp.configure(strict=True)``.
        self.strict = strict
        #: report data races (races.py) as DataRaceError; on unless ``HPVM_INTERP_RACES=0``,
        #: set with ``hpvm.backends.interp.configure(races=False)``
        self.races = races_from_environment() if races is None else races
        # Leaves made to run with Numba's arithmetic (from_ir.py, arith_rewrite.py), barrier
        # leaves as generators. Keyed weakly by the function object, not by id(): ids are
        # reused after garbage collection, and a new leaf must never run the recompiled code
        # of a dead one.
        self._functions: weakref.WeakKeyDictionary[LeafFunction, Any] = weakref.WeakKeyDictionary()
        #: run leaves in the leaf IR's dialect from their IR (from_ir.py); off: every leaf
        #: from its syntax tree, as before (what tests compare the two paths with)
        self.from_ir = True

    # -- Backend interface ---------------------------------------------------------------

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        from ..llvm_native.host import HEAP

        self.checked_context(root, args, ctx)
        handle = InstanceHandle(root.name, (), (), None)
        races = GraphScope.root(root, list(args), handle) if self.races else None
        with HEAP.launch():  # what LLVM leaves malloc lives until the launch ends
            _, outputs = self._run_graph(root, list(args), handle, races=races)
            count = len(root.out_types)
            return tuple(HEAP.adopt(outputs[i]) for i in range(count))

    def run_stage(self, root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        handle = _root_handle(root.name, ctx.instance if ctx is not None else ())
        races = GraphScope.root(root, list(args), handle) if self.races else None
        produced, outputs = self._run_graph(
            root, list(args), handle, only=nodes, upstream=upstream, races=races
        )
        return {n.name: produced[n.name] for n in nodes}, outputs

    def export_outputs(
        self, node: Node, sizes: tuple[int, ...], produced: NodeOutputs, ctx: RunContext | None = None
    ) -> dict[PortKey, Any]:
        values: dict[PortKey, Any] = {}
        for port, ptype in enumerate(node.function.out_types):
            if produced.values:
                values[(port, "last")] = unwrap(produced.values[-1][port])
            if isinstance(ptype, ScalarType) and node.dims > 0:
                each = np.array([v[port] for v in produced.values], dtype=ptype.dtype)
                values[(port, "each")] = each.reshape(produced.sizes)
        return values

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[PortKey, Any]) -> NodeOutputs:
        count = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
        columns = []
        for port in range(len(node.function.out_types)):
            each = values.get((port, "each"))
            if each is not None:
                columns.append(list(np.asarray(each).reshape(-1)))
            else:  # only the last value crossed (arrays: every instance hands on the same one)
                columns.append([values.get((port, "last"))] * count)
        return NodeOutputs(tuple(sizes), [tuple(col[i] for col in columns) for i in range(count)])

    # -- graphs --------------------------------------------------------------------------

    def _run_graph(
        self,
        fn: InternalFunction,
        args: list[Any],
        handle: InstanceHandle,
        only: Sequence[Node] | None = None,
        upstream: dict[str, NodeOutputs] | None = None,
        races: GraphScope | None = None,
    ) -> tuple[dict[str, NodeOutputs], dict[int, Any]]:
        graph = fn.graph
        env = {p.name: a for p, a in zip(fn.params, args)}
        results: dict[str, NodeOutputs] = dict(upstream or {})
        selected = None if only is None else {id(n) for n in only}
        feeds = feed_table(graph)
        for node in topological_order(graph):
            if selected is not None and id(node) not in selected:
                continue
            sizes = node.evaluate_sizes(env, f"in {handle.path}, ")
            if isinstance(node.function, LeafFunction) and node.function.body_kind == LLVM:
                # LLVM code runs unchecked: its every-instance accesses are checked first.
                bounds = bound_accesses(node, fn, feeds[id(node)])
                check(node, fn, bounds, sizes, args)
                spans = span_bounds(node, fn, feeds[id(node)])
                if spans:
                    check_spans(node, fn, spans, sizes, _ancestor_sizes(handle), args)
            inputs = self._gather(node, sizes, feeds[id(node)], args, results)
            if isinstance(node.function, LeafFunction):
                results[node.name] = self.run_leaf(node, sizes, inputs, handle, races=races)
            else:
                assert isinstance(node.function, InternalFunction)
                values = []
                count = int(np.prod(sizes, dtype=np.int64))
                scope = races.enter(node, count) if races is not None else None
                for flat, ids in enumerate(_instances(sizes)):
                    child = InstanceHandle(node.name, ids, sizes, handle)
                    inner = scope.instance(flat, child) if scope is not None else None
                    _, outs = self._run_graph(node.function, inputs(flat), child, races=inner)
                    if scope is not None and inner is not None:
                        scope.instance_done(inner)
                    values.append(tuple(outs[i] for i in range(len(node.function.out_types))))
                if scope is not None:
                    scope.done()
                results[node.name] = NodeOutputs(sizes, values)
        outputs: dict[int, Any] = {}
        for b in graph.out_binds:
            if selected is not None and id(b.src) not in selected:
                continue
            outputs[b.op] = self._all_to_all_value(results[b.src.name], b.oc, b.describe(fn))
        return results, outputs

    def _gather(self, node, sizes, feeds, args, results):  # type: ignore[no-untyped-def]
        """A function from an instance's flat index to its input values."""
        fixed: list[Any] = [None] * len(feeds)
        per_instance: list[tuple[int, NodeOutputs, int]] = []
        for port, feed in enumerate(feeds):
            kind, payload = feed
            if kind == "bind":
                fixed[port] = args[payload]
                continue
            edge = payload
            source = results[edge.src.name]
            if edge.repl == ALL_TO_ALL:
                fixed[port] = self._all_to_all_value(source, edge.sp, edge.describe())
            else:
                if source.sizes != sizes:
                    raise LaunchError(
                        f"{edge.describe()}: one-to-one edges need identical grids, but "
                        f"'{edge.src.name}' has {list(source.sizes)} instances and "
                        f"'{edge.dst.name}' {list(sizes)} in this execution"
                    )
                per_instance.append((port, source, edge.sp))

        def inputs(flat: int) -> list[Any]:
            values = list(fixed)
            for port, source, sp in per_instance:
                values[port] = source.values[flat][sp]
            return values

        return inputs

    def _all_to_all_value(self, source: NodeOutputs, index: int, what: str) -> Any:
        if not source.values:
            raise LaunchError(
                f"{what}: the source node has no instances in this execution, so it sends no value"
            )
        last = source.values[-1][index]
        for ids, values in zip(_instances(source.sizes), source.values):
            if not _same(values[index], last):
                message = (
                    f"{what}: instances of the replicated source disagree (instance {list(ids)} "
                    f"sent {_short(values[index])}, the last instance {_short(last)}); the last "
                    "instance's value is used"
                )
                if self.strict:
                    raise DisagreementError(message)
                warn(message)  # issued on the host thread at wait/pop
                break
        return last

    # -- leaves --------------------------------------------------------------------------

    def run_leaf(
        self,
        node: Node,
        sizes: tuple[int, ...],
        inputs: Callable[[int], list[Any]],
        parent: InstanceHandle | None,
        races: GraphScope | None = None,
    ) -> NodeOutputs:
        """Run every instance of the leaf node ``node`` within one parent instance, with all
        the interpreter's checks, and return their outputs (row-major).

        ``sizes`` is the node's grid in this execution, ``inputs(flat)`` the input values of
        the instance with row-major index ``flat`` and ``parent`` the parent instance (its
        path names the instances in messages; ``get_parent_node`` queries walk it). Other
        back ends call it to run a leaf they cannot compile on the host: the GPU lowering
        runs allocation leaves (those calling ``hpvm.malloc``) this way. ``races``: the graph
        execution the leaf's accesses are checked in (races.py); none, no check.
        """
        fn = node.function
        assert isinstance(fn, LeafFunction)
        if fn.body_kind == LLVM:
            return self._run_llvm_leaf(node, sizes, inputs, parent, races)
        instances = list(_instances(sizes))
        handles = [InstanceHandle(node.name, ids, sizes, parent) for ids in instances]
        contexts = [_LeafContext(self, fn, h, flat) for flat, h in enumerate(handles)]
        recorder = races.leaf(node, contexts) if races is not None else None
        for ctx in contexts:
            ctx.races = recorder
        views: dict[tuple[int, str], Any] = {}

        def prepare(flat: int) -> list[Any]:
            values = inputs(flat)
            prepared = []
            for p, v in zip(fn.params, values):
                if isinstance(p.type, ArrayType) and isinstance(v, np.ndarray):
                    key = (id(v), p.name)
                    if key not in views:
                        views[key] = checked_view(unwrap(v), p.name, p.name in fn.outs, recorder)
                    prepared.append(views[key])
                else:
                    prepared.append(_as_port_value(p.type, v))
            return prepared

        # Division by zero, overflow and invalid operations give IEEE 754 / wrapped results
        # silently, as in compiled code (docs/semantics.md §7): no NumPy warnings.
        with np.errstate(all="ignore"):
            if analyze_leaf(fn).uses_barrier:
                results = self._run_lockstep(fn, contexts, prepare, recorder)
            else:
                func = self._function(fn)
                results = [self._call(fn, ctx, func, prepare(flat)) for flat, ctx in enumerate(contexts)]
        if races is not None:
            races.leaf_done(node, recorder)
        return NodeOutputs(sizes, [self._outputs(fn, ctx, r) for ctx, r in zip(contexts, results)])

    def _run_llvm_leaf(
        self,
        node: Node,
        sizes: tuple[int, ...],
        inputs: Callable[[int], list[Any]],
        parent: InstanceHandle | None,
        races: GraphScope | None = None,
    ) -> NodeOutputs:
        """An LLVM leaf's instances through the JIT (``llvm_native.run``), its clone's array
        accesses checked as ``cpu``'s checked mode checks them (``llvm_native/checked.py``:
        an access outside its array is an ``OutOfBoundsError`` naming the instance, a write
        into an array not in ``outs`` an ``IllegalWriteError``); with ``races``, that clone
        instrumented, its accesses recorded (``NativeLeafRecorder``)."""
        from ..llvm_native.run import run_instances

        fn = node.function
        assert isinstance(fn, LeafFunction)
        levels: list[int] = []
        handle = parent
        while handle is not None:
            levels += ictx.level(handle.dims, list(handle.ids), list(handle.sizes))  # type: ignore[arg-type]
            handle = handle.parent

        def where(ids: tuple[int, ...]) -> str:
            path = InstanceHandle(node.name, ids, sizes, parent).path
            return f"node {path} (leaf '{fn.name}', {fn.location})"

        raw = lambda flat: [unwrap(v) for v in inputs(flat)]  # noqa: E731
        recorder = None
        if races is not None:
            handles = [InstanceHandle(node.name, ids, sizes, parent) for ids in _instances(sizes)]
            contexts = [_LeafContext(self, fn, h, flat) for flat, h in enumerate(handles)]
            recorder = races.leaf(node, contexts, NativeLeafRecorder)
        with np.errstate(all="ignore"):
            results = run_instances(node, sizes, raw, levels, where, recorder, checked=True)
        if races is not None:
            races.leaf_done(node, recorder)
        return NodeOutputs(
            sizes, [tuple(_as_port_value(t, v) for t, v in zip(fn.out_types, r)) for r in results]
        )

    def _function(self, fn: LeafFunction, lockstep: bool = False) -> Any:
        """The leaf's function with Numba's arithmetic, made once per leaf: from its leaf IR
        when the dialect covers it, else from its syntax tree; for a leaf run in lock step
        (``lockstep``: it calls ``hpvm.barrier()``) a generator function yielding the line of
        each barrier it reaches (barriers.py)."""
        func = self._functions.get(fn)
        if func is None:
            func = ir_function(fn) if self.from_ir else None
            if func is not None and inspect.isgeneratorfunction(func) != lockstep:
                func = None  # a safeguard: the IR and the analysis see the same barriers
            func = func or (barrier_generator(fn) if lockstep else typed_function(fn))
            self._functions[fn] = func
        return func

    def _call(self, fn: LeafFunction, ctx: _LeafContext, func: Any, arguments: list[Any]) -> Any:
        ctx.activate()
        try:
            return func(*arguments)
        except HPVMError:
            raise
        except Exception as e:
            raise _wrap(fn, ctx, e) from e
        finally:
            set_context(None)

    def _run_lockstep(
        self, fn: LeafFunction, contexts: list[_LeafContext], prepare: Any, recorder: LeafRecorder | None
    ) -> list[Any]:
        """Run every instance to its next barrier, phase by phase (see barriers.py); the
        recorder, if any, starts a new phase at each barrier."""
        gen_fn = self._function(fn, lockstep=True)
        gens = []
        for flat, ctx in enumerate(contexts):
            arguments = prepare(flat)
            gens.append(self._call(fn, ctx, gen_fn, arguments))
        results: list[Any] = [None] * len(gens)
        running = list(range(len(gens)))
        while running:
            at_barrier: dict[int, list[int]] = {}
            finished = []
            for flat in running:
                ctx = contexts[flat]
                ctx.activate()
                try:
                    line = next(gens[flat])
                    at_barrier.setdefault(line, []).append(flat)
                except StopIteration as stop:
                    results[flat] = stop.value
                    finished.append(flat)
                except HPVMError:
                    raise
                except Exception as e:
                    raise _wrap(fn, ctx, e) from e
                finally:
                    set_context(None)
            if at_barrier and (finished or len(at_barrier) > 1):
                described = [
                    f"{len(ids)} instance(s) (e.g. {list(contexts[ids[0]].handle.ids)}) at the barrier "
                    f"on line {line}"
                    for line, ids in sorted(at_barrier.items())
                ]
                if finished:
                    described.append(
                        f"{len(finished)} instance(s) (e.g. {list(contexts[finished[0]].handle.ids)}) finished"
                    )
                raise BarrierError(
                    f"leaf '{fn.name}' ({fn.location}) in {contexts[0].handle.parent.path if contexts[0].handle.parent else '?'}: "
                    f"instances diverged at a barrier — {'; '.join(described)}. Every instance "
                    "of a leaf within one parent instance must reach the same barriers"
                )
            running = [f for ids in at_barrier.values() for f in ids]
            running.sort()
            if recorder is not None:
                recorder.barrier()
        return results

    def _outputs(self, fn: LeafFunction, ctx: _LeafContext, result: Any) -> tuple[Any, ...]:
        types = fn.out_types
        if not types:
            if result is not None:
                raise NodeExecutionError(
                    f"{ctx.where(fn.location.line)}: returned {_short(result)} but declares no "
                    "outputs; annotate the outputs ('-> hpvm.f32') or return nothing"
                )
            return ()
        values = result if len(types) > 1 else (result,)
        if len(types) > 1 and not (isinstance(values, tuple) and len(values) == len(types)):
            raise NodeExecutionError(
                f"{ctx.where(fn.location.line)}: returned {_short(result)} but declares "
                f"{len(types)} outputs; return a tuple of {len(types)} values"
            )
        out = []
        for i, (t, v) in enumerate(zip(types, values)):
            v = unwrap(v)
            problem = check_value(t, v)
            if problem:
                raise NodeExecutionError(f"{ctx.where(fn.location.line)}: output {i}: {problem}")
            out.append(_as_port_value(t, v))
        return tuple(out)


# ---------------------------------------------------------------------------------------


def races_from_environment() -> bool:
    """Whether race detection is on by default: ``HPVM_INTERP_RACES`` (``0``/``1``; on when
    unset)."""
    value = os.environ.get("HPVM_INTERP_RACES", "1").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("", "1", "true", "yes", "on"):
        return True
    raise LaunchError(
        f"HPVM_INTERP_RACES={value!r}: set it to 0 to turn the interpreter's race detection "
        "off, or to 1 (the default) to keep it on"
    )


def _instances(sizes: tuple[int, ...]) -> Any:
    """Instance ids in row-major order (x outermost), as seed 001's loop nest visits them."""
    return itertools.product(*(range(s) for s in sizes))


def _as_port_value(ptype: Any, value: Any) -> Any:
    if isinstance(ptype, ScalarType) and not isinstance(value, np.ndarray):
        with np.errstate(over="ignore"):
            return ptype.dtype.type(value)
    return value


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        # Arrays are references: the same value when they are the same memory. (Each value
        # leaving a leaf is a fresh view object, so identity alone would make instances that
        # all return the same input array "disagree".)
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape
            and a.strides == b.strides
            and a.dtype == b.dtype
        )
    try:
        return bool(a == b) or (a != a and b != b)  # NaN equals NaN here
    except Exception:
        return False


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.shape} {value.dtype} array"
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _wrap(fn: LeafFunction, ctx: _LeafContext, e: Exception) -> NodeExecutionError:
    line, file = fn.location.line, fn.location.file
    code_file = fn.code_file
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == code_file:
            line, file = frame.lineno or line, code_file
    if isinstance(e, ValueError) and "read-only" in str(e):
        # A write NumPy refused outside CheckedArray's own checks (np.copyto, a.fill(), ...):
        # name the arrays it can have been, the leaf's array parameters not in outs.
        readonly = [p.name for p in fn.params if isinstance(p.type, ArrayType) and p.name not in fn.outs]
        names = ", ".join(f"'{n}'" for n in readonly) or "an input array"
        return IllegalWriteError(
            f"{ctx.where(line, file)}: wrote {'array ' + names if len(readonly) == 1 else 'one of ' + names}, "
            f"which the leaf's outs does not declare ({e}); add it to outs=(...)"
        )
    if isinstance(e, IndexError) and "out of bounds" in str(e):  # a local (unchecked) array
        return OutOfBoundsError(f"{ctx.where(line, file)}: {e}")
    return NodeExecutionError(f"{ctx.where(line, file)}: raised {type(e).__name__}: {e}")
