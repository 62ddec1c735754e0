"""A loop group's instance loops, as generated code (seed 001: a replicated child becomes a
loop nest over its instances).

``LoopNest`` writes the loop nest of one group (``graphscope.Group``), the body
one instance runs (each node's call, its outputs into registers, per-instance arrays or the
peeled value), and the one parallel loop a flattened node's instances and its children's
share (``flatten.py``). Which loops are parallel, what is peeled and whether atomics go to
private copies is decided by the group's caller (``groupgen.py``); what the nest calls (leaf
clones, graph functions, privatized variants) by the program's ``GraphGen``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...ir import instance_context as ictx
from ...ir.bodies import LLVMBody
from ...ir.graph import LeafFunction, Node
from ...ir.leafstride import nest_order, unit_stride_axis
from ...ir.types import ScalarType
from ...passes.clone_leaves import CTX_PARAM
from .block import INDENT, Block, Read, blocked_loop, local
from .chunks import Chunks, chunk_bounds, chunk_count
from .flatten import FlatPlan
from .graphscope import Group, Names, Scope
from .jam import JAM_RAN, Jammed
from .narrow import MASK
from .scratch import ScratchCall
from .sizes import context_extents, size_lines

if TYPE_CHECKING:
    from .graphgen import GraphGen


def unit_stride(node: Node) -> int | None:
    """The instance axis ``node``'s leaf indexes its arrays with at unit stride, or ``None``:
    ``llvm_native/access.py`` reads an LLVM leaf, ``ir/leafstride.py`` a Python one."""
    leaf = node.function
    if not isinstance(leaf, LeafFunction):
        return None
    if isinstance(leaf.body, LLVMBody):
        from ..llvm_native.stride import unit_stride_dimension  # (only LLVM leaves load it)

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


def unravel(flat: str, idx: list[str], sizes: list[str]) -> Block:
    """Lines setting ``idx`` to the coordinates of the row-major linear index ``flat`` (a
    local) in a grid of ``sizes`` (x outermost)."""
    out = Block()
    rest = flat
    for a in range(len(idx) - 1):
        stride = " * ".join(sizes[a + 1 :])
        out.add(f"{idx[a]} = {rest} // ({stride})", [rest, *sizes[a + 1 :]], [idx[a]])
        out.add(
            f"{idx[a]}_r = {rest} - {idx[a]} * ({stride})", [rest, idx[a], *sizes[a + 1 :]], [f"{idx[a]}_r"]
        )
        rest = f"{idx[a]}_r"
    return out.add(f"{idx[-1]} = {rest}", [rest], [idx[-1]])


class LoopNest:
    """Writes instance loops and instance bodies for the graph functions of ``gen``."""

    def __init__(self, gen: GraphGen):
        self.gen = gen

    def child_ctx(self, node: Node, idx: list[str], sizes: list[str], parent: str = CTX_PARAM) -> Read:
        """The context tuple of one instance of ``node``: its level, then ``parent``'s."""
        own = f"({', '.join(map(str, ictx.level(node.dims, idx, sizes)))},)"
        if self.gen.levels > 1:
            return Read(f"{own} + {parent}[:{ictx.STRIDE * (self.gen.levels - 1)}]", (*idx, *sizes, parent))
        return Read(own, (*idx, *sizes))

    def loops(
        self,
        scope: Scope,
        group: Group,
        idx: list[str],
        sizes: list[str],
        peel: bool,
        chunks: Chunks | None = None,
        chunk: tuple[Read, Read] | None = None,
        swap: dict[int, dict[int, str]] | None = None,
        names: Names | None = None,
        order: tuple[int, ...] | None = None,
        scratch: ScratchCall | None = None,
    ) -> Block:
        """The group's loop nest (the last instance skipped when it is peeled: the innermost
        loop stops one short where every outer id is at its last, rather than a test in the
        body, which kept LLVM from vectorizing the loop). ``order``: the
        dimensions' loops, outermost first (``loop_order``; default x outermost); ``chunks``:
        the outermost loop runs in parallel, written as calls of a chunk function
        (``chunks.py``); ``chunk``: the outermost loop runs ``range(lo, hi)`` of a chunk (the
        callers' chunks split the extent of dimension ``order[0]``); ``swap``: private
        copies; ``names``: the scope's inputs and context under other names (``Names``);
        ``scratch``: the instances share buffers made once per chunk (``scratch.py``). The
        order only changes which instance runs when: ids, per-instance arrays and the peeled
        last instance stay by id."""
        dims = group.nodes[0].dims
        if order is None:
            order = tuple(range(dims))
        heads: list[tuple[str, Read]] = []  # each loop's variable and bound, outermost first
        for pos, a in enumerate(order):
            end = local(sizes[a])
            if peel and pos == dims - 1:  # the peeled last instance: the innermost loop stops short
                outer = order[:-1]
                outer_last = " and ".join(f"{idx[b]} == {sizes[b]} - 1" for b in outer)
                text = (
                    f"({end.text} - 1 if {outer_last} else {end.text})" if outer_last else f"{end.text} - 1"
                )
                end = Read(text, (sizes[a], *(idx[b] for b in outer), *(sizes[b] for b in outer)))
            if pos == 0 and chunk is not None:
                lo, hi = chunk
                text = (
                    f"{lo.text}, min({hi.text}, {end.text})"
                    if end.text != sizes[a]
                    else f"{lo.text}, {hi.text}"
                )
                end = Read(text, (*lo.names, *hi.names, *end.names))
            heads.append((f"{idx[a]}_w" if pos == dims - 1 else idx[a], end))
        # The innermost id through __hpvm_narrow, so that LLVM vectorizes (narrow.py). Where
        # a 2-D or 3-D nest is a parallel loop's chunk function, the 32-bit test is made
        # here, once: two chunk functions, the first called while the extent fits (LLVM did
        # not unswitch such a nest on a run-time flag, so it did not vectorize; a 1-D loop it
        # does unswitch, and one function compiles faster). The first bounds its innermost
        # loop by min(bound, MASK), the bound itself there, rather than masking the id: the
        # id stays the loop's own induction variable, whose first iterations LLVM peels to
        # drop a clamp like max(j - 1, 0) (a masked id hid it: the gradient stage's loads
        # were all gathers).
        inner_id = idx[order[-1]]
        small, wide = f"{inner_id}_small", f"{inner_id}_w"
        size = sizes[order[-1]]
        out = Block().add(f"{small} = {size} <= {MASK}", [size], [small])
        around = (
            None if scratch is None else self._scratch_around(scope, group, scratch, sizes, order, chunks)
        )

        def instance(narrowed: Read, zero: bool = True, jammed: Jammed | None = None) -> Block:
            call = scratch if scratch is None else replace(scratch, zero=zero)
            body = self.body(
                scope, group, idx, sizes, capture=False, swap=swap, names=names, scratch=call, callee=jammed
            )
            return Block().add(f"{inner_id} = {narrowed.text}", narrowed.names, [inner_id]).extend(body)

        jam = None if scratch is not None else self._jam(scope, group, idx, order, swap, names)

        def jammed_block(var: str, narrowed: Read) -> Block:
            """One call of the jammed clone for the block of instances from ``var``; a guarded
            one (``jam.py``, "Guards") that did not run them is followed by each one plain."""
            assert jam is not None
            block = instance(narrowed, jammed=jam)
            if jam.guarded:
                header = f"for {var} in range({var}, {var} + {jam.width}):"
                lanes = Block().nest(header, instance(narrowed), [var], [var])
                block.nest(f"if not {JAM_RAN}:", lanes, [JAM_RAN])
            return block

        def nest(loop_heads: list[tuple[str, Read]], narrowed: Read) -> Block:
            """The loops ``loop_heads`` around one instance; jammed (``jam.py``): the innermost
            loop runs whole blocks of the jammed clone, then the rest one by one."""
            if jam is None:
                return self._nest(loop_heads, instance(narrowed))
            var, bound = loop_heads[-1]
            inner = blocked_loop(
                var, Read("0", ()), bound, jam.width, jammed_block(var, narrowed), instance(narrowed)
            )
            return self._nest(loop_heads[:-1], inner)

        narrowed = Read(f"__hpvm_narrow({wide}, {small})", (wide, small))
        if chunks is None:
            if around is None:
                return out.extend(nest(heads, narrowed))
            # The loop twice, with and without the zero-fill, picked by _pre's flag (scratch.py);
            # made only if an instance runs: the checks and mallocs are the first instance's.
            assert scratch is not None
            made = Block().extend(around[0])
            if scratch.zero_only:
                made.extend(self._nest(heads, instance(narrowed, True)))
            else:
                made.nest(
                    f"if {scratch.flag()}:", self._nest(heads, instance(narrowed, True)), [scratch.flag()]
                )
                made.nest("else:", self._nest(heads, instance(narrowed, False)))
            return out.nest(f"if {' * '.join(sizes)} > 0:", made.extend(around[1]), sizes)
        var, bound = heads[0]
        if dims == 1:
            if scratch is None or scratch.zero_only:
                jammed = None if jam is None else (jam.width, jammed_block(var, narrowed))
                return out.extend(chunks.loop(var, bound, instance(narrowed), around=around, jammed=jammed))
            # (the zero-filling loop in a chunk function of its own: chunks.py, scratch.py)
            split = (scratch.flag(), instance(narrowed, True))
            return out.extend(chunks.loop(var, bound, instance(narrowed, False), around=around, split=split))
        var_in, end = heads[-1]
        bounded = [*heads[1:-1], (var_in, Read(f"min({end.text}, {MASK})", end.names))]
        masked = nest(bounded, local(wide))  # (with scratch: always zero-filled)
        plain = self._nest(heads[1:], instance(local(wide)))  # (the rare wide path: not jammed)
        return out.extend(chunks.loop(var, bound, masked, wide=(small, plain), around=around))

    def _jam(
        self,
        scope: Scope,
        group: Group,
        idx: list[str],
        order: tuple[int, ...],
        swap: dict[int, dict[int, str]] | None,
        names: Names | None,
    ) -> Jammed | None:
        """The jammed clone running neighbouring instances along the innermost loop's axis
        (``jam.py``; an LLVM leaf's: ``llvm_native/wijam.py``) and its width, or ``None``:
        the group is one leaf without privatized atomics, whose inputs are the same along
        that loop, and of whose outputs only the last instance's values are used (the
        jammed clone returns nothing, or a guarded one whether it ran: ``jammed_block``)."""
        if len(group.nodes) != 1 or (swap and id(group.nodes[0]) in swap):
            return None
        node = group.nodes[0]
        if not isinstance(node.function, LeafFunction):
            return None
        ports = range(len(node.function.out_types))
        if any(scope.needs.get((id(node), port), set()) - {"last"} for port in ports):
            return None
        inner = idx[order[-1]]
        reads = (scope.read(node, p, idx, group, names) for p in range(len(node.function.params)))
        if any(inner in read.names for read in reads):
            return None
        return self.gen.jammed(node, order[-1])

    def _scratch_around(
        self,
        scope: Scope,
        group: Group,
        scratch: ScratchCall,
        sizes: list[str],
        order: tuple[int, ...],
        chunks: Chunks | None,
    ) -> tuple[Block, Block]:
        """The lines before and after a loop (or each chunk of it) whose instances share
        scratch buffers: ``_pre``'s call, given the node's inputs (the same in every
        instance) and the context of its first instance (``_pre`` reads no id), then the
        pool's release. A chunk whose inner extents are empty runs no instance: it returns
        before making anything."""
        node = scratch.node
        args = [scope.read(node, p, [], group) for p in range(len(node.function.params))]
        own = f"({', '.join(map(str, ictx.level(node.dims, ['0'] * node.dims, sizes)))},)"
        ctx = Read(own, tuple(sizes))
        if self.gen.levels > 1:
            ctx = Read(f"{own} + {CTX_PARAM}[:{ictx.STRIDE * (self.gen.levels - 1)}]", (*sizes, CTX_PARAM))
        before = Block()
        inner = [sizes[a] for a in order[1:]]
        if chunks is not None and inner:
            before.nest(f"if {' * '.join(inner)} == 0:", Block().add("return"), inner)
        before.extend(scratch.setup(args, ctx, self.gen.pool_args()))
        return before, scratch.teardown()

    @staticmethod
    def _nest(heads: list[tuple[str, Read]], block: Block) -> Block:
        """``block`` inside the loops ``heads`` (variable, bound), outermost first."""
        for var, bound in reversed(heads):
            block = Block().nest(f"for {var} in range({bound.text}):", block, bound.names, [var])
        return block

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
        scratch: ScratchCall | None = None,
        callee: Jammed | None = None,
    ) -> Block:
        """One instance of the group's nodes. ``capture``: keep the values that are sent on
        as the last instance's; ``parallel``: the code runs outside any parallel loop of a
        parallel graph function, so single-instance internal nodes may run their own loops
        in parallel; ``scratch``: its node runs its ``_each`` graph function, given the chunk's
        buffers (``scratch.py``); ``callee``: the (one) node calls this function instead, its
        jammed clone (``jam.py``)."""
        gen = self.gen
        out = Block()
        for node in group.nodes:
            k = scope.index[id(node)]
            args = [scope.read(node, p, idx, group, names) for p in range(len(node.function.params))]
            mine = scratch is not None and scratch.node is node  # (its _each function, with the buffers)
            call = callee.symbol if callee else None
            call = call or (scratch.callee() if mine else gen.callee(node, parallel and node.dims == 0))  # type: ignore[union-attr]
            if swap and id(node) in swap:  # privatized atomics: the leaf's variant on private copies
                for p, private in swap[id(node)].items():
                    args[p] = local(private)
                call = gen.variant(node, swap[id(node)])
            ctx = self.child_ctx(node, idx, sizes, names.ctx if names else CTX_PARAM)
            pool = gen.pool_args() if gen.takes_pool(node) else []
            result = f"__hn{k}_r"
            texts = [*(a.text for a in args), ctx.text, *pool]
            reads = [*(n for a in args for n in a.names), *ctx.names, *pool]
            if mine:
                texts += scratch.buffers()  # type: ignore[union-attr]
                reads += scratch.buffers()  # type: ignore[union-attr]
            if callee is not None:  # (a jammed clone returns nothing, or whether it ran: _jam)
                ran = [JAM_RAN] if callee.guarded else []
                out.add(f"{JAM_RAN} = " * bool(ran) + f"{call}({', '.join(texts)})", reads, ran)
                continue
            out.add(f"{result} = {call}({', '.join(texts)})", reads, [result])
            n_out = len(node.function.out_types)
            is_leaf = isinstance(node.function, LeafFunction)
            for port, out_type in enumerate(node.function.out_types):
                value = result if (is_leaf and n_out == 1) else f"{result}[{port}]"
                if isinstance(out_type, ScalarType):
                    value = f"{gen.dtype(out_type)}({value})"
                v = f"__hn{k}_v{port}"
                out.add(f"{v} = {value}", [result], [v])
                want = scope.needs.get((id(node), port), set())
                if "each" in want:
                    out.add(f"__hn{k}_A{port}[{', '.join(idx)}] = {v}", [f"__hn{k}_A{port}", *idx, v])
                if "ptr" in want:
                    out.add(
                        f"__hn{k}_P{port}[{', '.join(idx)}] = {v}.ctypes.data", [f"__hn{k}_P{port}", *idx, v]
                    )
                if capture and "last" in want:
                    out.add(f"__hn{k}_L{port} = {v}", [v], [f"__hn{k}_L{port}"])
        return out

    def flat(
        self, scope: Scope, g_index: int, group: Group, plan: FlatPlan, sizes: list[str], chunks: Chunks
    ) -> list[str]:
        """``plan.node``'s instances and its children's as one parallel loop (``flatten.py``):
        chunks of (parent instance, child outer id) pairs, each a call of a chunk function
        (``chunks.py``) running its pairs."""
        node, inner_fn = plan.node, plan.node.function
        pre = f"__hf{g_index}"
        k = scope.index[id(node)]
        pidx = [f"{pre}_p{a}" for a in range(node.dims)]
        params = [f"{pre}_a{i}" for i in range(len(inner_fn.params))]
        inputs = [scope.read(node, i, pidx, group) for i in range(len(params))]
        ready = frozenset(i for i, expr in enumerate(inputs) if not any(p in expr.names for p in pidx))
        names = Names(params, f"{pre}_ctx", ready)
        # The inner graph's nodes get names of their own: __hn<k>_<j>_...
        inner_scope = Scope(
            inner_fn,  # type: ignore[arg-type]
            plan.feeds,
            {id(n): f"{k}_{j}" for j, n in enumerate(inner_fn.graph.nodes)},  # type: ignore[union-attr]
        )
        inner = Group(plan.inner, plan.inner[0].dims)
        out = [f"{params[i]} = {inputs[i].text}" for i in sorted(ready)]
        total = f"{pre}_t"
        out.append(f"{total} = {' * '.join(sizes)}")
        # The children's sizes and checks, once, if there are parent instances (as the inner
        # graph function would have evaluated them in each).
        ancestor = context_extents(self.gen.levels, sizes)
        guards, assigns, checks = size_lines(inner_scope, inner, self.gen.clones, ancestor, names)
        if guards:
            out.append(f"if {total} > 0:")
            out += [INDENT + line for line in guards]
        out += [f"{name} = ({expr}) if {total} > 0 else 0" for name, expr in assigns]
        if checks:
            out.append(f"if {total} > 0:")
            out += [INDENT + line for line in checks]
        csizes = [name for name, _ in assigns]
        order = loop_order(plan.inner)
        outer = csizes[order[0]]  # the children's outermost loop, shared out with the parents
        n, nc, c, lo, hi, p, b = (f"{pre}_{s}" for s in ("n", "nc", "c", "lo", "hi", "p", "b"))
        out += [
            f"{n} = {total} * {outer}",
            f"{nc} = {chunk_count(n)}",
        ]
        loop = Block()
        for bound, expr in zip((lo, hi), chunk_bounds(c, n, nc)):  # (this chunk's share of the pairs)
            loop.add(f"{bound} = {expr}", [c, n, nc], [bound])
        parent = unravel(p, pidx, sizes)
        for i in range(len(params)):
            if i not in ready:
                parent.add(f"{params[i]} = {inputs[i].text}", inputs[i].names, [params[i]])
        if self.gen.levels > 1:
            ctx = self.child_ctx(node, pidx, sizes)
            parent.add(f"{names.ctx} = {ctx.text}", ctx.names, [names.ctx])
        parent.add(f"{b} = {p} * {outer}", [p, outer], [b])
        chunk = (Read(f"max({lo} - {b}, 0)", (lo, b)), Read(f"min({hi} - {b}, {outer})", (hi, b, outer)))
        cidx = [f"__hg{g_index}f_i{a}" for a in range(inner.dims)]
        parent.extend(
            self.loops(inner_scope, inner, cidx, csizes, False, chunk=chunk, names=names, order=order)
        )
        loop.nest(
            f"for {p} in range({lo} // {outer}, ({hi} + {outer} - 1) // {outer}):",
            parent,
            [lo, hi, outer],
            [p],
        )
        return out + chunks.loop(c, local(nc), loop).lines
