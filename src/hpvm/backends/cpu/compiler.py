"""Turning a root graph into Numba-compiled functions, cached in memory and on disk.

Leaf clones are compiled in a module namespace holding the leaf's own globals (so the
leaf sees its imports, constants and helpers), with the user's file as their file name:
Numba's messages then point at the user's lines, and its on-disk cache (keyed by that
file) lets a second process skip compilation. Graph functions are written to a generated
source file in the hpvm cache directory, named by the hash of their text, for the same
reason. Each generated module is registered in ``sys.modules`` so Numba can find it again
when it loads a cached function.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CompileError, LaunchError
from ...ir import instance_context as ictx
from ...ir import pyast
from ...ir.bodies import LLVM
from ...ir.cache import cache_root, prune_graphs, used, write_whole
from ...ir.graph import InternalFunction, LeafFunction, functions
from ...ir.scratch import covering_llvm_store, llvm_argument, plain_llvm_allocation
from ...ir.types import ScalarType
from ...passes.clone_leaves import LeafClone, clone_of
from ..bounds import SizeOutOfBounds, past_end
from ..numba_shared.messages import describe_numba_error
from .checked import CHECKED_VERSION, checked_func, checked_group, checked_helpers
from .graphgen import GraphGen, StageSpec, constant_extents
from .loadpre import without_loop_load_pre
from .loop_errors import loop_error_helpers
from .mallocpool import BufferPools, MallocFlow, Pool, pool_helpers, poolable, pooled_clone, uses_malloc
from .narrow import narrow_helpers
from .native import SYMBOL, native_helpers, wrapper_source
from .parallel_for import parallel_for_helpers
from .privatize import plain_helpers
from .restrict import disjoint_helpers, restrict
from .scratch import INLINED, scratch_plans
from .sizes import truncation_helpers
from .views import view_helpers

# Held while leaves are parsed, lowered and compiled: CPython 3.11 can fail to build ASTs in
# two threads at once ("AST constructor recursion depth mismatch", python/cpython#106905), and
# launches compile on worker threads.
COMPILE_LOCK = threading.RLock()
# Bump when generated code or its module layout changes (6: error model; 7: outlined loops;
# 9: loops written outlined, chunk functions as the generator writes them; 10: the prange
# index cast to int64 in chunk bounds, so a chunk function compiles once; 11: barrier group
# functions view buffers with views.py's __hpvm_view; the pooled malloc inlined; 12: LLVM
# leaves' multi-id affine accesses checked by span checks in the graph code; 13: two chunk
# functions per parallel 2-D/3-D loop, the innermost id masked or not, picked before the loop;
# 14: the common case's chunk function bounds the innermost loop below 2^32 instead of masking
# the id, is compiled with noalias arrays and inlined, and is picked only for disjoint arrays;
# 15: graph code compiled without LLVM's load PRE in loops, loadpre.py; 16: the other chunk
# function is called through __hpvm_try_call_noinline — the cache holds code; 17: scratch
# buffers made once per chunk of parent instances, scratch.py; 18: LLVM leaves' heap mark and
# release take the thread's heap once, host.HOST_ENTER and HOST_LEAVE; 19: a graph function's
# input named like a keyword, a builtin or a global of the generated code is renamed,
# graphscope.input_name; 20: HPVM-C allocation nodes' scratch buffers made once per chunk
# too, and a plan that always zero-fills gets one loop; 21: an HPVM-C barrier leaf's covering
# store proven on its LLVM, ir/scratch.covering_llvm_store: such a buffer is not zero-filled;
# 22: a Python leaf with a loop its neighbouring instances share runs jammed, jam.py;
# 23: parallel loops call Numba's threading layer through __hpvm_parallel_for, no prange;
# 24: __hpvm_parallel_for's chunks borrow the packed arrays, no reference counting;
# 25: its locals passed one by one, constants reaching the task as literals).
CODEGEN_VERSION = 25
# Leaves and graph functions are compiled with NumPy's error model: division never raises
# (IEEE 754 for floats, 0 for integer // and % by zero), as on every back end
# (docs/semantics.md §7). Numba's default, "python", raises ZeroDivisionError — and only in
# sequential code: parallel loops already used "numpy". Numba's disk cache does not key on
# the error model, so code cached before must not be found again: CODEGEN_VERSION names it.
ERROR_MODEL = "numpy"


def cache_dir() -> Path:
    """Where generated sources live: ``$HPVM_CACHE_DIR`` or ``~/.cache/hpvm``."""
    path = cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _heap_helpers() -> dict[str, Any]:
    """The host heap's mark and release for graph code (only graphs whose LLVM leaves
    ``malloc`` load ``llvm_native``)."""
    from ..llvm_native.numba_call import heap_helpers

    return heap_helpers()


def _llvm_plain_allocation(leaf: LeafFunction) -> bool:
    """Whether the LLVM leaf's node function is a plain allocation (``ir/scratch.py``'s LLVM
    form): then its buffer may be made once per chunk of parent instances (``scratch.py``)."""
    from ..llvm_native.access import printed_function

    printed = printed_function(leaf.body)  # type: ignore[arg-type]
    return printed is not None and plain_llvm_allocation(printed[0])


def _llvm_covering_store(leaf: LeafFunction, param: str) -> int | None:
    """The bytes each instance of the LLVM barrier leaf stores of its buffer ``param`` before
    anything reads it (``ir/scratch.covering_llvm_store``): then a hoisted buffer it alone
    consumes need not be zero-filled for every parent instance (``scratch.py``)."""
    from ..llvm_native.access import printed_function

    printed = printed_function(leaf.body)  # type: ignore[arg-type]
    return None if printed is None else covering_llvm_store(printed[0], llvm_argument(leaf.params, param))


def _runtime_helpers() -> dict[str, Any]:
    """Names every generated module can use: atomics, malloc, barrier marker, errors."""
    from ..numba_shared import atomics

    helpers: dict[str, Any] = {
        "np": np,
        "__hpvm_LaunchError": LaunchError,
        "__hpvm_SizeOutOfBounds": SizeOutOfBounds,
        "__hpvm_past_end": _past_end(),
        "__hpvm_malloc": _malloc(),
        **pool_helpers(),
        **plain_helpers(),
        **narrow_helpers(),
        **disjoint_helpers(),
        **view_helpers(),
        **loop_error_helpers(),
        **parallel_for_helpers(),
        **truncation_helpers(),
    }
    for op in atomics.ATOMIC_OPS:
        helpers[f"__hpvm_atomic_{op}"] = getattr(atomics, f"atomic_{op}")
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
    ):
        helpers[f"__hpvm_dt_{name}"] = np.dtype(name).type
    return helpers


_MALLOC: Any = None
_PAST_END: Any = None


def _past_end() -> Any:
    """``bounds.past_end`` compiled, for the bounds checks of generated graph code."""
    global _PAST_END
    if _PAST_END is None:
        import numba

        _PAST_END = numba.njit(nogil=True)(past_end)
    return _PAST_END


def _malloc() -> Any:
    global _MALLOC
    if _MALLOC is None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def hpvm_malloc(nbytes):  # type: ignore[no-untyped-def]
            return np.zeros(nbytes, np.uint8)

        _MALLOC = hpvm_malloc
    return _MALLOC


def _module(name: str, file: str, namespace: dict[str, Any]) -> types.ModuleType:
    parent = name.split(".")[0]
    if parent not in sys.modules:  # the parent package, for importlib on cache loads
        package = types.ModuleType(parent)
        package.__path__ = []
        sys.modules[parent] = package
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    module.__file__ = file
    module.__name__ = name
    sys.modules[name] = module
    return module


def _cacheable(file: str) -> bool:
    return os.path.isfile(file)


@dataclass
class CompiledProgram:
    """The compiled form of one root graph."""

    root: InternalFunction
    levels: int
    entry: Any  # the root's parallel graph function
    stages: dict[tuple[int, ...], tuple[Any, StageSpec]] = field(default_factory=dict)
    batches: dict[tuple[int, ...], Any] = field(default_factory=dict)  # stage key -> its batch loop
    # stage (its nodes' names) -> its run, resolved once (stagerun.py)
    stage_runs: dict[tuple[str, ...], Any] = field(default_factory=dict)
    gen: GraphGen | None = None
    module: types.ModuleType | None = None
    clones: dict[int, LeafClone] = field(default_factory=dict)
    # malloc pools (mallocpool.py): set when a leaf without barriers calls malloc
    flow: MallocFlow | None = None
    pools: BufferPools = field(default_factory=BufferPools)
    # an LLVM leaf calls llvm.hpvm.malloc: launches hold the host heap (llvm_native/host.py)
    llvm_heap: bool = False
    # the root's graph function without parallel loops, a run on one thread's (``Compiler.single``):
    # ``None`` until asked for, ``False`` where it did not compile
    single: Any = None
    # (function symbol, signature) -> its wrapper called from C (``Compiler.native``), or ``None``
    natives: dict[tuple[str, tuple[Any, ...]], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Made once: a launch's host path is a few microseconds of Python per step.
        self._ctx = ictx.ROOT * self.levels
        self.scalar_ins = [
            (i, p.type.dtype.type) for i, p in enumerate(self.root.params) if isinstance(p.type, ScalarType)
        ]
        self.scalar_outs = [
            (i, t.dtype.type) for i, t in enumerate(self.root.out_types) if isinstance(t, ScalarType)
        ]

    def root_ctx(self, instance: tuple[int, ...] = ()) -> tuple[int, ...]:
        """The context the root's children extend: the root's level (``instance``: the
        level of the mixed node instance this run is, ``RunContext.instance``), then the
        root's above it."""
        if not instance:
            return self._ctx
        return (tuple(instance) + self._ctx)[: len(self._ctx)]

    def convert_args(self, args: Any) -> list[Any]:
        """Scalars as their port's NumPy type, so Numba specialises on the declared types."""
        values = list(args)
        for i, convert in self.scalar_ins:
            values[i] = convert(values[i])
        return values

    def convert_results(self, values: Any) -> tuple[Any, ...]:
        """Root outputs as the interpreter gives them: scalars as their port's NumPy type."""
        if not self.scalar_outs:
            return tuple(values)
        results = list(values)
        for i, convert in self.scalar_outs:
            results[i] = convert(results[i])
        return tuple(results)

    @property
    def pooled(self) -> bool:
        """Whether the graph functions take a malloc pool after the context tuple."""
        return self.flow is not None

    def describe_error(self, error: Exception) -> CompileError:
        """A ``CompileError`` naming the leaf and line Numba failed on, from Numba's message."""
        # (LLVM leaves have no Python lines to point at: their errors name them in the text)
        leaves = [clone.user for clone in self.clones.values() if clone.user.body_kind != LLVM]
        return describe_numba_error(error, leaves, "cpu", "Numba", f"graph '{self.root.name}'")

    def pool_args(self, pool: Pool | None) -> tuple[Any, ...]:
        """The arguments that follow the context tuple: the pool's arena and state, if pooled."""
        if self.flow is None:
            return ()
        pool = pool or Pool(1)
        return (pool.arena, pool.state)


@dataclass
class _LLVMDispatchers:
    one: Any  # one instance
    group: Any = None  # every instance of a parent instance, as coroutines (barriers)


def _llvm_clone(
    leaf: LeafFunction, checked: bool = False, plain_group: bool = True
) -> tuple[LeafClone, tuple[str, str | None, dict[str, Any]]]:
    """An LLVM leaf's clone for the graph code (``llvm_native``): a ``LeafClone`` whose
    function calls the leaf's LLVM through a Numba intrinsic, like a Python leaf's clone.
    Its symbol carries the LLVM clone's digest, so Numba's disk cache of graph functions
    (keyed by their text) never serves code of an edited leaf — nor checked code
    (``checked``: ``llvm_native/checked.py``) for unchecked. ``plain_group`` false: no node
    calls the plain work-item runner (each runs a copy for its constant extents), which is
    then not compiled."""
    from ...passes.clone_leaves import generated_clone, symbol_for
    from ..llvm_native.native import native_leaf
    from ..llvm_native.numba_call import leaf_wrappers

    native = native_leaf(leaf, checked=checked)
    symbol = f"{symbol_for(leaf, 'llvm')}_{native.digest[:10]}"
    source, group, names, native = leaf_wrappers(leaf, symbol, checked, plain_group)
    line = leaf.location.line or 1  # messages point at the leaf's define
    barriers = [line] if native.uses_barrier else []
    return generated_clone(leaf, symbol, source, line, native.levels, barriers), (source, group, names)


def _llvm_wrapper(
    symbol: str, leaf: LeafFunction, source: str, namespace: dict[str, Any], inline: bool
) -> tuple[types.ModuleType, Any]:
    """``source`` (an LLVM leaf's wrapper functions, ``numba_call.py``) run in a module of its
    own, and its function ``symbol`` compiled by Numba (inlined into its callers unless
    ``inline`` is off: diagnostic compiles)."""
    import numba

    prefix = "hpvm_generated" if inline else "hpvm_diagnostic"
    module = _module(f"{prefix}.{symbol}", leaf.location.file, namespace)
    exec(compile(source, leaf.location.file, "exec"), module.__dict__)
    options = {"inline": "always"} if inline else {}
    module.__dict__[symbol] = numba.njit(nogil=True, error_model=ERROR_MODEL, **options)(
        module.__dict__[symbol]
    )
    return module, module.__dict__[symbol]


def _compile_llvm_leaf(
    clone: LeafClone, sources: tuple[str, str | None, dict[str, Any]], helpers: dict[str, Any], inline: bool
) -> tuple[str | None, _LLVMDispatchers]:
    """The LLVM leaf's wrappers compiled by Numba (never cached on disk: the intrinsic links
    the leaf's module in when it is compiled; the graph functions that inline it are cached,
    named by its digest). Returns the group function's symbol (leaves with barriers) and
    the dispatchers."""
    import numba

    source, group, names = sources
    module, one = _llvm_wrapper(
        clone.symbol, clone.leaf, source + (group or ""), {**helpers, **names}, inline
    )
    if group is None:
        return None, _LLVMDispatchers(one)
    symbol = f"{clone.symbol}_group"
    dispatcher = numba.njit(nogil=True, error_model=ERROR_MODEL)(module.__dict__[symbol])
    return symbol, _LLVMDispatchers(one, dispatcher)


def _llvm_jammer(
    clones: dict[int, LeafClone], helpers: dict[str, Any], inline: bool
) -> Callable[[LeafFunction, int, int], tuple[str, Any] | None]:
    """``GraphGen``'s maker of an LLVM leaf's jammed wrapper (``llvm_native/wijam.py``):
    (leaf, axis, width) -> its symbol and Numba dispatcher, or ``None`` where the leaf is
    not jammed. Named by the clone's symbol (its digest), the axis and the width."""

    def jammed(leaf: LeafFunction, axis: int, width: int) -> tuple[str, Any] | None:
        from ..llvm_native.native import native_leaf
        from ..llvm_native.numba_call import jam_wrapper

        clone = clones[id(leaf)]
        symbol = f"{clone.symbol}_jam{axis}w{width}"
        made = jam_wrapper(leaf, native_leaf(leaf), symbol, axis, width)
        if isinstance(made, str):
            return None
        source, names = made
        return symbol, _llvm_wrapper(symbol, leaf, source, {**helpers, **names}, inline)[1]

    return jammed


def _llvm_grouper(
    clones: dict[int, LeafClone], helpers: dict[str, Any]
) -> Callable[[LeafFunction, tuple[int, int, int]], tuple[str, Any] | None]:
    """``GraphGen``'s maker of an LLVM barrier leaf's group function for constant extents
    (``llvm_native/wispecial.py``): (leaf, extents) -> its symbol and Numba dispatcher, or
    ``None`` where the leaf runs as coroutines. Named by the clone's symbol (its digest) and
    the extents."""

    def grouped(leaf: LeafFunction, extents: tuple[int, int, int]) -> tuple[str, Any] | None:
        from ..llvm_native.native import native_leaf
        from ..llvm_native.numba_call import group_wrapper

        symbol = f"{clones[id(leaf)].symbol}_group_k{'x'.join(str(e) for e in extents)}"
        made = group_wrapper(leaf, native_leaf(leaf), symbol, extents)
        if made is None:
            return None
        source, names = made
        return symbol, _llvm_wrapper(symbol, leaf, source, {**helpers, **names}, inline=False)[1]

    return grouped


class Compiler:
    """Compiles root graphs (once each) for the cpu back end; ``checked``: with every leaf's
    indices guarded (``checked.py``). Checked code is apart from unchecked code everywhere
    it is kept: its modules are named ``hpvm_checked.*``, its generated files carry
    ``checked`` in their header (so their hash, and Numba's cache entries, differ), and its
    leaf clones' bytecode holds the guards (Numba keys a leaf's disk cache by it)."""

    def __init__(self, checked: bool = False) -> None:
        self.checked = checked
        self._programs: dict[int, tuple[InternalFunction, CompiledProgram]] = {}

    def _prefix(self, inline: bool) -> str:
        """The ``sys.modules`` package of generated modules: never mixed up between the
        diagnostic variant, checked and unchecked code."""
        if not inline:
            return "hpvm_diagnostic_checked" if self.checked else "hpvm_diagnostic"
        return "hpvm_checked" if self.checked else "hpvm_generated"

    def _leaf_cache(self, inline: bool, file: str) -> bool:
        """Whether a leaf's own functions (clones, barrier group functions) use Numba's disk
        cache: not the diagnostic variant, and not checked code — Numba keys those entries
        by the function's name, file and bytecode, which a leaf without a guarded index (or a
        group function) has alike in both modes, and a cached function names the module it
        was compiled in: checked code found the unchecked entry, or failed to import its
        module. (Graph functions stay cached: their files differ.)"""
        return inline and not self.checked and _cacheable(file)

    def _leaf_tree(self, clone: LeafClone) -> ast.Module:
        """The module compiling ``clone``'s def: guarded in checked mode."""
        func = checked_func(clone) if self.checked else clone.func
        return ast.Module(body=[func], type_ignores=[])

    def program(self, root: InternalFunction) -> CompiledProgram:
        entry = self._programs.get(id(root))  # (a dict read is atomic: no lock once compiled)
        if entry is not None and entry[0] is root:
            return entry[1]
        with COMPILE_LOCK:
            entry = self._programs.get(id(root))
            if entry is not None and entry[0] is root:
                return entry[1]
            program = self._compile(root)
            self._programs[id(root)] = (root, program)
            return program

    def diagnostic(self, root: InternalFunction) -> CompiledProgram:
        """The program with leaves compiled as separate functions, not inlined.

        Inlining (what makes per-instance leaf calls as cheap as a hand-written loop body)
        happens on Numba's IR, where a type error loses the leaf's file and line; this
        variant is compiled only to report such errors precisely. Not kept.
        """
        with COMPILE_LOCK:
            return self._compile(root, inline=False)

    def _compile(self, root: InternalFunction, inline: bool = True) -> CompiledProgram:
        import numba

        from ..llvm_native import wispecial

        helpers = _runtime_helpers()
        leaves = [fn for fn in functions(root) if isinstance(fn, LeafFunction)]
        # The CloneLeaves pass made the Python leaves' clones; LLVM leaves get theirs here.
        llvm_sources: dict[int, tuple[str, str | None, dict[str, Any]]] = {}
        clones = {}
        specialize = not self.checked and wispecial.SPECIALIZE
        computed = {  # leaves with a node whose extents are computed at launch: the plain runner
            id(n.function)
            for fn in functions(root)
            if isinstance(fn, InternalFunction)
            for n in fn.graph.nodes
            if not specialize or constant_extents(n) is None
        }
        for leaf in leaves:
            if leaf.body_kind == LLVM:
                clones[id(leaf)], llvm_sources[id(leaf)] = _llvm_clone(
                    leaf, self.checked, id(leaf) in computed
                )
            else:
                clones[id(leaf)] = clone_of(leaf)
        # malloc in a leaf without barriers draws from the run's pool (mallocpool.py).
        pooled = frozenset(id(c.leaf) for c in clones.values() if poolable(c))
        for key in pooled:
            clones[key] = pooled_clone(clones[key])
        levels = max([1, *(c.levels for c in clones.values())])
        barrier_symbols: dict[int, str] = {}
        leaf_namespace: dict[str, Any] = {}
        for leaf in leaves:
            clone = clones[id(leaf)]
            if id(leaf) in llvm_sources:
                symbol, dispatcher = _compile_llvm_leaf(clone, llvm_sources[id(leaf)], helpers, inline)
                if symbol is not None:
                    leaf_namespace[symbol] = dispatcher.group
                    barrier_symbols[id(leaf)] = symbol
                leaf_namespace[clone.symbol] = dispatcher.one
                continue
            namespace = self._leaf_namespace(clone, helpers)
            module = _module(f"{self._prefix(inline)}.{clone.symbol}", leaf.location.file, namespace)
            code = pyast.compile_tree(self._leaf_tree(clone), leaf.location.file, "exec")
            exec(code, module.__dict__)
            cache = self._leaf_cache(inline, leaf.location.file)
            if clone.uses_barrier:
                from .barriers import group_source

                group = group_source(clone, [p.type for p in leaf.params], levels)
                symbol, source = group.symbol, group.source()
                # Named by a hash of its code, so Numba's disk cache never serves a stale one.
                digest = hashlib.sha1(f"{CODEGEN_VERSION}\n{source}".encode()).hexdigest()[:8]
                renamed = f"{symbol}_{digest}"
                source = source.replace(f"def {symbol}(", f"def {renamed}(", 1)
                symbol = renamed
                if self.checked:  # (its indices guarded as a clone's are: checked.py)
                    named = f"def {group.symbol}("
                    lines = [(t.replace(named, f"def {symbol}(", 1), n) for t, n in group.lines()]
                    tree = checked_group(clone.user, symbol, group.ir.file, lines)
                    exec(pyast.compile_tree(tree, leaf.location.file, "exec"), module.__dict__)
                else:
                    exec(pyast.compile_source(source, leaf.location.file), module.__dict__)
                # Inlined where a scratch loop runs it per parent instance (scratch.py): with
                # the loop free of calls, LLVM optimizes it across the group function. (Never
                # compiled on its own, so not cached: its entries would share the name.)
                leaf_namespace[f"{symbol}{INLINED}"] = numba.njit(
                    nogil=True, cache=False, error_model=ERROR_MODEL, inline="always"
                )(module.__dict__[symbol])
                module.__dict__[symbol] = numba.njit(
                    nogil=True, cache=cache, error_model=ERROR_MODEL, _nrt=group.refcounted() or self.checked
                )(module.__dict__[symbol])
                leaf_namespace[symbol] = module.__dict__[symbol]
                barrier_symbols[id(leaf)] = symbol
            options = {"inline": "always"} if inline else {}
            dispatcher = numba.njit(nogil=True, cache=cache, error_model=ERROR_MODEL, **options)(
                module.__dict__[clone.symbol]
            )
            module.__dict__[clone.symbol] = dispatcher
            leaf_namespace[clone.symbol] = dispatcher
        flow = None
        if pooled:
            malloc_leaves = {id(c.leaf) for c in clones.values() if uses_malloc(c) or id(c.leaf) in pooled}
            flow = MallocFlow(root, malloc_leaves)
        release = flow.releasing(pooled) if flow else frozenset()
        # LLVM leaves malloc from their thread's host heap: released with the parent instance
        # under the same rule (llvm_native/host.py).
        heap_leaves = frozenset(k for k, n in llvm_sources.items() if n[2]["__hpvm_native_leaf"].uses_malloc)
        heap_release = frozenset()
        if heap_leaves:
            everything = {id(c.leaf) for c in clones.values() if uses_malloc(c)} | pooled | heap_leaves
            heap_release = MallocFlow(root, everything).releasing(heap_leaves)
            leaf_namespace.update(_heap_helpers())
        scratch = scratch_plans(
            root,
            clones,
            pooled,
            release,
            heap_release,
            heap_leaves,
            _llvm_plain_allocation,
            _llvm_covering_store,
        )
        gen = GraphGen(
            levels,
            clones,
            barrier_symbols,
            pooled,
            release,
            heap_release,
            scratch,
            llvm_jam=None if self.checked else _llvm_jammer(clones, helpers, inline),
            llvm_group=None if self.checked or not wispecial.SPECIALIZE else _llvm_grouper(clones, helpers),
            jam=not self.checked,  # (checked guards name the instance of a clone's context)
        )
        entry_symbol = gen.graph_function(root, parallel=True)
        program = CompiledProgram(root, levels, None, gen=gen, clones=clones, flow=flow)
        program.llvm_heap = any(n[2]["__hpvm_native_leaf"].uses_malloc for n in llvm_sources.values())
        leaf_namespace.update(self._variants(gen, helpers, inline))
        program.module = self._graph_module(gen, helpers, leaf_namespace, cache=inline)
        program.entry = program.module.__dict__[entry_symbol]
        return program

    def _variants(self, gen: GraphGen, helpers: dict[str, Any], inline: bool = True) -> dict[str, Any]:
        """The leaf variants the generated code asked for (privatized atomics: privatize.py),
        each compiled once in its leaf's namespace like the clone: symbol -> dispatcher."""
        import numba

        for symbol, clone in gen.variants.items():
            if symbol in gen.compiled_variants:
                continue
            leaf = clone.user
            namespace = self._leaf_namespace(clone, helpers)
            module = _module(f"{self._prefix(inline)}.{symbol}", leaf.location.file, namespace)
            code = pyast.compile_tree(self._leaf_tree(clone), leaf.location.file, "exec")
            exec(code, module.__dict__)
            options = {"inline": "always"} if inline else {}
            cache = self._leaf_cache(inline, leaf.location.file)
            module.__dict__[symbol] = numba.njit(nogil=True, cache=cache, error_model=ERROR_MODEL, **options)(
                module.__dict__[symbol]
            )
            gen.compiled_variants[symbol] = module.__dict__[symbol]
        return dict(gen.compiled_variants)

    def stage(self, program: CompiledProgram, stage: StageSpec) -> Any:
        """The compiled stage function for a set of the root's children (streaming)."""
        key = tuple(sorted(id(n) for n in stage.nodes))
        with COMPILE_LOCK:
            if key not in program.stages:
                assert program.gen is not None
                before = len(program.gen.sources)
                # Numbered by the stage's nodes, not by arrival: the generated text (and so the
                # on-disk cache entry) must be the same in every process.
                position = {id(n): i for i, n in enumerate(program.root.graph.nodes)}
                number = "_".join(
                    str(position[id(n)]) for n in sorted(stage.nodes, key=lambda n: position[id(n)])
                )
                symbol = program.gen.stage_function(program.root, stage, number)
                module = self._companion(program, program.gen.sources[before:])
                program.stages[key] = (module.__dict__[symbol], stage)
            return program.stages[key]

    def single(self, program: CompiledProgram) -> Any:
        """The root's graph function without parallel loops, compiled for the signatures the
        parallel entry has (``CompiledProgram.single``): what a run on one thread calls
        (``quick.Runs.threads``), made on first use; ``None`` where it does not compile.

        Why a function of its own: Numba runs a ``prange`` on one thread through its
        threading layer all the same (a 64-element vector add took 1.9 µs that way, against
        0.25 µs for the same loop without ``prange``), and a run capped at one thread gets
        and sets the thread count around it (1.7–2.0 µs). A tiny graph's one-thread run,
        which ``Runs.threads`` picks only when it measured faster, was mostly those."""
        with COMPILE_LOCK:
            if program.single is None:
                program.single = self._single(program) or False
            return program.single or None

    def _single(self, program: CompiledProgram) -> Any:
        import numba

        assert program.gen is not None and program.module is not None
        before = len(program.gen.sources)
        symbol = program.gen.graph_function(program.root, parallel=False)
        added = program.gen.sources[before:]
        func = self._companion(program, added).__dict__[symbol] if added else program.module.__dict__[symbol]
        try:
            for signature in program.entry.signatures:
                func.compile(signature)
        except numba.core.errors.NumbaError:  # (the parallel entry serves, on one thread)
            return None
        return func

    def native(self, program: CompiledProgram, func: Any, signature: tuple[Any, ...], make: bool) -> Any:
        """``func`` (one of ``program``'s compiled functions of the root: its entry, or
        ``single``) for ``signature`` as a C function of a block of arguments (a Numba
        ``cfunc``: ``native.py``), compiled once (``make``: now, if need be); ``None`` where
        it was not made, or its arguments cannot travel in a block, or it does not compile."""
        import numba
        from numba.core import types as nb

        key = (func.__name__, signature)
        with COMPILE_LOCK:
            if key not in program.natives:
                if not make:
                    return None
                program.natives[key] = None
                returned = func.overloads[signature].signature.return_type  # (the root's outputs)
                count = len(returned.types) if isinstance(returned, nb.BaseTuple) else 0
                source = wrapper_source(func.__name__, signature, count)
                if source is not None:
                    # (named after the module of what it calls: the same text in another
                    # program, calling another function of that name, must not find this
                    # one's cache entry)
                    namespace = {func.__name__: func, **native_helpers(), **loop_error_helpers()}
                    module, _ = self._loaded(
                        f"# calls {func.__module__}.{func.__name__}\n{source}", namespace
                    )
                    try:
                        program.natives[key] = numba.cfunc(nb.void(nb.CPointer(nb.int64)), cache=True)(
                            module.__dict__[SYMBOL]
                        )
                    except numba.core.errors.NumbaError:  # (the dispatcher's call serves)
                        pass
            return program.natives[key]

    def _companion(self, program: CompiledProgram, sources: list[str]) -> types.ModuleType:
        """A module of generated functions that call into ``program``'s module (a stage, the
        root's function without parallel loops), written, loaded and compiled as it is."""
        assert program.module is not None and program.gen is not None
        # Named after the program's module too: the functions call that module's graph
        # functions, and Numba's cached code records their module by name. The same stage
        # text in a program whose module differs (its leaves' messages name another
        # checkout's files) found an entry naming a module this process never made: "No
        # module named hpvm_generated.hpvm_graph_..." at the first item.
        calls = f"# calls into {program.module.__name__}\n"
        namespace = {
            k: v
            for k, v in program.module.__dict__.items()
            if not k.startswith("__") or k.startswith("__hpvm")
        }
        namespace.update(self._variants(program.gen, _runtime_helpers()))
        module, source = self._loaded(calls + "\n".join(sources), namespace)
        for name in re.findall(r"^def (\w+)\(", source, flags=re.M):
            module.__dict__[name] = _jit_generated(module.__dict__[name], program.gen, cache=True)
        return module

    def stage_batch(self, program: CompiledProgram, stage: StageSpec) -> Any:
        """The compiled loop running a stage's function over a batch of items (streaming,
        stages of scalars: ``batch.py``), next to the stage function it calls."""
        func, stage = self.stage(program, stage)
        key = tuple(sorted(id(n) for n in stage.nodes))
        with COMPILE_LOCK:
            if key not in program.batches:
                import numba

                assert program.gen is not None
                before = len(program.gen.sources)
                stage_symbol = func.py_func.__name__
                symbol = program.gen.batch_function(program.root, stage, stage_symbol)
                # Named after the stage's module too: the stage function keeps its symbol when
                # its code changes (an edited leaf), and a cached loop records the module of
                # what it calls, so a loop cached for another stage code must not be found.
                calls = f"# calls {func.py_func.__module__}.{stage_symbol}\n"
                module, _ = self._loaded(
                    calls + "\n".join(program.gen.sources[before:]), {stage_symbol: func}
                )
                program.batches[key] = numba.njit(nogil=True, cache=True)(module.__dict__[symbol])
            return program.batches[key]

    # -- modules -------------------------------------------------------------------------

    def _leaf_namespace(self, clone: LeafClone, helpers: dict[str, Any]) -> dict[str, Any]:
        if self.checked:
            return {**clone.namespace(), **helpers, **checked_helpers()}
        return {**clone.namespace(), **helpers}

    def _write(self, source: str) -> Path:
        # The header versions the code generator: a change in how the code is generated or
        # loaded must not meet cache entries of an earlier one.
        checked = f", checked {CHECKED_VERSION}" if self.checked else ""
        source = f"# generated by hpvm: codegen {CODEGEN_VERSION}{checked}\n{source}"
        digest = hashlib.sha1(source.encode()).hexdigest()[:16]
        path = cache_dir() / f"hpvm_graph_{digest}.py"
        if not path.exists():  # content-addressed: never rewritten, so Numba's cache stays valid
            write_whole(path, source)
            prune_graphs(path.parent)
        else:
            used(path)
        return path

    def _loaded(
        self, source: str, namespace: dict[str, Any], cache: bool = True
    ) -> tuple[types.ModuleType, str]:
        """``source`` written to the cache directory (``_write``) and run as a module of its
        own over ``namespace``, and the text as written (header included: what Numba's cache
        and messages see). The module is named by the file's hash, as the file is: Numba's
        disk cache records a function's module by name, which must mean the same in every
        process."""
        path = self._write(source)
        source = path.read_text()
        module = _module(f"{self._prefix(cache)}.{path.stem}", str(path), namespace)
        exec(compile(source, str(path), "exec"), module.__dict__)
        return module, source

    def _graph_module(
        self, gen: GraphGen, helpers: dict[str, Any], leaves: dict[str, Any], cache: bool = True
    ) -> types.ModuleType:
        module, source = self._loaded("\n".join(gen.sources), {**helpers, **leaves}, cache)
        for name in re.findall(r"^def (\w+)\(", source, flags=re.M):
            module.__dict__[name] = _jit_generated(module.__dict__[name], gen, cache)
        return module


def _jit_generated(func: Any, gen: GraphGen, cache: bool) -> Any:
    """A generated function's dispatcher: none is compiled with Numba's parallel passes
    (parallel loops call the threading layer themselves: ``parallel_for.py``); the common
    case's chunk functions are inlined
    with ``noalias`` arrays (``restrict.py``); all compiled without LLVM's load PRE in loops
    (``loadpre.py``). Chunk functions get no CPython or C entry: only compiled code calls
    them (``__hpvm_try_call``), and each entry was lowered, optimized and turned into
    machine code at every cold compile
    (docs/backends/cpu-performance.md, "Cold compile")."""
    import numba

    name = func.__name__
    options: dict[str, Any] = {"nogil": True, "cache": cache, "error_model": ERROR_MODEL}
    if name in gen.chunk_symbols:  # (called from compiled code only: no Python or C entry)
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    if name in gen.inlined_symbols:  # (an instance's body in its chunk's loop: scratch.py)
        options["inline"] = "always"
    if name in gen.restricted_symbols:
        return without_loop_load_pre(restrict(numba.njit(forceinline=True, **options)(func)))
    return without_loop_load_pre(numba.njit(**options)(func))
