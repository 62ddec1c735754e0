"""Pictures of programs: DOT text, the pure-Python layout, and the files ``render`` writes."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import hpvm
from hpvm.errors import BackendUnavailableError, HPVMError
from hpvm.ir.graph import ChildGraph, InternalFunction, LeafFunction, Node, Param, functions
from hpvm.ir.types import f32
from hpvm.viz import graphviz_available, render, to_dot
from hpvm.viz.dot import STREAM_COLOR, quote
from hpvm.viz.layout import FONT, SMALL, layout, text_width

# ---------------------------------------------------------------------------------------
# Programs: three levels of hierarchy, 0/1/2/3-D nodes, binds, both replications, a stream


@hpvm.leaf(ins=("a",), outs=("b",))
def scale(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32) -> hpvm.f32:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * k
    return k


@hpvm.internal()
def inner(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    s = hpvm.create_node_1d(scale, n)
    u = hpvm.create_node_1d(scale, n)
    for port in (0, 1, 2):
        hpvm.bind_in(s, port, port)
    hpvm.bind_in(u, 1, 0)
    hpvm.bind_in(u, 0, 1)
    hpvm.edge(s, u, hpvm.ONE_TO_ONE, 0, 2)
    hpvm.bind_out(u, 0, 0)


@hpvm.leaf(hint=hpvm.GPU_TARGET, ins=("b",), outs=("c",))
def square(b: hpvm.f32[:], c: hpvm.f32[:], k: hpvm.f32) -> hpvm.f32:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = b[i] * b[i] * k
    return k


@hpvm.leaf(ins=("c",))
def total(c: hpvm.f32[:], k: hpvm.f32) -> hpvm.f32:
    return k


@hpvm.internal(hint=hpvm.GPU_TARGET)
def middle(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    t = hpvm.create_node_2d(inner, n // 4, 4)
    for ip, ic in ((0, 0), (1, 1), (3, 2), (4, 3)):
        hpvm.bind_in(t, ip, ic)
    q = hpvm.create_node_3d(square, n, 1, 1)
    hpvm.bind_in(q, 1, 0)
    hpvm.bind_in(q, 2, 1)
    hpvm.edge(t, q, hpvm.ALL_TO_ALL, 0, 2)
    hpvm.bind_out(q, 0, 0)


@hpvm.internal()
def program(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    m = hpvm.create_node(middle)
    for i in range(5):
        hpvm.bind_in(m, i, i)
    r = hpvm.create_node(total)
    hpvm.bind_in(r, 2, 0)
    hpvm.edge(m, r, hpvm.ONE_TO_ONE, 0, 1, stream=True)
    hpvm.bind_out(r, 0, 0)


@hpvm.internal()
def twice(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    """The same internal function used by two nodes: drawn twice."""
    x = hpvm.create_node(inner)
    y = hpvm.create_node(inner)
    for node in (x, y):
        for i in range(4):
            hpvm.bind_in(node, i, i)
    hpvm.bind_out(x, 0, 0)
    hpvm.bind_out(y, 0, 1)


def test_programs_are_valid() -> None:
    hpvm.verify(program)
    hpvm.verify(twice)


# ---------------------------------------------------------------------------------------
# A small checker for the DOT that to_dot writes (one statement per line)

QUOTED = r'"(?:[^"\\]|\\.)*"'
NODE = re.compile(rf"^\s*({QUOTED}) (\[.*\]);$")
EDGE = re.compile(rf"^\s*({QUOTED}) -> ({QUOTED}) (\[.*\]);$")
CLUSTER = re.compile(rf"^\s*subgraph ({QUOTED}) \{{$")
ATTRS = re.compile(rf"^\[(\w+={QUOTED})(, \w+={QUOTED})*\]$")


def parse_dot(text: str) -> dict:
    """Check the DOT is well formed; return its nodes, edges (with attributes) and clusters."""
    bare = re.sub(QUOTED, '""', text)
    assert '"' not in bare.replace('""', ""), "an unbalanced quote"
    depth, max_depth = 0, 0
    for ch in bare:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, "a '}' closes nothing"
        max_depth = max(max_depth, depth)
    assert depth == 0, "unbalanced braces"
    assert text.startswith("digraph ")
    nodes: set[str] = set()
    edges: list[tuple[str, str, str]] = []
    clusters: list[tuple[str, int]] = []
    depth = 0
    for line in text.splitlines():
        if m := CLUSTER.match(line):
            clusters.append((m.group(1), depth))
        elif m := EDGE.match(line):
            assert ATTRS.match(m.group(3)), line
            edges.append((m.group(1), m.group(2), m.group(3)))
        elif m := NODE.match(line):
            assert ATTRS.match(m.group(2)), line
            nodes.add(m.group(1))
        bare_line = re.sub(QUOTED, '""', line)
        depth += bare_line.count("{") - bare_line.count("}")
    for src, dst, _ in edges:
        assert src in nodes and dst in nodes, f"edge {src} -> {dst} uses an undeclared node"
    return {"nodes": nodes, "edges": edges, "clusters": clusters}


def test_dot_is_well_formed_with_a_cluster_per_internal_node() -> None:
    text = to_dot(program)
    dot = parse_dot(text)
    assert len(dot["clusters"]) == 3  # program, middle, inner
    assert all(name.startswith('"cluster_') for name, _ in dot["clusters"])
    assert sorted(d for _, d in dot["clusters"]) == [1, 2, 3]  # nested three deep
    for label in ("scale [n]", "scale_1 [n]", "square [n, 1, 1]", "inner [n // 4, 4]", "leaf square · gpu"):
        assert label in text
    assert re.search(r'label="middle\\linternal middle · gpu\\l"', text)  # 0-D: no brackets


def count_binds(root: InternalFunction) -> int:
    """Binds in the program (each internal function here is used once)."""
    return sum(
        len(fn.graph.in_binds) + len(fn.graph.out_binds)
        for fn in functions(root)
        if isinstance(fn, InternalFunction)
    )


def test_dot_edges_binds_and_streams() -> None:
    edges = parse_dot(to_dot(program))["edges"]
    binds = [a for _, _, a in edges if 'style="dotted"' in a]
    assert len(binds) == count_binds(program) == 20
    stream = [a for _, _, a in edges if "stream" in a]
    assert len(stream) == 1
    assert 'label="stream 0→1"' in stream[0] and STREAM_COLOR in stream[0] and 'penwidth="2.6"' in stream[0]
    all_to_all = [a for _, _, a in edges if 'style="dashed"' in a]
    assert len(all_to_all) == 1 and 'label="all 0→2"' in all_to_all[0]
    one_to_one = [a for _, _, a in edges if 'style="solid"' in a]
    assert len(one_to_one) == 2 and any('label="0→2"' in a for a in one_to_one)


def test_dot_expands_each_use_of_an_internal_function() -> None:
    dot = parse_dot(to_dot(twice))
    assert len(dot["clusters"]) == 3  # twice, and inner for each of its two nodes
    assert sum(1 for n in dot["nodes"] if n.startswith('"n')) == 4  # two scale leaves per inner


def test_dot_escapes_labels_and_survives_odd_graphs() -> None:
    assert quote('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\nd"'
    assert quote("x\ny", "l") == '"x\\ly\\l"'
    odd_leaf = LeafFunction(lambda x: x, 'we"ird\\leaf', [Param("x", f32)], [f32])
    graph = ChildGraph(nodes=[])
    odd = InternalFunction('root "q"', [Param("x", f32)], graph=graph)
    child = Node('child "c"', odd_leaf, ())
    graph.nodes.append(child)
    graph.nodes.append(Node("self", odd, ()))  # contains itself: drawn, not expanded
    dot = parse_dot(to_dot(odd))
    assert len(dot["clusters"]) == 1
    assert "recursive" in to_dot(odd)
    assert '"child \\"c\\"\\nleaf we\\"ird\\\\leaf"' in to_dot(odd)
    assert [b.recursive for b in layout(odd).boxes() if b.kind == "leaf"] == [False, True]


# ---------------------------------------------------------------------------------------
# The pure-Python layout


def test_layout_nests_boxes_without_overlaps_and_fits_text() -> None:
    scene = layout(program)
    clusters = [b for b in scene.boxes() if b.kind == "cluster"]
    assert [c.lines[0] for c in clusters] == ["program", "middle", "inner [n // 4, 4]"]

    def check(box) -> None:  # type: ignore[no-untyped-def]
        drawn = [c for c in box.children if c.kind != "dummy"]
        for c in box.children:
            assert box.x <= c.x and c.right <= box.right and box.y <= c.y and c.bottom <= box.bottom
        for i, a in enumerate(drawn):
            for b in drawn[i + 1 :]:
                assert a.right <= b.x or b.right <= a.x or a.bottom <= b.y or b.bottom <= a.y, (a, b)
        for c in box.children:
            check(c)

    check(scene.root)
    for box in scene.boxes():
        if box.kind in ("leaf", "cluster"):
            assert box.w >= text_width(box.lines[0], FONT) and box.w >= text_width(box.lines[1], SMALL)
    assert len(scene.links) == count_binds(program) + 3  # and three edges
    for link in scene.links:
        xs = [x for x, _ in link.points]
        assert xs == sorted(xs), "arrows run left to right"


def _label_rects(scene):  # type: ignore[no-untyped-def]
    for link in scene.links:
        if link.label:
            x, y = link.label_at
            w, h = text_width(link.label, SMALL) + 4.0, SMALL * 1.3
            yield link.label, (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def _overlaps(a, b) -> bool:  # type: ignore[no-untyped-def]
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("which", ["program", "edge_detection"])
def test_arrow_labels_overlap_no_label_and_no_box(which: str) -> None:
    """The demo's pipeline.svg drew its nine streaming binds' labels on top of each other."""
    from example_modules import load

    root = program if which == "program" else load("edge_detection").root
    scene = layout(root)
    labels = list(_label_rects(scene))
    assert labels
    for i, (text, rect) in enumerate(labels):
        for other_text, other in labels[i + 1 :]:
            assert not _overlaps(rect, other), (text, rect, other_text, other)
        for box in scene.boxes():
            if box.kind in ("leaf", "in", "out"):
                assert not _overlaps(rect, (box.x, box.y, box.right, box.bottom)), (text, box.lines)


def test_a_binds_label_sits_by_its_port() -> None:
    from example_modules import load

    scene = layout(load("edge_detection").root)
    for link in scene.links:
        if link.label and link.src.kind == "in":
            x, y = link.label_at
            assert y == pytest.approx(link.points[0][1]) and x > link.points[0][0]


# ---------------------------------------------------------------------------------------
# Files


def test_python_engine_writes_svg_png_and_pdf(tmp_path: Path) -> None:
    from PIL import Image

    svg = render(program, tmp_path / "p.svg", engine="python")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and root.iter("{http://www.w3.org/2000/svg}path")
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) > 20

    png = render(program, tmp_path / "p.png", engine="python")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png) as im:
        gray = im.convert("L")
        assert gray.size[0] > 400 and gray.size[1] > 200
        dark = sum(gray.histogram()[:200])
        assert dark > 0.01 * gray.size[0] * gray.size[1], "the picture is blank"

    pdf = render(twice, tmp_path / "t.out", fmt="pdf", engine="python")
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_dot_engine_without_graphviz_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here
    with pytest.raises(BackendUnavailableError, match='Graphviz is not installed.*engine="python"'):
        render(program, tmp_path / "p.svg", engine="dot")
    assert render(program, tmp_path / "auto.svg").stat().st_size > 0  # falls back to Python


@pytest.mark.skipif(sys.platform == "win32", reason="a shell-script stand-in for dot")
def test_dot_engine_runs_dot_on_the_dot_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "dot"
    copy = "import sys; open(sys.argv[3], 'wb').write(sys.stdin.buffer.read())"  # dot -Tsvg -o path
    fake.write_text(f"#!{sys.executable}\n{copy}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    out = render(program, tmp_path / "p.svg")  # engine=None prefers dot when it is there
    assert out.read_text() == to_dot(program)


def test_bad_format_and_engine_are_hpvm_errors(tmp_path: Path) -> None:
    with pytest.raises(HPVMError, match=r"\.svg, \.png or \.pdf"):
        render(program, tmp_path / "p.jpg", engine="python")
    with pytest.raises(HPVMError, match="unknown picture engine"):
        render(program, tmp_path / "p.svg", engine="neato")


def test_importing_viz_does_not_import_matplotlib() -> None:
    code = (
        "import sys, hpvm; before = 'matplotlib' in sys.modules; import hpvm.viz; "
        "print(before, 'matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = out.split()
    assert after == before


@pytest.mark.skipif(not graphviz_available(), reason="Graphviz is not installed")
def test_real_graphviz_accepts_the_dot(tmp_path: Path) -> None:
    for fn in (program, twice):
        svg = render(fn, tmp_path / f"{fn.name}.svg", engine="dot")
        assert ET.parse(svg).getroot().tag.endswith("svg")
