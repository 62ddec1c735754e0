"""FlattenStreams: nested pipelines inlined up to the root. Random hierarchies (hypothesis)
give the same results flattened and not, on ``interp``, and keep the meaning of every edge
and bind (which value reaches each leaf input, and whether a stream lies on its way); the
cases the pass leaves alone say why, and the streaming launch warns with it."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.ir import expr
from hpvm.ir.graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
)
from hpvm.passes import FlattenStreams, PassManager
from hpvm.passes.flatten_streams import holds_streams
from hpvm.runtime.streaming import plan_stages, streaming_root
from streaming_programs import NESTED, add_one, nested_pipeline, three_stages


@hpvm.leaf
def inc(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def mix(a: hpvm.i64, b: hpvm.i64) -> tuple[hpvm.i64, hpvm.i64]:
    return 3 * a + b, a - b


I64 = inc.params[0].type
LEAVES = (inc, mix)


@pytest.fixture(autouse=True)
def runtime():
    hpvm.init()
    yield
    hpvm.cleanup()


def flatten(root: InternalFunction) -> tuple[InternalFunction, list[str]]:
    module = PassManager([FlattenStreams()]).run_module(root)
    return module.root, module.notes[FlattenStreams.name]


# -- random hierarchies ----------------------------------------------------------------------


@dataclass
class _Names:
    count: int = 0
    used: set[str] = field(default_factory=set)

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"


@st.composite
def hierarchy(draw, inputs: int, outputs: int, depth: int, names: _Names, size: str) -> InternalFunction:
    """An internal function: a size input ``size`` (every replicated child's size, and the
    first input of every internal child), ``inputs`` i64 values, up to ``outputs`` outputs; its
    children leaves or (while ``depth`` lasts) hierarchies of their own, fed by binds or by
    edges from earlier children, any edge or bind streaming or not."""
    fname = names.fresh("g")
    params = [Param(size, I64)] + [Param(f"{fname}_x{i}", I64) for i in range(inputs)]
    nodes: list[Node] = []
    edges: list[Edge] = []
    in_binds: list[InputBind] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth and draw(st.booleans()):
            sub_in, sub_out = draw(st.integers(1, 2)), draw(st.integers(1, 2))
            fn = draw(hierarchy(sub_in, sub_out, depth - 1, names, names.fresh("n")))
            sizes: tuple[expr.Expr, ...] = (expr.Param(size),) if draw(st.integers(0, 5)) == 0 else ()
        else:
            fn = draw(st.sampled_from(LEAVES))
            sizes = (expr.Param(size),) if draw(st.integers(0, 3)) == 0 else ()
        node = Node(names.fresh("c"), fn, sizes)
        ports = range(len(fn.params))
        if isinstance(fn, InternalFunction):
            in_binds.append(InputBind(0, node, 0))
            ports = range(1, len(fn.params))
        for port in ports:
            sources = [(n, oc) for n in nodes for oc in range(len(n.function.out_types))]
            stream = draw(st.booleans())
            if sources and draw(st.booleans()):
                src, oc = draw(st.sampled_from(sources))
                same = src.dims == node.dims
                repl = draw(st.sampled_from([ONE_TO_ONE, ALL_TO_ALL])) if same else ALL_TO_ALL
                edges.append(Edge(src, oc, node, port, repl, stream))
            else:
                in_binds.append(InputBind(draw(st.integers(1, inputs)), node, port, stream))
        nodes.append(node)
    sources = [(n, oc) for n in nodes for oc in range(len(n.function.out_types))]
    outputs = min(outputs, len(sources))
    picked = draw(st.lists(st.sampled_from(sources), min_size=outputs, max_size=outputs, unique=True))
    out_binds = [OutputBind(n, oc, op, draw(st.booleans())) for op, (n, oc) in enumerate(picked)]
    graph = ChildGraph(None, nodes, edges, in_binds, out_binds)
    return InternalFunction(fname, params, graph=graph)


def programs(depth: int = 2):
    return st.builds(_Names).flatmap(lambda names: hierarchy(2, 2, depth, names, "n0"))


def run_once(root: InternalFunction, args: tuple[int, ...]) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpvm.HPVMWarning)  # differing replicated instances
        return tuple(int(v) for v in hpvm.wait(hpvm.launch(root, args, target="interp")))


ITEMS = [(2, 1, 5), (1, -3, 4), (3, 7, 0)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_flattened_and_unflattened_graphs_give_the_same_results(root: InternalFunction) -> None:
    flat, _ = flatten(root)
    want = [run_once(root, item) for item in ITEMS]
    assert [run_once(flat, item) for item in ITEMS] == want
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpvm.HPVMWarning)  # (and nodes left in place)
        handle = hpvm.launch(root, None, stream=True, target="interp")
        for item in ITEMS:
            hpvm.push(handle, item)
        got = [tuple(int(v) for v in hpvm.pop(handle)) for _ in ITEMS]
        hpvm.wait(handle)
    assert got == want


def wiring(root: InternalFunction) -> dict[tuple[str, int], tuple[tuple[str, int], bool]]:
    """Every leaf input and root output (by node path and port) → the leaf output or root
    input its value comes from, and whether an edge or bind on its way streams. Paths join
    node names with ``/``: the names the pass gives the nodes it inlines."""
    found: dict[tuple[str, int], tuple[tuple[str, int], bool]] = {}

    def source(fn: InternalFunction, path: str, node: Node, oc: int) -> tuple[tuple[str, int], bool]:
        """Where output ``oc`` of ``node`` (a child of ``fn``, at ``path``) comes from."""
        inner = node.function
        if isinstance(inner, LeafFunction):
            return (f"{path}{node.name}", oc), False
        assert isinstance(inner, InternalFunction)
        b = next(b for b in inner.graph.out_binds if b.op == oc)
        src, stream = source(inner, f"{path}{node.name}/", b.src, b.oc)
        return src, stream or b.stream

    def walk(fn: InternalFunction, path: str, feeds: list[tuple[tuple[str, int], bool]]) -> None:
        graph = fn.graph
        for node in graph.nodes:
            here: list[tuple[tuple[str, int], bool] | None] = [None] * len(node.function.params)
            for b in graph.in_binds:
                if b.dst is node:
                    src, stream = feeds[b.ip]
                    here[b.ic] = (src, stream or b.stream)
            for e in graph.edges:
                if e.dst is node:
                    src, stream = source(fn, path, e.src, e.sp)
                    here[e.dp] = (src, stream or e.stream)
            if isinstance(node.function, InternalFunction):
                walk(node.function, f"{path}{node.name}/", here)  # type: ignore[arg-type]
            else:
                for ic, feed in enumerate(here):
                    assert feed is not None
                    found[(f"{path}{node.name}", ic)] = feed

    walk(root, "", [(("in", i), False) for i in range(len(root.params))])
    for b in root.graph.out_binds:
        src, stream = source(root, "", b.src, b.oc)
        found[("out", b.op)] = (src, stream or b.stream)
    return found


@settings(max_examples=60, deadline=None)
@given(programs(depth=3))
def test_flattening_keeps_every_edge_and_binds_meaning(root: InternalFunction) -> None:
    flat, kept = flatten(root)
    assert wiring(flat) == wiring(root)
    # every internal node left at the root with streams inside is one the notes explain (by
    # its name in the graph it was left in: inlining that graph later prefixes its path)
    for node in flat.graph.nodes:
        fn = node.function
        if isinstance(fn, InternalFunction) and holds_streams(fn.graph):
            assert any(f"node '{node.name.rsplit('/', 1)[-1]}'" in why for why in kept)


# -- what the pass does, exactly --------------------------------------------------------------


def test_a_nested_pipeline_becomes_stages_of_the_root_named_by_path() -> None:
    flat, kept = flatten(nested_pipeline)
    assert kept == []
    assert [n.name for n in flat.graph.nodes] == [
        "three_stages/add_one",
        "three_stages/double",
        "three_stages/combine",
        "add_one",
    ]
    assert [[n.name for n in s] for s in plan_stages(flat)] == [[n.name] for n in flat.graph.nodes]
    assert nested_pipeline.graph.nodes[0].function is three_stages  # the original is untouched
    assert all(e.stream for e in flat.graph.edges)


@pytest.mark.parametrize("name", sorted(NESTED))
def test_the_shared_nested_programs_have_their_stages_at_the_root(name: str) -> None:
    root, _, stages = NESTED[name]
    assert len(plan_stages(streaming_root(root))) == stages
    assert streaming_root(root) is streaming_root(root)  # made once: back ends cache per root
    assert streaming_root(three_stages) is three_stages  # nothing nested: the program itself


@hpvm.leaf
def count(n: hpvm.i64) -> hpvm.i64:
    return n


@hpvm.internal(hint="cpu")
def sized(n: hpvm.i64, x: hpvm.i64):  # type: ignore[no-untyped-def]
    a = hpvm.create_node_1d(inc, n)
    b = hpvm.create_node(inc)
    hpvm.bind_in(a, 1, 0)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal
def uses_sized(k: hpvm.i64, y: hpvm.i64):  # type: ignore[no-untyped-def]
    s = hpvm.create_node(sized)
    hpvm.bind_in(s, 0, 0)
    hpvm.bind_in(s, 1, 1, stream=True)
    hpvm.bind_out(s, 0, 0)


def test_sizes_are_read_from_the_parents_inputs_and_the_hint_is_kept() -> None:
    flat, kept = flatten(uses_sized)
    assert kept == []
    a, b = flat.graph.nodes
    assert str(a.sizes[0]) == "k" and a.function.hint == "cpu" and inc.hint is None
    assert [(x.ip, x.dst.name, x.stream) for x in flat.graph.in_binds] == [(1, "sized/inc", True)]
    assert run_once(flat, (3, 4)) == run_once(uses_sized, (3, 4)) == (6,)


# -- what it leaves alone, and the warning that says so ---------------------------------------


@hpvm.internal
def replicated_parent(n: hpvm.i64, x: hpvm.i64):  # type: ignore[no-untyped-def]
    s = hpvm.create_node_1d(three_stages, n)
    hpvm.bind_in(s, 1, 0)
    hpvm.bind_out(s, 0, 0)


@hpvm.internal
def size_from_edge(x: hpvm.i64):  # type: ignore[no-untyped-def]
    c = hpvm.create_node(count)
    s = hpvm.create_node(sized)
    hpvm.bind_in(c, 0, 0)
    hpvm.edge(c, s, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(s, 0, 1)
    hpvm.bind_out(s, 0, 0)


@hpvm.internal
def ignores_input(x: hpvm.i64, y: hpvm.i64):  # type: ignore[no-untyped-def]
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(add_one)
    hpvm.bind_in(a, 1, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal
def ordered_by_unused_input(x: hpvm.i64):  # type: ignore[no-untyped-def]
    first = hpvm.create_node(inc)
    then = hpvm.create_node(ignores_input)
    hpvm.bind_in(first, 0, 0)
    hpvm.edge(first, then, hpvm.ONE_TO_ONE, 0, 0)  # only orders: 'then' binds input 1 inside
    hpvm.bind_in(then, 0, 1)
    hpvm.bind_out(then, 0, 0)


@hpvm.internal
def two_branches(x: hpvm.i64):  # type: ignore[no-untyped-def]
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(add_one)
    c = hpvm.create_node(add_one)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_in(c, 0, 0)
    hpvm.bind_out(b, 0, 0)
    hpvm.bind_out(c, 0, 1)


@hpvm.internal
def uses_one_branch(x: hpvm.i64):  # type: ignore[no-untyped-def]
    t = hpvm.create_node(two_branches)
    after = hpvm.create_node(inc)
    hpvm.bind_in(t, 0, 0)
    hpvm.edge(t, after, hpvm.ONE_TO_ONE, 0, 0)  # waited for both branches; reads one
    hpvm.bind_out(after, 0, 0)
    hpvm.bind_out(t, 1, 1)


CASES = {
    "replicated": (replicated_parent, (2, 5), r"node 'three_stages' .*is replicated \(1-D"),
    "size from an edge": (size_from_edge, (2,), r"replication size of its child 'inc' reads input\(s\) n"),
    "order from an unused input": (ordered_by_unused_input, (1,), r"'inc' feeds it and would no longer"),
    "order towards a consumer": (uses_one_branch, (1,), r"child 'two_branches/add_one_2' would no longer"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_node_it_cannot_inline_is_kept_and_the_streaming_launch_warns(case: str) -> None:
    root, item, why = CASES[case]
    flat, kept = flatten(root)
    assert len(kept) == 1 and re.search(why, kept[0]), kept
    assert "run one after the other, not as a pipeline" in kept[0]
    want = run_once(root, item)
    assert run_once(flat, item) == want
    with pytest.warns(hpvm.HPVMWarning, match=why):
        handle = hpvm.launch(root, None, stream=True, target="interp")
    hpvm.push(handle, item)
    assert tuple(int(v) for v in hpvm.pop(handle)) == want
    hpvm.wait(handle)
