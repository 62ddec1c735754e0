"""Graphviz DOT for a program's hierarchy, and the labels and colours both engines share.

The picture follows the *hierarchy*, not the set of node functions: an internal function
used by two nodes is drawn twice, once inside each node's box, because each use is a
separate part of the running program with its own replication. Every internal node becomes a
``subgraph cluster_*`` holding its input ports (left), its child graph and its output ports
(right); edges entering or leaving an internal node attach to those port nodes, so binds
read as arrows from the box's inputs to children and from children to the box's outputs.

The label and colour helpers live here (and ``layout`` imports them) so that the DOT and
the pure-Python picture say exactly the same things.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import ALL_TO_ALL, ONE_TO_ONE, InternalFunction, Node, NodeFunction
from ..passes.split_by_target import MIXED, TARGET

# ---------------------------------------------------------------------------------------
# The vocabulary of the pictures (shared with the pure-Python renderer)

#: Hint → (stroke colour, fill colour). ``None`` is a node without a hint.
HINT_COLORS: dict[str | None, tuple[str, str]] = {
    "cpu": ("#2f6db5", "#dbe8f8"),
    "gpu": ("#2e8b3e", "#dcf2df"),
    "tensor": ("#c8620a", "#fde7d1"),
    None: ("#6b6b6b", "#f2f2f2"),
}
STREAM_COLOR = "#c2185b"
BIND_COLOR = "#8c8c8c"
EDGE_COLOR = "#333333"


def hint_colors(hint: str | None) -> tuple[str, str]:
    """(stroke, fill) for a hint; unknown hints (from hand-written IR) look like no hint."""
    return HINT_COLORS.get(hint, HINT_COLORS[None])


def cluster_fill(hint: str | None, depth: int) -> str:
    """Cluster fills: the hint's pale colour, paler at the top level, so nesting shows."""
    fill = hint_colors(hint)[1]
    r, g, b = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    mix = 0.55 if depth == 0 else 0.3
    r, g, b = (round(c + (255 - c) * mix) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def sizes_text(node: Node | None) -> str:
    """``[n // 16, m]`` for a replicated node, ``""`` for a single instance (0-D) or the root."""
    if node is None or not node.sizes:
        return ""
    return "[" + ", ".join(str(s) for s in node.sizes) + "]"


def node_title(node: Node | None, fn: NodeFunction) -> str:
    """First line of a node's label: its name and replication, e.g. ``tile [n // 16, m]``."""
    name = fn.name if node is None else node.name
    sizes = sizes_text(node)
    return f"{name} {sizes}" if sizes else name


def function_line(fn: NodeFunction, node: Node | None = None) -> str:
    """Second line: what the node runs — ``leaf scale · gpu`` or ``internal inner`` — and,
    in a graph split between back ends (``hpvm show --lowered auto``), where it runs:
    ``leaf scale · gpu → opencl``, ``internal inner → host (mixed)``."""
    kind = "internal" if isinstance(fn, InternalFunction) else "leaf"
    hint = f" · {fn.hint}" if fn.hint else ""
    target = node.attrs.get(TARGET) if node is not None else None
    where = "" if target is None else f" → {'host (mixed)' if target == MIXED else target}"
    return f"{kind} {fn.name}{hint}{where}"


def edge_kind(repl: int) -> str:
    return {ONE_TO_ONE: "one-to-one", ALL_TO_ALL: "all-to-all"}.get(repl, f"repl {repl}")


def link_label(src_port: int, dst_port: int, stream: bool = False, repl: int | None = None) -> str:
    """``0→1`` (output → input port); ``all 0→1`` for all-to-all, ``stream …`` when streaming.

    ``repl`` is ``None`` for binds (always all-to-all by the spec, so nothing to say).
    """
    words = ["stream"] if stream else []
    if repl is not None and repl != ONE_TO_ONE:
        words.append("all" if repl == ALL_TO_ALL else f"repl {repl}")
    return " ".join([*words, f"{src_port}→{dst_port}"])


def input_port_label(fn: NodeFunction, index: int) -> str:
    """``0 a`` — an internal node's input port with the parameter's name, and its data
    layout if it has one: ``0 a · chunked(4), axes(0)``."""
    if not 0 <= index < len(fn.params):
        return str(index)
    p = fn.params[index]
    layout = f" · {p.layout}" if p.layout is not None else ""
    return f"{index} {p.name}{layout}"


def layout_lines(fn: NodeFunction) -> list[str]:
    """One line per parameter with a data layout, ``a · block``: a leaf box shows no ports,
    so it lists its layouts under its name (docs/pictures.md)."""
    return [f"{p.name} · {p.layout}" for p in fn.params if p.layout is not None]


def output_count(fn: InternalFunction) -> int:
    """How many outputs an internal function has (its output binds decide; see DESIGN.md)."""
    binds = fn.graph.out_binds
    declared = len(fn.declared_outputs or [])
    return max([b.op + 1 for b in binds if b.op >= 0] + [declared])


# ---------------------------------------------------------------------------------------
# DOT text


def quote(text: str, newline: str = "n") -> str:
    r"""A DOT double-quoted string: backslashes and quotes escaped, line breaks as ``\n``.

    ``newline="l"`` ends every line with ``\l`` instead (left-justified lines, for titles).
    """
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    lines = escaped.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if newline == "l":
        return '"' + "".join(line + "\\l" for line in lines) + '"'
    return '"' + "\\n".join(lines) + '"'


def _attrs(**attrs: str | float) -> str:
    return "[" + ", ".join(f"{k}={quote(str(v))}" for k, v in attrs.items()) + "]"


@dataclass
class _Endpoints:
    """Where arrows attach to one drawn node: a leaf's own box, or an internal node's ports.

    ``None`` means the port does not exist (a broken program); the caller draws a "?" dot.
    """

    inputs: dict[int, str]
    outputs: dict[int, str]
    box: str | None = None

    def input(self, port: int) -> str | None:
        return self.box or self.inputs.get(port)

    def output(self, port: int) -> str | None:
        return self.box or self.outputs.get(port)


class _DotWriter:
    """Walks the hierarchy (a tree of node uses) and writes one statement per line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def node(self, node: Node | None, fn: NodeFunction, depth: int, active: tuple[int, ...]) -> _Endpoints:
        """Write ``fn`` as used by ``node`` (``None`` for the root); return its attach points."""
        if isinstance(fn, InternalFunction) and id(fn) not in active:
            return self.cluster(node, fn, depth, active + (id(fn),))
        stroke, fill = hint_colors(fn.hint)
        ident = self.fresh("n")
        label = "\n".join([node_title(node, fn), function_line(fn, node), *layout_lines(fn)])
        extra: dict[str, str] = {}
        if isinstance(fn, InternalFunction):  # contains itself: the verifier reports it
            label += "\n(recursive: not expanded)"
            extra = {"style": "rounded,dashed,filled"}
        attrs = {"label": label, "color": stroke, "fillcolor": fill, **extra}
        self.emit(depth, f"{quote(ident)} {_attrs(**attrs)};")
        return _Endpoints({}, {}, ident)

    def point(self, depth: int, ident: str | None) -> str:
        """``ident``, or a fresh "?" dot standing for a node or port the graph lacks."""
        if ident is not None:
            return ident
        ident = self.fresh("missing")
        self.emit(depth, f"{quote(ident)} {_attrs(label='?', shape='circle', width=0.2, fillcolor='white')};")
        return ident

    def cluster(
        self, node: Node | None, fn: InternalFunction, depth: int, active: tuple[int, ...]
    ) -> _Endpoints:
        graph = fn.graph
        stroke = hint_colors(fn.hint)[0]
        cid = self.fresh("cluster_")
        title = node_title(node, fn) + "\n" + function_line(fn, node)
        self.emit(depth, f"subgraph {quote(cid)} {{")
        inner = depth + 1
        self.emit(
            inner, f"label={quote(title, 'l')}; style={quote('rounded,filled')}; color={quote(stroke)};"
        )
        self.emit(inner, f"fillcolor={quote(cluster_fill(fn.hint, depth))}; penwidth=1.4;")
        port_style = {"shape": "rarrow", "fontsize": 9, "color": stroke, "fillcolor": "white", "height": 0.3}
        inputs = {i: self.fresh("in") for i in range(len(fn.params))}
        for i, ident in inputs.items():
            self.emit(inner, f"{quote(ident)} {_attrs(label=input_port_label(fn, i), **port_style)};")
        outputs = {i: self.fresh("out") for i in range(output_count(fn))}
        for i, ident in outputs.items():
            self.emit(inner, f"{quote(ident)} {_attrs(label=f'out {i}', **port_style)};")
        for ports in (inputs, outputs):  # each side's ports line up, in port order
            if len(ports) > 1:
                self.emit(inner, "{ rank=same; " + " ".join(quote(p) + ";" for p in ports.values()) + " }")
        children = {id(child): self.node(child, child.function, inner, active) for child in graph.nodes}
        missing = _Endpoints({}, {})  # a node the graph references but does not contain
        for e in graph.edges:
            attrs = {
                "label": link_label(e.sp, e.dp, e.stream, e.repl),
                "style": "dashed" if e.repl == ALL_TO_ALL else "solid",
                "tooltip": f"{edge_kind(e.repl)} edge {e.src.name}.{e.sp} → {e.dst.name}.{e.dp}",
                "color": STREAM_COLOR if e.stream else EDGE_COLOR,
                "fontcolor": STREAM_COLOR if e.stream else EDGE_COLOR,
                "penwidth": 2.6 if e.stream else 1.2,
                "arrowhead": "veevee" if e.repl == ALL_TO_ALL else "normal",
            }
            src = self.point(inner, children.get(id(e.src), missing).output(e.sp))
            dst = self.point(inner, children.get(id(e.dst), missing).input(e.dp))
            self.emit(inner, f"{quote(src)} -> {quote(dst)} {_attrs(**attrs)};")
        for b in graph.in_binds:
            tip = f"input bind {b.ip} → {b.dst.name}.{b.ic}"
            src = self.point(inner, inputs.get(b.ip))
            dst = self.point(inner, children.get(id(b.dst), missing).input(b.ic))
            attrs = _bind_attrs(link_label(b.ip, b.ic, b.stream), b.stream, tip)
            self.emit(inner, f"{quote(src)} -> {quote(dst)} {_attrs(**attrs)};")
        for ob in graph.out_binds:
            tip = f"output bind {ob.src.name}.{ob.oc} → {ob.op}"
            src = self.point(inner, children.get(id(ob.src), missing).output(ob.oc))
            dst = self.point(inner, outputs.get(ob.op))
            attrs = _bind_attrs(link_label(ob.oc, ob.op, ob.stream), ob.stream, tip)
            self.emit(inner, f"{quote(src)} -> {quote(dst)} {_attrs(**attrs)};")
        self.emit(depth, "}")
        return _Endpoints(inputs, outputs)


def _bind_attrs(label: str, stream: bool, tooltip: str) -> dict[str, str | float]:
    return {
        "label": label,
        "style": "bold" if stream else "dotted",
        "color": STREAM_COLOR if stream else BIND_COLOR,
        "fontcolor": STREAM_COLOR if stream else BIND_COLOR,
        "penwidth": 2.6 if stream else 1.2,
        "tooltip": tooltip,
    }


def to_dot(root: NodeFunction, name: str = "hpvm") -> str:
    """The program under ``root`` as a Graphviz digraph (left to right), one cluster per internal node.

    Leaves are filled boxes; internal nodes are rounded clusters with ``rarrow`` port nodes;
    one-to-one edges are solid, all-to-all dashed with a double arrowhead, streaming edges
    and binds bold and magenta with a ``stream`` label, binds otherwise dotted grey; colours
    follow hints (cpu blue, gpu green, tensor orange, none grey).
    """
    writer = _DotWriter()
    writer.emit(0, f"digraph {quote(name)} {{")
    writer.emit(
        1, 'graph [rankdir="LR", newrank="true", fontname="Helvetica", fontsize="11", labeljust="l"];'
    )
    writer.emit(1, 'node [shape="box", style="filled", fontname="Helvetica", fontsize="10"];')
    writer.emit(1, 'edge [fontname="Helvetica", fontsize="9"];')
    writer.node(None, root, 1, ())
    writer.emit(0, "}")
    return "\n".join(writer.lines) + "\n"
