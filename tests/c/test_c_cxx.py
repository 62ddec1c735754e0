"""C++ host code as a C++ compiler takes it: iostreams, file and string streams,
``std::vector`` and ``std::string``, templates, virtual functions, ``new``/``delete``,
exceptions thrown and caught, static objects constructed before ``main`` and destroyed
after it — and a static object whose constructor starts the HPVM runtime. One program
(programs/host_features.cc), compiled once for the module; its output says what ran, in
order."""

from __future__ import annotations

import sys
from pathlib import Path

from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

from hpvm import c

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "host_features.cc"  # (a fixed path: zig's cache finds it)

RAN = [
    "construct first",
    "construct second",
    "session up",
    "runs 1",
    "caught trailing characters in 12x",
    "totals 120 6",
    "rect 6",
    "square 16",
    "scale=2.5",
]
ENDED = ["session down", "destroy second", "destroy first"]  # the reverse of construction


program = compiled_program(PROGRAM)


def test_cxx_host_code_runs_in_order(program, tmp_path, capfd):
    assert program.run([str(tmp_path / "scale.txt")]) == 0
    assert capfd.readouterr().out.splitlines() == [*RAN, "bad 0", *ENDED]
    assert (tmp_path / "scale.txt").read_text() == "scale 2.5\n"


def test_every_run_starts_afresh(program, tmp_path, capfd):
    """Globals are the program's initial ones in every run (``runs 1`` again), and the
    static objects are constructed and destroyed again."""
    for _ in range(2):
        assert program.run([str(tmp_path / "scale.txt")], target="interp") == 0
    assert capfd.readouterr().out.splitlines() == [*RAN, "bad 0", *ENDED] * 2


def test_an_exception_leaving_main(program, tmp_path, capfd):
    """C++ would call std::terminate; here run raises, after the static objects' destructors."""
    with fails(c.HPVMCError, "uncaught C++ exception std::runtime_error: asked to throw", str(PROGRAM)):
        program.run([str(tmp_path / "scale.txt"), "throw"], target="interp")
    assert capfd.readouterr().out.splitlines() == [*RAN, *ENDED]


def test_the_graph_of_a_cxx_program(program):
    """The node functions of a file full of host C++ (vtables, static constructors, string
    tables naming host functions) import as HPVM-C's graph, with their C++ names."""
    root = program.roots[0]
    assert root.name == "scale_root" and [n.function.name for n in root.graph.nodes] == ["scale_leaf"]
