"""Internal nodes become loop nests (seed 001, DFG2LLVM_CPU ``codeGen(DFInternalNode*)``).

For each internal node function we generate one Python function, compiled by Numba, that
runs its child graph: children in topological order, each replicated child as a loop nest
over its instances, calling the leaf clones and the nested graph functions. All sizes are
computed, and checked, first (``backends/bounds.py`` for arrays they would index past).

Which loops run in parallel: the outermost replicated level, wherever it is. The root's
graph function is the *parallel* variant: its loops are ``prange`` over the outermost
dimension, and a single-instance internal child (the HPVM-C wrapper node) is called in its
parallel variant too, since it runs outside any loop. Graphs called from inside a parallel
loop run their own loops sequentially (Numba runs a nested ``prange`` serially anyway),
except that a replicated internal node whose graph is one loop is *flattened* into the
parallel loop: parent instances × children as one space (``flatten.py``). Parallel loops
are then outlined into chunk functions, so that exceptions raised in them reach the
launching thread (``outline.py``, ``loop_errors.py``).

Values on edges: a child whose one-to-one consumer sits in the same loop passes values in
registers — consecutive children joined by one-to-one edges are *fused* into one loop
(legal: a one-to-one sink instance waits only for its own source instance). A consumer in
a later loop reads a per-instance array. All-to-all edges and output binds take the value
of the last instance: the last instance is *peeled* out of the parallel loop and run after
it, which is a legal schedule and yields its outputs as plain variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import CompileError
from ...ir import expr as size_expr
from ...ir import instance_context as ictx
from ...ir.analysis import FeedTable, feed_table, returned_params
from ...ir.bodies import LLVMBody
from ...ir.expr import divisors
from ...ir.graph import ALL_TO_ALL, ONE_TO_ONE, InternalFunction, LeafFunction, Node
from ...ir.leafstride import nest_order, unit_stride_axis
from ...ir.types import ArrayType, ScalarType
from ...ir.verify import topological_order
from ...passes.clone_leaves import CTX_PARAM, LeafClone, symbol_for
from ...passes.fuse_one_to_one import fused_runs
from ..bounds import bound_accesses, check_lines
from ..llvm_native.access import unit_stride_dimension
from .flatten import FlatPlan, flat_plan
from .mallocpool import MARK, POOL_PARAMS, RELEASE, STATE_PARAM
from .narrow import MASK
from .outline import outline
from .privatize import MAX_PRIVATE_BYTES, atomic_only_params, fold, identity, privatized_clone

INDENT = "    "


@dataclass
class StageSpec:
    """What a streaming stage function imports from and exports to other stages."""

    nodes: list[Node]
    imports: list[tuple[Node, int, str]] = field(default_factory=list)  # (node, port, "each"|"last")
    exports: list[tuple[Node, int, str]] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)  # root output indices this stage produces


@dataclass
class _Group:
    nodes: list[Node]
    dims: int
    barrier: bool = False


@dataclass(frozen=True)
class _Names:
    """Generated names for a graph whose children run inside another graph's function (a
    flattened node, ``flatten.py``): its inputs, and the context tuple its children extend."""

    params: list[str]
    ctx: str
    ready: frozenset[int] = frozenset()  # inputs whose names hold their value before the loop


def _render(expr: size_expr.Expr, fn: InternalFunction, names: _Names | None) -> str:
    """A size expression of ``fn``'s inputs as generated code (inputs renamed by ``names``)."""
    return str(_renamed(expr, fn, names))


def _renamed(expr: size_expr.Expr, fn: InternalFunction, names: _Names | None) -> size_expr.Expr:
    """``expr`` with ``fn``'s inputs renamed by ``names`` (unchanged without)."""
    if names is None:
        return expr
    return size_expr.renamed(expr, {p.name: new for p, new in zip(fn.params, names.params)})


def unit_stride(node: Node) -> int | None:
    """The instance axis ``node``'s leaf indexes its arrays with at unit stride, or ``None``:
    ``llvm_native/access.py`` reads an LLVM leaf, ``ir/leafstride.py`` a Python one."""
    leaf = node.function
    if not isinstance(leaf, LeafFunction):
        return None
    if isinstance(leaf.body, LLVMBody):
        return unit_stride_dimension(leaf.body)
    return unit_stride_axis(leaf)


def loop_order(nodes: list[Node]) -> tuple[int, ...]:
    """The instance loops of a loop group running ``nodes``, outermost first.

    Default: x outermost (row-major, as NumPy indexes). A group whose leaves index their
    arrays at unit stride along one instance id (``unit_stride``: an LLVM leaf's or a Python
    leaf's accesses) runs that id's loop innermost, so that LLVM vectorizes it and it walks
    memory in order; when that is x (the GPU convention: CUDA's, Parboil's, HPVM-C's) the
    whole nest is reversed, z outermost (one step of Parboil's stencil at 256x256x64 took
    1.9 ms with z-y-x against 3.3 ms with y-z-x). A fused group follows the id its leaves
    agree on (leaves without an answer, internal nodes, do not mind) and keeps the default
    when two disagree (``ir/leafstride.nest_order``: the rule, shared with the GPU back ends).

    Any order is a legal schedule: the instances of a loop are independent (barrier leaves
    run elsewhere, ``barriers.py``), and per-instance values and the peeled last instance
    are addressed by id, not by iteration order.
    """
    dims = nodes[0].dims if nodes else 0
    return nest_order(dims, (unit_stride(node) for node in nodes) if dims >= 2 else ())


def _unravel(flat: str, idx: list[str], sizes: list[str]) -> list[str]:
    """Lines setting ``idx`` to the coordinates of the row-major linear index ``flat`` in a
    grid of ``sizes`` (x outermost)."""
    lines: list[str] = []
    rest = flat
    for a in range(len(idx) - 1):
        stride = " * ".join(sizes[a + 1 :])
        lines.append(f"{idx[a]} = {rest} // ({stride})")
        lines.append(f"{idx[a]}_r = {rest} - {idx[a]} * ({stride})")
        rest = f"{idx[a]}_r"
    lines.append(f"{idx[-1]} = {rest}")
    return lines


class GraphGen:
    """Generates the graph functions of one program (a root and everything under it)."""

    def __init__(
        self,
        levels: int,
        clones: dict[int, LeafClone],
        barrier_symbols: dict[int, str],
        pooled: frozenset[int] = frozenset(),
        release: frozenset[int] = frozenset(),
    ):
        self.levels = levels
        self.clones = clones  # id(leaf) -> clone
        self.barrier_symbols = barrier_symbols  # id(leaf) -> group function symbol
        # Leaves whose clones take the malloc pool (mallocpool.py); when there are any, every
        # graph function takes it too, to hand it down.
        self.pooled = pooled
        # Internal functions whose graph functions pop what their subtree malloc'd on return.
        self.release = release
        # Leaf variants with privatized atomics (privatize.py): symbol -> clone, to compile.
        self.variants: dict[str, LeafClone] = {}
        self.compiled_variants: dict[str, Any] = {}  # filled by the compiler
        self._variant_symbols: dict[tuple[int, tuple[int, ...]], str] = {}
        # What was privatized: (graph function, array, operation, nodes) — a compile report.
        self.privatized: list[tuple[str, str, str, list[str]]] = []
        self.sources: list[str] = []
        self.symbols: dict[tuple[int, bool], str] = {}
        self.parallel_symbols: set[str] = set()
        self.dtypes: set[str] = set()

    # -- public ---------------------------------------------------------------------------

    def graph_function(self, fn: InternalFunction, parallel: bool) -> str:
        """The symbol of ``fn``'s graph function, generating it (and its children's) once."""
        key = (id(fn), parallel)
        if key not in self.symbols:
            symbol = symbol_for(fn, "graph") + ("_par" if parallel else "")
            self.symbols[key] = symbol
            self._add(symbol, self._emit(fn, symbol, parallel, None))
        return self.symbols[key]

    def stage_function(self, root: InternalFunction, stage: StageSpec, index: str) -> str:
        symbol = symbol_for(root, "stage") + f"_{index}"
        self._add(symbol, self._emit(root, symbol, True, stage))
        return symbol

    def batch_function(self, root: InternalFunction, stage: StageSpec, stage_symbol: str) -> str:
        """A loop calling the stage function ``stage_symbol`` for the items ``lo`` to ``hi`` of
        a batch (streaming; ``batch.py``): every root input and import is a column (one
        array per value, one row per item), and every root output and export of the stage
        (in ``_returns`` order) is written to a column. Returns ``hi``, or the index of the
        first item that raised: the loop stops there, and the caller runs it alone to get
        its error. Only for stages whose values are all scalars (``batch.scalar_stage``).
        """
        symbol = f"{stage_symbol}_batch"
        ins = [f"__hb_in{i}" for i in range(len(root.params))]
        imports = [f"__hb_im{j}" for j in range(len(stage.imports))]
        outs = [f"__hb_out{j}" for j in range(len(stage.outputs) + len(stage.exports))]
        pool = self._pool_args()
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

    def _add(self, symbol: str, source: str) -> None:
        """Keep a generated function, its parallel loops outlined into chunk functions
        (``outline.py``: so that exceptions in them reach the launching thread)."""
        if "prange(" not in source:
            self.sources.append(source)
            return
        self.sources += outline(source)
        self.parallel_symbols.add(symbol)  # (Numba warns about parallel=True with nothing parallel)

    # -- generation -----------------------------------------------------------------------

    def _emit(self, fn: InternalFunction, symbol: str, parallel: bool, stage: StageSpec | None) -> str:
        graph = fn.graph
        order = topological_order(graph)
        selected = None if stage is None else {id(n) for n in stage.nodes}
        if selected is not None:
            order = [n for n in order if id(n) in selected]
        index = {id(n): k for k, n in enumerate(graph.nodes)}
        feeds = feed_table(graph)
        imported = {(id(n), p): mode for n, p, mode in (stage.imports if stage else [])}

        groups = [_Group(nodes, nodes[0].dims, self._is_barrier(nodes[0])) for nodes in fused_runs(order)]
        group_of = {id(n): g for g in groups for n in g.nodes}

        # What each (node, port) must provide: "each" (per-instance array), "last" (peeled value).
        needs: dict[tuple[int, int], set[str]] = {}
        for e in graph.edges:
            if selected is not None and id(e.src) not in selected:
                continue
            if e.src.dims == 0:
                continue  # a 0-dim node's outputs are plain variables
            if selected is not None and id(e.dst) not in selected:
                mode = "each" if e.repl == ONE_TO_ONE else "last"
            elif e.repl == ONE_TO_ONE and group_of[id(e.src)] is group_of[id(e.dst)]:
                continue  # fused: in registers
            else:
                mode = "each" if e.repl == ONE_TO_ONE else "last"
            needs.setdefault((id(e.src), e.sp), set()).add(mode)
        for b in graph.out_binds:
            if (selected is None or id(b.src) in selected) and b.src.dims > 0:
                needs.setdefault((id(b.src), b.oc), set()).add("last")
        # An array sent per instance to a node outside the loop: every instance must send the
        # same array (the usual case: a memory object passed along); it is checked by pointer.
        for (node_id, port), want in needs.items():
            node = next(n for n in graph.nodes if id(n) == node_id)
            if "each" in want and isinstance(node.function.out_types[port], ArrayType):
                want.discard("each")
                want.add("last")
                if not self._same_array_everywhere(node, port, feeds):
                    want.add("ptr")

        params = [p.name for p in fn.params] + [CTX_PARAM] + self._pool_args()
        if stage is not None:
            params += [self._import_name(index[id(n)], p, mode) for n, p, mode in stage.imports]
        lines = [f"def {symbol}({', '.join(params)}):"]
        body: list[str] = []
        release = stage is None and id(fn) in self.release
        if release:  # this parent instance's buffers die with it: its thread's pool stack pops them
            body.append(f"__hpvm_mark = {MARK}({STATE_PARAM})")
        # Every size first: they read only the function's inputs, and all of them are checked
        # (negative, fused grids, arrays they would index past) before any child runs.
        for group in groups:
            guards, assigns, checks = self._size_lines(fn, group, feeds, index)
            body += guards + [f"{name} = {expr}" for name, expr in assigns] + checks
        for g_index, group in enumerate(groups):
            body += self._emit_group(fn, g_index, group, feeds, needs, index, imported, parallel)
        if release:
            body.append(f"{RELEASE}({STATE_PARAM}, __hpvm_mark)")
        body.append(f"return {self._returns(fn, stage, index)}")
        lines += [INDENT + line for line in body]
        return "\n".join(lines) + "\n"

    def _same_array_everywhere(self, node: Node, port: int, feeds: FeedTable) -> bool:
        """Whether every instance provably returns the same array from output ``port``: the
        leaf returns one of its array parameters unchanged, and that parameter is fed the same
        value in every instance (a bind, an all-to-all edge, or a single-instance source).
        Then no per-instance pointer check is needed."""
        fn = node.function
        if not isinstance(fn, LeafFunction):
            return False
        index = returned_params(fn)[port]
        feed = None if index is None else feeds[id(node)][index]
        if feed is None:
            return False
        kind, item = feed
        return kind == "bind" or item.repl == ALL_TO_ALL or item.src.dims == 0

    def _is_barrier(self, node: Node) -> bool:
        return isinstance(node.function, LeafFunction) and id(node.function) in self.barrier_symbols

    # -- one loop group -------------------------------------------------------------------

    def _size_lines(
        self, fn, group, feeds, index, names: _Names | None = None
    ) -> tuple[list[str], list[tuple[str, str]], list[str]]:  # type: ignore[no-untyped-def]
        """The group's sizes (``__hn<k>_s<axis>``, the head's: variable and expression pairs),
        the guards that must run before they are computed (no divisor of a size is 0), and the
        checks on them: not negative, fused members' grids equal, no array indexed past its
        end (``backends/bounds.py``). ``names``: ``fn``'s inputs under other names (``_Names``)."""
        guards: list[str] = []
        assigns: list[tuple[str, str]] = []
        checks: list[str] = []
        head = group.nodes[0]
        sizes = [f"__hn{index[id(head)]}_s{a}" for a in range(head.dims)]
        for a, expr in enumerate(head.sizes):
            guards += self._divisor_checks(head, expr, fn, names)
            assigns.append((sizes[a], _render(expr, fn, names)))
            checks.append(f"if {sizes[a]} < 0:")
            checks.append(
                INDENT
                + f"raise __hpvm_LaunchError({self._msg(head, f'replication size {expr} is negative')})"
            )
        # Fused members share the head's grid; their sizes are checked equal at run time.
        for node in group.nodes[1:]:
            for a, expr in enumerate(node.sizes):
                guards += self._divisor_checks(node, expr, fn, names)
                checks.append(f"if ({_render(expr, fn, names)}) != {sizes[a]}:")
                checks.append(
                    INDENT
                    + f"raise __hpvm_LaunchError({self._msg(node, 'one-to-one edge between grids of different extents')})"
                )

        def name_of(i: int) -> str | None:  # the variable holding fn's input i, if set by now
            if names is None:
                return fn.params[i].name
            return names.params[i] if i in names.ready else None

        for node in group.nodes:
            if isinstance(node.function, LeafFunction):
                bounds = bound_accesses(node, fn, feeds[id(node)], self.clones.get(id(node.function)))
                checks += check_lines(node, fn, bounds, sizes, name_of)
        return guards, assigns, checks

    def _emit_group(self, fn, g_index, group, feeds, needs, index, imported, parallel) -> list[str]:  # type: ignore[no-untyped-def]
        out: list[str] = []
        head = group.nodes[0]
        k0 = index[id(head)]
        sizes = [f"__hn{k0}_s{a}" for a in range(head.dims)]
        idx = [f"__hg{g_index}_i{a}" for a in range(head.dims)]
        # One-to-one inputs read from earlier loops or other stages need the same grid.
        for node in group.nodes:
            for feed in feeds[id(node)]:
                if feed is None or feed[0] != "edge" or feed[1].repl != ONE_TO_ONE:
                    continue
                edge = feed[1]
                if any(edge.src is m for m in group.nodes) or edge.src.dims == 0 and edge.dst.dims == 0:
                    continue
                src_shape = self._src_sizes(edge, index, imported)
                if src_shape is not None:
                    for a in range(node.dims):
                        out.append(f"if {src_shape[a]} != {sizes[a]}:")
                        out.append(
                            INDENT
                            + f"raise __hpvm_LaunchError({self._msg(node, f'one-to-one edge from {edge.src.name} between grids of different extents')})"
                        )
        # Per-instance storage for consumers in later loops / other stages.
        for node in group.nodes:
            k = index[id(node)]
            for port, out_type in enumerate(node.function.out_types):
                want = needs.get((id(node), port), ())
                if "each" in want:
                    dt = self._dtype(out_type)
                    out.append(f"__hn{k}_A{port} = np.empty(({', '.join(sizes)},), {dt})")
                if "ptr" in want:
                    out.append(f"__hn{k}_P{port} = np.empty(({', '.join(sizes)},), np.int64)")
        peel = any(
            "last" in needs.get((id(n), p), ()) for n in group.nodes for p in range(len(n.function.out_types))
        )
        if group.barrier:
            return out + self._emit_barrier_call(fn, head, k0, sizes, feeds, index, imported, needs)
        if head.dims == 0:
            return out + self._emit_body(
                fn, group, [], [], feeds, needs, index, imported, capture=True, parallel=parallel
            )
        total = " * ".join(sizes)
        if peel:
            out.append(f"if {total} == 0:")
            out.append(
                INDENT
                + f"raise __hpvm_LaunchError({self._msg(head, 'has no instances, so it sends no value over its all-to-all edge or output bind')})"
            )
        private = self._privatizable(fn, group, feeds, index, imported) if parallel else []
        order = loop_order(group.nodes)
        alone = parallel and len(group.nodes) == 1  # (fused with others, it shares their loop)
        flat = flat_plan(head, feeds, self.release, self._is_barrier) if alone else None
        if flat is not None:
            loops = self._emit_flat(fn, g_index, group, flat, sizes, feeds, index, imported)
        else:
            loops = self._loops(
                fn,
                group,
                idx,
                sizes,
                feeds,
                needs,
                index,
                imported,
                peel,
                prange=parallel,
                order=order,
            )
        if private:
            out += self._emit_private(
                fn, g_index, group, private, idx, sizes, feeds, needs, index, imported, peel, order
            )
            out.append("else:")
            out += [INDENT + line for line in loops]
        else:
            out += loops
        if peel:
            for i, s in zip(idx, sizes):
                out.append(f"{i} = {s} - 1")
            out += self._emit_body(fn, group, idx, sizes, feeds, needs, index, imported, capture=True)
        for node in group.nodes:
            k = index[id(node)]
            for port in range(len(node.function.out_types)):
                if "ptr" in needs.get((id(node), port), ()):
                    out.append(f"if np.any(__hn{k}_P{port} != __hn{k}_L{port}.ctypes.data):")
                    out.append(
                        INDENT
                        + f"raise __hpvm_LaunchError({self._msg(node, f'instances send different arrays from output {port} over a one-to-one edge to a node outside their loop; the cpu back end passes one shared array there — try target=interp')})"
                    )
        return out

    def _loops(
        self,
        fn,
        group,
        idx,
        sizes,
        feeds,
        needs,
        index,
        imported,
        peel,
        prange,
        chunk=None,
        swap=None,
        names=None,
        order: tuple[int, ...] | None = None,
    ) -> list[str]:  # type: ignore[no-untyped-def]
        """The group's loop nest (the last instance skipped when it is peeled: the innermost
        loop stops one short where every outer id is at its last, rather than a test in the
        body, which kept LLVM from vectorizing the loop). ``order``: the
        dimensions' loops, outermost first (``loop_order``; default x outermost); ``chunk``:
        the outermost loop runs ``range(lo, hi)`` of a chunk (the callers' chunks split the
        extent of dimension ``order[0]``); ``swap``: private copies; ``names``: ``fn``'s
        inputs and context under other names (``_Names``). The order only changes which
        instance runs when: ids, per-instance arrays and the peeled last instance stay by id."""
        out: list[str] = []
        depth = 0
        dims = group.nodes[0].dims
        if order is None:
            order = tuple(range(dims))
        # The innermost id through __hpvm_narrow, so that LLVM vectorizes (narrow.py).
        inner_id = idx[order[-1]]
        out.append(f"{inner_id}_small = {sizes[order[-1]]} <= {MASK}")
        for pos, a in enumerate(order):
            end = sizes[a]
            if peel and pos == dims - 1:  # the peeled last instance: the innermost loop stops short
                outer_last = " and ".join(f"{idx[b]} == {sizes[b]} - 1" for b in order[:-1])
                end = f"({end} - 1 if {outer_last} else {end})" if outer_last else f"{end} - 1"
            if pos == 0 and chunk is not None:
                bounds = (
                    f"{chunk[0]}, min({chunk[1]}, {end})" if end != sizes[a] else f"{chunk[0]}, {chunk[1]}"
                )
            else:
                bounds = end
            loop = "prange" if (prange and pos == 0) else "range"
            var = f"{idx[a]}_w" if pos == dims - 1 else idx[a]
            out.append(INDENT * depth + f"for {var} in {loop}({bounds}):")
            depth += 1
        out.append(INDENT * depth + f"{inner_id} = __hpvm_narrow({inner_id}_w, {inner_id}_small)")
        inner = self._emit_body(
            fn, group, idx, sizes, feeds, needs, index, imported, capture=False, swap=swap, names=names
        )
        out += [INDENT * depth + line for line in inner]
        return out

    def _emit_flat(self, fn, g_index, group, plan: FlatPlan, sizes, feeds, index, imported) -> list[str]:  # type: ignore[no-untyped-def]
        """``plan.node``'s instances and its children's as one parallel loop (``flatten.py``):
        a ``prange`` over chunks of (parent instance, child outer id) pairs."""
        node, inner_fn = plan.node, plan.node.function
        pre = f"__hf{g_index}"
        k = index[id(node)]
        pidx = [f"{pre}_p{a}" for a in range(node.dims)]
        params = [f"{pre}_a{i}" for i in range(len(inner_fn.params))]
        inputs = [self._input(fn, node, i, feeds, pidx, index, imported, group) for i in range(len(params))]
        ready = frozenset(i for i, expr in enumerate(inputs) if not any(p in expr for p in pidx))
        names = _Names(params, f"{pre}_ctx", ready)
        # The inner graph's nodes get names of their own: __hn<k>_<j>_...
        inner_index = {id(n): f"{k}_{j}" for j, n in enumerate(inner_fn.graph.nodes)}
        inner = _Group(plan.inner, plan.inner[0].dims)
        out = [f"{params[i]} = {inputs[i]}" for i in sorted(ready)]
        out.append(f"{pre}_t = {' * '.join(sizes)}")
        # The children's sizes and checks, once, if there are parent instances (as the inner
        # graph function would have evaluated them in each).
        guards, assigns, checks = self._size_lines(inner_fn, inner, plan.feeds, inner_index, names)
        if guards:
            out.append(f"if {pre}_t > 0:")
            out += [INDENT + line for line in guards]
        out += [f"{name} = ({expr}) if {pre}_t > 0 else 0" for name, expr in assigns]
        if checks:
            out.append(f"if {pre}_t > 0:")
            out += [INDENT + line for line in checks]
        csizes = [name for name, _ in assigns]
        order = loop_order(plan.inner)
        outer = csizes[order[0]]  # the children's outermost loop, shared out with the parents
        out += [
            f"{pre}_n = {pre}_t * {outer}",
            f"{pre}_nc = max(min(np.int64(__hpvm_num_threads()), np.int64({pre}_n)), 0)",
            f"for {pre}_c in prange({pre}_nc):",
        ]
        loop = [
            f"{pre}_lo = {pre}_c * ({pre}_n // {pre}_nc) + min({pre}_c, {pre}_n % {pre}_nc)",
            f"{pre}_hi = ({pre}_c + 1) * ({pre}_n // {pre}_nc) + min({pre}_c + 1, {pre}_n % {pre}_nc)",
            f"for {pre}_p in range({pre}_lo // {outer}, ({pre}_hi + {outer} - 1) // {outer}):",
        ]
        parent = _unravel(f"{pre}_p", pidx, sizes)
        parent += [f"{params[i]} = {inputs[i]}" for i in range(len(params)) if i not in ready]
        if self.levels > 1:
            parent.append(f"{names.ctx} = {self._child_ctx(node, pidx, sizes)}")
        parent.append(f"{pre}_b = {pre}_p * {outer}")
        chunk = (f"max({pre}_lo - {pre}_b, 0)", f"min({pre}_hi - {pre}_b, {outer})")
        cidx = [f"__hg{g_index}f_i{a}" for a in range(inner.dims)]
        parent += self._loops(
            inner_fn,
            inner,
            cidx,
            csizes,
            plan.feeds,
            {},
            inner_index,
            {},
            False,
            False,
            chunk=chunk,
            names=names,
            order=order,
        )
        loop += [INDENT + line for line in parent]
        return out + [INDENT + line for line in loop]

    def _privatizable(
        self, fn, group, feeds, index, imported
    ) -> list[tuple[str, str, ArrayType, list[Node]]]:  # type: ignore[no-untyped-def]
        """Arrays of this parallel loop whose atomics can go to per-thread copies
        (privatize.py): (array, operation, type, the nodes using it)."""
        if group.barrier or group.nodes[0].dims == 0:
            return []
        receivers: dict[str, list[tuple[Node, int]]] = {}
        for node in group.nodes:
            for p, feed in enumerate(feeds[id(node)]):
                if feed is not None and feed[0] == "bind" and isinstance(fn.params[feed[1]].type, ArrayType):
                    receivers.setdefault(fn.params[feed[1]].name, []).append((node, p))
        found = []
        for name, uses in receivers.items():
            ops = set()
            for node, p in uses:
                leaf = node.function
                if not isinstance(leaf, LeafFunction) or self._is_barrier(node):
                    ops.add(None)
                    continue
                ops.add(atomic_only_params(self.clones[id(leaf)]).get(p))
            if len(ops) == 1 and None not in ops:
                array_type = next(p.type for p in fn.params if p.name == name)
                users = sorted({id(n): n for n, _ in uses}.values(), key=lambda n: index[id(n)])
                found.append((name, ops.pop(), array_type, users))
        return found

    def _group_arrays(self, fn, group, feeds, index, imported) -> list[str]:  # type: ignore[no-untyped-def]
        """The loop-invariant array arguments of the group's nodes (by their expressions)."""
        names: list[str] = []
        for node in group.nodes:
            for p, param in enumerate(node.function.params):
                if not isinstance(param.type, ArrayType):
                    continue
                expr = self._input(fn, node, p, feeds, [], index, imported, group)
                fused = feeds[id(node)][p][0] == "edge" and any(
                    feeds[id(node)][p][1].src is m for m in group.nodes
                )
                if not fused and expr not in names:
                    names.append(expr)
        return names

    def _emit_private(
        self, fn, g_index, group, private, idx, sizes, feeds, needs, index, imported, peel, order
    ) -> list[str]:  # type: ignore[no-untyped-def]
        """The group's loop over per-thread chunks with private copies of ``private``'s
        arrays, then the fold; runs when the run-time conditions hold (privatize.py). The
        chunks split the outermost loop of ``order``."""
        pre = f"__hp{g_index}"
        others = self._group_arrays(fn, group, feeds, index, imported)
        total = " * ".join(sizes)
        conds = []
        for name, _, _, _ in private:
            conds.append(f"{name}.nbytes <= {MAX_PRIVATE_BYTES}")
            conds.append(f"{name}.size <= {total}")
            conds += [f"not __hpvm_overlaps({name}, {o})" for o in others if o != name]
        out = [f"{pre}_on = {' and '.join(conds)}", f"if {pre}_on:"]
        outer = sizes[order[0]]
        body = [f"{pre}_nc = min(np.int64(__hpvm_num_threads()), np.int64({outer}))"]
        swap: dict[int, dict[int, str]] = {}
        for j, (name, op, array_type, users) in enumerate(private):
            dt = self._dtype(array_type)
            body.append(
                f"{pre}_P{j} = np.full(({pre}_nc,) + {name}.shape, {identity(op, array_type.dtype)}, {dt})"
            )
            for node in users:
                for p, feed in enumerate(feeds[id(node)]):
                    if feed is not None and feed[0] == "bind" and fn.params[feed[1]].name == name:
                        swap.setdefault(id(node), {})[p] = f"{pre}_Q{j}"
            self.privatized.append((fn.name, name, op, [n.name for n in users]))
        body.append(f"for {pre}_c in prange({pre}_nc):")
        inner = [f"{pre}_Q{j} = {pre}_P{j}[{pre}_c]" for j in range(len(private))]
        chunk = (f"{pre}_c * {outer} // {pre}_nc", f"({pre}_c + 1) * {outer} // {pre}_nc")
        inner += self._loops(
            fn,
            group,
            idx,
            sizes,
            feeds,
            needs,
            index,
            imported,
            peel,
            prange=False,
            chunk=chunk,
            swap=swap,
            order=order,
        )
        body += [INDENT + line for line in inner]
        # Fold the copies into the shared arrays, serially (the parallel loop is over).
        for j, (name, op, array_type, _) in enumerate(private):
            body.append(f"for {pre}_c in range({pre}_nc):")
            ids = [f"{pre}_e{d}" for d in range(array_type.rank)]
            for d, e in enumerate(ids):
                body.append(INDENT * (d + 1) + f"for {e} in range({name}.shape[{d}]):")
            where = ", ".join(ids)
            for line in fold(op, f"{name}[{where}]", f"{pre}_P{j}[{pre}_c, {where}]"):
                body.append(INDENT * (array_type.rank + 1) + line)
        return out + [INDENT + line for line in body]

    def _emit_body(
        self,
        fn,
        group,
        idx,
        sizes,
        feeds,
        needs,
        index,
        imported,
        capture,
        swap=None,
        names=None,
        parallel=False,
    ) -> list[str]:  # type: ignore[no-untyped-def]
        """One instance of the group's nodes. ``parallel``: the code runs outside any parallel
        loop of a parallel graph function, so single-instance internal nodes may run their
        own loops in parallel."""
        out: list[str] = []
        for node in group.nodes:
            k = index[id(node)]
            args = [
                self._input(fn, node, p, feeds, idx, index, imported, group, names)
                for p in range(len(node.function.params))
            ]
            callee = self._callee(node, parallel and node.dims == 0)
            if swap and id(node) in swap:  # privatized atomics: the leaf's variant on private copies
                for p, name in swap[id(node)].items():
                    args[p] = name
                callee = self._variant(node, swap[id(node)])
            ctx = self._child_ctx(node, idx, sizes, names.ctx if names else CTX_PARAM)
            pool = self._pool_args() if self._takes_pool(node) else []
            out.append(f"__hn{k}_r = {callee}({', '.join([*args, ctx, *pool])})")
            n_out = len(node.function.out_types)
            is_leaf = isinstance(node.function, LeafFunction)
            for port, out_type in enumerate(node.function.out_types):
                value = f"__hn{k}_r" if (is_leaf and n_out == 1) else f"__hn{k}_r[{port}]"
                if isinstance(out_type, ScalarType):
                    value = f"{self._dtype(out_type)}({value})"
                out.append(f"__hn{k}_v{port} = {value}")
                want = needs.get((id(node), port), set())
                if "each" in want:
                    out.append(f"__hn{k}_A{port}[{', '.join(idx)}] = __hn{k}_v{port}")
                if "ptr" in want:
                    out.append(f"__hn{k}_P{port}[{', '.join(idx)}] = __hn{k}_v{port}.ctypes.data")
                if capture and "last" in want:
                    out.append(f"__hn{k}_L{port} = __hn{k}_v{port}")
        return out

    def _emit_barrier_call(self, fn, node, k, sizes, feeds, index, imported, needs) -> list[str]:  # type: ignore[no-untyped-def]
        args = []
        for p in range(len(node.function.params)):
            feed = feeds[id(node)][p]
            if feed is not None and feed[0] == "edge" and feed[1].repl == ONE_TO_ONE and feed[1].src.dims > 0:
                raise CompileError(
                    f"node '{node.name}' ({node.location}): leaf '{node.function.name}' uses "
                    "barriers and receives a per-instance value over a one-to-one edge; the cpu "
                    "back end needs uniform inputs for barrier leaves — try target='interp'"
                )
            args.append(self._input(fn, node, p, feeds, [], index, imported, None))
        ext = [*sizes, *(["1"] * (3 - len(sizes)))]
        parent = f"{CTX_PARAM}[:{ictx.STRIDE * (self.levels - 1)}]" if self.levels > 1 else "()"
        out = [
            f"__hn{k}_r = {self.barrier_symbols[id(node.function)]}({', '.join([*args, parent, *ext, str(node.dims)])})"
        ]
        n_out = len(node.function.out_types)
        for port, out_type in enumerate(node.function.out_types):
            want = needs.get((id(node), port), set())
            if "each" in want:
                raise CompileError(
                    f"node '{node.name}' ({node.location}): a leaf with barriers sends per-instance "
                    "values over a one-to-one edge; the cpu back end does not support this yet — "
                    "try target='interp'"
                )
            value = f"__hn{k}_r" if n_out == 1 else f"__hn{k}_r[{port}]"
            if isinstance(out_type, ScalarType):
                value = f"{self._dtype(out_type)}({value})"
            out.append(f"__hn{k}_v{port} = {value}")
            out.append(f"__hn{k}_L{port} = __hn{k}_v{port}")
        if node.dims > 0 and any("last" in needs.get((id(node), p), ()) for p in range(n_out)):
            out.insert(0, f"if {' * '.join(sizes)} == 0:")
            out.insert(
                1,
                INDENT
                + f"raise __hpvm_LaunchError({self._msg(node, 'has no instances, so it sends no value over its all-to-all edge or output bind')})",
            )
        return out

    # -- pieces ---------------------------------------------------------------------------

    def _input(self, fn, node, port, feeds, idx, index, imported, group, names=None) -> str:  # type: ignore[no-untyped-def]
        kind, item = feeds[id(node)][port]
        if kind == "bind":
            return names.params[item] if names else fn.params[item].name
        edge = item
        src_k = index[id(edge.src)]
        mode = "each" if edge.repl == ONE_TO_ONE else "last"
        if isinstance(edge.src.function.out_types[edge.sp], ArrayType) and edge.src.dims > 0:
            fused = group is not None and any(edge.src is m for m in group.nodes)
            if not fused and (id(edge.src), edge.sp) not in imported:
                return f"__hn{src_k}_L{edge.sp}"  # the one shared array (checked by pointer)
            if not fused:
                return self._import_name(src_k, edge.sp, imported[(id(edge.src), edge.sp)])
        if (id(edge.src), edge.sp) in imported:
            name = self._import_name(src_k, edge.sp, imported[(id(edge.src), edge.sp)])
            if edge.src.dims > 0 and mode == "each":
                return f"{name}[{', '.join(idx)}]"
            return name
        if edge.src.dims == 0:
            return f"__hn{src_k}_v{edge.sp}"
        if mode == "each":
            if group is not None and any(edge.src is m for m in group.nodes):
                return f"__hn{src_k}_v{edge.sp}"
            return f"__hn{src_k}_A{edge.sp}[{', '.join(idx)}]"
        return f"__hn{src_k}_L{edge.sp}"

    def _src_sizes(self, edge, index, imported) -> list[str] | None:  # type: ignore[no-untyped-def]
        k = index[id(edge.src)]
        if isinstance(edge.src.function.out_types[edge.sp], ArrayType):
            return None  # an array value, not a grid: grids across stages are checked at push
        if (id(edge.src), edge.sp) in imported:
            name = self._import_name(k, edge.sp, imported[(id(edge.src), edge.sp)])
            return [f"{name}.shape[{a}]" for a in range(edge.src.dims)]
        if edge.src.dims != edge.dst.dims:
            return None  # the verifier rejects this
        return [f"__hn{k}_s{a}" for a in range(edge.src.dims)]

    def _child_ctx(self, node: Node, idx: list[str], sizes: list[str], parent: str = CTX_PARAM) -> str:
        """The context tuple of one instance of ``node``: its level, then ``parent``'s."""
        own = f"({', '.join(map(str, ictx.level(node.dims, idx, sizes)))},)"
        if self.levels > 1:
            return f"{own} + {parent}[:{ictx.STRIDE * (self.levels - 1)}]"
        return own

    def _variant(self, node: Node, swapped: dict[int, str]) -> str:
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

    def _pool_args(self) -> list[str]:
        return list(POOL_PARAMS) if self.pooled else []

    def _takes_pool(self, node: Node) -> bool:
        return isinstance(node.function, InternalFunction) or id(node.function) in self.pooled

    def _callee(self, node: Node, parallel: bool = False) -> str:
        """The function one instance of ``node`` calls; ``parallel``: an internal node's
        graph function with parallel loops (called where no parallel loop runs)."""
        if isinstance(node.function, LeafFunction):
            return self.clones[id(node.function)].symbol
        assert isinstance(node.function, InternalFunction)
        return self.graph_function(node.function, parallel=parallel)

    def _returns(self, fn: InternalFunction, stage: StageSpec | None, index) -> str:  # type: ignore[no-untyped-def]
        graph = fn.graph
        by_op = {b.op: b for b in graph.out_binds}

        def value(node: Node, port: int, mode: str) -> str:
            k = index[id(node)]
            if isinstance(node.function.out_types[port], ArrayType):
                mode = "last"  # arrays travel as the one shared array
            if node.dims == 0:
                return f"__hn{k}_v{port}"
            return f"__hn{k}_A{port}" if mode == "each" else f"__hn{k}_L{port}"

        if stage is None:
            items = [value(by_op[op].src, by_op[op].oc, "last") for op in range(len(fn.out_types))]
        else:
            items = [value(by_op[op].src, by_op[op].oc, "last") for op in stage.outputs]
            items += [value(n, p, mode) for n, p, mode in stage.exports]
        return "(" + "".join(f"{i}, " for i in items) + ")"

    def _import_name(self, k: int, port: int, mode: str) -> str:
        return f"__himp{k}_{port}_{mode}"

    def _dtype(self, t: ScalarType | ArrayType) -> str:
        name = f"__hpvm_dt_{t.dtype.name}"
        self.dtypes.add(t.dtype.name)
        return name

    def _divisor_checks(self, node: Node, expr: Any, fn: InternalFunction, names: _Names | None) -> list[str]:
        """Lines raising a LaunchError when a replication size would divide by zero (compiled
        code divides with NumPy's error model: n // 0 would silently be 0). ``fn``, ``names``:
        as for ``_render``."""
        out: list[str] = []
        for d in divisors(_renamed(expr, fn, names)):
            out.append(f"if ({d}) == 0:")
            out.append(
                INDENT
                + f"raise __hpvm_LaunchError({self._msg(node, f'replication size {expr} divides by zero')})"
            )
        return out

    def _msg(self, node: Node, what: str) -> str:
        return repr(f"node '{node.name}' ({node.location}): {what}")
