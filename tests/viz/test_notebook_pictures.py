"""Jupyter shows programs, lowered graphs, SVM machines and mappings, and HBIR tile maps
as pictures: each has ``_repr_svg_`` drawing what the CLI draws (``ir/pictures.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hpvm
from hpvm import hbir, svm
from programs import r_saxpy_1d
from streaming_programs import three_stages

EXAMPLES = Path(__file__).parents[2] / "examples"


def _is_svg(text: str | None) -> bool:
    return text is not None and "<svg" in text and text.rstrip().endswith("</svg>")


def test_a_program_and_its_lowered_graph_show_as_pictures():
    from hpvm.backends import get_backend
    from hpvm.passes import lower

    assert _is_svg(r_saxpy_1d._repr_svg_())
    lowered = lower(r_saxpy_1d, get_backend("interp").lowering)
    assert _is_svg(lowered._repr_svg_())


def test_an_svm_machine_and_a_mapping_show_as_pictures():
    from hpvm.runtime.svm_target import plan

    machine = svm.this_computer()
    assert _is_svg(machine._repr_svg_())
    _, mapping = plan(three_stages, machine, 4)
    assert _is_svg(mapping._repr_svg_())


def test_an_hbir_program_shows_its_tile_map():
    assert _is_svg(hbir.load(EXAMPLES / "hbir" / "vadd_group.hbir")._repr_svg_())


def test_a_program_that_cannot_be_drawn_falls_back_to_its_text_with_a_warning():
    @hpvm.leaf
    def one(x: hpvm.f32) -> hpvm.f32:
        return x

    @hpvm.internal
    def broken(x: hpvm.f32):
        hpvm.create_node(one, "not a size")  # tracing fails: there is no graph to draw

    with pytest.warns(UserWarning, match="no picture of 'broken'"):
        assert broken._repr_svg_() is None
