"""The ``cpu`` back end: root graphs compiled with Numba, parallel over instances, GIL released."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ...errors import HPVMError, OutOfBoundsError
from ...ir.bodies import GENERATED, LLVM, PYTHON
from ...ir.graph import InternalFunction, Node
from ...ir.types import ArrayType, ScalarType
from ...ir.weakid import WeakIdTable
from ...passes import lower
from ...passes.clone_leaves import CloneLeaves
from ...passes.fuse_one_to_one import FuseOneToOne
from ..base import Backend, DirectCall, RunContext, StageBatch
from ..bounds import SizeOutOfBounds
from .batch import BatchLayout, scalar_stage
from .compiler import COMPILE_LOCK, CompiledProgram, Compiler
from .loop_errors import ChunkCompileError
from .mallocpool import MallocStats
from .native import native_calls
from .raised import node_error
from .stagerun import converted, scalar_converts, stage_run, stage_spec

_stage_threads = threading.local()


class CPUBackend(Backend):
    """Seed 001's DFG2LLVM_CPU, with replicated nodes run in parallel."""

    name = "cpu"
    device = "host"
    #: Python leaves, and LLVM ones (``llvm_native``: linked into the graph code).
    accepts = frozenset({PYTHON, GENERATED, LLVM})
    pointer_ports = True  # (a NumPy array, as any array port)
    outer_instance = True  # run_stage: RunContext.instance as the root's level
    runs_quick_on_launch = True  # (compiled leaves: runtime/quick.py)
    fuses_streams = True  # (run_stage_batch: one compiled batch loop; runtime/streaming.py)
    stage_replicas = True  # (compiled stages release the GIL: runtime/replicas.py)

    def __init__(self) -> None:
        #: Checked mode (``checked.py``): leaves' indices guarded. Off unless
        #: ``HPVM_CPU_CHECKED=1`` was set when the back end was made; ``configure`` sets it.
        self.checked = os.environ.get("HPVM_CPU_CHECKED", "") == "1"
        self.compiler = Compiler(self.checked)
        self._lowered: weakref.WeakKeyDictionary[InternalFunction, InternalFunction] = (
            weakref.WeakKeyDictionary()
        )
        # Root -> its run with everything resolved once (``_runner``).
        # (by identity, weakly: a ``WeakKeyDictionary.get`` per launch cost more: ``ir/weakid.py``)
        self._runners: WeakIdTable[
            InternalFunction, Callable[[Sequence[Any], int | None], tuple[Any, ...]]
        ] = WeakIdTable()
        # Lowered root -> stage (its nodes' names) -> how its batches run in a compiled loop
        # (None: item by item, a stage with array values).
        self._layouts: weakref.WeakKeyDictionary[
            InternalFunction, dict[tuple[str, ...], BatchLayout | None]
        ] = weakref.WeakKeyDictionary()
        # The other mode's compiler, runners and layouts, kept while this one is in use.
        self._other: tuple[Compiler, WeakIdTable[Any, Any], weakref.WeakKeyDictionary[Any, Any]] | None = None

    def set_checked(self, checked: bool) -> None:
        """Switch checked mode. Each mode keeps its own compiled programs, runners and
        stage layouts (swapped, not looked up per launch: a warm launch's path stays as
        it is); a launch already running finishes in the mode it started in."""
        if checked == self.checked:
            return
        with COMPILE_LOCK:
            current = (self.compiler, self._runners, self._layouts)
            if self._other is None:
                self._other = (Compiler(checked), WeakIdTable(), weakref.WeakKeyDictionary())
            self.compiler, self._runners, self._layouts = self._other
            self._other = current
            self.checked = checked
            self.runners_version += 1  # (replays recorded in the other mode are stale)

    #: The passes a graph goes through before it is compiled: which nodes share a loop nest
    #: (``graphgen.py`` reads ``fuse``), then the leaves cloned with their context (the
    #: compiler reads the clones).
    lowering = (FuseOneToOne("loop"), CloneLeaves("cpu"))

    def prepare(self, root: InternalFunction) -> CompiledProgram:
        """Generate and register the program's functions (Numba compiles them on first call),
        for ``root`` lowered by ``lowering`` (once per root). Once done, no lock: every
        launch comes here."""
        lowered = self._lowered.get(root)
        if lowered is not None:
            return self.compiler.program(lowered)  # (lock-free once compiled)
        with COMPILE_LOCK:  # (the passes parse leaves: see COMPILE_LOCK)
            lowered = self._lowered.get(root)
            if lowered is None:
                lowered = self._lowered[root] = lower(root, self.lowering)
            return self.compiler.program(lowered)

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:
        """Generate the code and have Numba compile it (or load it from its cache) now."""
        import numba

        program = self.prepare(root)
        values = (*_convert(root, args), program.root_ctx(), *program.pool_args(None))
        self._call(program, program.entry.compile, (tuple(numba.typeof(v) for v in values),))

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        ctx = self.checked_context(root, args, ctx)
        return self.runner(root)(args, ctx.threads)

    def runner(self, root: InternalFunction) -> Callable[[Sequence[Any], int | None], tuple[Any, ...]]:
        """``root``'s run with everything resolved once (``_runner``), made on first use: what
        ``run`` calls, and what a replayed launch calls directly (``Backend.runner``)."""
        runner = self._runners.get(root)
        if runner is None:
            runner = self._runners.set(root, self._runner(self.prepare(root)))
        return runner

    def _runner(self, program: CompiledProgram) -> Callable[[Sequence[Any], int | None], tuple[Any, ...]]:
        """One run of ``program``'s root graph, with what does not change between runs
        resolved once (the entry, the context tuple, which scalars need converting, the
        pools). A warm launch of a tiny graph costs about what a Numba call costs, so the
        few microseconds of looking these up per launch were a good part of its overhead.

        A scalar already of the port's NumPy type (a ``np.float32`` for an ``f32`` port: the
        stencil's coefficients), or of the type Numba would give its converted value (a
        Python ``int`` for an ``i64`` port, ``float`` for ``f64``, ``bool`` for ``bool``), is
        passed as it is: the same compiled signature, without making a NumPy scalar
        (0.3–1.3 µs each).
        ``threads`` (``RunContext.threads``) caps the calling thread's Numba threads for
        the run (``_thread_count``)."""
        entry, call, root_ctx = program.entry, self._call, program.root_ctx()
        one_call = self._entry_call(program)  # (``_call``'s common case, without its frame)
        converts = scalar_converts(program)
        results = program.convert_results
        plain = not program.scalar_outs  # (the compiled entry's tuple is the result as it is)
        flow, pools = program.flow, program.pools
        recycle = flow is not None and not flow.root_escapes()
        get_threads, set_threads = _thread_count()

        def run(args: Sequence[Any], threads: int | None) -> tuple[Any, ...]:
            values = converted(args, converts) if converts else args
            if threads == 1 and one_call is not None:
                single = program.single
                if single is None:  # (compiled now: ``False`` where it does not compile)
                    single = self.compiler.single(program) or False
                if single is not False:  # (the root without parallel loops: no thread count to set)
                    try:
                        result = single(*values, root_ctx)
                    except Exception as e:
                        one_call.failed(values, e)
                    return result if plain and type(result) is tuple else results(result)
            before = 0  # (one function, not a run in a thread-count wrapper: a frame less)
            if threads is not None:
                before = get_threads()
                set_threads(min(threads, before))
            try:
                if flow is None:
                    if one_call is not None:
                        try:
                            result = entry(*values, root_ctx)
                        except Exception as e:
                            one_call.failed(values, e)
                    else:
                        result = call(program, entry, (*values, root_ctx))
                    return result if plain and type(result) is tuple else results(result)
                pool = pools.checkout(recycle)
                try:
                    result = call(program, entry, (*values, root_ctx, *program.pool_args(pool)))
                finally:
                    pools.checkin(pool, recycle)
                return results(result)
            finally:
                if before:
                    set_threads(before)

        return run

    def direct(
        self, root: InternalFunction, args: Sequence[Any], one_thread: bool = False, native: bool = False
    ) -> DirectCall | None:
        """The runner's one call (``_entry_call``) where ``run`` is that call and nothing
        else: no scalar of ``args`` that ``converted`` would convert (``SAME_TYPING``: the
        stencil's ``np.float32`` coefficients for ``f32`` ports pass as they are). A root
        with scalar outputs (GenHPVM binds a leaf's byte size up to the root) gets its
        ``results``, the runner's conversion of them to the ports' NumPy types (its native
        calls make them: ``NativeCall.makers``). Its ``single`` is the root's
        function without parallel loops (``Compiler.single``) where it compiled — made now
        for ``one_thread`` (a replay is recorded after its launch's run: not a timed one),
        else only where a run on one thread made it already. Its ``native`` and
        ``native_single`` are the two called past Numba's dispatcher (``native.py``),
        compiled now for ``native``, else only where compiled already."""
        program = self.prepare(root)
        one_call = self._entry_call(program)
        if one_call is None:
            return None
        for i, convert, same in scalar_converts(program):
            kind = type(args[i])
            if kind is not convert and kind is not same:
                return None
        if one_thread and program.single is None:
            self.compiler.single(program)
        single = program.single or None
        results = program.convert_results if program.scalar_outs else None
        made = native_calls(self.compiler, program, (program.entry, single), args, native)
        return one_call._replace(single=single, native=made[0], native_single=made[1], results=results)

    def _entry_call(self, program: CompiledProgram) -> DirectCall | None:
        """``program``'s compiled entry called with its root context, its errors raised as
        ``_failed`` words them — where a run is that call (no LLVM leaf's heap, no pools):
        what the runner calls (``_runner``) and a replay calls itself (``direct``)."""
        if program.llvm_heap or program.flow is not None:
            return None
        failed, root_ctx = self._failed, program.root_ctx()

        def fail(values: Sequence[Any], error: Exception) -> NoReturn:
            failed(program, (*values, root_ctx), error)

        return DirectCall(program.entry, root_ctx, fail)

    def loop_threads(self) -> int:
        """Numba's threads: every replicated node's loop is spread over all of them."""
        import numba

        return int(numba.config.NUMBA_NUM_THREADS)

    def malloc_stats(self, root: InternalFunction) -> MallocStats:
        """What ``hpvm.malloc`` did in ``root``'s runs so far (buffers reused or allocated).

        An introspection hook (tests, benchmarks): see ``mallocpool.MallocStats``. All zero
        for a root whose leaves do not call ``malloc`` or have not run.
        """
        program = self.prepare(root)
        return program.pools.stats

    def run_stage(self, root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        """One item of a streamed stage, through its run resolved once (``stagerun.py``)."""
        program = self.prepare(root)
        self._share_cores(ctx.stages if ctx is not None else 1)
        return stage_run(self, program, nodes)(args, upstream, ctx.instance if ctx is not None else ())

    def run_stage_batch(self, root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        """A stage of scalars runs its items in one compiled loop (``batch.py``); any other
        stage item by item."""
        program = self.prepare(root)
        layout = self._layout(program, nodes)
        if layout is None or len(args_list) < 2:
            return super().run_stage_batch(root, args_list, nodes, upstream_list, ctx)
        self._share_cores(ctx.stages if ctx is not None else 1)
        loop = layout.loop
        count = len(args_list)
        ins, imports = layout.in_columns(args_list), layout.import_columns(upstream_list)
        outs = layout.out_columns(count)
        batch = StageBatch([], [])
        lo = 0
        while lo < count:
            pool = program.pools.checkout(True) if program.pooled else None
            hi = lo
            try:
                pool_args = program.pool_args(pool) if pool is not None else ()
                hi = loop(lo, count, *ins, program.root_ctx(), *pool_args, *imports, *outs)
            except Exception:  # raised past the loop's handler: run them item by item
                rest = super().run_stage_batch(root, args_list[lo:], nodes, upstream_list[lo:], ctx)
                batch.produced += rest.produced
                batch.outputs += rest.outputs
                batch.error = rest.error
                return batch
            finally:
                if pool is not None:
                    program.pools.checkin(pool, True, runs=hi - lo)
            produced, outputs = layout.rows(outs, lo, hi)
            batch.produced += produced
            batch.outputs += outputs
            if hi == count:
                break
            try:  # item ``hi`` raised: run it alone, for its error as any item raises it
                produced_one, outputs_one = self.run_stage(root, args_list[hi], nodes, upstream_list[hi], ctx)
            except BaseException as e:
                batch.error = e
                break
            batch.produced.append(produced_one)
            batch.outputs.append(outputs_one)
            lo = hi + 1
        return batch

    def _layout(self, program: CompiledProgram, nodes: Sequence[Node]) -> BatchLayout | None:
        """How the stage of ``nodes`` lays a batch out in columns; None: it has array values."""
        lowered = program.root
        layouts = self._layouts.get(lowered)
        if layouts is None:
            layouts = self._layouts.setdefault(lowered, {})
        key = tuple(n.name for n in nodes)
        if key not in layouts:
            spec = stage_spec(lowered, [lowered.graph.node(name) for name in key])
            _, spec = self.compiler.stage(program, spec)
            layout = BatchLayout.of(lowered, spec) if scalar_stage(lowered, spec) else None
            if layout is not None and not self._compile_batch(program, layout):
                layout = None
            layouts[key] = layout
        return layouts[key]

    def _compile_batch(self, program: CompiledProgram, layout: BatchLayout) -> bool:
        """Compile a stage's batch loop now (with its first item, which compiles the stage
        anyway), not in the middle of the stream: run it on an empty batch. False: it does
        not compile — the stage then runs item by item, and its own compile error, naming
        the leaf, is what its first item raises."""
        from numba.core.errors import NumbaError

        loop = self.compiler.stage_batch(program, layout.spec)
        empty = layout.out_columns(0)
        try:
            loop(
                0,
                0,
                *layout.in_columns([]),
                program.root_ctx(),
                *program.pool_args(None),
                *layout.import_columns([]),
                *empty,
            )
        except NumbaError:
            return False
        layout.loop = loop
        return True

    def export_outputs(
        self, node: Node, sizes: tuple[int, ...], produced: Any, ctx: RunContext | None = None
    ) -> dict[tuple[int, str], Any]:
        # An array port crosses as the one shared array (``"last"``), whatever edge asked for it.
        types = node.function.out_types
        return {
            (p, "last" if isinstance(types[p], ArrayType) else mode): v for (p, mode), v in produced.items()
        }

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[tuple[int, str], Any]) -> Any:
        types = node.function.out_types
        arrays = {(p, "each"): v for (p, mode), v in values.items() if isinstance(types[p], ArrayType)}
        return {**values, **arrays}

    def _share_cores(self, stages: int) -> None:
        """Give each pipeline stage its share of the cores (set once per stage thread).

        The ``stages`` stages of a streaming launch (the run context says how many) already
        run concurrently; letting each also use every core for its own parallel loops
        oversubscribes the machine, so a stage's loops get ``cores // stages`` threads (at
        least one).
        """
        if getattr(_stage_threads, "stages", None) == stages:
            return
        import numba

        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS // max(1, stages)))
        _stage_threads.stages = stages

    def _located(self, program: CompiledProgram, args: tuple[Any, ...], error: Exception) -> HPVMError:
        """A compile error naming the leaf and line: recompile without inlining to find them.

        Only compiles (nothing runs twice). The root's own entry is compiled with the same
        argument types; if that variant compiles, the original message is reported.
        """
        import numba
        from numba.core.errors import NumbaError

        located = program.describe_error(error)
        if "cannot compile graph" not in str(located) or len(args) != len(program.root.params) + 1 + len(
            program.pool_args(None)
        ):
            return located
        diagnostic = self.compiler.diagnostic(program.root)
        try:
            diagnostic.entry.compile(tuple(numba.typeof(v) for v in args))
        except NumbaError as e:
            return diagnostic.describe_error(e)
        except ChunkCompileError as e:
            return diagnostic.describe_error(e.error)
        except Exception:
            pass
        return located

    def _call(self, program: CompiledProgram, func: Any, args: tuple[Any, ...]) -> Any:
        try:
            if not program.llvm_heap:
                return func(*args)
            # (imported here: a graph without LLVM leaves never loads llvm_native, ~12 ms of
            # every warm start)
            from ..llvm_native.host import HEAP

            with HEAP.launch():  # what LLVM leaves malloc lives until the launch ends
                result = func(*args)
                return tuple(HEAP.adopt(v) for v in result) if isinstance(result, tuple) else result
        except Exception as e:
            self._failed(program, args, e)

    def _failed(self, program: CompiledProgram, args: tuple[Any, ...], error: Exception) -> NoReturn:
        """Raise what ``error``, raised by a call of ``program``'s compiled code with
        ``args``, means to the user (apart from ``_call``: a runner calls a graph without
        LLVM leaves directly, one frame less per launch, and comes here only on an error)."""
        try:
            raise error
        except SizeOutOfBounds as e:  # (a subclass only to be raised by compiled code)
            raise OutOfBoundsError(str(e)) from None
        except HPVMError:
            raise
        except ChunkCompileError as e:
            raise self._located(program, args, e.error) from None
        except Exception as e:
            # (imported here, not per call: every warm launch comes through this function)
            from numba.core.errors import NumbaError

            if isinstance(e, NumbaError):
                raise self._located(program, args, e) from None
            leaves = [(clone.user, clone.leaf) for clone in program.clones.values()]
            error = node_error(program.root, leaves, e)  # (an LLVM leaf's: caused by what it raised)
            raise error from (error.__cause__ or e)


def _thread_count() -> tuple[Callable[[], int], Callable[[int], None]]:
    """Numba's getter and setter of the calling thread's thread count. Numba's own
    low-level ones where this Numba has them (``numba.set_num_threads`` checks its argument
    and starts the pool on every call: 2 µs, against the 10 µs a run on one thread saves),
    else the public ones."""
    import numba
    from numba.np.ufunc import parallel

    numba.get_num_threads()  # (starts Numba's threads: the low-level ones exist after)
    get = getattr(parallel, "_get_num_threads", None)
    put = getattr(parallel, "_set_num_threads", None)
    if callable(get) and callable(put):
        return get, put
    return numba.get_num_threads, numba.set_num_threads


def _convert(root: InternalFunction, args: Sequence[Any]) -> list[Any]:
    """Scalars as their port's NumPy type, so Numba specialises on the declared types."""
    return [p.type.dtype.type(a) if isinstance(p.type, ScalarType) else a for p, a in zip(root.params, args)]
