"""Looking at a program file never runs it (ir/moduletext.py): parsing, loading, verifying,
printing and saving a program leave its Python alone; launching it runs it.

Every body here announces that it ran: its module-level code appends to ``RUNS`` of the
module ``hpvm_test_runs`` (the ``runs`` fixture), so a test sees exactly which code ran.
"""

from __future__ import annotations

import pickle
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
import hpvm.tensor
from hpvm.errors import ParseError, VerificationError
from hpvm.ir.graph import InternalFunction, LeafFunction, functions, materialize
from hpvm.ir.moduletext import ModuleText, StaticDef
from hpvm.ir.parser import parse_program
from hpvm.ir.printer import print_program
from hpvm.ir.program_file import load_program, save_program
from markers import fails

RAN = '__import__("hpvm_test_runs").RUNS.append({!r})'


@pytest.fixture
def runs() -> list[str]:
    """The list each body's module-level code appends its name to when it runs."""
    module = types.ModuleType("hpvm_test_runs")
    module.RUNS = []  # type: ignore[attr-defined]
    sys.modules["hpvm_test_runs"] = module
    yield module.RUNS  # type: ignore[misc]
    del sys.modules["hpvm_test_runs"]


def _bodies(lines: str) -> str:
    """Code lines as a body block: each behind ``  | ``."""
    return "\n".join(f"  | {line}".rstrip() for line in textwrap.dedent(lines).strip("\n").split("\n"))


DOUBLE = f"""
import hpvm
{RAN.format("double")}


def double(x):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    x[i] = x[i] * 2
"""
SHIFT = f"""
import hpvm
{RAN.format("shift")}
def shift(y):
    y[hpvm.get_node_instance_id_x(hpvm.get_node())] += 1
"""
PROGRAM = f"""\
# hpvm IR v1
leaf @double(x: f32[:]) -> () ins(x) outs(x) python {{
{_bodies(DOUBLE)}
}}
leaf @shift(y: f32[:]) -> () ins(y) outs(y) generated "shift.src" lines(1, 2, 3, 4) {{
{_bodies(SHIFT)}
}}
internal @root(x: f32[:], y: f32[:], n: i64) ins(x, y) outs(x, y) {{
  %double = node @double[n]
  %shift = node @shift[n]
  bind in 0 -> %double.0
  bind in 1 -> %shift.0
}}
"""


def _launch(root: InternalFunction, n: int = 4) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32)
    hpvm.init()
    try:
        hpvm.track_memory(x)
        hpvm.track_memory(y)
        hpvm.wait(hpvm.launch(root, (x, y, n), target="interp"))
        return hpvm.request_memory(x), hpvm.request_memory(y)
    finally:
        hpvm.cleanup()


def _leaves(root: InternalFunction) -> list[LeafFunction]:
    return [f for f in functions(root) if isinstance(f, LeafFunction)]


# ---------------------------------------------------------------------------------------
# Parsing, verifying, printing: nothing runs; launching runs each body once


def test_parsing_verifying_and_printing_run_no_body(runs: list[str]) -> None:
    root = parse_program(PROGRAM, "prog.hpvm")
    hpvm.verify(root)
    assert print_program(root, bodies=True) == PROGRAM
    assert [leaf.source for leaf in _leaves(root)]  # the def of each body, read from the text
    assert all(leaf.pending_code is not None for leaf in _leaves(root))
    assert runs == []
    x, y = _launch(root)
    assert sorted(runs) == ["double", "shift"]
    np.testing.assert_array_equal(x, [0, 2, 4, 6])
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
    _launch(root)
    assert sorted(runs) == ["double", "shift"]  # once: a body runs when first needed
    assert print_program(root, bodies=True) == PROGRAM  # the text it was read from, still


def test_a_loaded_program_runs_no_section_until_it_runs(runs: list[str], tmp_path: Path) -> None:
    path = tmp_path / "prog.hpvm"
    host = f"import hpvm\n{RAN.format('host')}\n\n\ndef main(root, target):\n    return 'hosted'\n"
    save_program(parse_program(PROGRAM, "prog.hpvm"), path, host=host)
    text = path.read_text()
    path.write_text(text.replace("%%python host\n", "%%python host\n" + RAN.format("host line 1") + "\n"))
    loaded = load_program(path)
    hpvm.verify(loaded.root)
    again = tmp_path / "again.hpvm"
    save_program(loaded.root, again, host=loaded.host)  # saving writes the sections as read
    assert again.read_text() == path.read_text()
    assert loaded.host is not None and loaded.host.__name__ == "main"
    assert runs == []
    assert loaded.host(loaded.root, "interp") == "hosted"
    assert runs == ["host line 1", "host"]
    _launch(loaded.root)
    assert sorted(runs) == ["double", "host", "host line 1", "shift"]


def test_a_python_section_is_compiled_not_run(runs: list[str], tmp_path: Path) -> None:
    path = tmp_path / "section.hpvm"
    path.write_text(
        "%%hpvm\nleaf @inc(x: f32[:]) -> () ins(x) outs(x)\n"
        "internal @root(x: f32[:], y: f32[:], n: i64) ins(x) outs(x) {\n"
        "  %inc = node @inc[n]\n  bind in 0 -> %inc.0\n}\n"
        f"%%python leaf @inc\nimport hpvm\n{RAN.format('inc')}\n\n\n"
        "def inc(x):\n    x[hpvm.get_node_instance_id_x(hpvm.get_node())] += 1\n"
    )
    loaded = load_program(path)
    leaf = loaded.leaves["@inc"]
    assert leaf.location.line == 12 and leaf.source_line == 12 and leaf.code_file == str(path)
    hpvm.verify(loaded.root)
    assert runs == []
    x, _ = _launch(loaded.root)
    assert runs == ["inc"] and list(x) == [1, 2, 3, 4]


# ---------------------------------------------------------------------------------------
# What the verifier checks before the code runs, from the text alone


def _one_leaf(code: str, file: str = "leaf.hpvm") -> InternalFunction:
    """A root with one node of leaf @k(x: f32[:]), whose python body is ``code`` (its first
    line is line 2 of ``file``: ``line_in`` finds a marked one)."""
    text = (
        f"leaf @k(x: f32[:]) -> () ins(x) outs(x) python {{\n{_bodies(code)}\n}}\n"
        "internal @root(x: f32[:]) ins(x) outs(x) {\n  %k = node @k\n  bind in 0 -> %k.0\n}\n"
    )
    return parse_program(text, file)


def line_in(code: str, marker: str) -> int:
    """The line of ``_one_leaf(code)``'s file that ends with ``# @marker``."""
    lines = textwrap.dedent(code).strip("\n").split("\n")
    return 2 + next(i for i, line in enumerate(lines) if line.endswith(f"# @{marker}"))


def test_intrinsics_imported_from_hpvm_are_checked_before_running(runs: list[str]) -> None:
    code = f"""
        from hpvm import barrier as sync, get_node
        import hpvm.tensor as T
        {RAN.format("k")}


        def k(x):
            v = sync()  # @sync
            hpvm_node = get_node()
        """
    line = line_in(code, "sync")
    with fails(
        VerificationError, f"leaf 'k' (leaf.hpvm:{line}): hpvm.barrier() must be a statement of its own"
    ):
        hpvm.verify(_one_leaf(code))
    assert runs == []


def test_helpers_in_the_same_text_are_followed_from_their_syntax_tree(runs: list[str]) -> None:
    code = f"""
        import hpvm
        {RAN.format("k")}


        def wait_for_all():  # @wait_def
            hpvm.barrier()  # @barrier


        def step(x):  # @step_def
            wait_for_all()  # @wait_call


        def k(x):
            step(x)  # @step_call
        """
    with pytest.raises(VerificationError) as info:
        hpvm.verify(_one_leaf(code))
    message = str(info.value)
    at = {m: line_in(code, m) for m in ("wait_def", "barrier", "step_def", "wait_call", "step_call")}
    assert (
        f"leaf 'k' (leaf.hpvm:{at['step_call']}) calls helper 'step' (leaf.hpvm:{at['step_def']})" in message
    )
    assert f"which calls 'wait_for_all' (leaf.hpvm:{at['wait_def']}) at line {at['wait_call']}" in message
    assert f"which calls hpvm.barrier() at leaf.hpvm:{at['barrier']}" in message
    assert runs == []


def test_a_def_of_the_text_named_like_an_intrinsic_is_not_one(runs: list[str]) -> None:
    root = _one_leaf("def barrier():\n    return 1\n\n\ndef k(x):\n    x[0] = barrier()\n")
    hpvm.verify(root)  # was: "hpvm.barrier() must be a statement of its own"
    _ = root.graph.nodes[0].function.pyfunc
    hpvm.verify(root)


def test_launch_verifies_again_once_the_code_ran(runs: list[str]) -> None:
    """A name bound other than by an import of hpvm is unknown before the code runs: the
    check that needs it is skipped by a look-only verify, and made at launch."""
    code = f"""
        import hpvm
        {RAN.format("k")}
        h = hpvm


        def k(x):
            h.create_node(None)  # @create
        """
    root = _one_leaf(code)
    hpvm.verify(root)  # h is unknown here
    assert runs == []
    x = np.zeros(2, np.float32)
    hpvm.init()
    try:
        hpvm.track_memory(x)
        with fails(
            VerificationError, f"leaf 'k' (leaf.hpvm:{line_in(code, 'create')}) calls hpvm.create_node()"
        ):
            hpvm.launch(root, (x,), target="interp")
    finally:
        hpvm.cleanup()
    assert runs == ["k"]
    with fails(VerificationError, "calls hpvm.create_node()"):
        hpvm.verify(root)  # and from now on, looking sees the names the code bound


# ---------------------------------------------------------------------------------------
# Mistakes: in the text, at load; in running it, at launch


def test_a_def_that_does_not_take_the_ports_is_found_from_the_syntax_tree(runs: list[str]) -> None:
    with fails(ParseError, "the def of leaf @k takes (x, *more, flag) but the IR declares (x)") as info:
        _one_leaf(f"{RAN.format('k')}\ndef k(x, *more, flag=1):\n    pass\n")
    assert info.value.line == 3 and runs == []


def test_module_code_that_raises_is_a_parse_error_at_launch(runs: list[str]) -> None:
    root = _one_leaf(f"{RAN.format('k')}\nLIMIT = 1 // 0\n\ndef k(x):\n    pass\n")
    hpvm.verify(root)
    x = np.zeros(2, np.float32)
    hpvm.init()
    try:
        hpvm.track_memory(x)
        with fails(ParseError, "leaf.hpvm:3:1: running the code of leaf @k raised ZeroDivisionError"):
            hpvm.launch(root, (x,), target="interp")
    finally:
        hpvm.cleanup()
    assert runs == ["k"]


def test_a_last_def_rebound_to_something_else_is_a_parse_error_when_it_runs(runs: list[str]) -> None:
    root = _one_leaf("def k(x):\n    pass\n\n\nk = 42\n")
    with fails(ParseError, "leaf.hpvm:2:1: the last def of leaf @k, 'k', is not a plain function"):
        materialize(root)


def test_generated_code_that_raises_names_the_line_of_the_text(runs: list[str]) -> None:
    text = PROGRAM.replace(RAN.format("shift"), "1 // 0")
    root = parse_program(text, "prog.hpvm")
    line = text.split("\n").index("  | 1 // 0") + 1
    with fails(ParseError, f"prog.hpvm:{line}:1: running the code of leaf 'shift' raised ZeroDivisionError"):
        materialize(root)
    assert runs == ["double"]


def test_syntax_errors_are_still_found_at_load(runs: list[str]) -> None:
    with fails(ParseError, "invalid Python in the code of leaf @k") as info:
        _one_leaf(f"{RAN.format('k')}\ndef k(x):\n    return x +\n")
    assert info.value.line == 4


def test_an_unrun_module_text_pickles_and_runs_after(runs: list[str]) -> None:
    text = ModuleText(f"{RAN.format('m')}\ndef main(a):\n    return a + 1\n", 10, "m.hpvm", "the host")
    copy = pickle.loads(pickle.dumps(text))
    assert runs == [] and not copy.ran
    assert copy(1) == 2 and runs == ["m"] and copy.function().__code__.co_firstlineno == 11


# ---------------------------------------------------------------------------------------
# Static names: what a text binds without running it


def _static(code: str) -> dict[str, object]:
    """What ``code`` (and a def after it: a module text has one) binds statically."""
    text = textwrap.dedent(code) + "\n\ndef last():\n    pass\n"
    return ModuleText(text, 1, "m.py", "a test").static_names()


def test_static_names_are_hpvm_objects_and_own_defs() -> None:
    names = _static(
        """
        import hpvm
        import hpvm.tensor as T
        import hpvm.ir.graph
        from hpvm import barrier as sync, get_node
        from hpvm import no_such_name, tensor
        import numpy as np
        import hpvm.no_such_module as gone
        from .sibling import thing


        def helper():
            pass


        def leaf(x):
            return helper()
        """
    )
    assert names["hpvm"] is hpvm and names["T"] is hpvm.tensor and names["tensor"] is hpvm.tensor
    assert names["sync"] is hpvm.barrier and names["get_node"] is hpvm.get_node
    assert isinstance(names["helper"], StaticDef) and names["helper"].tree.lineno == 12
    assert isinstance(names["leaf"], StaticDef) and names["leaf"].file == "m.py"
    for unknown in ("np", "gone", "no_such_name", "thing"):
        assert unknown not in names


def test_names_rebound_other_than_by_an_import_of_hpvm_are_unknown() -> None:
    names = _static(
        """
        import hpvm
        from hpvm import barrier, get_node, malloc, get_parent_node
        from hpvm import atomic_add
        barrier = None
        if True:
            get_node = print
        for malloc in range(1):
            pass


        def reset():
            global get_parent_node
            get_parent_node = None


        import math as atomic_add
        """
    )
    assert names["hpvm"] is hpvm
    for unknown in ("barrier", "get_node", "malloc", "get_parent_node", "atomic_add"):
        assert unknown not in names


def test_a_star_import_of_another_module_hides_every_earlier_name() -> None:
    names = _static("from hpvm import barrier\nfrom os.path import *\nimport hpvm\n")
    assert "barrier" not in names and names["hpvm"] is hpvm
    assert _static("from hpvm import *\n")["barrier"] is hpvm.barrier


# The pool of statements the property below composes module texts of: each binds ``b`` (or
# ``T``, ``hpvm``) one way or another.
_STATEMENTS = [
    "import hpvm",
    "import hpvm.tensor",
    "import hpvm.tensor as T",
    "from hpvm import barrier",
    "from hpvm import barrier as b",
    "from hpvm import get_node as b",
    "from hpvm import tensor as T",
    "from hpvm.tensor import relu as b",
    "import math as b",
    "b = 1",
    "hpvm = None",
    "T = b = 2",
    "def b():\n    pass",
    "def T(x):\n    return x",
    "def helper():\n    global b\n    b = 3",
    "if True:\n    b = 4",
    "for b in range(1):\n    pass",
    "try:\n    import hpvm as T\nexcept ImportError:\n    pass",
    "from math import *",
    "from hpvm import *",
    "b = 0\ndel b\nb = 5",
    "with open(__file__) as b:\n    pass",
    "[b := 6]",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=6))
def test_static_names_are_what_running_the_text_binds(statements: list[str]) -> None:
    """Whatever the statements, every name the text binds statically holds, once the text
    has run (and after its functions ran), that very object — or, for a def, its function."""
    text = "\n".join(statements) + "\n\n\ndef leaf(x):\n    pass\n"
    module = ModuleText(text, 1, __file__, "a test")
    static = module.static_names()
    module.function()
    namespace = module.function().__globals__
    for after_calls in (False, True):
        if after_calls and callable(namespace.get("helper")):
            namespace["helper"]()
        for name, value in static.items():
            real = namespace[name]
            if isinstance(value, StaticDef):
                assert (
                    isinstance(real, types.FunctionType) and real.__code__.co_firstlineno == value.tree.lineno
                )
            else:
                assert real is value, (name, text)


# ---------------------------------------------------------------------------------------
# Printing and parsing back never runs a body


@st.composite
def leaf_texts(draw: st.DrawFn, index: int) -> str:
    """A python body for leaf ``@l<index>(x: f32[:])``: some module-level statements (one of
    them announcing that it ran), helpers, and the def."""
    pool = [
        "import hpvm",
        "import math",
        "import numpy as np",
        "from hpvm import get_node_instance_id_x as ix, get_node",
        "SCALE = 2.5",
        "TABLE = (1, 2, 3)",
        "def twice(v):\n    return v * 2",
    ]
    head = draw(st.lists(st.sampled_from(pool), unique=True, max_size=4))
    head.insert(draw(st.integers(0, len(head))), RAN.format(f"l{index}"))
    body = draw(
        st.sampled_from(["pass", "x[0] = x[0] + 1", "for i in range(x.shape[0]):\n        x[i] += 1"])
    )
    return "\n".join(head) + f"\n\n\ndef l{index}(x):\n    {body}\n"


@st.composite
def programs_with_bodies(draw: st.DrawFn) -> str:
    count = draw(st.integers(1, 3))
    leaves = [
        f"leaf @l{i}(x: f32[:]) -> () ins(x) outs(x) python {{\n{_bodies(draw(leaf_texts(i)))}\n}}\n"
        for i in range(count)
    ]
    nodes = "".join(f"  %n{i} = node @l{i}\n" for i in range(count))
    binds = "".join(f"  bind in {i} -> %n{i}.0\n" for i in range(count))
    params = ", ".join(f"x{i}: f32[:]" for i in range(count))
    arrays = ", ".join(f"x{i}" for i in range(count))
    return (
        "# hpvm IR v1\n"
        + "".join(leaves)
        + f"internal @root({params}) ins({arrays}) outs({arrays}) {{\n{nodes}{binds}}}\n"
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(programs_with_bodies())
def test_printing_and_parsing_programs_with_bodies_runs_nothing(runs: list[str], text: str) -> None:
    runs.clear()
    root = parse_program(text, "gen.hpvm")
    hpvm.verify(root)
    printed = print_program(root, bodies=True)
    again = parse_program(printed, "gen.hpvm")
    assert print_program(again, bodies=True) == printed == text
    assert runs == []
    materialize(again)
    assert sorted(runs) == sorted(f"l{i}" for i in range(len(_leaves(again))))
    runs.clear()
