"""A parallel loop whose atomics go to per-thread copies, as generated code (``privatize.py``
decides which leaves' atomics may; this writes the loop that uses them).

When every node of a parallel loop that receives an array only applies one atomic operation
to it, the loop can run over per-thread chunks, each updating a private copy of the array
with plain operations (the leaf's privatized variant), and fold the copies into the shared
array afterwards. Whether that pays and is safe is known only at run time (the array's size
against the loop's, no overlap with the loop's other arrays): the generated code tests it
and falls back to the plain loop (``groupgen.py`` writes both).
"""

from __future__ import annotations

from ...ir.graph import LeafFunction, Node
from ...ir.types import ArrayType
from .block import INDENT, Block, Read, local
from .chunks import Chunks
from .graphscope import Group, Scope, input_name
from .loopnest import LoopNest
from .privatize import MAX_PRIVATE_BYTES, atomic_only_params, fold, identity

#: An array a parallel loop may privatize: (name, operation, type, the nodes using it).
Private = tuple[str, str, ArrayType, list[Node]]


def privatizable(scope: Scope, group: Group, nest: LoopNest) -> list[Private]:
    """Arrays of this parallel loop whose atomics can go to per-thread copies
    (privatize.py): (array, operation, type, the nodes using it)."""
    if group.barrier or group.nodes[0].dims == 0:
        return []
    fn, feeds = scope.fn, scope.feeds
    receivers: dict[str, list[tuple[Node, int]]] = {}
    for node in group.nodes:
        for p, feed in enumerate(feeds[id(node)]):
            if feed is not None and feed[0] == "bind" and isinstance(fn.params[feed[1]].type, ArrayType):
                receivers.setdefault(input_name(fn.params[feed[1]].name), []).append((node, p))
    found = []
    for name, uses in receivers.items():
        ops = set()
        for node, p in uses:
            leaf = node.function
            if not isinstance(leaf, LeafFunction) or nest.gen.is_barrier(node):
                ops.add(None)
                continue
            ops.add(atomic_only_params(nest.gen.clones[id(leaf)]).get(p))
        if len(ops) == 1 and None not in ops:
            array_type = next(p.type for p in fn.params if input_name(p.name) == name)
            users = sorted({id(n): n for n, _ in uses}.values(), key=lambda n: scope.index[id(n)])
            found.append((name, ops.pop(), array_type, users))
    return found  # type: ignore[return-value]


def _group_arrays(scope: Scope, group: Group) -> list[str]:
    """The loop-invariant array arguments of the group's nodes (by their expressions)."""
    names: list[str] = []
    for node in group.nodes:
        for p, param in enumerate(node.function.params):
            if not isinstance(param.type, ArrayType):
                continue
            expr = scope.input(node, p, [], group)
            feed = scope.feeds[id(node)][p]
            fused = feed[0] == "edge" and any(feed[1].src is m for m in group.nodes)  # type: ignore[index, union-attr]
            if not fused and expr not in names:
                names.append(expr)
    return names


def private_loops(
    nest: LoopNest,
    scope: Scope,
    g_index: int,
    group: Group,
    private: list[Private],
    idx: list[str],
    sizes: list[str],
    peel: bool,
    order: tuple[int, ...],
    chunks: Chunks,
) -> list[str]:
    """The group's loop over per-thread chunks with private copies of ``private``'s
    arrays, then the fold; runs when the run-time conditions hold (privatize.py). The
    chunks split the outermost loop of ``order``; the loop over them runs in parallel
    (``chunks.py``: each a call of a chunk function)."""
    gen = nest.gen
    fn, feeds = scope.fn, scope.feeds
    pre = f"__hp{g_index}"
    others = _group_arrays(scope, group)
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
        dt = gen.dtype(array_type)
        body.append(
            f"{pre}_P{j} = np.full(({pre}_nc,) + {name}.shape, {identity(op, array_type.dtype)}, {dt})"
        )
        for node in users:
            for p, feed in enumerate(feeds[id(node)]):
                if feed is not None and feed[0] == "bind" and input_name(fn.params[feed[1]].name) == name:
                    swap.setdefault(id(node), {})[p] = f"{pre}_Q{j}"
        program_name = next(p.name for p in fn.params if input_name(p.name) == name)  # (the report's)
        gen.privatized.append((fn.name, program_name, op, [n.name for n in users]))
    c, nc = f"{pre}_c", f"{pre}_nc"
    loop = Block()
    for j in range(len(private)):
        loop.add(f"{pre}_Q{j} = {pre}_P{j}[{c}]", [f"{pre}_P{j}", c], [f"{pre}_Q{j}"])
    chunk = (
        Read(f"{c} * {outer} // {nc}", (c, outer, nc)),
        Read(f"({c} + 1) * {outer} // {nc}", (c, outer, nc)),
    )
    loop.extend(nest.loops(scope, group, idx, sizes, peel, chunk=chunk, swap=swap, order=order))
    body += chunks.loop(c, local(nc), loop).lines
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
