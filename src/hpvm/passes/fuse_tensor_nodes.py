"""FuseHPVMTensorNodes (seed 001): fuse chains of single-operation tensor nodes into one node.

Frontends emit one leaf node per tensor operation. This pass finds chains of consecutive
nodes whose operations match one of seed 001's patterns (``patterns.PATTERNS``, longest
first) and fuses each chain into one leaf node, pairwise, exactly as the seed describes:

* a chain is collected only across nodes that are single-operation tensor leaves
  (``hint=TENSOR_TARGET``, one ``hpvm.tensor`` call whose result is returned), all with the
  same target, not replicated, where each node's one output goes to the next node only (one
  edge, not streaming, no output bind) — so no other user can see a fused-away value;
* the first two nodes are fused into a new node, which replaces them at the head of the
  chain; this repeats until one node remains;
* the fused function takes every parameter of the first function, then those parameters of
  the second that are not fed by the edge between them; a parameter of the second fed by the
  same parent input as an existing parameter is not repeated (arguments are de-duplicated);
* the edge between the two becomes an SSA value in the fused function (its source code is
  generated: ``t0 = hpvm.tensor.convolution(...)``, ``t1 = hpvm.tensor.add(t0, b)``), and
  every other edge and bind of the two nodes is moved to the fused node.

``hpvm.tensor.fuse(root)`` runs the pass through ``hpvm.passes.run_passes``: the result is a
new, verified root; the original is not changed. The pass is a frozen object without state:
what one run fused is recorded in the module (``module.notes[FuseHPVMTensorNodes.name]``, a
list of ``FusionRecord``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SourceLocation
from ..ir.bodies import OpCall, Operand, TensorBody
from ..ir.graph import TENSOR_TARGET, InternalFunction, LeafFunction, Node, Param
from ..ir.tensorops.body import NotATensorLeaf, parse_tensor_leaf, python_name
from ..ir.tensorops.patterns import STARTS, match_length
from ..ir.types import ArrayType, PortType
from .base import Module, Pass, run_passes
from .traversal import CodeGenTraversal


@dataclass
class FusionRecord:
    """One fused chain: the new node and the nodes it replaced (for reports and tests)."""

    graph: str  # the internal function whose graph changed
    node: str
    replaced: tuple[str, ...]
    ops: tuple[str, ...]


@dataclass(frozen=True)
class FuseHPVMTensorNodes(Pass):
    """The pass (no state: a run's records go to ``module.notes[name]``)."""

    name = "fuse-hpvm-tensor-nodes"

    def apply(self, module: Module) -> None:
        fusion = _Fusion()
        fusion.apply(module)
        module.notes.setdefault(self.name, []).extend(fusion.fused)


class _Fusion(CodeGenTraversal):
    """One run of the pass: seed 001's traversal, collecting targets bottom-up, then fusing
    them when their graph's internal function is visited."""

    def __init__(self) -> None:
        self.fused: list[FusionRecord] = []
        self._targets: dict[int, list[list[Node]]] = {}
        self._claimed: set[int] = set()

    def visit_leaf(self, node: Node, parent: InternalFunction) -> None:
        """Collect the fusion target that starts at ``node``, if any (longest match)."""
        if id(node) in self._claimed:
            return
        first = _single_op(node)
        if first is None or first.op not in STARTS:
            return
        chain, ops = [node], [first.op]
        while len(chain) < 4:
            nxt = self._successor(chain[-1], parent)
            if nxt is None:
                break
            chain.append(nxt[0])
            ops.append(nxt[1])
        length = match_length(ops)
        if length >= 2:
            self._targets.setdefault(id(parent), []).append(chain[:length])
            self._claimed.update(id(n) for n in chain[:length])

    def visit_internal(self, fn: InternalFunction) -> None:
        """Fuse the targets collected in ``fn``'s graph, each pairwise from its head."""
        for target in self._targets.pop(id(fn), []):
            ops = tuple(_single_op(n).op for n in target)  # type: ignore[union-attr]
            fused = target[0]
            for nxt in target[1:]:
                fused = fuse_pair(fn, fused, nxt)
            self.fused.append(FusionRecord(fn.name, fused.name, tuple(n.name for n in target), ops))

    def _successor(self, node: Node, parent: InternalFunction) -> tuple[Node, str] | None:
        """The node that alone consumes ``node``'s result, if it can join the chain."""
        graph = parent.graph
        if any(b.src is node for b in graph.out_binds):
            return None
        edges = [e for e in graph.edges if e.src is node]
        if len(edges) != 1 or edges[0].stream:
            return None
        dst = edges[0].dst
        if id(dst) in self._claimed or dst.function.hint != node.function.hint:
            return None
        call = _single_op(dst)
        return None if call is None else (dst, call.op)


def _single_op(node: Node) -> OpCall | None:
    """The operation of a single-operation tensor node (None for every other node)."""
    fn = node.function
    if node.dims or not isinstance(fn, LeafFunction) or fn.hint != TENSOR_TARGET or len(fn.out_types) != 1:
        return None
    try:
        return parse_tensor_leaf(fn).single_op()
    except NotATensorLeaf:
        return None


def fuse_pair(parent: InternalFunction, a: Node, b: Node) -> Node:
    """Fuse node ``a`` and its consumer ``b`` (children of ``parent``) into one new node that
    takes ``a``'s place; every edge and bind is rewired (seed 001, steps 7–9)."""
    graph = parent.graph
    fa, fb = a.function, b.function
    assert isinstance(fa, LeafFunction) and isinstance(fb, LeafFunction)
    ta, tb = parse_tensor_leaf(fa), parse_tensor_leaf(fb)
    (link,) = [e for e in graph.edges if e.src is a and e.dst is b]
    a_binds = {bd.ip: bd.ic for bd in graph.in_binds if bd.dst is a}  # parent input -> a's port

    params: list[Param] = list(fa.params)
    taken = {p.name for p in params}
    b_port: dict[int, Operand] = {}  # b's parameter -> its operand in the fused function
    new_port: dict[int, int | None] = {}  # b's port -> fused port (None: de-duplicated away)
    for i, p in enumerate(fb.params):
        if i == link.dp:
            b_port[i] = ta.returns[link.sp]
            continue
        bind = next((bd for bd in graph.in_binds if bd.dst is b and bd.ic == i), None)
        if bind is not None and bind.ip in a_binds and fa.params[a_binds[bind.ip]].type == p.type:
            b_port[i] = Operand("param", a_binds[bind.ip])  # the same parent input: one parameter
            new_port[i] = None
            continue
        name, k = p.name, 0
        while name in taken:
            k += 1
            name = f"{p.name}_{k}"
        taken.add(name)
        params.append(Param(name, p.type, p.layout))
        b_port[i] = Operand("param", len(params) - 1)
        new_port[i] = len(params) - 1

    offset = len(ta.calls)

    def remap(o: Operand) -> Operand:
        if o.kind == "param":
            return b_port[o.value]
        if o.kind == "local":
            return Operand("local", o.value + offset)
        return o

    calls = (*ta.calls, *(OpCall(c.op, tuple(remap(x) for x in c.args), c.line) for c in tb.calls))
    returns = tuple(remap(r) for r in tb.returns)
    name = graph.unique_name(f"{a.name}_{b.name}")
    leaf = _tensor_leaf(name, params, list(fb.out_types), TensorBody(calls, returns), fa.hint)
    fused = Node(name, leaf, (), a.location)

    graph.nodes[graph.nodes.index(a)] = fused
    graph.nodes.remove(b)
    graph.edges.remove(link)
    for e in graph.edges:
        if e.dst is a:
            e.dst = fused
        elif e.dst is b:
            e.dst, e.dp = fused, new_port[e.dp]  # type: ignore[assignment]
        if e.src is b:
            e.src = fused
    kept = []
    for bd in graph.in_binds:
        if bd.dst is a:
            bd.dst = fused
        elif bd.dst is b:
            if new_port[bd.ic] is None:
                continue  # its parent input already feeds the fused node
            bd.dst, bd.ic = fused, new_port[bd.ic]  # type: ignore[assignment]
        kept.append(bd)
    graph.in_binds[:] = kept
    for ob in graph.out_binds:
        if ob.src is b:
            ob.src = fused
    return fused


def _tensor_leaf(
    name: str, params: list[Param], outputs: list[PortType], body: TensorBody, hint: str | None
) -> LeafFunction:
    """A fused leaf: a tensor body reading every array parameter, located at the Python it
    renders as (what messages quote)."""
    name = python_name(name)
    leaf = LeafFunction(
        None,
        name,
        params,
        outputs,
        hint=hint,
        ins=tuple(p.name for p in params if isinstance(p.type, ArrayType)),
        body=body,
    )
    leaf.location = SourceLocation(leaf.pyfunc.__code__.co_filename, 1)
    return leaf


def fuse(root: InternalFunction) -> InternalFunction:
    """A new root with every matching chain of tensor nodes fused (``root`` is unchanged)."""
    return run_passes(root, [FuseHPVMTensorNodes()])


__all__ = ["FuseHPVMTensorNodes", "FusionRecord", "fuse", "fuse_pair"]
