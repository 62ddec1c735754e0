"""Compiling a graph of tensor leaves into straight-line Python over torch calls.

Seed 001's DFG2LLVM_CUDNN maps each tensor intrinsic to one runtime call. Here each leaf is
read once (``parse_tensor_leaf``), lowered by the WrapperAPI (``wrapper.lower``: matched
patterns become one layer call) and every graph becomes one generated Python function: one
line per runtime call, values passed in local variables, internal child graphs called as
their own generated functions. Walking the graph costs nothing at run time — the walk
happened when the code was generated.

Validation is separate (``check``): it propagates shapes (``ops.Meta``) through the same
plan and raises ``TensorShapeError`` naming the node, leaf and line. The back end runs it
once per input signature, so the generated code calls the unchecked torch functions.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import CompileError, TensorShapeError
from ...ir import tensorops as ops
from ...ir.analysis import FeedTable, feed_table
from ...ir.bodies import Operand, const_text
from ...ir.graph import InternalFunction, LeafFunction, Node
from ...ir.tensorops.body import NotATensorLeaf, TensorLeaf, parse_tensor_leaf
from ...ir.types import ArrayType, ScalarType
from ...ir.verify import topological_order
from .rewrite import Comment, Instr, Item, Val, fold_layers, in_place
from .wrapper import Step, lower

_COUNTER = itertools.count()


@dataclass
class LeafPlan:
    """A tensor leaf node compiled: its operations and the runtime calls (steps) for them."""

    node: Node
    leaf: TensorLeaf
    steps: list[Step]


@dataclass
class GraphPlan:
    """An internal node function compiled: its children in order and the generated code."""

    fn: InternalFunction
    order: list[Node]
    feeds: FeedTable  # what feeds each child's inputs
    children: dict[int, LeafPlan | GraphPlan]  # id(node) -> its plan
    source: str = ""
    run: Callable[..., tuple[Any, ...]] = field(default=lambda *a: ())  # the generated function
    weights: list[int] = field(default_factory=list)  # root parameters prepared calls derive from
    prepared: list[tuple[str, ...]] = field(default_factory=list)  # each prepared call's operations

    def steps(self, prefix: str = "") -> list[tuple[str, Step]]:
        """Every runtime call of the graph, with the path of the node making it."""
        out: list[tuple[str, Step]] = []
        for node in self.order:
            child = self.children[id(node)]
            path = f"{prefix}{node.name}"
            if isinstance(child, LeafPlan):
                out.extend((path, s) for s in child.steps)
            else:
                out.extend(child.steps(path + "/"))
        return out


def compile_node(
    node: Node, parent: InternalFunction, runtime: dict[str, Callable[..., Any]]
) -> LeafPlan | GraphPlan:
    """The plan of one child node; ``CompileError`` for what the back end cannot run."""
    if node.dims:
        raise CompileError(
            f"node '{node.name}' ({node.location}) in '{parent.name}' is replicated in {node.dims} "
            "dimension(s); the tensor back end runs each node once (tensor operations are "
            "data-parallel themselves): create it with hpvm.create_node(...), or run the graph "
            "with another back end (target='interp' or target='cpu')"
        )
    child = node.function
    if isinstance(child, LeafFunction):
        leaf = _tensor_leaf(child)
        return LeafPlan(node, leaf, lower(leaf))
    assert isinstance(child, InternalFunction)
    return compile_graph(child, runtime)


def compile_graph(
    fn: InternalFunction, runtime: dict[str, Callable[..., Any]], prepare: bool = False
) -> GraphPlan:
    """The plan of ``fn``: every child compiled (``CompileError`` for what the back end cannot
    run), and the generated function bound to the callables of ``runtime`` (by name).

    ``prepare`` (for a root: its parameters are the launch's arrays) folds convolution
    chains into prepared calls (``rewrite.fold_layers``); the generated function then
    takes the weight arrays' versions as its last argument ``_v``."""
    order = topological_order(fn.graph)
    children = {id(node): compile_node(node, fn, runtime) for node in order}
    plan = GraphPlan(fn, order, feed_table(fn.graph), children)
    _generate(plan, runtime, prepare)
    return plan


def node_function(
    child: LeafPlan | GraphPlan, runtime: dict[str, Callable[..., Any]]
) -> Callable[..., tuple[Any, ...]]:
    """A generated function running one compiled child node: its inputs -> its outputs."""
    ns = _Namespace(runtime)
    fn = child.fn if isinstance(child, GraphPlan) else child.leaf.fn
    params = [Val(f"i{p}", "input", p) for p in range(len(fn.params))]
    items: list[Item] = []
    outs = [v.text for v in _emit_node(child, 0, params, items, ns)]
    items = in_place(items, outs, runtime, ns.bind)
    body = [f"def node({', '.join(v.text for v in params)}):", *_render(items)]
    body.append(f"    return ({''.join(o + ', ' for o in outs)})")
    return _exec("\n".join(body) + "\n", ns.values, "node", f"node {fn.name}")


def _tensor_leaf(fn: LeafFunction) -> TensorLeaf:
    try:
        return parse_tensor_leaf(fn)
    except NotATensorLeaf as e:
        raise CompileError(
            f"leaf '{fn.name}' ({fn.location.file}:{e.line}) is not a tensor leaf: {e.reason}. The "
            "tensor back end runs only leaves whose bodies are calls of hpvm.tensor operations "
            "(docs/tensor.md); drop hint=hpvm.TENSOR_TARGET from this leaf, or run the graph "
            "with another back end (target='interp' or target='cpu')"
        ) from None


# ---------------------------------------------------------------------------------------
# Code generation


class _Namespace:
    """The globals of generated code: runtime callables under stable names."""

    def __init__(self, runtime: dict[str, Callable[..., Any]]):
        self.runtime = runtime
        self.values: dict[str, Any] = {}

    def ref(self, name: str) -> str:
        key = f"_{name}"
        self.values[key] = self.runtime[name]
        return key

    def bind(self, key: str, value: Any) -> str:
        self.values[key] = value
        return key


def _generate(plan: GraphPlan, runtime: dict[str, Callable[..., Any]], prepare: bool = False) -> None:
    ns = _Namespace(runtime)
    fn = plan.fn
    inputs = [Val(f"a{i}", "input", i) for i in range(len(fn.params))]
    items: list[Item] = []
    out_vals = _emit_graph(plan, inputs, items, ns, "")
    outputs = [out_vals[op].text for op in range(len(fn.out_types))]
    if prepare:
        ranks = [p.type.rank if isinstance(p.type, ArrayType) else None for p in fn.params]
        items, plan.weights = fold_layers(items, outputs, ranks, ns.bind)
    items = in_place(items, outputs, runtime, ns.bind)
    plan.prepared = [i.ops for i in items if isinstance(i, Instr) and i.op == "prepared"]
    params = [v.text for v in inputs] + (["_v=None"] if plan.weights else [])
    freed = _free_after_last_use(items, [v.text for v in inputs], outputs)
    lines = [f"def graph({', '.join(params)}):", *_render(freed)]
    lines.append(f"    return ({''.join(o + ', ' for o in outputs)})")
    plan.source = "\n".join(lines) + "\n"
    plan.run = _exec(plan.source, ns.values, "graph", f"graph {fn.name}")


def _render(items: Sequence[Item]) -> list[str]:
    lines = []
    for item in items:
        if isinstance(item, Comment):
            lines.append(f"    {item.text}")
            continue
        call = f"{item.callee}({', '.join(a.text for a in item.args)})"
        comment = f"  # line {item.line}" if item.line is not None else ""
        if not item.results:
            lines.append(f"    {call}{comment}")
        elif item.op is None:
            lines.append(f"    {', '.join(item.results)}, = {call}{comment}")
        else:
            lines.append(f"    {item.results[0]} = {call}{comment}")
    return lines


def _emit_graph(
    plan: GraphPlan, inputs: Sequence[Val], items: list[Item], ns: _Namespace, prefix: str
) -> dict[int, Val]:
    """List the calls of ``plan``'s children; return the value of each graph output."""
    out_val: dict[tuple[int, int], Val] = {}
    for k, node in enumerate(plan.order):
        args = []
        for kind, payload in plan.feeds[id(node)]:
            if kind == "bind":
                args.append(inputs[payload])
            else:
                args.append(out_val[(id(payload.src), payload.sp)])
        outs = _emit_node(plan.children[id(node)], k, args, items, ns, prefix)
        for p, val in enumerate(outs):
            out_val[(id(node), p)] = val
    return {b.op: out_val[(id(b.src), b.oc)] for b in plan.fn.graph.out_binds}


def _emit_node(
    child: LeafPlan | GraphPlan,
    k: int,
    args: Sequence[Val],
    items: list[Item],
    ns: _Namespace,
    prefix: str = "",
) -> list[Val]:
    """List one child node's calls with input values ``args``; its output values."""
    var = f"{prefix}n{k}"
    if isinstance(child, GraphPlan):
        callee = ns.bind(f"_graph_{var}", child.run)
        names = [f"{var}_o{p}" for p in range(len(child.fn.out_types))]
        items.append(Comment(f"# node {child.fn.name}"))
        items.append(Instr(names, callee, list(args)))
        return [Val(n, "other") for n in names]
    leaf = child.leaf
    items.append(Comment(f"# node {child.node.name} (leaf '{leaf.fn.name}', {leaf.fn.location.file})"))
    local: dict[int, Val] = {}

    def value(o: Operand) -> Val:
        if o.kind == "param":
            return args[o.value]
        if o.kind == "local":
            return local[o.value]
        return Val(const_text(o.value), "const", value=o.value)

    for step in child.steps:
        name = f"{var}_{step.result}"
        call = ns.ref(step.name)
        items.append(Instr([name], call, [value(a) for a in step.args], step.name, step.line, step.ops))
        local[step.result] = Val(name, "var")
    return [value(r) for r in leaf.returns]


def _free_after_last_use(items: Sequence[Item], params: Sequence[str], outputs: Sequence[str]) -> list[Item]:
    """``items`` (a straight-line function's calls) with a ``del`` after the last read of
    each local tensor (a result no later call and no output reads: after its call); values
    the function returns (``outputs``, read by its ``return``) are never freed.

    Eager PyTorch drops an activation once the next layer has read it; a generated function
    that kept every node's output alive until it returns held the whole network's
    activations at once (130 MB for MobileNet at batch 32) and was 1.6x slower than eager,
    from allocator and page-fault traffic alone. Read from the calls themselves (what each
    stores, what each reads), not from their rendered text.
    """
    last_read: dict[str, int] = {}
    for i, item in enumerate(items):
        if isinstance(item, Instr):
            for arg in item.args:
                last_read[arg.text] = i
    frees: dict[int, list[str]] = {}
    for i, item in enumerate(items):
        if isinstance(item, Instr):
            for name in set(item.results) - set(params) - set(outputs):
                frees.setdefault(last_read.get(name, i), []).append(name)
    out: list[Item] = []
    for i, item in enumerate(items):
        out.append(item)
        names = sorted(frees.get(i, ()))
        if names:
            out.append(Comment(f"del {', '.join(names)}"))
    return out


def _exec(source: str, namespace: dict[str, Any], name: str, what: str) -> Callable[..., Any]:
    filename = f"<hpvm tensor {what} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    code = compile(source, filename, "exec")
    scope: dict[str, Any] = dict(namespace)
    exec(code, scope)
    return scope[name]


# ---------------------------------------------------------------------------------------
# Validation: shapes through the plan


def check(plan: GraphPlan, values: Sequence[Any], path: str) -> list[Any]:
    """Propagate ``values`` (Meta for tensors, Python scalars) through the graph; raise
    ``TensorShapeError`` naming the node, the leaf and the line of the first bad operation."""
    out: dict[tuple[int, int], Any] = {}
    for node in plan.order:
        args = [
            values[payload] if kind == "bind" else out[(id(payload.src), payload.sp)]
            for kind, payload in plan.feeds[id(node)]
        ]
        results = check_node(plan.children[id(node)], args, f"{path}/{node.name}")
        for p, value in enumerate(results):
            out[(id(node), p)] = value
    return [out[(id(b.src), b.oc)] for b in sorted(plan.fn.graph.out_binds, key=lambda b: b.op)]


def check_node(child: LeafPlan | GraphPlan, args: Sequence[Any], where: str) -> list[Any]:
    """``check`` for one child node (``where``: its path, for messages)."""
    if isinstance(child, GraphPlan):
        return check(child, args, where)
    return _check_leaf(child, args, where)


def _check_leaf(child: LeafPlan, args: Sequence[Any], where: str) -> list[Any]:
    leaf = child.leaf
    fn = leaf.fn
    local: list[Any] = []

    def value(o: Operand) -> Any:
        if o.kind == "param":
            return args[o.value]
        if o.kind == "local":
            return local[o.value]
        return o.value

    for call in leaf.calls:
        try:
            local.append(ops.infer(call.op, [value(a) for a in call.args]))
        except TensorShapeError as e:
            raise TensorShapeError(
                f"node {where} (leaf '{fn.name}', {fn.location.file}:{call.line}): {e}"
            ) from None
    results = [value(r) for r in leaf.returns]
    for i, (t, v) in enumerate(zip(fn.out_types, results)):
        problem = None
        if isinstance(t, ArrayType):
            if not isinstance(v, ops.Meta):
                problem = f"returns {v!r}, not a tensor"
            elif v.rank != t.rank or v.dtype != t.dtype.name:
                problem = f"returns a {v.dtype} tensor of shape {v.shape}"
        elif isinstance(t, ScalarType) and isinstance(v, ops.Meta):
            problem = f"returns a tensor of shape {v.shape}"
        if problem:
            raise TensorShapeError(
                f"node {where} (leaf '{fn.name}', {fn.location}): output {i} is declared {t} but the "
                f"leaf {problem}; fix the leaf's return annotation"
            )
    return results
