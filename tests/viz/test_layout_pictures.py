"""Pictures show data layouts: an internal node's input port says its parameter's layout, a
leaf lists the layouts of its parameters under its name (DOT and the pure-Python layout)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import hpvm
from hpvm import Layout
from hpvm.cli import main
from hpvm.ir.graph import InternalFunction
from hpvm.viz import to_dot
from hpvm.viz.dot import quote
from hpvm.viz.layout import FONT, SMALL, layout, text_width


@hpvm.leaf(ins=("a",), outs=("b",), layouts={"a": Layout.chunked(4, axes=(0,)), "b": Layout.block()})
def tile(a: hpvm.f32[:, :], b: hpvm.f32[:, :], k: hpvm.f32) -> None:
    pass


@hpvm.internal(ins=("a",), outs=("b",), layouts={"a": "strided, axes(_, 1)", "b": Layout.replicated()})
def grid(a: hpvm.f32[:, :], b: hpvm.f32[:, :], k: hpvm.f32, n: hpvm.i64):
    node = hpvm.create_node_2d(tile, n, n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.internal()
def top(a: hpvm.f32[:, :], b: hpvm.f32[:, :], k: hpvm.f32, n: hpvm.i64):
    node = hpvm.create_node_2d(grid, 2, 2)
    for port in range(4):
        hpvm.bind_in(node, port, port)


def expected_port_labels(fn: InternalFunction) -> list[str]:
    return [f"{i} {p.name}" + (f" · {p.layout}" if p.layout else "") for i, p in enumerate(fn.params)]


def test_program_is_valid() -> None:
    hpvm.verify(top)


def test_dot_labels_show_layouts() -> None:
    text = to_dot(top)
    for label in expected_port_labels(grid):
        assert f"label={quote(label)}" in text
    assert "0 a · strided, axes(_, 1)" in expected_port_labels(grid)
    leaf_lines = [f"{p.name} · {p.layout}" for p in tile.params if p.layout is not None]
    assert len(leaf_lines) == 2
    assert quote("\n".join(["tile [n, n]", "leaf tile", *leaf_lines])) in text
    assert "k · " not in text  # parameters without a layout add nothing


def test_python_layout_boxes_show_layouts_and_fit_them() -> None:
    scene = layout(top)
    leaf = next(b for b in scene.boxes() if b.kind == "leaf")
    assert leaf.lines[2:] == ["a · chunked(4), axes(0)", "b · block"]
    assert leaf.w >= max(text_width(t, SMALL) for t in leaf.lines[1:])
    assert leaf.h >= FONT + SMALL * (len(leaf.lines) - 1)
    cluster = next(b for b in scene.boxes() if b.kind == "cluster" and b.lines[0].startswith("grid"))
    ports = [box.lines[0] for _, box in sorted(cluster.inputs.items())]
    assert ports == expected_port_labels(grid)
    assert all(box.w >= text_width(box.lines[0], SMALL) for box in cluster.inputs.values())


def test_hpvm_show_draws_the_layouts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "laid_out.py"
    source.write_text(
        textwrap.dedent(
            """
            import hpvm

            @hpvm.leaf(ins=("a",), layouts={"a": "chunked(8)"})
            def part(a: hpvm.f32[:]) -> None:
                pass

            @hpvm.internal(layouts={"a": hpvm.Layout.block()})
            def root(a: hpvm.f32[:], n: hpvm.i64):
                node = hpvm.create_node_1d(part, n)
                hpvm.bind_in(node, 0, 0)
            """
        )
    )
    assert main(["show", str(source)]) == 0
    out = capsys.readouterr().out
    assert quote("part [n]\nleaf part\na · chunked(8)") in out
    assert quote("0 a · block") in out
    svg = tmp_path / "laid_out.svg"
    assert main(["show", str(source), "-o", str(svg), "--engine", "python"]) == 0
    assert svg.stat().st_size > 0
