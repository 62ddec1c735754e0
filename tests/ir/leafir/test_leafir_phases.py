"""The phase split of barrier leaves (``ir/leafir/phases.py``, on the lowered leaf IR as the
back ends split it): golden text of every barrier leaf of the suite and the examples, and a property on generated barrier leaves — the code
the cpu back end writes from the phases computes what the interpreter computes. The leaves:
every barrier leaf of ``leaf_suite.py`` (the program suite, the Python and HBIR examples:
two, ``p_rotate`` and ``tree_sum``) and those of ``tests/cpu/test_cpu_barriers.py``.

The golden files (``golden/phases/<origin>.<leaf>.phases``) are reviewed by hand; after an
intended change, regenerate them with ``HPVM_UPDATE_GOLDEN=1 pytest tests/ir/leafir`` and
read the diff. A leaf the split refuses has its message as its golden text.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends.cpu.barriers import group_function
from hpvm.backends.cpu.narrow import narrow
from hpvm.errors import CompileError, HPVMError
from hpvm.ir.graph import LeafFunction
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.barrier_check import barrier_lines
from hpvm.ir.leafir.lowering import lower_queries
from hpvm.ir.leafir.phases import print_phases, split_phases
from hpvm.passes.clone_leaves import clone_leaf
from leaf_suite import LEAVES

GOLDEN = Path(__file__).parent / "golden" / "phases"
UPDATE = os.environ.get("HPVM_UPDATE_GOLDEN") == "1"
#: hypothesis examples of the property (more while changing the pass or the emitter)
EXAMPLES = int(os.environ.get("HPVM_PHASES_EXAMPLES", "15"))


def _cpu_test_leaves() -> dict[tuple[str, str], LeafFunction]:
    """The leaves of ``tests/cpu/test_cpu_barriers.py``: two-dimensional, parent queries,
    returns, and the leaves the split refuses."""
    path = Path(__file__).parents[2] / "cpu" / "test_cpu_barriers.py"
    spec = importlib.util.spec_from_file_location("cpu_barrier_leaves", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {("cpu_barriers", v.name): v for v in vars(module).values() if isinstance(v, LeafFunction)}


def _barrier_leaves() -> dict[tuple[str, str], object]:
    found = {}
    for key, fn in {**LEAVES, **_cpu_test_leaves()}.items():
        try:
            ir = leaf_ir(fn)
        except HPVMError:
            continue
        if barrier_lines(ir.body):
            found[key] = lower_queries(ir).ir  # what the back ends split: queries read the context
    return found


BARRIER_LEAVES = _barrier_leaves()


def _text(ir) -> str:  # type: ignore[no-untyped-def]
    try:
        text = print_phases(split_phases(ir))
    except CompileError as e:
        text = f"refused: {e}\n"
    return text.replace(ir.file, "FILE")


@pytest.mark.parametrize("key", sorted(BARRIER_LEAVES), ids=lambda k: f"{k[0]}.{k[1]}")
def test_golden_phases(key: tuple[str, str]) -> None:
    path = GOLDEN / f"{key[0]}.{key[1]}.phases"
    text = _text(BARRIER_LEAVES[key])
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text


def test_the_suite_has_the_barrier_leaves_the_goldens_cover() -> None:
    assert ("reduction", "tree_sum") in BARRIER_LEAVES
    assert ("programs", "p_rotate") in BARRIER_LEAVES  # (no HBIR example has a barrier)
    refused = [k for k in BARRIER_LEAVES if _text(BARRIER_LEAVES[k]).startswith("refused")]
    assert refused and all(origin == "cpu_barriers" for origin, _ in refused)
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(f"{o}.{n}.phases" for o, n in BARRIER_LEAVES)


# ---------------------------------------------------------------------------------------
# Generated barrier leaves: the cpu's group function equals the interpreter

VAR = st.sampled_from(["v0", "v1"])
EXPR = st.recursive(
    st.sampled_from(["lid", "n", "v0", "v1", "1", "2"]),
    lambda inner: st.builds(lambda x, op, y: f"({x} {op} {y})", inner, st.sampled_from("+-"), inner),
    max_leaves=3,
)
# Each instance publishes a value in its slot, and after a barrier reads a neighbour's.
EXCHANGE = st.builds(
    lambda src, dst, shift: [
        f"buf[lid] = {src}",
        "hpvm.barrier()",
        f"{dst} = {dst} + buf[(lid + {shift}) % size]",
        "hpvm.barrier()",
    ],
    VAR,
    VAR,
    st.integers(1, 3),
)


def _indent(lines: list[str]) -> list[str]:
    return [f"    {line}" for line in lines]


STATEMENT = st.one_of(
    st.builds(lambda v, e: [f"{v} = {e}"], VAR, EXPR),
    st.builds(lambda c, v, e: [f"if {c} > 1:", f"    {v} = {e}"], EXPR, VAR, EXPR),  # may diverge
    EXCHANGE,
    st.builds(lambda ex, v: ["for t in range(n % 3):", f"    {v} = {v} + t", *_indent(ex)], EXCHANGE, VAR),
    st.builds(lambda ex: ["if n > 1:", *_indent(ex)], EXCHANGE),
    st.builds(lambda ex: ["k = 0", "while k < n % 3:", *_indent(ex), "    k = k + 1"], EXCHANGE),
    # A condition on shared memory read where no instance writes it before the next barrier:
    # uniform (the analysis' barrier intervals), so the branch may hold barriers.
    st.builds(
        lambda ex, j: [
            "hpvm.barrier()",
            f"if buf[{j} % size] > 1:",
            "    hpvm.barrier()",
            *_indent(ex),
            "hpvm.barrier()",
        ],
        EXCHANGE,
        st.integers(0, 2),
    ),
)

_DIR = Path(tempfile.mkdtemp(prefix="hpvm-phases-"))
atexit.register(shutil.rmtree, _DIR, True)  # (the generated modules: not left in /tmp)
_COUNT = itertools.count()


def _program(statements: list[list[str]]):  # type: ignore[no-untyped-def]
    """A module file with the generated leaf and a root running it over every element."""
    body = [
        "lid = hpvm.get_node_instance_id_x(hpvm.get_node())",
        "size = hpvm.get_num_node_instances_x(hpvm.get_node())",
        "v0 = lid",
        "v1 = 1",
        *(line for s in statements for line in s),
        "out[2 * lid] = v0",
        "out[2 * lid + 1] = v1",
    ]
    name = f"gen_phases_{next(_COUNT)}"
    path = _DIR / f"{name}.py"
    path.write_text(
        "import hpvm\n\n\n"
        '@hpvm.leaf(ins=("buf", "out"), outs=("buf", "out"))\n'
        "def gen(buf: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):\n"
        + "".join(f"    {line}\n" for line in body)
        + "\n\n@hpvm.internal\n"
        "def root(buf: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):\n"
        "    k = hpvm.create_node_1d(gen, buf.shape[0])\n"
        "    for port in range(3):\n"
        "        hpvm.bind_in(k, port, port)\n"
    )
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.usefixtures("hpvm_runtime")
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STATEMENT, min_size=1, max_size=4), st.integers(0, 5), st.integers(1, 6))
def test_the_phase_split_computes_what_the_interpreter_computes(
    statements: list[list[str]], n: int, size: int
) -> None:
    module = _program(statements)
    want = [np.zeros(size, np.int64), np.zeros(2 * size, np.int64)]
    for a in want:
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(module.root, [*want, n], target="interp"))
    clone = clone_leaf(module.gen)
    symbol, source = group_function(clone, [p.type for p in module.gen.params], 1)
    namespace: dict[str, object] = {"__hpvm_narrow": narrow}
    exec(compile(source, "<group>", "exec"), namespace)  # plain Python: Numba's typing is the cpu tests'
    got = [np.zeros(size, np.int64), np.zeros(2 * size, np.int64)]
    namespace[symbol](*got, n, (), size, 1, 1, 1)  # type: ignore[operator]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w, err_msg=source)
