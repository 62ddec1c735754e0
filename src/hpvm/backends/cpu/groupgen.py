"""One loop group of a graph function, as generated code: what runs around its loop nest.

A group (``graphscope.Group``: a fused run of one-to-one children, or one child) needs, in
order: checks that one-to-one inputs from earlier loops or other stages have its grid, the
per-instance arrays its later consumers read, then its instances — a call to a barrier
leaf's group function (``barriers.py``), one body for a single instance, a flattened loop
(``flatten.py``), or the loop nest (``loopnest.py``), with private copies of its atomics'
arrays when the run-time test says so (``privloops.py``) — then the peeled last instance,
and the check that instances sending arrays out of the loop all sent the same one. Apart
from ``graphgen.py`` because it is the part that decides, per group, which of these apply.
"""

from __future__ import annotations

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir.graph import ONE_TO_ONE, Node
from ...ir.types import ScalarType
from ...passes.clone_leaves import CTX_PARAM
from .block import INDENT
from .chunks import Chunks
from .flatten import flat_plan
from .graphscope import Group, Scope, message
from .loopnest import LoopNest, loop_order
from .privloops import private_loops, privatizable

_NO_INSTANCES = "has no instances, so it sends no value over its all-to-all edge or output bind"


class GroupEmitter:
    """Writes the loop groups of ``nest.gen``'s graph functions (``nest``: their loops)."""

    def __init__(self, nest: LoopNest):
        self.nest = nest
        self.gen = nest.gen

    def emit(self, scope: Scope, g_index: int, group: Group, chunks: Chunks | None) -> list[str]:
        """The code of group ``g_index`` of ``scope``'s graph; ``chunks`` (the graph
        function's chunk functions, ``chunks.py``): its loop runs in parallel (the outermost
        replicated level of a parallel graph function), written as calls of chunk functions."""
        out: list[str] = []
        head = group.nodes[0]
        k0 = scope.index[id(head)]
        sizes = [f"__hn{k0}_s{a}" for a in range(head.dims)]
        idx = [f"__hg{g_index}_i{a}" for a in range(head.dims)]
        out += self._grid_checks(scope, group, sizes)
        # Per-instance storage for consumers in later loops / other stages.
        for node in group.nodes:
            k = scope.index[id(node)]
            for port, out_type in enumerate(node.function.out_types):
                want = scope.needs.get((id(node), port), ())
                if "each" in want:
                    dt = self.gen.dtype(out_type)
                    out.append(f"__hn{k}_A{port} = np.empty(({', '.join(sizes)},), {dt})")
                if "ptr" in want:
                    out.append(f"__hn{k}_P{port} = np.empty(({', '.join(sizes)},), np.int64)")
        peel = any(
            "last" in scope.needs.get((id(n), p), ())
            for n in group.nodes
            for p in range(len(n.function.out_types))
        )
        if group.barrier:
            return out + self._barrier_call(scope, head, sizes)
        if head.dims == 0:
            return out + self.nest.body(scope, group, [], [], capture=True, parallel=chunks is not None).lines
        total = " * ".join(sizes)
        if peel:
            out.append(f"if {total} == 0:")
            out.append(INDENT + f"raise __hpvm_LaunchError({message(head, _NO_INSTANCES)})")
        private = privatizable(scope, group, self.nest) if chunks is not None else []
        order = loop_order(group.nodes)
        alone = chunks is not None and len(group.nodes) == 1  # (fused with others, it shares their loop)
        flat = flat_plan(head, scope.feeds, self.gen.release, self.gen.is_barrier) if alone else None
        # (The private loop first: chunk functions are numbered in the order of the code.)
        if chunks is not None and private:
            out += private_loops(self.nest, scope, g_index, group, private, idx, sizes, peel, order, chunks)
            out.append("else:")
        if chunks is not None and flat is not None:
            loops = self.nest.flat(scope, g_index, group, flat, sizes, chunks)
        else:
            # (a replicated internal node alone in its loop may make its scratch once per chunk)
            scratch = None
            if len(group.nodes) == 1 and not private:
                scratch = self.gen.scratch_call(head, scope.feeds, f"__hg{g_index}")
            loops = self.nest.loops(
                scope, group, idx, sizes, peel, chunks=chunks, order=order, scratch=scratch
            ).lines
        out += [INDENT + line for line in loops] if private else loops
        if peel:
            for i, s in zip(idx, sizes):
                out.append(f"{i} = {s} - 1")
            out += self.nest.body(scope, group, idx, sizes, capture=True).lines
        for node in group.nodes:
            k = scope.index[id(node)]
            for port in range(len(node.function.out_types)):
                if "ptr" in scope.needs.get((id(node), port), ()):
                    out.append(f"if np.any(__hn{k}_P{port} != __hn{k}_L{port}.ctypes.data):")
                    out.append(
                        INDENT
                        + f"raise __hpvm_LaunchError({message(node, f'instances send different arrays from output {port} over a one-to-one edge to a node outside their loop; the cpu back end passes one shared array there — try target=interp')})"
                    )
        return out

    def _grid_checks(self, scope: Scope, group: Group, sizes: list[str]) -> list[str]:
        """One-to-one inputs read from earlier loops or other stages need the same grid."""
        out: list[str] = []
        for node in group.nodes:
            for feed in scope.feeds[id(node)]:
                if feed is None or feed[0] != "edge" or feed[1].repl != ONE_TO_ONE:
                    continue
                edge = feed[1]
                if any(edge.src is m for m in group.nodes) or edge.src.dims == 0 and edge.dst.dims == 0:
                    continue
                src_shape = scope.src_sizes(edge)
                if src_shape is not None:
                    for a in range(node.dims):
                        out.append(f"if {src_shape[a]} != {sizes[a]}:")
                        out.append(
                            INDENT
                            + f"raise __hpvm_LaunchError({message(node, f'one-to-one edge from {edge.src.name} between grids of different extents')})"
                        )
        return out

    def _barrier_call(self, scope: Scope, node: Node, sizes: list[str]) -> list[str]:
        """A barrier leaf's instances: one call of its group function (``barriers.py``)."""
        gen = self.gen
        k = scope.index[id(node)]
        args = []
        for p in range(len(node.function.params)):
            feed = scope.feeds[id(node)][p]
            if feed is not None and feed[0] == "edge" and feed[1].repl == ONE_TO_ONE and feed[1].src.dims > 0:
                raise CompileError(
                    f"node '{node.name}' ({node.location}): leaf '{node.function.name}' uses "
                    "barriers and receives a per-instance value over a one-to-one edge; the cpu "
                    "back end needs uniform inputs for barrier leaves — try target='interp'"
                )
            args.append(scope.input(node, p, [], None))
        ext = [*sizes, *(["1"] * (3 - len(sizes)))]
        parent = f"{CTX_PARAM}[:{ictx.STRIDE * (gen.levels - 1)}]" if gen.levels > 1 else "()"
        out = [f"__hn{k}_r = {gen.group_symbol(node)}({', '.join([*args, parent, *ext, str(node.dims)])})"]
        n_out = len(node.function.out_types)
        for port, out_type in enumerate(node.function.out_types):
            want = scope.needs.get((id(node), port), set())
            if "each" in want:
                raise CompileError(
                    f"node '{node.name}' ({node.location}): a leaf with barriers sends per-instance "
                    "values over a one-to-one edge; the cpu back end does not support this yet — "
                    "try target='interp'"
                )
            value = f"__hn{k}_r" if n_out == 1 else f"__hn{k}_r[{port}]"
            if isinstance(out_type, ScalarType):
                value = f"{gen.dtype(out_type)}({value})"
            out.append(f"__hn{k}_v{port} = {value}")
            out.append(f"__hn{k}_L{port} = __hn{k}_v{port}")
        if node.dims > 0 and any("last" in scope.needs.get((id(node), p), ()) for p in range(n_out)):
            out.insert(0, f"if {' * '.join(sizes)} == 0:")
            out.insert(1, INDENT + f"raise __hpvm_LaunchError({message(node, _NO_INSTANCES)})")
        return out
