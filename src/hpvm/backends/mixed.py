"""Graphs that mix devices: each part runs on the back end its hints select, at any depth.

Seed 000 lets every node carry a hint; DESIGN.md resolves a hint to the first available
back end of its device class. The SplitByTarget pass (``passes/split_by_target.py``) writes
on every node the back end its leaves select, or ``MIXED`` for an internal node whose leaves
select several. This module runs the split graph:

- a graph level (the root, or a ``MIXED`` internal node) runs on the host: its children in
  topological order, consecutive children on the same back end together, each group through
  its back end's ``run_stage`` with the level's function as the root; a ``MIXED`` child is a
  level of its own, run here;
- a ``MIXED`` node runs once per instance of its grid (row-major, as seed 001's DFG2LLVM_CPU
  loop nest runs a CPU internal node): each instance gets its own inputs (what input binds
  bring, the last instance's value over an all-to-all edge, its own element over a
  one-to-one edge) and runs its children, each on its own back end;
- values crossing from one back end to another go through the exchange form of
  ``Backend.export_outputs`` / ``import_outputs``; a ``MIXED`` node's outputs take that form
  too (``"last"``: its last instance's values; ``"each"``: every instance's scalars). Arrays
  cross as the arrays themselves: before each part runs, the memory tracker (the run
  context's) makes the arrays that part reaches (its input binds, its incoming edges) valid
  where it runs, and counts the bytes.

A part below a ``MIXED`` node runs with that node's function as its root, once per instance
of the node, and that instance is its root's (``RunContext.instance``; back ends with
``Backend.outer_instance`` show it to the leaves): a GPU leaf under a replicated CPU wrapper
reads the wrapper instance's id as its parent's. A leaf there may not query a replicated node
*above* the ``MIXED`` node (``CompileError`` naming the leaf and the line; pass the id in as
an input instead). An error a part raises below a ``MIXED`` node names the instance path it
ran in. Streaming runs the same code: a pipeline stage whose children use several back ends
runs them group by group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import CompileError, HPVMError, LaunchError
from ..ir import instance_context as ictx
from ..ir.bodies import GeneratedBody, LLVMBody, PythonBody
from ..ir.graph import ONE_TO_ONE, InternalFunction, LeafFunction, Node, NodeFunction, OutputBind
from ..ir.leafinfo import analyze_leaf, llvm_intrinsics_reached
from ..ir.types import ScalarType
from ..ir.verify import topological_order
from ..passes import PassManager
from ..passes.split_by_target import MIXED, TARGET, SplitByTarget, leaf_backends
from .base import Backend, PortKey, RunContext, backend_for_hint, check_bodies, get_backend


def split_by_target(root: InternalFunction) -> InternalFunction:
    """A copy of ``root`` whose nodes carry the ``target`` the SplitByTarget pass chose."""
    return PassManager([SplitByTarget(backend_for_hint)]).run(root)


def targets(split: InternalFunction) -> set[str]:
    """The back ends a split graph's parts run on (inside ``MIXED`` nodes too)."""
    return leaf_backends(split)


class MixedBackend(Backend):
    """Runs a graph whose parts select different back ends (see the module doc).

    ``split`` is the root as SplitByTarget annotated it; the parts are handed to their back
    ends in that form, so each back end's own lowering sees the split (FuseOneToOne never
    fuses nodes of different back ends)."""

    def __init__(self, split: InternalFunction):
        self.split = split
        self.names = sorted(targets(split))
        self.name = "+".join(self.names)
        self.device = "mixed"
        self.level = _Level(split, split.name, ())

    def backend_of(self, node: Node) -> Backend | None:
        """The back end of a child of the root (``None``: a ``MIXED`` node, run here)."""
        return self.level.backends.get(node.name)

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:
        pass  # each back end compiles its part on first use

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        ctx = self.checked_context(root, args, ctx)
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
        # (the caller's root, or this split of it: the parts are the split's, found by name)
        return self.level.run(args, {n.name for n in nodes}, upstream, ctx or RunContext(), "")


@dataclass(frozen=True)
class _Step:
    """One group of a level's children run together: on ``backend`` (``None``: a ``MIXED``
    node, run here), fed by ``feeding`` (nodes outside it), reaching the level's inputs
    ``bound``, producing the level outputs ``out_binds``."""

    backend: Backend | None
    group: list[Node]
    feeding: list[Node]
    bound: frozenset[int]
    out_binds: list[OutputBind]


class _Level:
    """One graph level run on the host: the root, or the function of a ``MIXED`` node.

    ``ancestors``: the ``MIXED`` node this level is the function of, then the nodes above it
    up to a child of the root (empty for the root)."""

    def __init__(self, fn: InternalFunction, path: str, ancestors: tuple[Node, ...]):
        self.fn, self.path = fn, path
        self.order = topological_order(fn.graph)
        self.backends: dict[str, Backend] = {}
        self.nested: dict[str, _Level] = {}
        self._plans: dict[frozenset[str], list[_Step]] = {}
        for node in fn.graph.nodes:
            where = f"node {path}/{node.name}: "
            if node.attrs[TARGET] == MIXED:
                assert isinstance(node.function, InternalFunction)
                self.nested[node.name] = _Level(node.function, f"{path}/{node.name}", (node, *ancestors))
                continue
            backend = self.backends[node.name] = get_backend(node.attrs[TARGET])
            part = node.function
            if isinstance(part, LeafFunction) and part.body_kind not in backend.accepts:
                raise CompileError(
                    f"{where}the {backend.name} back end its hints select cannot run leaf "
                    f"'{part.name}' ({part.location}), which has a {part.body_kind} body; give it "
                    "a hint that selects a back end accepting it"
                )
            check_bodies(backend, part, where)
            if ancestors:
                _check_ancestor_queries(node, ancestors, path, backend)

    def run(
        self, args: Sequence[Any], wanted: set[str], upstream: dict[str, Any], ctx: RunContext, where: str
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """Run the children named ``wanted`` of one instance of this level with ``args``.

        ``upstream``: the exchange form of children run before (other pipeline stages);
        ``where``: the instance path (empty at the root, whose parts name their nodes
        themselves). Returns every wanted child's outputs in the exchange form and the
        level's outputs those children produce."""
        fn = self.fn
        env = {p.name: a for p, a in zip(fn.params, args)}
        exchanged: dict[str, dict[PortKey, Any]] = dict(upstream)  # node name → exchange form
        outputs: dict[int, Any] = {}
        tracker = ctx.tracker
        for step in self._steps(wanted):
            backend, group = step.backend, step.group
            if backend is None:  # a MIXED node: run here, instance by instance
                (node,) = group
                exchanged[node.name] = self._run_nested(node, env, args, exchanged, ctx, where)
                for b in step.out_binds:
                    outputs[b.op] = _last(exchanged[node.name], b.oc, b.describe(fn))
                continue
            try:
                own_upstream = {
                    src.name: backend.import_outputs(src, src.evaluate_sizes(env, ""), exchanged[src.name])
                    for src in step.feeding
                }
                # valid where it runs: the arrays this part reaches (binds, edges), no others
                arriving = {
                    id(v)
                    for src in step.feeding
                    for v in exchanged[src.name].values()
                    if isinstance(v, np.ndarray)
                }
                reached = [a if i in step.bound or id(a) in arriving else None for i, a in enumerate(args)]
                token = tracker.prepare_for(backend, fn, reached, ctx.transfers)
                try:
                    produced, outs = backend.run_stage(fn, args, group, own_upstream, ctx)
                finally:
                    tracker.finished(token)
                for node in group:
                    exchanged[node.name] = backend.export_outputs(
                        node, node.evaluate_sizes(env, ""), produced[node.name], ctx
                    )
            except HPVMError as e:
                if not where:
                    raise
                raise _located(e, f"in {where} (a node that mixes devices, run on the host): ") from None
            outputs.update(outs)
        return {name: exchanged[name] for name in wanted}, outputs

    def _steps(self, wanted: set[str]) -> list[_Step]:
        """The groups that run ``wanted``, in order, with what each reads (made once per set:
        a mixed node's level runs once per instance)."""
        key = frozenset(wanted)
        steps = self._plans.get(key)
        if steps is not None:
            return steps
        graph = self.fn.graph
        steps = []
        for backend, group in self._groups([n for n in self.order if n.name in wanted]):
            inside = {id(n) for n in group}
            feeding = {
                id(e.src): e.src for e in graph.edges if id(e.dst) in inside and id(e.src) not in inside
            }
            steps.append(
                _Step(
                    backend,
                    group,
                    list(feeding.values()),
                    frozenset(b.ip for b in graph.in_binds if id(b.dst) in inside),
                    [b for b in graph.out_binds if id(b.src) in inside],
                )
            )
        self._plans[key] = steps
        return steps

    def _run_nested(
        self,
        node: Node,
        env: dict[str, Any],
        args: Sequence[Any],
        exchanged: dict[str, dict[PortKey, Any]],
        ctx: RunContext,
        where: str,
    ) -> dict[PortKey, Any]:
        """Every instance of the ``MIXED`` child ``node``; its outputs in the exchange form."""
        level = self.nested[node.name]
        fn = level.fn
        sizes = node.evaluate_sizes(env, f"in {where}: " if where else "")
        fixed: list[Any] = [None] * len(fn.params)
        per_instance: list[tuple[int, np.ndarray]] = []
        for b in self.fn.graph.in_binds:
            if b.dst is node:
                fixed[b.ic] = args[b.ip]
        for e in self.fn.graph.edges:
            if e.dst is not node:
                continue
            values = exchanged[e.src.name]
            each = values.get((e.sp, "each")) if e.repl == ONE_TO_ONE else None
            if each is None:
                fixed[e.dp] = _last(values, e.sp, e.describe())
                continue
            each = np.asarray(each)
            if each.shape != sizes:
                raise LaunchError(
                    f"{e.describe()}: one-to-one edges need identical grids, but '{e.src.name}' has "
                    f"{list(each.shape)} instances and '{node.name}' {list(sizes)} in this execution"
                )
            per_instance.append((e.dp, each))
        everything = {n.name for n in fn.graph.nodes}
        results: list[dict[int, Any]] = []
        for ids in _instances(sizes):
            inputs = list(fixed)
            for port, each in per_instance:
                inputs[port] = each[ids]
            path = f"{where or self.path}/{node.name}{list(ids) if ids else ''}"
            # the parts see this instance as their root's (RunContext.instance)
            own = replace(ctx, instance=tuple(ictx.level(len(sizes), ids, sizes)))
            results.append(level.run(inputs, everything, {}, own, path)[1])
        return _exchange_form(node, sizes, results)

    def _groups(self, ordered: list[Node]) -> list[tuple[Backend | None, list[Node]]]:
        """Consecutive nodes (in topological order) on the same back end, as one group each;
        each ``MIXED`` node is a group of its own (back end ``None``)."""
        groups: list[tuple[Backend | None, list[Node]]] = []
        for node in ordered:
            backend = self.backends.get(node.name)
            if backend is not None and groups and groups[-1][0] is backend:
                groups[-1][1].append(node)
            else:
                groups.append((backend, [node]))
        return groups


def _instances(sizes: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """The instance ids of a grid in row-major order (x outermost); one ``()`` for no dims."""
    return iter(np.ndindex(*sizes)) if sizes else iter([()])


def _exchange_form(node: Node, sizes: tuple[int, ...], results: list[dict[int, Any]]) -> dict[PortKey, Any]:
    """A ``MIXED`` node's per-instance outputs as ``Backend.export_outputs`` hands values on."""
    values: dict[PortKey, Any] = {}
    for port, ptype in enumerate(node.function.out_types):
        if results and port in results[-1]:
            values[(port, "last")] = results[-1][port]
        if isinstance(ptype, ScalarType) and node.dims > 0 and all(port in r for r in results):
            values[(port, "each")] = np.array([r[port] for r in results], dtype=ptype.dtype).reshape(sizes)
    return values


def _last(values: dict[PortKey, Any], port: int, what: str) -> Any:
    if (port, "last") not in values:
        raise LaunchError(f"{what}: the source node has no instances in this execution, so it sends no value")
    return values[(port, "last")]


def _located(error: HPVMError, prefix: str) -> HPVMError:
    """``error`` again, its message prefixed (the same class, whatever its constructor takes)."""
    located = type(error).__new__(type(error))
    located.__dict__.update(error.__dict__)
    located.args = (prefix + str(error),)
    return located


def _check_ancestor_queries(node: Node, ancestors: tuple[Node, ...], path: str, backend: Backend) -> None:
    """Refuse leaves of the part ``node`` that query an instance the part's back end cannot
    show them: it runs the part with the ``MIXED`` node ``ancestors[0]``'s function as its
    root, that node's instance its root's (when ``backend.outer_instance``), and nothing
    above. A replicated node above it (or the mixed node, without ``outer_instance``) is
    refused; single-instance ones read as the root does, which they are like."""
    for leaf, depth in _leaves(node.function, 1):
        for level, line in _queries(leaf):
            if level is None:  # found at run time: anything up to the root
                shown = 1 if backend.outer_instance else 0
                hidden = [a for a in ancestors[shown:] if a.dims > 0]
                if not hidden:
                    continue
                asked = f"an ancestor found at run time (possibly node '{hidden[0].name}')"
            else:
                up = level - depth  # 0: the MIXED node; len(ancestors): the root (exact)
                if up < 0 or up >= len(ancestors) or ancestors[up].dims == 0:
                    continue
                if up == 0 and backend.outer_instance:
                    continue
                asked = f"node '{ancestors[up].name}'"
            place = leaf.where(line) if line else leaf.location
            raise CompileError(
                f"node {path}/{node.name}: leaf '{leaf.name}' ({place}) queries the instance of "
                f"{asked}, which is replicated and sits above the part of '{ancestors[0].name}' "
                f"(a node whose children run on different back ends) that runs on {backend.name}; "
                f"that part runs as a graph of its own, which sees the instance of "
                f"'{ancestors[0].name}' at most, not those above it: pass the id in as an input "
                "(an edge from a leaf of the same grid), or give the children hints that select "
                "one back end"
            )


def _leaves(fn: NodeFunction, depth: int) -> Iterator[tuple[LeafFunction, int]]:
    """The leaves below ``fn`` (itself included) with their depth below the level."""
    if isinstance(fn, LeafFunction):
        yield fn, depth
        return
    assert isinstance(fn, InternalFunction)
    for n in fn.graph.nodes:
        yield from _leaves(n.function, depth + 1)


def _queries(leaf: LeafFunction) -> list[tuple[int | None, int]]:
    """(ancestor level queried or ``None`` when unknown, line) for each structure query."""
    if isinstance(leaf.body, LLVMBody):  # LLVM code: only whether it walks up at all
        reached = llvm_intrinsics_reached(leaf.body.module, leaf.body.function)
        return [(None, 0)] if "getParentNode" in reached else []
    if isinstance(leaf.body, GeneratedBody):  # reads the whole context if it takes it
        return [(None, 0)] if leaf.body.context else []
    if not isinstance(leaf.body, PythonBody):
        return []  # tensor operations query no instance
    info = analyze_leaf(leaf)
    if not info.parsed:
        return [(None, 0)]
    return [(q.level, q.line) for q in info.queries]
