"""Graphs that mix devices: the root's children run on the back ends their hints select.

Seed 000 lets every node carry a hint; DESIGN.md resolves a hint to the first available
back end of its device class. When the leaves of one root select several back ends, the
graph is split at the root's children: each child (with everything below it) runs on one
back end, and the children are run in topological order, consecutive children on the same
back end together, each group through its back end's ``run_stage``. Values crossing from
one back end to another go through the exchange form of ``Backend.export_outputs`` /
``import_outputs``. Streaming works the same way: a pipeline stage whose children use
several back ends runs them group by group.

A leaf without a hint takes the hint of its nearest ancestor that has one (the root's
included); no hint anywhere means the CPU. A child of the root whose own subtree selects
several back ends is an error: split it into children of the root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import BackendUnavailableError, CompileError
from ..ir.graph import InternalFunction, LeafFunction, Node, NodeFunction
from ..ir.verify import topological_order
from .base import Backend, PortKey, RunContext, backend_for_hint, check_bodies, get_backend


def leaf_backends(fn: NodeFunction, inherited: str | None) -> dict[str, list[str]]:
    """Back end name → the leaves below ``fn`` (itself included) that select it."""
    hint = fn.hint if fn.hint is not None else inherited
    if isinstance(fn, LeafFunction):
        return {backend_for_hint(hint): [fn.name]}
    chosen: dict[str, list[str]] = {}
    assert isinstance(fn, InternalFunction)
    for node in fn.graph.nodes:
        for name, leaves in leaf_backends(node.function, hint).items():
            chosen.setdefault(name, []).extend(leaves)
    return chosen


def backends_by_child(root: InternalFunction) -> dict[int, str]:
    """For each child of ``root`` (by ``id``), the one back end its hints select."""
    choice: dict[int, str] = {}
    for node in root.graph.nodes:
        chosen = leaf_backends(node.function, root.hint)
        if len(chosen) > 1:
            detail = "; ".join(f"{b}: {', '.join(names)}" for b, names in chosen.items())
            raise BackendUnavailableError(
                f"node '{node.name}' of '{root.name}' ({node.location}) holds leaves whose hints "
                f"select different back ends ({detail}); graphs are split between devices at the "
                f"root's children only: make each device's part a child of '{root.name}', or pass "
                "target= to run the whole graph on one back end"
            )
        choice[id(node)] = next(iter(chosen)) if chosen else backend_for_hint(root.hint)
    return choice


class MixedBackend(Backend):
    """Runs each child of one root on the back end its hints select (see the module doc)."""

    def __init__(self, root: InternalFunction, choice: dict[int, str]):
        self.root = root
        self.choice = choice
        self.names = sorted(set(choice.values()))
        self.name = "+".join(self.names)
        self.device = "mixed"
        self._order = topological_order(root.graph)
        for node in root.graph.nodes:
            part = node.function
            if isinstance(part, InternalFunction):
                check_bodies(self.backend_of(node), part, f"node '{node.name}' of '{root.name}': ")
            elif isinstance(part, LeafFunction) and part.body_kind not in self.backend_of(node).accepts:
                backend = self.backend_of(node)
                raise CompileError(
                    f"node '{node.name}' of '{root.name}': the {backend.name} back end its hints "
                    f"select cannot run leaf '{part.name}' ({part.location}), which has a "
                    f"{part.body_kind} body; give it a hint that selects a back end accepting it"
                )

    def backend_of(self, node: Node) -> Backend:
        return get_backend(self.choice[id(node)])

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
        env = {p.name: a for p, a in zip(root.params, args)}
        wanted = {id(n) for n in nodes}
        exchanged: dict[str, dict[PortKey, Any]] = dict(upstream)  # node name → exchange form
        outputs: dict[int, Any] = {}
        tracker = ctx.tracker
        for backend, group in self._groups([n for n in self._order if id(n) in wanted]):
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
