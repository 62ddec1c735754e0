"""A layered, nested layout of a program's hierarchy, in pure Python (no Graphviz).

Each internal node is laid out on its own, innermost first, as a left-to-right layered
drawing (the classic Sugiyama recipe, kept small):

1. *columns* — input ports in the first column, each child in column ``1 + the longest
   path of edges reaching it`` (``graphlib`` gives the order), output ports in the last;
2. *dummies* — an arrow spanning several columns gets an invisible slot in each column it
   crosses, so it is routed between boxes and never through one;
3. *order* — a few barycentre sweeps order each column to reduce crossings;
4. *heights* — each column is placed as close as possible to the arrows' other ends, with
   no overlaps (an isotonic regression, solved by pool-adjacent-violators);
5. the cluster's box is sized from its contents (and its title), and the parent then lays
   it out as one big box — so nested clusters are sized recursively.

Coordinates are in points (1/72 inch), y growing downwards. Text is measured for a
monospaced font (DejaVu Sans Mono, which matplotlib ships), so every label fits its box.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..ir.graph import ChildGraph, InternalFunction, Node, NodeFunction
from .dot import (
    edge_kind,
    function_line,
    input_port_label,
    layout_lines,
    link_label,
    node_title,
    output_count,
)

FONT = 10.0  # node names and cluster titles
SMALL = 8.0  # function lines, ports and arrow labels
CHAR = 0.635  # advance width of DejaVu Sans Mono (0.602 em), plus what Agg adds by rounding advances to whole pixels
LINE = 1.3  # line height, in ems
PAD = 12.0  # inside a cluster, around its contents
BOX_PAD = (9.0, 6.0)  # inside a leaf box, around its text (x, y)
V_GAP = 16.0  # between boxes stacked in one column
MIN_GAP = 52.0  # between columns
PORT_SPACING = 11.0  # at least this far apart, arrows meeting one side of a leaf
DUMMY_H = 8.0  # the slot an arrow takes in a column it crosses
MARGIN = 14.0  # around the whole picture
SWEEPS = 4


def text_width(text: str, size: float) -> float:
    return len(text) * CHAR * size


@dataclass(eq=False)
class Box:
    """A drawn rectangle: a leaf, an internal node's cluster, a port, or an arrow's slot.

    ``kind`` is ``"leaf"``, ``"cluster"``, ``"in"``, ``"out"`` or ``"dummy"``; ``lines`` is
    the label (a cluster's title). A cluster owns its ``children`` and its ``inputs`` /
    ``outputs`` port boxes (which are also among its children).
    """

    kind: str
    lines: list[str]
    hint: str | None
    w: float
    h: float
    depth: int = 0
    x: float = 0.0
    y: float = 0.0
    recursive: bool = False
    children: list[Box] = field(default_factory=list)
    inputs: dict[int, Box] = field(default_factory=dict)
    outputs: dict[int, Box] = field(default_factory=dict)

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    def move(self, dx: float, dy: float) -> None:
        """Shift this box and everything inside it."""
        self.x += dx
        self.y += dy
        for child in self.children:
            child.move(dx, dy)

    def walk(self) -> Iterator[Box]:
        """This box and every box inside it, outer before inner."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(eq=False)
class Link:
    """An arrow: an edge (``kind`` one-to-one / all-to-all) or a bind (``kind`` "bind").

    ``src`` / ``dst`` are the boxes it attaches to (a leaf, or a port box of a cluster),
    at ports ``sp`` / ``dp``. ``label`` goes mid-way (``0→1`` on edges; binds need none,
    since port boxes show their numbers, except ``stream``); ``tail`` / ``head`` are port
    numbers written where a bind meets a leaf. ``points`` (filled in at the end) are the
    start, the left and right ends of each slot it passes through, and the end — odd
    stretches cross gaps between columns, even ones cross a column.
    """

    kind: str
    stream: bool
    label: str
    src: Box
    dst: Box
    sp: int = 0
    dp: int = 0
    tail: str = ""
    head: str = ""
    src_frac: float = 0.5
    dst_frac: float = 0.5
    dummies: list[Box] = field(default_factory=list)
    points: list[tuple[float, float]] = field(default_factory=list)
    label_at: tuple[float, float] = (0.0, 0.0)


@dataclass
class Scene:
    """The finished picture: the root box (everything nested in it) and all arrows."""

    root: Box
    links: list[Link]
    width: float
    height: float

    def boxes(self) -> Iterator[Box]:
        return self.root.walk()


@dataclass(eq=False)
class _Conn:
    """A link while its cluster is laid out: the two column members it joins, and how."""

    link: Link
    src: Box  # the member of a column: a child box or a port box of this cluster
    dst: Box
    chain: list[Box] = field(default_factory=list)  # src, dummies…, dst

    def offset(self, box: Box) -> float:
        """Where on ``box`` (a chain member) this link attaches, measured from its top."""
        if box is self.src:
            anchor, frac = self.link.src, self.link.src_frac
        elif box is self.dst:
            anchor, frac = self.link.dst, self.link.dst_frac
        else:
            return box.h / 2
        return anchor.y + frac * anchor.h - box.y


# ---------------------------------------------------------------------------------------
# Building boxes


def _leaf_box(node: Node | None, fn: NodeFunction, depth: int, recursive: bool = False) -> Box:
    title = node_title(node, fn)
    lines = [title, function_line(fn, node), *layout_lines(fn)] + (["(recursive)"] if recursive else [])
    w = max(text_width(title, FONT), *(text_width(t, SMALL) for t in lines[1:])) + 2 * BOX_PAD[0]
    h = FONT * LINE + SMALL * LINE * (len(lines) - 1) + 2 * BOX_PAD[1]
    return Box("leaf", lines, fn.hint, w, h, depth, recursive=recursive)


def _port_box(kind: str, label: str, hint: str | None, depth: int) -> Box:
    return Box(kind, [label], hint, text_width(label, SMALL) + 18.0, SMALL * LINE + 6.0, depth)


def title_height(lines: list[str]) -> float:
    return FONT * LINE + SMALL * LINE * (len(lines) - 1) + 8.0


class _Layout:
    def __init__(self) -> None:
        self.links: list[Link] = []

    def node(self, node: Node | None, fn: NodeFunction, depth: int, active: tuple[int, ...]) -> Box:
        if not isinstance(fn, InternalFunction):
            return _leaf_box(node, fn, depth)
        if id(fn) in active:  # a function containing itself (the verifier reports it)
            return _leaf_box(node, fn, depth, recursive=True)
        return self.cluster(node, fn, depth, active + (id(fn),))

    def cluster(self, node: Node | None, fn: InternalFunction, depth: int, active: tuple[int, ...]) -> Box:
        graph = fn.graph
        box = Box("cluster", [node_title(node, fn), function_line(fn, node)], fn.hint, 0.0, 0.0, depth)
        box.inputs = {
            i: _port_box("in", input_port_label(fn, i), fn.hint, depth + 1) for i in range(len(fn.params))
        }
        box.outputs = {i: _port_box("out", f"out {i}", fn.hint, depth + 1) for i in range(output_count(fn))}
        kids = {id(n): self.node(n, n.function, depth + 1, active) for n in graph.nodes}
        conns = self._connections(graph, box, kids)
        layer = _layers(graph, kids, box)
        columns = _columns(
            layer, [*box.inputs.values(), *kids.values(), *box.outputs.values()], conns, depth + 1
        )
        _order(columns, conns)
        _place(box, columns, conns)
        box.children = [b for col in columns for b in col]
        return box

    def _connections(self, graph: ChildGraph, box: Box, kids: dict[int, Box]) -> list[_Conn]:
        """Links for the edges and binds of ``graph`` (references to absent nodes are skipped)."""
        conns: list[_Conn] = []

        def add(kind: str, stream: bool, label: str, src: Box, sp: int, dst: Box, dp: int) -> None:
            src_anchor = src.outputs.get(sp, src) if src.kind == "cluster" else src
            dst_anchor = dst.inputs.get(dp, dst) if dst.kind == "cluster" else dst
            link = Link(kind, stream, label, src_anchor, dst_anchor, sp, dp)
            if kind == "bind":
                link.tail = str(sp) if src_anchor.kind == "leaf" else ""
                link.head = str(dp) if dst_anchor.kind == "leaf" else ""
            conns.append(_Conn(link, src, dst))
            self.links.append(link)

        for e in graph.edges:
            if id(e.src) in kids and id(e.dst) in kids:
                label = link_label(e.sp, e.dp, e.stream, e.repl)
                add(edge_kind(e.repl), e.stream, label, kids[id(e.src)], e.sp, kids[id(e.dst)], e.dp)
        for b in graph.in_binds:
            if id(b.dst) in kids and b.ip in box.inputs:
                label = "stream" if b.stream else ""
                add("bind", b.stream, label, box.inputs[b.ip], b.ip, kids[id(b.dst)], b.ic)
        for ob in graph.out_binds:
            if id(ob.src) in kids and ob.op in box.outputs:
                label = "stream" if ob.stream else ""
                add("bind", ob.stream, label, kids[id(ob.src)], ob.oc, box.outputs[ob.op], ob.op)
        _spread_anchors(conns)
        return conns


def _spread_anchors(conns: list[_Conn]) -> None:
    """Several arrows on one side of a leaf attach at different heights, in port order.

    A leaf with many arrows on one side grows taller so that they stay apart.
    """
    sides: dict[tuple[int, bool], list[Link]] = {}
    for c in conns:
        if c.link.src.kind == "leaf":
            sides.setdefault((id(c.link.src), False), []).append(c.link)
        if c.link.dst.kind == "leaf":
            sides.setdefault((id(c.link.dst), True), []).append(c.link)
    for (_, incoming), links in sides.items():
        links.sort(key=lambda k: k.dp if incoming else k.sp)
        leaf = links[0].dst if incoming else links[0].src
        leaf.h = max(leaf.h, (len(links) + 1) * PORT_SPACING)
        for k, link in enumerate(links):
            frac = (k + 1) / (len(links) + 1)
            if incoming:
                link.dst_frac = frac
            else:
                link.src_frac = frac


def _layers(graph: ChildGraph, kids: dict[int, Box], box: Box) -> dict[int, int]:
    """Column of each member: inputs 0, children by longest path of edges, outputs last."""
    preds: dict[int, set[int]] = {id(n): set() for n in graph.nodes}
    succs: dict[int, set[int]] = {id(n): set() for n in graph.nodes}
    for e in graph.edges:
        if id(e.src) in kids and id(e.dst) in kids and e.src is not e.dst:
            preds[id(e.dst)].add(id(e.src))
            succs[id(e.src)].add(id(e.dst))
    layer: dict[int, int] = {}
    try:
        order = list(graphlib.TopologicalSorter(preds).static_order())
    except graphlib.CycleError:  # not a DAG (the verifier says so): creation order
        order = []
        layer = {id(n): i + 1 for i, n in enumerate(graph.nodes)}
    for n in order:
        layer[n] = 1 + max((layer[p] for p in preds[n]), default=0)
    for n in reversed(order):  # sources move right, next to their first consumer
        if not preds[n] and succs[n]:
            layer[n] = min(layer[s] for s in succs[n]) - 1
    last = 1 + max(layer.values(), default=0)
    result = {id(kids[n]): c for n, c in layer.items()}
    result.update({id(p): 0 for p in box.inputs.values()})
    result.update({id(p): last for p in box.outputs.values()})
    return result


def _columns(layer: dict[int, int], members: list[Box], conns: list[_Conn], depth: int) -> list[list[Box]]:
    """Members grouped by column, with a dummy slot wherever an arrow crosses a column."""
    columns: list[list[Box]] = [[] for _ in range(max(layer.values(), default=0) + 1)]
    for b in members:
        columns[layer[id(b)]].append(b)
    for c in conns:
        first, last = layer[id(c.src)], layer[id(c.dst)]
        c.chain = [c.src]
        for col in range(first + 1, last):
            dummy = Box("dummy", [], None, 0.0, DUMMY_H, depth)
            columns[col].append(dummy)
            c.chain.append(dummy)
            c.link.dummies.append(dummy)
        c.chain.append(c.dst)
    return columns


def _neighbours(conns: list[_Conn]) -> Iterator[tuple[Box, Box, _Conn]]:
    """Consecutive pairs (left, right) along every link's chain."""
    for c in conns:
        for a, b in zip(c.chain, c.chain[1:]):
            yield a, b, c


def _order(columns: list[list[Box]], conns: list[_Conn]) -> None:
    """Barycentre sweeps: order each inner column by the mean position of its neighbours.

    A neighbour's position is its rank in its column plus where on it the arrow attaches
    (-0.5 top … +0.5 bottom), so arrows to a leaf's ports 0, 1, 2 arrive without crossing.
    """
    left: dict[int, list[tuple[Box, _Conn]]] = {}
    right: dict[int, list[tuple[Box, _Conn]]] = {}
    for a, b, c in _neighbours(conns):
        right.setdefault(id(a), []).append((b, c))
        left.setdefault(id(b), []).append((a, c))
    inner = range(1, len(columns) - 1)  # the port columns keep port order
    for sweep in range(SWEEPS):
        forward = sweep % 2 == 0
        for i in inner if forward else reversed(inner):
            near = left if forward else right
            pos = {id(b): k for k, b in enumerate(columns[i - 1] if forward else columns[i + 1])}

            def key(item: tuple[int, Box], near: dict = near, pos: dict[int, int] = pos) -> float:
                k, b = item
                ranks = [
                    pos[id(n)] + c.offset(n) / max(n.h, 1.0) - 0.5
                    for n, c in near.get(id(b), [])
                    if id(n) in pos
                ]
                return sum(ranks) / len(ranks) if ranks else k

            columns[i] = [b for _, b in sorted(enumerate(columns[i]), key=key)]


def _pav(values: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``values`` (least squares): pool adjacent violators."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    out: list[float] = []
    for total, count in blocks:
        out.extend([total / count] * int(count))
    return out


def _stack(column: list[Box], wanted: list[float]) -> None:
    """Put the column's boxes (in order, ``V_GAP`` apart) as near the wanted tops as possible."""
    offsets, acc = [], 0.0
    for b in column:
        offsets.append(acc)
        acc += b.h + V_GAP
    fitted = _pav([w - o for w, o in zip(wanted, offsets)])
    for b, z, o in zip(column, fitted, offsets):
        b.move(0.0, z + o - b.y)


def _place(box: Box, columns: list[list[Box]], conns: list[_Conn]) -> None:
    """Give every member of the cluster a position, then size the cluster around them."""
    columns[:] = [col for col in columns if col]
    # x: columns left to right; the gap after a column fits the labels of arrows leaving it
    col_of = {id(b): i for i, col in enumerate(columns) for b in col}
    label_w = [0.0] * len(columns)
    for c in conns:
        i = col_of[id(c.src)]
        label_w[i] = max(label_w[i], text_width(c.link.label, SMALL))
    gaps = [max(MIN_GAP, 1.6 * w + 20.0) for w in label_w[:-1]]
    widths = [max(b.w for b in col) for col in columns]
    title_w = max(text_width(box.lines[0], FONT), text_width(box.lines[1], SMALL)) + 2 * PAD
    content = sum(widths) + sum(gaps)
    if gaps and content + 2 * PAD < title_w:  # a wide title: spread the columns out
        gaps = [g + (title_w - content - 2 * PAD) / len(gaps) for g in gaps]
        content = sum(widths) + sum(gaps)
    x = PAD + max(0.0, (title_w - content - 2 * PAD) / 2)
    for col, width, gap in zip(columns, widths, [*gaps, 0.0]):
        for b in col:
            if b.kind == "dummy":
                b.w = width
            align = {"in": 0.0, "out": width - b.w}.get(b.kind, (width - b.w) / 2)
            b.move(x + align - b.x, 0.0)
        x += width + gap
    # y: stack, then pull each column towards its neighbours, sweeping both ways
    for col in columns:
        _stack(col, [0.0] * len(col))
    near: tuple[dict[int, list[tuple[Box, _Conn]]], dict[int, list[tuple[Box, _Conn]]]] = ({}, {})
    for a, b, c in _neighbours(conns):
        near[0].setdefault(id(b), []).append((a, c))  # a is left of b
        near[1].setdefault(id(a), []).append((b, c))
    for sweep in range(SWEEPS):
        forward = sweep % 2 == 0
        side = near[0] if forward else near[1]
        for i in range(1, len(columns)) if forward else range(len(columns) - 2, -1, -1):
            wanted = []
            for b in columns[i]:
                targets = [n.y + c.offset(n) - c.offset(b) for n, c in side.get(id(b), [])]
                wanted.append(sum(targets) / len(targets) if targets else b.y)
            _stack(columns[i], wanted)
    members = [b for col in columns for b in col]
    top = min((b.y for b in members), default=0.0)
    bottom = max((b.bottom for b in members), default=0.0)
    head = title_height(box.lines)
    for b in members:
        b.move(0.0, head + PAD - top)
    box.w = max(title_w, x + PAD) if members else title_w
    box.h = head + PAD + (bottom - top) + PAD if members else head + PAD


# ---------------------------------------------------------------------------------------
# Finishing: arrow geometry and label positions


def curve_point(p0: tuple[float, float], p1: tuple[float, float], t: float) -> tuple[float, float]:
    """A point of the S-curve from ``p0`` to ``p1`` (control points half-way, horizontally)."""
    (x0, y0), (x1, y1) = p0, p1
    mx = (x0 + x1) / 2
    u = 1 - t
    x = u**3 * x0 + 3 * u * u * t * mx + 3 * u * t * t * mx + t**3 * x1
    y = u**3 * y0 + 3 * u * u * t * y0 + 3 * u * t * t * y1 + t**3 * y1
    return x, y


Rect = tuple[float, float, float, float]  # left, top, right, bottom
_TS = (0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8, 0.12, 0.88)  # spots along a curve, middle first


def _finish(links: list[Link], boxes: list[Box]) -> None:
    """Arrow points from the final box positions, and a spot for each label that overlaps
    no other label and no leaf or port box (``_label_spots`` lists where to look)."""
    placed: list[Rect] = [(b.x, b.y, b.right, b.bottom) for b in boxes if b.kind in ("leaf", "in", "out")]
    for link in links:
        s, d = link.src, link.dst
        pts = [(s.right, s.y + link.src_frac * s.h)]
        for dummy in link.dummies:
            cy = dummy.y + dummy.h / 2
            pts += [(dummy.x, cy), (dummy.right, cy)]
        pts.append((d.x, d.y + link.dst_frac * d.h))
        link.points = pts
        if not link.label:
            continue
        w, h = text_width(link.label, SMALL) + 4.0, SMALL * LINE
        spots = list(_label_spots(link, pts, w))
        free = None
        for x, y in spots:
            rect = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            if not any(_overlap(rect, other) for other in placed):
                free = rect
                break
        if free is None:  # every spot on the arrow is taken: the nearest free one below the first
            x, y = spots[0]
            free = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            while any(_overlap(free, other) for other in placed):
                free = (free[0], free[1] + h / 2, free[2], free[3] + h / 2)
        placed.append(free)
        link.label_at = ((free[0] + free[2]) / 2, (free[1] + free[3]) / 2)


def _label_spots(link: Link, pts: list[tuple[float, float]], w: float) -> Iterator[tuple[float, float]]:
    """Where ``link``'s label may go, best first: a bind's label right by the port box it
    leaves or enters (ports are stacked apart, so those never collide, however many binds
    cross the gap beside them), then points along each stretch of the arrow that crosses a
    gap between columns (the first one first; the last one first for a bind to an output)."""
    if link.src.kind == "in":
        yield pts[0][0] + w / 2 + 3.0, pts[0][1]
    if link.dst.kind == "out":
        yield pts[-1][0] - w / 2 - 12.0, pts[-1][1]
    gaps = [(pts[k], pts[k + 1]) for k in range(0, len(pts) - 1, 2)]
    if link.dst.kind == "out":
        gaps.reverse()
    for a, b in gaps:
        for t in _TS:
            yield curve_point(a, b, t)


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def layout(root: NodeFunction) -> Scene:
    """Lay out the hierarchy under ``root``: every node expanded where it is used."""
    builder = _Layout()
    box = builder.node(None, root, 0, ())
    box.move(MARGIN - box.x, MARGIN - box.y)
    _finish(builder.links, list(box.walk()))
    return Scene(box, builder.links, box.w + 2 * MARGIN, box.h + 2 * MARGIN)
