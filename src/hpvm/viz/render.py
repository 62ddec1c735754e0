"""Write a picture of a program to SVG, PNG or PDF, with Graphviz or with matplotlib alone.

Graphviz draws the best pictures but is a system package that many machines (CI among
them) lack, so ``render`` falls back to the pure-Python layout of ``layout.py`` drawn with
matplotlib. Matplotlib is imported only here, when a picture is drawn, and through
``matplotlib.figure.Figure`` (whose ``savefig`` picks the Agg / SVG / PDF canvas for the
format): the global backend a user may have chosen is never switched.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailableError, HPVMError
from ..ir.graph import NodeFunction
from .dot import BIND_COLOR, EDGE_COLOR, STREAM_COLOR, cluster_fill, hint_colors, to_dot
from .layout import FONT, LINE, PAD, SMALL, Box, Link, Scene, layout, text_width

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FORMATS = ("svg", "png", "pdf")
ENGINES = ("python", "dot")
MONO = "DejaVu Sans Mono"  # ships with matplotlib; layout.py measures text for it
MAX_PIXELS = 16000  # longest side of a PNG; larger pictures get a lower resolution
HEAD = 7.0  # arrowhead length, points
LEGEND_ROW = 20.0  # height of a row of the legend under the picture
LEGEND_MIN_W = 420.0  # a narrow picture is widened to this, so the legend stays short
PORT_FONT = 7.0  # port numbers at the ends of binds


def graphviz_available() -> bool:
    """Whether Graphviz's ``dot`` executable is on ``PATH``."""
    return shutil.which("dot") is not None


def render(
    root: NodeFunction,
    path: str | Path,
    fmt: str | None = None,
    engine: str | None = None,
    dpi: float = 144.0,
) -> Path:
    """Draw the program under ``root`` into ``path`` and return the path.

    ``fmt`` is ``"svg"``, ``"png"`` or ``"pdf"`` (default: the file's suffix). ``engine``
    ``"dot"`` uses Graphviz on :func:`hpvm.viz.to_dot`'s output, ``"python"`` the built-in
    layout drawn with matplotlib, ``None`` Graphviz when it is installed and Python otherwise.
    ``dpi`` applies to PNG only.
    """
    path = Path(path)
    fmt = _format(path, fmt)
    if engine not in (None, *ENGINES):
        raise HPVMError(f"unknown picture engine {engine!r}; use 'python', 'dot' or None (pick one)")
    if engine == "dot" or (engine is None and graphviz_available()):
        _render_dot(root, path, fmt)
    else:
        draw(layout(root), path, fmt, dpi, title=f"hpvm program {root.name}")
    return path


def _format(path: Path, fmt: str | None) -> str:
    chosen = (fmt or path.suffix.lstrip(".")).lower()
    if chosen not in FORMATS:
        what = f"format {fmt!r}" if fmt else f"file name {str(path)!r}"
        raise HPVMError(f"cannot draw a picture for {what}; use a .svg, .png or .pdf file (or fmt=...)")
    return chosen


def _render_dot(root: NodeFunction, path: Path, fmt: str) -> None:
    exe = shutil.which("dot")
    if exe is None:
        raise BackendUnavailableError(
            "Graphviz is not installed (no 'dot' executable on PATH); install Graphviz, or use "
            'engine="python" for the built-in renderer, which needs no system packages'
        )
    done = subprocess.run(
        [exe, f"-T{fmt}", "-o", str(path)], input=to_dot(root).encode(), capture_output=True
    )
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise HPVMError(f'Graphviz failed to draw {path}: {message}; engine="python" may work')


# ---------------------------------------------------------------------------------------
# Drawing a laid-out scene with matplotlib


def draw(scene: Scene, path: str | Path, fmt: str, dpi: float = 144.0, title: str = "hpvm program") -> None:
    """Draw ``scene`` (from :func:`hpvm.viz.layout.layout`) into ``path`` as ``fmt``."""
    from matplotlib.figure import Figure

    width = max(scene.width, LEGEND_MIN_W)
    rows = _legend_rows(width - 2 * PAD)
    height = scene.height + len(rows) * LEGEND_ROW + PAD
    fig = Figure(figsize=(width / 72.0, height / 72.0), facecolor="white")
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0.0, width)
    ax.set_ylim(height, 0.0)  # one data unit is one point, y grows downwards like the layout
    ax.set_axis_off()
    for box in scene.boxes():
        _draw_box(ax, box)
    for link in scene.links:
        _draw_link(ax, link)
    _legend(ax, PAD, scene.height, rows)
    if fmt == "png":
        dpi = min(dpi, MAX_PIXELS * 72.0 / max(width, height))
    metadata: dict[str, Any] = {"Title": title}
    if fmt == "svg":
        metadata["Date"] = None  # reproducible files
    fig.savefig(str(path), format=fmt, dpi=dpi, facecolor="white", metadata=metadata)


def _text(ax: Axes, x: float, y: float, text: str, size: float, **kw: Any) -> None:
    ax.text(x, y, text, fontsize=size, family=MONO, zorder=kw.pop("zorder", 50), **kw)


def _draw_box(ax: Axes, box: Box) -> None:
    from matplotlib.patches import FancyBboxPatch, Polygon, Rectangle

    stroke, fill = hint_colors(box.hint)
    z = 1.0 + 0.01 * box.depth  # deeper frames over shallower ones, all under the arrows (30)
    if box.kind == "cluster":
        ax.add_patch(
            FancyBboxPatch(
                (box.x, box.y),
                box.w,
                box.h,
                boxstyle="round,pad=0,rounding_size=9",
                facecolor=cluster_fill(box.hint, box.depth),
                edgecolor=stroke,
                linewidth=1.4,
                zorder=z,
            )
        )
        _text(ax, box.x + PAD, box.y + 5.0, box.lines[0], FONT, weight="bold", va="top")
        _text(
            ax,
            box.x + PAD,
            box.y + 5.0 + FONT * LINE,
            box.lines[1],
            SMALL,
            color=stroke,
            va="top",
        )
    elif box.kind == "leaf":
        style = "--" if box.recursive else "-"
        ax.add_patch(
            Rectangle(
                (box.x, box.y),
                box.w,
                box.h,
                facecolor=fill,
                edgecolor=stroke,
                linewidth=1.3,
                linestyle=style,
                zorder=40,
            )
        )
        cx, y = box.x + box.w / 2, box.y + box.h / 2 - (FONT * LINE + SMALL * LINE * (len(box.lines) - 1)) / 2
        _text(ax, cx, y, box.lines[0], FONT, weight="bold", ha="center", va="top")
        for k, line in enumerate(box.lines[1:]):
            _text(
                ax,
                cx,
                y + FONT * LINE + k * SMALL * LINE,
                line,
                SMALL,
                color="#444444",
                ha="center",
                va="top",
            )
    elif box.kind in ("in", "out"):
        tip = 7.0
        corners = [
            (box.x, box.y),
            (box.right - tip, box.y),
            (box.right, box.y + box.h / 2),
            (box.right - tip, box.bottom),
            (box.x, box.bottom),
        ]
        ax.add_patch(
            Polygon(corners, closed=True, facecolor="white", edgecolor=stroke, linewidth=1.0, zorder=40)
        )
        _text(ax, box.x + 5.0, box.y + box.h / 2, box.lines[0], SMALL, va="center", color="#222222")


def _style(kind: str, stream: bool) -> dict[str, Any]:
    """Line style of an arrow: all-to-all dashed, binds dotted grey, streams bold magenta."""
    color = STREAM_COLOR if stream else BIND_COLOR if kind == "bind" else EDGE_COLOR
    dashes: Any = {"all-to-all": (0, (5.0, 3.0)), "bind": (0, (1.2, 2.2))}.get(kind, "-")
    if stream and kind == "bind":
        dashes = "-"  # a streaming bind is bold and magenta like a streaming edge
    return {"color": color, "linestyle": dashes, "linewidth": 2.6 if stream else 1.2}


def _draw_link(ax: Axes, link: Link) -> None:
    from matplotlib.patches import PathPatch, Polygon
    from matplotlib.path import Path as MPath

    style = _style(link.kind, link.stream)
    pts = list(link.points)
    heads = 2 if link.kind == "all-to-all" else 1
    x1, y1 = pts[-1]
    pts[-1] = (x1 - HEAD * heads + 1.0, y1)  # the line stops at the arrowhead's base
    verts: list[tuple[float, float]] = [pts[0]]
    codes = [MPath.MOVETO]
    for k in range(1, len(pts)):
        (xa, ya), (xb, yb) = pts[k - 1], pts[k]
        if k % 2 == 1:  # across a gap: an S-curve with horizontal ends
            mx = (xa + xb) / 2
            verts += [(mx, ya), (mx, yb), (xb, yb)]
            codes += [MPath.CURVE4] * 3
        else:  # through a column, in the slot reserved for this arrow
            verts.append((xb, yb))
            codes.append(MPath.LINETO)
    ax.add_patch(PathPatch(MPath(verts, codes), fill=False, capstyle="butt", zorder=30, **style))
    half = HEAD * 0.5 + (1.0 if link.stream else 0.0)
    for k in range(heads):
        tip = x1 - k * HEAD
        head = [(tip, y1), (tip - HEAD, y1 - half), (tip - HEAD, y1 + half)]
        ax.add_patch(Polygon(head, closed=True, facecolor=style["color"], edgecolor="none", zorder=31))
    if link.label:
        bbox = {"boxstyle": "round,pad=0.12", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
        _text(
            ax, *link.label_at, link.label, SMALL, color=style["color"], ha="center", va="center", bbox=bbox
        )
    if link.head:  # a bind's port number where it meets a leaf
        _text(
            ax,
            x1 - HEAD * heads - 1.5,
            y1 - 1.5,
            link.head,
            PORT_FONT,
            color=style["color"],
            ha="right",
            va="bottom",
        )
    if link.tail:
        x0, y0 = link.points[0]
        _text(ax, x0 + 2.0, y0 - 1.5, link.tail, PORT_FONT, color=style["color"], ha="left", va="bottom")


_LEGEND: list[tuple[str, str, Any]] = [
    ("line", "one-to-one", ("one-to-one", False)),
    ("line", "all-to-all", ("all-to-all", False)),
    ("line", "stream", ("one-to-one", True)),
    ("line", "bind", ("bind", False)),
    *(("swatch", hint or "no hint", hint) for hint in ("cpu", "gpu", "tensor", None)),
    ("note", "box: leaf", None),
    ("note", "rounded frame: internal node", None),
    ("note", "▷: port", None),
    ("note", "a→b: output a to input b", None),
]
_SAMPLE = {"line": 30.0, "swatch": 20.0, "note": 0.0}  # room before an item's text


def _legend_rows(width: float) -> list[list[tuple[float, tuple[str, str, Any]]]]:
    """The legend's items flowed into rows no wider than ``width``: (x offset, item)."""
    rows: list[list[tuple[float, tuple[str, str, Any]]]] = [[]]
    x = 0.0
    for item in _LEGEND:
        w = _SAMPLE[item[0]] + text_width(item[1], SMALL)
        if rows[-1] and x + w > width:
            rows.append([])
            x = 0.0
        rows[-1].append((x, item))
        x += w + 16.0
    return rows


def _legend(ax: Axes, x0: float, y0: float, rows: list[list[tuple[float, tuple[str, str, Any]]]]) -> None:
    """Draw the legend rows with their top-left corner at (x0, y0)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    for r, row in enumerate(rows):
        mid = y0 + (r + 0.5) * LEGEND_ROW
        for dx, (kind, label, arg) in row:
            x = x0 + dx
            if kind == "line":
                ax.add_line(Line2D([x, x + 26.0], [mid, mid], zorder=30, **_style(*arg)))
            elif kind == "swatch":
                stroke, fill = hint_colors(arg)
                ax.add_patch(
                    Rectangle((x, mid - 6.0), 16.0, 12.0, facecolor=fill, edgecolor=stroke, zorder=30)
                )
            color = "#555555" if kind == "note" else "#222222"
            _text(ax, x + _SAMPLE[kind], mid, label, SMALL, va="center", color=color)
