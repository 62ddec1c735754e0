"""Graph analyses of ``hpvm.ir.analysis`` against their definitions, on random graphs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.ir.analysis import one_to_one_sources
from hpvm.ir.graph import ALL_TO_ALL, ONE_TO_ONE, ChildGraph, Edge, Node


@st.composite
def dags(draw):
    """A child graph of up to 6 nodes and edges that go from earlier to later nodes (so no
    cycle), each one-to-one or all-to-all, streaming or not, several between one pair
    allowed; the nodes are created in a shuffled order, so that creation order is not the
    edges' order."""
    n = draw(st.integers(1, 6))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edge = st.tuples(st.sampled_from(pairs), st.booleans(), st.booleans()) if pairs else st.nothing()
    chosen = draw(st.lists(edge, max_size=10)) if pairs else []
    nodes = [Node(f"n{i}", None, ()) for i in range(n)]  # type: ignore[arg-type]
    edges = [
        Edge(nodes[i], 0, nodes[j], 0, ALL_TO_ALL if a2a else ONE_TO_ONE, stream=stream)
        for (i, j), a2a, stream in chosen
    ]
    order = draw(st.permutations(nodes))
    return ChildGraph(nodes=list(order), edges=edges)


def paths(graph, src, dst):
    """Every path from ``src`` to ``dst``, as its list of edges."""
    if src is dst:
        return [[]]
    found = []
    for e in graph.edges:
        if e.src is src:
            found += [[e, *rest] for rest in paths(graph, e.dst, dst)]
    return found


@settings(max_examples=200, deadline=None)
@given(dags(), st.booleans())
def test_one_to_one_sources_are_those_every_path_from_is_one_to_one(graph, pipeline):
    """Every path one-to-one — and, in the root's graph (``pipeline``), none streaming: a
    streaming edge between root children is a pipeline boundary."""
    sources = one_to_one_sources(graph, pipeline)
    for dst in graph.nodes:
        want = set()
        for src in graph.nodes:
            found = paths(graph, src, dst) if src is not dst else []
            pairing = (e.repl == ONE_TO_ONE and not (pipeline and e.stream) for path in found for e in path)
            if found and all(pairing):
                want.add(id(src))
        got = sources.get(id(dst), [])
        assert {id(s) for s in got} == want
        assert len(got) == len(want)  # each once


def test_no_one_to_one_edge_no_sources():
    a, b = Node("a", None, ()), Node("b", None, ())  # type: ignore[arg-type]
    assert one_to_one_sources(ChildGraph(nodes=[a, b], edges=[Edge(a, 0, b, 0, ALL_TO_ALL)])) == {}
    assert one_to_one_sources(ChildGraph(nodes=[a, b])) == {}
    streaming = ChildGraph(nodes=[a, b], edges=[Edge(a, 0, b, 0, ONE_TO_ONE, stream=True)])
    assert one_to_one_sources(streaming, pipeline=True) == {}
    assert one_to_one_sources(streaming) == {id(b): [a]}
