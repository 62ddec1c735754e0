"""A loop group's instance loops, as generated code (seed 001: a replicated child becomes a
loop nest over its instances).

``LoopNest`` writes the ``for``/``prange`` nest of one group (``graphscope.Group``), the body
one instance runs (each node's call, its outputs into registers, per-instance arrays or the
peeled value), and the one parallel loop a flattened node's instances and its children's
share (``flatten.py``). Which loops are parallel, what is peeled and whether atomics go to
private copies is decided by the group's caller (``groupgen.py``); what the nest calls (leaf
clones, graph functions, privatized variants) by the program's ``GraphGen``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir import instance_context as ictx
from ...ir.bodies import LLVMBody
from ...ir.graph import LeafFunction, Node
from ...ir.leafstride import nest_order, unit_stride_axis
from ...ir.types import ScalarType
from ...passes.clone_leaves import CTX_PARAM
from .flatten import FlatPlan
from .graphscope import INDENT, Group, Names, Scope
from .narrow import MASK
from .sizes import size_lines

if TYPE_CHECKING:
    from .graphgen import GraphGen


def unit_stride(node: Node) -> int | None:
    """The instance axis ``node``'s leaf indexes its arrays with at unit stride, or ``None``:
    ``llvm_native/access.py`` reads an LLVM leaf, ``ir/leafstride.py`` a Python one."""
    leaf = node.function
    if not isinstance(leaf, LeafFunction):
        return None
    if isinstance(leaf.body, LLVMBody):
        from ..llvm_native.access import unit_stride_dimension  # (only LLVM leaves load it)

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


def unravel(flat: str, idx: list[str], sizes: list[str]) -> list[str]:
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


class LoopNest:
    """Writes instance loops and instance bodies for the graph functions of ``gen``."""

    def __init__(self, gen: GraphGen):
        self.gen = gen

    def child_ctx(self, node: Node, idx: list[str], sizes: list[str], parent: str = CTX_PARAM) -> str:
        """The context tuple of one instance of ``node``: its level, then ``parent``'s."""
        own = f"({', '.join(map(str, ictx.level(node.dims, idx, sizes)))},)"
        if self.gen.levels > 1:
            return f"{own} + {parent}[:{ictx.STRIDE * (self.gen.levels - 1)}]"
        return own

    def loops(
        self,
        scope: Scope,
        group: Group,
        idx: list[str],
        sizes: list[str],
        peel: bool,
        prange: bool,
        chunk: tuple[str, str] | None = None,
        swap: dict[int, dict[int, str]] | None = None,
        names: Names | None = None,
        order: tuple[int, ...] | None = None,
    ) -> list[str]:
        """The group's loop nest (the last instance skipped when it is peeled: the innermost
        loop stops one short where every outer id is at its last, rather than a test in the
        body, which kept LLVM from vectorizing the loop). ``order``: the
        dimensions' loops, outermost first (``loop_order``; default x outermost); ``chunk``:
        the outermost loop runs ``range(lo, hi)`` of a chunk (the callers' chunks split the
        extent of dimension ``order[0]``); ``swap``: private copies; ``names``: the scope's
        inputs and context under other names (``Names``). The order only changes which
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
        inner = self.body(scope, group, idx, sizes, capture=False, swap=swap, names=names)
        out += [INDENT * depth + line for line in inner]
        return out

    def body(
        self,
        scope: Scope,
        group: Group,
        idx: list[str],
        sizes: list[str],
        capture: bool,
        swap: dict[int, dict[int, str]] | None = None,
        names: Names | None = None,
        parallel: bool = False,
    ) -> list[str]:
        """One instance of the group's nodes. ``capture``: keep the values that are sent on
        as the last instance's; ``parallel``: the code runs outside any parallel loop of a
        parallel graph function, so single-instance internal nodes may run their own loops
        in parallel."""
        gen = self.gen
        out: list[str] = []
        for node in group.nodes:
            k = scope.index[id(node)]
            args = [scope.input(node, p, idx, group, names) for p in range(len(node.function.params))]
            callee = gen.callee(node, parallel and node.dims == 0)
            if swap and id(node) in swap:  # privatized atomics: the leaf's variant on private copies
                for p, name in swap[id(node)].items():
                    args[p] = name
                callee = gen.variant(node, swap[id(node)])
            ctx = self.child_ctx(node, idx, sizes, names.ctx if names else CTX_PARAM)
            pool = gen.pool_args() if gen.takes_pool(node) else []
            out.append(f"__hn{k}_r = {callee}({', '.join([*args, ctx, *pool])})")
            n_out = len(node.function.out_types)
            is_leaf = isinstance(node.function, LeafFunction)
            for port, out_type in enumerate(node.function.out_types):
                value = f"__hn{k}_r" if (is_leaf and n_out == 1) else f"__hn{k}_r[{port}]"
                if isinstance(out_type, ScalarType):
                    value = f"{gen.dtype(out_type)}({value})"
                out.append(f"__hn{k}_v{port} = {value}")
                want = scope.needs.get((id(node), port), set())
                if "each" in want:
                    out.append(f"__hn{k}_A{port}[{', '.join(idx)}] = __hn{k}_v{port}")
                if "ptr" in want:
                    out.append(f"__hn{k}_P{port}[{', '.join(idx)}] = __hn{k}_v{port}.ctypes.data")
                if capture and "last" in want:
                    out.append(f"__hn{k}_L{port} = __hn{k}_v{port}")
        return out

    def flat(self, scope: Scope, g_index: int, group: Group, plan: FlatPlan, sizes: list[str]) -> list[str]:
        """``plan.node``'s instances and its children's as one parallel loop (``flatten.py``):
        a ``prange`` over chunks of (parent instance, child outer id) pairs."""
        node, inner_fn = plan.node, plan.node.function
        pre = f"__hf{g_index}"
        k = scope.index[id(node)]
        pidx = [f"{pre}_p{a}" for a in range(node.dims)]
        params = [f"{pre}_a{i}" for i in range(len(inner_fn.params))]
        inputs = [scope.input(node, i, pidx, group) for i in range(len(params))]
        ready = frozenset(i for i, expr in enumerate(inputs) if not any(p in expr for p in pidx))
        names = Names(params, f"{pre}_ctx", ready)
        # The inner graph's nodes get names of their own: __hn<k>_<j>_...
        inner_scope = Scope(
            inner_fn,  # type: ignore[arg-type]
            plan.feeds,
            {id(n): f"{k}_{j}" for j, n in enumerate(inner_fn.graph.nodes)},  # type: ignore[union-attr]
        )
        inner = Group(plan.inner, plan.inner[0].dims)
        out = [f"{params[i]} = {inputs[i]}" for i in sorted(ready)]
        out.append(f"{pre}_t = {' * '.join(sizes)}")
        # The children's sizes and checks, once, if there are parent instances (as the inner
        # graph function would have evaluated them in each).
        guards, assigns, checks = size_lines(inner_scope, inner, self.gen.clones, names)
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
        parent = unravel(f"{pre}_p", pidx, sizes)
        parent += [f"{params[i]} = {inputs[i]}" for i in range(len(params)) if i not in ready]
        if self.gen.levels > 1:
            parent.append(f"{names.ctx} = {self.child_ctx(node, pidx, sizes)}")
        parent.append(f"{pre}_b = {pre}_p * {outer}")
        chunk = (f"max({pre}_lo - {pre}_b, 0)", f"min({pre}_hi - {pre}_b, {outer})")
        cidx = [f"__hg{g_index}f_i{a}" for a in range(inner.dims)]
        parent += self.loops(
            inner_scope, inner, cidx, csizes, False, False, chunk=chunk, names=names, order=order
        )
        loop += [INDENT + line for line in parent]
        return out + [INDENT + line for line in loop]
