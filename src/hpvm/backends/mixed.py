"""Graphs that mix devices: the root's children run on the back ends their hints select.

Seed 000 lets every node carry a hint; DESIGN.md resolves a hint to the first available
back end of its device class. When the leaves of one root select several back ends, the
graph is split at the root's children: each child (with everything below it) runs on one
back end, and the children are run in topological order, consecutive children on the same
back end together, each group through its back end's ``run_stage``. Values crossing from
one back end to another go through the exchange form of ``Backend.export_outputs`` /
``import_outputs``. Streaming works the same way: a pipeline stage whose children use
several back ends runs them group by group.

Which back end runs which child is decided by the SplitByTarget pass
(``passes/split_by_target.py``: a leaf without a hint takes its nearest ancestor's; a child
whose own leaves select several back ends is an error); this module reads its ``target``
attributes and runs the parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CompileError
from ..ir.graph import InternalFunction, LeafFunction, Node
from ..ir.verify import topological_order
from ..passes import PassManager
from ..passes.split_by_target import TARGET, SplitByTarget
from .base import Backend, PortKey, RunContext, backend_for_hint, check_bodies, get_backend


def split_by_target(root: InternalFunction) -> InternalFunction:
    """A copy of ``root`` whose children carry the ``target`` the SplitByTarget pass chose."""
    return PassManager([SplitByTarget(backend_for_hint)]).run(root)


def targets(split: InternalFunction) -> set[str]:
    """The back ends a split graph's children run on."""
    return {node.attrs[TARGET] for node in split.graph.nodes}


class MixedBackend(Backend):
    """Runs each child of one root on the back end its hints select (see the module doc).

    ``split`` is the root as SplitByTarget annotated it; the parts are handed to their back
    ends in that form, so each back end's own lowering sees the split (FuseOneToOne never
    fuses nodes of different back ends)."""

    def __init__(self, split: InternalFunction):
        self.split = split
        self.names = sorted(targets(split))
        self.name = "+".join(self.names)
        self.device = "mixed"
        self._order = topological_order(split.graph)
        for node in split.graph.nodes:
            part = node.function
            backend = self.backend_of(node)
            if isinstance(part, InternalFunction):
                check_bodies(backend, part, f"node '{node.name}' of '{split.name}': ")
            elif isinstance(part, LeafFunction) and part.body_kind not in backend.accepts:
                raise CompileError(
                    f"node '{node.name}' of '{split.name}': the {backend.name} back end its hints "
                    f"select cannot run leaf '{part.name}' ({part.location}), which has a "
                    f"{part.body_kind} body; give it a hint that selects a back end accepting it"
                )
            else:
                check_bodies(backend, part, f"node '{node.name}' of '{split.name}': ")

    def backend_of(self, node: Node) -> Backend:
        return get_backend(self.split.graph.node(node.name).attrs[TARGET])

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:
        pass  # each back end compiles its part on first use

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        _, outputs = self.run_stage(root, args, root.graph.nodes, {}, ctx)
        return tuple(outputs[i] for i in range(len(root.out_types)))

    def run_stage(
        self,
        root: InternalFunction,
        args: Sequence[Any],
        nodes: Sequence[Node],
        upstream: dict[str, Any],
        ctx: RunContext | None = None,
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        ctx = ctx or RunContext()
        root = self.split  # (the caller's root, or this split of it: the parts are the split's)
        env = {p.name: a for p, a in zip(root.params, args)}
        wanted = {n.name for n in nodes}
        exchanged: dict[str, dict[PortKey, Any]] = dict(upstream)  # node name → exchange form
        outputs: dict[int, Any] = {}
        tracker = ctx.tracker
        for backend, group in self._groups([n for n in self._order if n.name in wanted]):
            inside = {id(n) for n in group}
            feeding = {
                e.src.name: e.src for e in root.graph.edges if id(e.dst) in inside and id(e.src) not in inside
            }
            own_upstream = {
                name: backend.import_outputs(src, src.evaluate_sizes(env, ""), exchanged[name])
                for name, src in feeding.items()
            }
            token = tracker.prepare_for(backend, root, args, ctx.transfers)  # valid where this part runs
            try:
                produced, outs = backend.run_stage(root, args, group, own_upstream, ctx)
            finally:
                tracker.finished(token)
            for node in group:
                exchanged[node.name] = backend.export_outputs(
                    node, node.evaluate_sizes(env, ""), produced[node.name], ctx
                )
            outputs.update(outs)
        return {n.name: exchanged[n.name] for n in nodes}, outputs

    def _groups(self, ordered: list[Node]) -> list[tuple[Backend, list[Node]]]:
        """Consecutive nodes (in topological order) on the same back end, as one group each."""
        groups: list[tuple[Backend, list[Node]]] = []
        for node in ordered:
            backend = self.backend_of(node)
            if groups and groups[-1][0] is backend:
                groups[-1][1].append(node)
            else:
                groups.append((backend, [node]))
        return groups
