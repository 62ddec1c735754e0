"""The ``layouts=`` keyword of ``@hpvm.leaf`` and ``@hpvm.internal`` (docs/layouts.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hpvm
from hpvm import Layout, VerificationError
from hpvm.ir.printer import print_program
from markers import SourceMarkers, fails

MARKS = SourceMarkers(__file__)
at = MARKS.at


@hpvm.leaf(ins=("a",), outs=("b",), layouts={"a": Layout.chunked(2), "b": "block"})
def double(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = 2 * a[i]


@hpvm.internal(ins=("a",), outs=("b",), layouts={"a": "strided, axes(0)"})
def root(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(double, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_layouts_reach_the_parameters() -> None:
    assert [p.layout for p in double.params] == [Layout.chunked(2), Layout.block()]
    assert [p.layout for p in root.params] == [Layout.strided(axes=(0,)), None, None]
    assert str(double.params[0]) == "a: f32[:] layout(chunked(2))"
    text = print_program(root)
    assert "leaf @double(a: f32[:] layout(chunked(2)), b: f32[:] layout(block)) -> ()" in text
    assert "internal @root(a: f32[:] layout(strided, axes(0)), b: f32[:], n: i64)" in text
    hpvm.verify(root)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_back_ends_that_ignore_layouts_run_unchanged(target: str) -> None:
    a = np.arange(6, dtype=np.float32)
    b = np.zeros(6, dtype=np.float32)
    hpvm.init()
    try:
        for array in (a, b):
            hpvm.track_memory(array)
        hpvm.wait(hpvm.launch(root, (a, b, 6), target=target))
        hpvm.request_memory(b)
    finally:
        hpvm.cleanup()
    assert b.tolist() == (2 * a).tolist()


def _declare(kind: str, layouts: Any) -> None:
    decorator = hpvm.leaf(ins=("a",), layouts=layouts) if kind == "leaf" else hpvm.internal(layouts=layouts)

    def laid_out(a: hpvm.f32[:], n: hpvm.i64) -> None:  # @laid-out
        pass

    decorator(laid_out)


def _where(kind: str) -> str:
    return f"{kind} 'laid_out' ({at('laid-out')})"


@pytest.mark.parametrize("kind", ["leaf", "internal"])
def test_a_layout_for_a_name_that_is_not_a_parameter(kind: str) -> None:
    with fails(
        VerificationError, f"{_where(kind)}: layouts names 'c', which is not a parameter (parameters: a, n)"
    ):
        _declare(kind, {"a": Layout.block(), "c": Layout.block()})


@pytest.mark.parametrize("kind", ["leaf", "internal"])
@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        (
            42,
            [
                "the layout of parameter 'a' is 42; give an hpvm.Layout",
                "or its text, e.g. 'chunked(4)'",
            ],
        ),
        (
            "chunky(4)",
            [
                "the layout 'chunky(4)' of parameter 'a' does not parse (column 1: unknown layout "
                "'chunky'; did you mean chunked?)",
            ],
        ),
        ("block axes(0)", ["the layout 'block axes(0)' of parameter 'a' does not parse (column 7: "]),
    ],
)
def test_a_bad_layout_value(kind: str, value: Any, fragments: list[str]) -> None:
    with fails(
        VerificationError, *(f"{_where(kind)}: {f}" if i == 0 else f for i, f in enumerate(fragments))
    ):
        _declare(kind, {"a": value})


@pytest.mark.parametrize("kind", ["leaf", "internal"])
def test_layouts_must_be_a_mapping(kind: str) -> None:
    with fails(VerificationError, f"{_where(kind)}: layouts maps parameter names to layouts"):
        _declare(kind, [Layout.block()])


def test_the_verifier_judges_a_layout_given_by_the_decorator() -> None:
    with fails(VerificationError, f"{_where('leaf')}: parameter 'n' (i64) has layout(strided)"):
        _declare("leaf", {"n": "strided"})
