"""Errors found on the ``cpu`` back end in a generated HBIR leaf name the ``.hbir`` line of
the statement, also deep inside a block, after statements that generate several lines each
(the CloneLeaves pass clones a generated body; its clone's lines are lines of the generated
text, which messages map back through the leaf's source map)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import hpvm
from hpvm import hbir
from hpvm.ir.pysource import generated_body
from running import interp_leaves_from, runs_from_its_ir

HEAD = """\
target { memory g { size 1G; width 8B; }; tile t[2][3]; }
config { group tg[2][3] { tile target.t[x][y]; }; }
data { n = 4; in A : int[n] { } out C : int[n] { } }
code {
"""
BLOCK = """config.tg[x][y] {
    int s = 0;
    for (int i in iterator<n, strided, x, y>) {
        s += A[i];
    }
    printf("%d %d\\n", x, s);
    C[x] = s;
    LAST;
}
}
"""


def _text(last: str) -> str:
    return HEAD + BLOCK.replace("LAST", last)


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_an_index_past_the_end_names_its_line_deep_in_the_block(target: str) -> None:
    text = _text("C[y] = A[x + 5]")
    with pytest.raises(hpvm.HPVMError) as info:
        hbir.parse(text, "p.hbir").run({"A": np.arange(4)}, target=target)
    assert f"p.hbir:{_line(text, 'A[x + 5]')}" in str(info.value), str(info.value)


def test_a_cpu_compile_error_in_a_generated_leaf_names_its_hbir_line() -> None:
    """HBIR's checker leaves Numba nothing to refuse, so the generated text is edited: the
    statement of the last line becomes one Numba cannot type (a name bound to a string),
    keeping the source map, and the cpu back end must still name that .hbir line."""
    text = _text("C[y] = x + 1")
    program = hbir.parse(text, "p.hbir")
    leaf = program.to_hpvm().graph.nodes[0].function
    source = leaf.source.replace("(tg__x + 1)", "(tg__x + hbir_text)")
    assert source != leaf.source
    body = leaf.body
    leaf.body = generated_body(leaf.name, source, body.origin, body.lines, namespace={"hbir_text": "1"})
    with pytest.raises(hpvm.CompileError) as info:
        program.run({"A": np.arange(4)}, target="cpu")
    message = str(info.value)
    assert f"leaf 'tg_0' (p.hbir:{_line(text, 'C[y] = x + 1')})" in message, message
    assert "hbir_text" in message


def test_the_opencl_translator_makes_a_local_array_a_private_array() -> None:
    """A local array is ``np.zeros`` of a constant shape, which the OpenCL translator turns
    into a work-item's ``__private`` array (docs/hbir.md, local arrays)."""
    from hpvm.backends.opencl.show import kernels_text

    text = _text("int tmp[4] = {1, 2}; C[y] = tmp[1]")
    kernels, errors = kernels_text(hbir.parse(text, "p.hbir").to_hpvm())
    assert errors == []
    assert "int tmp__priv[4];" in kernels


@pytest.mark.parametrize(
    "last, fragment",
    [("C[y] = A[x + 5]", "A[x + 5]"), ("C[0] = s", "C[x] = s")],  # the race: tiles of one x
)
def test_interp_runs_a_generated_leaf_from_its_ir_as_from_its_syntax_tree(last: str, fragment: str) -> None:
    """The interpreter runs a generated leaf from its leaf IR, at the generated text's lines
    (the IR's are the ``.hbir`` file's: ``GeneratedBody.generated_line``), so an index past
    the end and a data race name the same ``.hbir`` line both ways."""
    text = _text(last)
    program = hbir.parse(text, "p.hbir")
    assert all(runs_from_its_ir(node.function) for node in program.to_hpvm().graph.nodes)
    outcomes = []
    for from_ir in (True, False):
        with interp_leaves_from(from_ir):
            try:
                outcomes.append(
                    program.run({"A": np.arange(4)}, target="interp", out=io.StringIO())["C"].tolist()
                )
            except hpvm.HPVMError as e:
                outcomes.append((type(e).__name__, str(e)))
    assert outcomes[0] == outcomes[1]
    assert f"p.hbir:{_line(text, fragment)}" in outcomes[0][1], outcomes[0]
