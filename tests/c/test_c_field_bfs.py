"""A breadth-first search, written in the shape of parboil's bfs for HPVM (``programs/bfs``:
four files — the one-level graph in kernel.cc, a C++ host with the standard library in
main.cc, parboil's file formats in graph_file.cc, the declarations in include/bfs.h). The
host launches the graph once per level, swapping two cost arrays, until a level reaches no
new node: two stages joined by all-to-all edges, the second lowering neighbours' costs with
``__hpvm__atomic_min`` and counting the nodes it reached first with ``__hpvm__atomic_add``.
The tests write parboil's graph file from NumPy and check every node's level against a
plain Python BFS — exactly, on interp, cpu and cpu's checked mode, with unreachable nodes,
a node reached from several at one level, and a graph with no edges."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

import hpvm.backends.cpu as cpu
from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "bfs"  # (fixed paths: zig's cache finds them)


@pytest.fixture(scope="module")
def program():
    return c.compile(
        [FOLDER / "main.cc", FOLDER / "kernel.cc", FOLDER / "graph_file.cc"],
        include_dirs=[str(FOLDER / "include")],
    )


def random_graph(nodes: int, degree: int, seed: int) -> list[list[int]]:
    """Each node's neighbours: about ``degree`` each, repeats and self-loops included; the
    last tenth of the nodes has none and nothing leads to it (it stays unreached)."""
    rng = np.random.default_rng(seed)
    reachable = max(1, nodes - nodes // 10)
    return [
        [int(d) for d in rng.integers(0, reachable, rng.integers(0, 2 * degree + 1))] if i < reachable else []
        for i in range(nodes)
    ]


def write_graph(path: Path, adjacency: list[list[int]], source: int) -> str:
    """Parboil's bfs input: the node count, "start degree" per node, the source, the edge
    count, "destination weight" per edge."""
    lines, start = [str(len(adjacency))], 0
    for neighbours in adjacency:
        lines.append(f"{start} {len(neighbours)}")
        start += len(neighbours)
    lines += [str(source), str(start)]
    lines += [f"{d} {1 + (d % 7)}" for neighbours in adjacency for d in neighbours]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def levels(adjacency: list[list[int]], source: int) -> list[int]:
    """Every node's level, by a queue, apart from the program (-1: not reached)."""
    cost = [-1] * len(adjacency)
    cost[source] = 0
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for d in adjacency[node]:
            if cost[d] < 0:
                cost[d] = cost[node] + 1
                queue.append(d)
    return cost


def read_costs(path: Path) -> list[int]:
    count, *rows = path.read_text().split("\n")[:-1]
    assert len(rows) == int(count)
    assert [int(r.split()[0]) for r in rows] == list(range(len(rows)))
    return [int(r.split()[1]) for r in rows]


def test_one_level_is_two_stages_joined_by_all_to_all_edges(program):
    (root,) = program.roots
    copy, visit = root.graph.nodes
    assert [n.function.name for n in (copy, visit)] == ["bfs_copy", "bfs_visit"]
    assert [[p.name for p in n.sizes] for n in (copy, visit)] == [["nodes"], ["nodes"]]
    # the output arrays' sizes travel by the edges (what orders the stages), their pointers
    # by binds: each a pointer-only u8[*] port and an i64; what is only read is an array
    assert [(p.name, str(p.type)) for p in visit.function.params] == [
        ("starts", "u8[:]"),
        ("edges", "u8[:]"),
        ("cost_in", "u8[:]"),
        ("cost_out", "u8[*]"),
        ("bytes_cost_out", "i64"),
        ("frontier", "u8[*]"),
        ("bytes_frontier", "i64"),
        ("level", "i32"),
    ]
    edges = [(e.src.name, e.sp, e.dst.name, e.dp, e.repl) for e in root.graph.edges]
    assert edges == [("copy", 0, "visit", 4, 1), ("copy", 1, "visit", 6, 1)]  # all-to-all
    assert visit.function.outs == ("cost_out", "frontier")


@pytest.mark.parametrize(
    ("nodes", "degree", "source", "target", "checked"),
    [
        (2000, 3, 0, "cpu", False),
        (2000, 3, 17, "cpu", True),  # cpu's checked mode: every access compared with its array
        (300, 2, 5, "interp", False),
        (1, 0, 0, "cpu", False),  # one node, no edge
    ],
)
def test_the_program_writes_every_nodes_level(
    program, tmp_path, capfd, nodes, degree, source, target, checked
):
    adjacency = random_graph(nodes, degree, nodes + degree + source)
    want = levels(adjacency, source)
    path = write_graph(tmp_path / "graph.txt", adjacency, source)
    out = tmp_path / "costs.txt"
    previous = cpu.configure(checked=checked)
    try:
        assert program.run(["-i", path, "-o", str(out)], target=target) == 0
    finally:
        cpu.configure(**previous)
    assert read_costs(out) == want
    if nodes > 100:  # unreached nodes, several levels, a node reached from several at once
        assert -1 in want and max(want) >= 3
        assert any(
            sum(want[s] == want[d] - 1 for s in range(nodes) if d in adjacency[s]) > 1 for d in range(50)
        )
    printed = capfd.readouterr().out
    assert (
        f"bfs {nodes} nodes, {sum(map(len, adjacency))} edges from node {source}: {max(want) + 1} levels"
        in printed
    )


def test_a_graph_file_that_is_not_one_is_refused(program, tmp_path, capfd):
    out = tmp_path / "costs.txt"
    bad = tmp_path / "bad.txt"
    bad.write_text("3\n0 1\n1 1\n2 0\n0\n2\n1 1\n5 1\n")  # edge 1 goes to node 5 of 3
    assert program.run(["-i", str(bad), "-o", str(out)]) == 1
    assert "bfs: " + str(bad) + ": edge 1 goes to node 5, past the last of 3" in capfd.readouterr().err
    bad.write_text("2\n0 1\n1 0\n4\n1\n1 1\n")
    assert program.run(["-i", str(bad), "-o", str(out)]) == 1
    assert "source 4 is not one of the 2 nodes" in capfd.readouterr().err
    assert program.run(["-i", str(tmp_path / "none.txt"), "-o", str(out)]) == 1
    assert "bfs: cannot open" in capfd.readouterr().err
    assert not out.exists()
