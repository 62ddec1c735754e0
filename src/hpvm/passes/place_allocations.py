"""PlaceAllocations (seed 001, DFG2LLVM_OpenCL steps 5–6): where allocation nodes run and
where their buffers may live, for the GPU back ends.

An *allocation node* is a leaf that calls ``hpvm.malloc``: seed 001's pattern for a buffer
per parent instance (a GPU block's shared memory). On a GPU it runs on the host, once per
parent instance (``place = "host"``), and its buffers become one pool in global memory, a
row per instance. A buffer may instead live in the shared (local) memory of the one kernel
that uses it when, statically:

* the output is not bound out of the graph, and every edge from it goes to one and the same
  leaf node, which runs as a kernel of its own (not fused with others, not an allocation);
* the buffer is a 1-D array passed as the same type, and that leaf does not return it
  onwards to a later step (an array returned unchanged and used further must stay global).

Those output ports are listed on the allocation node (``shared = "0,2"``); whether the
buffer fits the device's shared memory, and whether each parent instance's block holds all
its instances, is decided per launch (``backends/gpu/plan.py``). Runs after FuseOneToOne
(a fused user shares its kernel with others).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.analysis import returned_params
from ..ir.graph import ChildGraph, InternalFunction, LeafFunction, Node, functions
from ..ir.types import ArrayType
from .base import Module, Pass
from .fuse_one_to_one import FUSE, is_allocation

PLACE = "place"
SHARED = "shared"


@dataclass(frozen=True)
class PlaceAllocations(Pass):
    """Annotate allocation nodes (``place``) and their shared-memory candidates (``shared``)."""

    name = "place-allocations"

    def apply(self, module: Module) -> None:
        for fn in functions(module.root):
            if not isinstance(fn, InternalFunction):
                continue
            for node in fn.graph.nodes:
                node.attrs.pop(PLACE, None)
                node.attrs.pop(SHARED, None)
                leaf = node.function
                if not isinstance(leaf, LeafFunction) or not is_allocation(leaf):
                    continue
                node.attrs[PLACE] = "host"
                ports = [p for p in range(len(leaf.out_types)) if _may_share(fn, node, p)]
                if ports:
                    node.attrs[SHARED] = ",".join(map(str, ports))


def _may_share(fn: InternalFunction, node: Node, port: int) -> bool:
    """Whether output ``port`` of allocation node ``node`` may live in its user's shared memory."""
    graph = fn.graph
    out_type = node.function.out_types[port]
    if not isinstance(out_type, ArrayType) or out_type.rank != 1:
        return False
    if any(b.src is node and b.oc == port for b in graph.out_binds):
        return False
    users = [e for e in graph.edges if e.src is node and e.sp == port]
    if not users or len({id(e.dst) for e in users}) != 1:
        return False
    dst = users[0].dst
    user = dst.function
    if not isinstance(user, LeafFunction) or is_allocation(user) or FUSE in dst.attrs:
        return False
    returned = returned_params(user)
    for e in users:
        if user.params[e.dp].type != out_type:
            return False
        for out_port, source in enumerate(returned):
            if source == e.dp and _used(graph, dst, out_port):
                return False  # returned onwards to a later step: it must outlive the kernel
    return True


def _used(graph: ChildGraph, node: Node, port: int) -> bool:
    return any(e.src is node and e.sp == port for e in graph.edges) or any(
        b.src is node and b.oc == port for b in graph.out_binds
    )


__all__ = ["PLACE", "SHARED", "PlaceAllocations"]
