"""Every HPVM-C example, run end to end on hpvm's cpu back end (LLVM leaves): each main
checks its result against a C reference loop and returns nonzero on a mismatch; here the
output is checked too, and vector add against NumPy."""

from __future__ import annotations

import pytest

import hpvm
from conftest import EXAMPLES, needs_clang, needs_llvm_leaves
from hpvm import c
from hpvm.cli import main as cli

pytestmark = [needs_clang, needs_llvm_leaves]


@pytest.fixture(autouse=True)
def _clean_runtime():
    yield
    hpvm.cleanup()


@pytest.mark.parametrize(
    ("name", "argv", "printed"),
    [
        ("vector_add.c", ["1000"], "vector_add: 1000 elements, 0 wrong"),
        ("vector_add.cpp", [], "vector_add (C++): 0 wrong"),
        ("two_level.c", [], "two_level: 0 wrong, out.bytes_y=16384"),
        ("sgemm.c", ["32", "24", "20"], "sgemm 32x24x20: 0 wrong"),
        ("stencil.c", [], "stencil 12x10x8: 0 wrong"),
        ("pipeline.c", [], "frame 5: 1248 (want 1248)"),
        ("histogram.c", [], "histogram: 5000 elements counted, 0 wrong"),
    ],
)
def test_example_runs_and_checks_itself(name, argv, printed, capfd):
    assert c.compile(EXAMPLES / name).run(argv) == 0
    assert printed in capfd.readouterr().out


def test_vector_add_against_numpy(write_c, capfd):
    source = (
        (EXAMPLES / "vector_add.c")
        .read_text()
        .replace(
            'printf("vector_add: %zu elements, %d wrong\\n", n, bad);',
            'for (size_t i = 0; i < n; i++) printf("%.1f\\n", c[i]);',
        )
    )
    assert c.compile(write_c(source)).run(["50"]) == 0
    got = [float(x) for x in capfd.readouterr().out.split()]
    i = list(range(50))
    assert got == [float(k) + 2.0 * k + 1.0 for k in i]


def test_cli_run_passes_arguments_and_exit_code(capfd):
    assert cli(["c", "run", str(EXAMPLES / "vector_add.c"), "--", "64"]) == 0
    assert "vector_add: 64 elements, 0 wrong" in capfd.readouterr().out
