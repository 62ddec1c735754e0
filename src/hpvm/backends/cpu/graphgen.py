"""Internal nodes become loop nests (seed 001, DFG2LLVM_CPU ``codeGen(DFInternalNode*)``).

For each internal node function we generate one Python function, compiled by Numba, that
runs its child graph: children in topological order, each replicated child as a loop nest
over its instances, calling the leaf clones and the nested graph functions. All sizes are
computed, and checked, first (``backends/bounds.py`` for arrays they would index past).

Which loops run in parallel: the outermost replicated level, wherever it is. The root's
graph function is the *parallel* variant: its loops run in parallel over the outermost
dimension, and a single-instance internal child (the HPVM-C wrapper node) is called in its
parallel variant too, since it runs outside any loop. Graphs called from inside a parallel
loop run their own loops sequentially (a nested parallel loop runs on one thread anyway),
except that a replicated internal node whose graph is one loop is *flattened* into the
parallel loop: parent instances × children as one space (``flatten.py``). Parallel loops
are written as calls of chunk functions, so that exceptions raised in them reach the
launching thread (``chunks.py``, ``loop_errors.py``); each graph function's ``Chunks``
collects its chunk functions as its loops are written, and they follow it in ``sources``.

Values on edges: a child whose one-to-one consumer sits in the same loop passes values in
registers — consecutive children joined by one-to-one edges are *fused* into one loop
(legal: a one-to-one sink instance waits only for its own source instance). A consumer in
a later loop reads a per-instance array. All-to-all edges and output binds take the value
of the last instance: the last instance is *peeled* out of the parallel loop and run after
it, which is a legal schedule and yields its outputs as plain variables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...ir.analysis import FeedTable, feed_table
from ...ir.bodies import LLVM, LLVMBody
from ...ir.expr import Const
from ...ir.graph import InternalFunction, LeafFunction, Node
from ...ir.types import ArrayType, ScalarType
from ...ir.verify import topological_order
from ...passes.clone_leaves import CTX_PARAM, LeafClone, symbol_for
from ...passes.fuse_one_to_one import fused_runs
from . import graphscope
from .block import INDENT
from .chunks import Chunks
from .graphscope import Group, Scope, import_name
from .groupgen import GroupEmitter
from .jam import JAM, LLVM_WIDTH, MAX_WIDTH, Jammed, guarded, jam_leaf, jam_problem, jam_width
from .loopnest import LoopNest, loop_order, unit_stride
from .mallocpool import MARK, POOL_PARAMS, RELEASE, STATE_PARAM
from .privatize import atomic_only_params, privatized_clone
from .scratch import INLINED, ScratchCall, ScratchPlan, uniform_node
from .sizes import context_extents, size_lines

__all__ = ["INDENT", "GraphGen", "StageSpec", "loop_order", "unit_stride"]


@dataclass
class StageSpec:
    """What a streaming stage function imports from and exports to other stages."""

    nodes: list[Node]
    imports: list[tuple[Node, int, str]] = field(default_factory=list)  # (node, port, "each"|"last")
    exports: list[tuple[Node, int, str]] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)  # root output indices this stage produces


def constant_extents(node: Node) -> tuple[int, int, int] | None:
    """``node``'s extents (x, y, z) when every replication size is a constant, else ``None``:
    the nodes whose barrier LLVM leaf runs a copy of its work-item loops compiled for them."""
    if not all(isinstance(s, Const) for s in node.sizes):
        return None
    sizes = [s.value for s in node.sizes if isinstance(s, Const)]
    return (*sizes, *[1] * (3 - len(sizes)))  # type: ignore[return-value]


class GraphGen:
    """Generates the graph functions of one program (a root and everything under it): names
    them, keeps their sources, and answers what a child's instance calls (leaf clones,
    graph functions, privatized variants) with what. The code inside one graph function is
    written by its collaborators: ``graphscope.Scope`` (how values are named),
    ``groupgen.GroupEmitter`` (each loop group), ``loopnest.LoopNest`` (the loops)."""

    def __init__(
        self,
        levels: int,
        clones: dict[int, LeafClone],
        barrier_symbols: dict[int, str],
        pooled: frozenset[int] = frozenset(),
        release: frozenset[int] = frozenset(),
        heap_release: frozenset[int] = frozenset(),
        scratch: dict[int, ScratchPlan] | None = None,
        llvm_jam: Callable[[LeafFunction, int, int], tuple[str, Any] | None] | None = None,
        jam: bool = True,
        llvm_group: Callable[[LeafFunction, tuple[int, int, int]], tuple[str, Any] | None] | None = None,
    ):
        self.levels = levels
        self.clones = clones  # id(leaf) -> clone
        self.barrier_symbols = barrier_symbols  # id(leaf) -> group function symbol
        # Leaves whose clones take the malloc pool (mallocpool.py); when there are any, every
        # graph function takes it too, to hand it down.
        self.pooled = pooled
        # Internal functions whose graph functions pop what their subtree malloc'd on return.
        self.release = release
        # The same for what LLVM leaves malloc'd from their thread's host heap (llvm_native/host.py).
        self.heap_release = heap_release
        # Internal functions whose allocation children run once per chunk of instances
        # (scratch.py): id -> plan; their _pre and _each graph functions, made when first called.
        self.scratch = scratch or {}
        self._scratch_symbols: dict[int, tuple[str, str, str]] = {}
        self._inline_groups = False  # while an _each function is written: Python group functions inlined
        # Leaf variants with privatized atomics (privatize.py): symbol -> clone, to compile.
        self.variants: dict[str, LeafClone] = {}
        self.compiled_variants: dict[str, Any] = {}  # filled by the compiler
        self._variant_symbols: dict[tuple[int, tuple[int, ...]], str] = {}
        self._jammed: dict[tuple[int, int, int], Jammed | None] = {}  # (leaf, axis, LLVM width) -> the jam
        # An LLVM leaf's jammed wrapper (llvm_native/wijam.py): (leaf, axis, width) -> its
        # symbol and compiled dispatcher, or None (the compiler's; not jammed without it).
        self._llvm_jam = llvm_jam
        # An LLVM barrier leaf's group function for a node of constant extents, its work-item
        # loops compiled for them (llvm_native/wispecial.py): (leaf, extents) -> its symbol
        # and compiled dispatcher, or None (the compiler's; the plain one without it).
        self._llvm_group = llvm_group
        self._grouped: dict[tuple[int, tuple[int, int, int]], str | None] = {}
        # Whether Python leaves may be jammed (jam.py): not in checked mode, whose guards name
        # the instance their clone's context holds (checked.py), one per call.
        self._jam = jam
        # What was privatized: (graph function, array, operation, nodes) — a compile report.
        self.privatized: list[tuple[str, str, str, list[str]]] = []
        self.sources: list[str] = []
        self.symbols: dict[tuple[int, bool], str] = {}
        self._graph_bases: dict[int, str] = {}  # id(internal function) -> its symbols' base
        self._graph_base_counts: dict[str, int] = {}  # symbol_for's base -> functions given it
        self.restricted_symbols: set[str] = set()  # chunk functions with noalias arrays (restrict.py)
        self.chunk_symbols: set[str] = set()  # every chunk function (chunks.py)
        self.inlined_symbols: set[str] = set()  # graph functions compiled into their callers (scratch.py)
        self.dtypes: set[str] = set()
        self._groups = GroupEmitter(LoopNest(self))

    # -- public ---------------------------------------------------------------------------

    def graph_function(self, fn: InternalFunction, parallel: bool) -> str:
        """The symbol of ``fn``'s graph function, generating it (and its children's) once."""
        key = (id(fn), parallel)
        if key not in self.symbols:
            symbol = self._graph_base(fn) + ("_par" if parallel else "")
            self.symbols[key] = symbol
            self._add(symbol, *self._emit(fn, symbol, parallel, None))
        return self.symbols[key]

    def _graph_base(self, fn: InternalFunction) -> str:
        """``symbol_for(fn, "graph")``, unique in the program: internal functions of one name
        and place (made by one factory function, a wrapper per stage) share it, and defined
        one symbol several times in the generated module ("A jit decorator was called on an
        already jitted function"). The later ones get ``_2``, ``_3``... in the order the
        program reaches them, the same in every process (Numba's cache keys on the text)."""
        base = self._graph_bases.get(id(fn))
        if base is None:
            first = symbol_for(fn, "graph")
            count = self._graph_base_counts[first] = self._graph_base_counts.get(first, 0) + 1
            base = self._graph_bases[id(fn)] = first if count == 1 else f"{first}_{count}"
        return base

    def scratch_call(self, node: Node, feeds: FeedTable, prefix: str) -> ScratchCall | None:
        """How a loop over ``node``'s instances runs them with scratch buffers made once per
        chunk (``scratch.py``), or ``None``: ``node`` is a replicated internal node with a
        scratch plan whose inputs are the same in every instance (``feeds``: its graph's)."""
        fn = node.function
        if not isinstance(fn, InternalFunction) or node.dims == 0 or id(fn) not in self.scratch:
            return None
        if not uniform_node(node, feeds):
            return None
        if id(fn) not in self._scratch_symbols:
            plan = self.scratch[id(fn)]
            base = self._graph_base(fn)
            modes = ("pre", "each") if plan.zero_only() else ("pre", "each", "each_nz")
            symbols = [f"{base}_{mode}" for mode in modes]
            for symbol, mode in zip(symbols, modes):
                self._add(symbol, *self._emit(fn, symbol, False, None, (plan, mode)))
                self.inlined_symbols.add(symbol)
            self._scratch_symbols[id(fn)] = (symbols[0], symbols[1], symbols[-1])
        plan = self.scratch[id(fn)]
        pre, each, each_nz = self._scratch_symbols[id(fn)]
        return ScratchCall(
            node, pre, each, each_nz, len(plan.nodes), prefix, heap=plan.heap, zero_only=plan.zero_only()
        )

    def stage_function(self, root: InternalFunction, stage: StageSpec, index: str) -> str:
        symbol = symbol_for(root, "stage") + f"_{index}"
        self._add(symbol, *self._emit(root, symbol, True, stage))
        return symbol

    def batch_function(self, root: InternalFunction, stage: StageSpec, stage_symbol: str) -> str:
        """A loop calling the stage function ``stage_symbol`` for the items ``lo`` to ``hi`` of
        a batch (streaming; ``batch.py``): every root input and import is a column (one
        array per value, one row per item), and every root output and export of the stage
        (in ``Scope.returns`` order) is written to a column. Returns ``hi``, or the index of the
        first item that raised: the loop stops there, and the caller runs it alone to get
        its error. Only for stages whose values are all scalars (``batch.scalar_stage``).
        """
        symbol = f"{stage_symbol}_batch"
        ins = [f"__hb_in{i}" for i in range(len(root.params))]
        imports = [f"__hb_im{j}" for j in range(len(stage.imports))]
        outs = [f"__hb_out{j}" for j in range(len(stage.outputs) + len(stage.exports))]
        pool = self.pool_args()
        params = ["__hb_lo", "__hb_hi", *ins, CTX_PARAM, *pool, *imports, *outs]
        call = [*(f"{c}[__hb]" for c in ins), CTX_PARAM, *pool, *(f"{c}[__hb]" for c in imports)]
        lines = [
            f"def {symbol}({', '.join(params)}):",
            "for __hb in range(__hb_lo, __hb_hi):",
            INDENT + "try:",
            INDENT * 2 + f"__hb_r = {stage_symbol}({', '.join(call)})",
            INDENT + "except Exception:",
            INDENT * 2 + "return __hb",
            *(INDENT + f"{c}[__hb] = __hb_r[{j}]" for j, c in enumerate(outs)),
        ]
        if (
            pool
        ):  # each item is a run of its own: what it malloc'd dies with it (nothing it sends is an array)
            lines.append(INDENT + f"{STATE_PARAM}[:, 0] = 0")
        lines.append("return __hb_hi")
        self.sources.append("\n".join([lines[0], *(INDENT + line for line in lines[1:])]) + "\n")
        return symbol

    def _add(self, symbol: str, function: str, chunks: Chunks) -> None:
        """Keep a generated function and, after it, its chunk functions (``chunks.py``)."""
        self.sources += [function, *chunks.sources]
        self.restricted_symbols.update(chunks.restricted)
        self.chunk_symbols.update(chunks.symbols)

    # -- generation -----------------------------------------------------------------------

    def _emit(
        self,
        fn: InternalFunction,
        symbol: str,
        parallel: bool,
        stage: StageSpec | None,
        scratch: tuple[ScratchPlan, str] | None = None,
    ) -> tuple[str, Chunks]:
        """``fn``'s graph function (for ``stage``: a streaming stage's) and its chunk functions;
        ``scratch``: (plan, "pre", "each" or "each_nz"), one of its scratch functions
        (``scratch.py``; "each_nz": without the zero-fill)."""
        graph = fn.graph
        order = topological_order(graph)
        selected = None if stage is None else {id(n) for n in stage.nodes}
        if selected is not None:
            order = [n for n in order if id(n) in selected]
        index = {id(n): k for k, n in enumerate(graph.nodes)}
        feeds = feed_table(graph)
        imported = {(id(n), p): mode for n, p, mode in (stage.imports if stage else [])}
        groups = [Group(nodes, nodes[0].dims, self.is_barrier(nodes[0])) for nodes in fused_runs(order)]
        needs = graphscope.needs(fn, feeds, groups, selected)
        scope = Scope(fn, feeds, index, imported, needs)

        params = [graphscope.input_name(p.name) for p in fn.params] + [CTX_PARAM] + self.pool_args()
        plan, mode = scratch if scratch is not None else (None, "")
        each = mode.startswith("each")
        if plan is not None and each:
            params += [f"__hpvm_scr{j}" for j in range(len(plan.nodes))]
        if stage is not None:
            params += [import_name(index[id(n)], p, mode) for n, p, mode in stage.imports]
        lines = [f"def {symbol}({', '.join(params)}):"]
        body: list[str] = []
        chunks = Chunks(symbol)
        release = stage is None and id(fn) in self.release and not each
        if release:  # this parent instance's buffers die with it: its thread's pool stack pops them
            body.append(f"__hpvm_mark = {MARK}({STATE_PARAM})")
        heap = stage is None and id(fn) in self.heap_release and not each
        if heap:  # (the same for what LLVM leaves malloc'd: their thread's host heap pops back)
            from ..llvm_native.numba_call import HEAP_MARK, HEAP_RELEASE  # (only such graphs load it)

            body.append(f"__hpvm_hmark = {HEAP_MARK}()")
        # Every size first: they read only the function's inputs, and all of them are checked
        # (negative, fused grids, arrays they would index past) before any child runs.
        for group in groups:
            guards, assigns, checks = size_lines(scope, group, self.clones, context_extents(self.levels))
            if each:  # (checked once, by the _pre function)
                guards, checks = [], []
            body += guards + [f"{name} = {expr}" for name, expr in assigns] + checks
        for g_index, group in enumerate(groups):
            hoisted = plan.buffer(group.nodes[0]) if plan is not None else None
            if mode == "pre" and hoisted is None:
                continue
            if each and hoisted is not None:  # the chunk's buffer, zero-filled as a fresh malloc
                k = index[id(group.nodes[0])]
                body += [f"{hoisted}[:] = 0"] if mode == "each" else []
                body.append(f"__hn{k}_v0 = {hoisted}")
                continue
            inlining, self._inline_groups = self._inline_groups, each
            body += self._groups.emit(scope, g_index, group, chunks if parallel else None)
            self._inline_groups = inlining
        if mode == "pre":
            assert plan is not None
            buffers = "".join(f"__hn{index[id(n)]}_v0, " for n in plan.nodes)
            mark = "__hpvm_hmark" if plan.heap else "__hpvm_mark"
            body.append(f"return ({mark}, {buffers}{plan.fresh_test(index)})")
            return "\n".join(lines + [INDENT + line for line in body]) + "\n", chunks
        if release:
            body.append(f"{RELEASE}({STATE_PARAM}, __hpvm_mark)")
        if heap:
            body.append(f"{HEAP_RELEASE}(__hpvm_hmark)")
        if stage is None:
            body.append(f"return {scope.returns(list(range(len(fn.out_types))), [])}")
        else:
            body.append(f"return {scope.returns(stage.outputs, stage.exports)}")
        lines += [INDENT + line for line in body]
        return "\n".join(lines) + "\n", chunks

    # -- what a child's instance calls, with what (for the collaborators) ----------------

    def group_symbol(self, node: Node) -> str:
        """The group function a barrier leaf's instances call: in an ``_each`` function
        (``scratch.py``) a Python leaf's is the one compiled to be inlined."""
        symbol = self.barrier_symbols[id(node.function)]
        python = isinstance(node.function, LeafFunction) and node.function.body_kind != LLVM
        if python:
            return f"{symbol}{INLINED}" if self._inline_groups else symbol
        return self._llvm_group_symbol(node) or symbol

    def _llvm_group_symbol(self, node: Node) -> str | None:
        """The group function of an LLVM leaf's node of constant extents, compiled for them
        (``llvm_native/wispecial.py``), or ``None``: the plain one serves."""
        leaf = node.function
        extents = constant_extents(node)
        if self._llvm_group is None or extents is None:
            return None
        assert isinstance(leaf, LeafFunction)
        key = (id(leaf), extents)
        if key not in self._grouped:
            made = self._llvm_group(leaf, extents)
            self._grouped[key] = made[0] if made is not None else None
            if made is not None:
                self.compiled_variants[made[0]] = made[1]
        return self._grouped[key]

    def is_barrier(self, node: Node) -> bool:
        """Whether ``node`` is a leaf with barriers (run by its group function)."""
        return isinstance(node.function, LeafFunction) and id(node.function) in self.barrier_symbols

    def variant(self, node: Node, swapped: dict[int, str]) -> str:
        """The symbol of the leaf's variant with plain operations on the swapped parameters."""
        leaf = node.function
        assert isinstance(leaf, LeafFunction)
        params = atomic_only_params(self.clones[id(leaf)])
        chosen = {p: params[p] for p in sorted(swapped)}
        key = (id(leaf), tuple(chosen))
        if key not in self._variant_symbols:
            clone = privatized_clone(self.clones[id(leaf)], chosen)
            self._variant_symbols[key] = clone.symbol
            self.variants[clone.symbol] = clone
        return self._variant_symbols[key]

    def jammed(self, node: Node, axis: int) -> Jammed | None:
        """The symbol and width of the leaf's clone that runs neighbouring instances along
        ``axis`` in lockstep (``jam.py``), or ``None``: the leaf is not jammed, or ``node``
        has fewer instances along ``axis`` than one block (a constant extent)."""
        leaf = node.function
        assert isinstance(leaf, LeafFunction)
        extent = node.sizes[axis] if axis < len(node.sizes) else None
        llvm = isinstance(leaf.body, LLVMBody)
        if llvm and isinstance(extent, Const) and extent.value < MAX_WIDTH:
            return None  # (never a whole block: not worth making)
        # (an LLVM leaf: 16 lanes, 8 where a constant extent has fewer than 16: jam.py)
        llvm_width = MAX_WIDTH if isinstance(extent, Const) and extent.value < LLVM_WIDTH else LLVM_WIDTH
        key = (id(leaf), axis, llvm_width if llvm else 0)
        if key not in self._jammed:
            clone = self.clones[id(leaf)]
            found = None
            if llvm:
                # (only where the lanes' accesses are neighbours in memory: a leaf whose
                # instances each walk a row of their own vectorizes that walk unjammed)
                wanted = JAM.enabled and self._llvm_jam is not None and unit_stride(node) == axis
                made = self._llvm_jam(leaf, axis, llvm_width) if wanted else None  # type: ignore[misc]
                if made is not None:  # (its guard, if any, is handled inside: wijam.py)
                    found = Jammed(made[0], llvm_width)
                    self.compiled_variants[made[0]] = made[1]
            elif self._jam and JAM.enabled and clone.ir is not None and jam_problem(clone.ir, axis) is None:
                width = jam_width(clone.ir, axis)
                jammed = clone.reemitted(jam_leaf(clone.ir, axis, width), f"jam{axis}")
                found = Jammed(jammed.symbol, width, guarded(clone.ir, axis))
                self.variants[jammed.symbol] = jammed
            self._jammed[key] = found
        found = self._jammed[key]
        if found is not None and isinstance(extent, Const) and extent.value < found.width:
            return None  # (never a whole block: not worth compiling)
        return found

    def pool_args(self) -> list[str]:
        """The malloc pool's parameters, which every function takes when any leaf uses it."""
        return list(POOL_PARAMS) if self.pooled else []

    def takes_pool(self, node: Node) -> bool:
        """Whether one instance of ``node`` is called with the malloc pool."""
        return isinstance(node.function, InternalFunction) or id(node.function) in self.pooled

    def callee(self, node: Node, parallel: bool = False) -> str:
        """The function one instance of ``node`` calls; ``parallel``: an internal node's
        graph function with parallel loops (called where no parallel loop runs)."""
        if isinstance(node.function, LeafFunction):
            return self.clones[id(node.function)].symbol
        assert isinstance(node.function, InternalFunction)
        return self.graph_function(node.function, parallel=parallel)

    def dtype(self, t: ScalarType | ArrayType) -> str:
        """The generated name of ``t``'s NumPy dtype (the compiler binds each one used)."""
        name = f"__hpvm_dt_{t.dtype.name}"
        self.dtypes.add(t.dtype.name)
        return name
