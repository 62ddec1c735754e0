"""Parallel loops written as calls of chunk functions (``backends/cpu/chunks.py``), their
parameters tracked as the code is generated (``block.py``).

The generated loop runs every iteration once, in balanced contiguous chunks, one per thread,
and the chunk function takes exactly the loop's free variables: checked here on the code of
real programs against Python's own scoping rule read off the generated text (the tests may
read code; the back end no longer does), and by running the privatized-atomics loop (its
private copies assigned inside an ``if``) and a flattened hierarchy against the interpreter.
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from gpu_convention import CASES, grid, histogram2_root, same_as_interp, tiles_root
from hpvm.backends import get_backend
from hpvm.backends.cpu.block import Block, local
from hpvm.backends.cpu.chunks import HI, LO, Chunks
from markers import fails

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


# -- the generated loop, run as plain Python ------------------------------------------------

NAMES = [f"v{j}" for j in range(5)]  # locals of the function, assigned before the loop


def _body(reads: list[str], temp: bool) -> Block:
    """A loop body appending (i, its reads...) to ``out``; ``temp``: through a local it
    assigns first (which must not become a parameter)."""
    body = Block()
    if temp:
        body.add("t = i * 2", ["i"], ["t"])
    values = ", ".join(["i", *reads, *(["t"] if temp else [])])
    return body.add(f"out.append(({values},))", ["out", "i", *reads, *(["t"] if temp else [])])


def _run(n: int, threads: int, body: Block) -> tuple[list[tuple[int, ...]], list[tuple[int, int]], Chunks]:
    """Write ``for i in range(n): body`` through ``Chunks`` and run it: what the body
    appended, and each chunk's (lo, hi)."""
    chunks = Chunks("f")
    loop = chunks.loop("i", local("n"), body)
    source = "\n".join(
        [
            "def f(n):",
            "    out = []",
            *(f"    {v} = {10 * j + 1}" for j, v in enumerate(NAMES)),
            *("    " + line for line in loop.lines),
            "    return out",
        ]
    )
    spans: list[tuple[int, int]] = []

    def try_call(func, args, err, c):
        spans.append(args[-2:])
        func(*args)

    namespace = {
        "np": np,
        "prange": range,
        "__hpvm_num_threads": lambda: threads,
        "__hpvm_try_call": try_call,
        "__hpvm_reraise": lambda err: None,
        "__hpvm_parallel_for": lambda task, nc, *pack: [task(c, pack) for c in range(nc)],
    }
    exec("\n".join([source, *chunks.sources]), namespace)
    return namespace["f"](n), spans, chunks


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    threads=st.integers(1, 9),
    reads=st.lists(st.sampled_from(NAMES), unique=True),
    temp=st.booleans(),
)
def test_every_iteration_runs_once_in_balanced_contiguous_chunks(n, threads, reads, temp):
    body = _body(reads, temp)
    out, spans, chunks = _run(n, threads, body)
    want = [(i, *(10 * NAMES.index(r) + 1 for r in reads), *([2 * i] if temp else [])) for i in range(n)]
    assert out == want  # (the chunks run in order here: __hpvm_parallel_for is a loop)
    assert len(spans) == min(threads, n)
    bounds = [0, *(hi for _, hi in spans)]
    assert [lo for lo, _ in spans] == bounds[:-1] and bounds[-1] == n  # contiguous, all of range(n)
    sizes = [hi - lo for lo, hi in spans]
    assert not sizes or max(sizes) - min(sizes) <= 1  # balanced
    # The chunk takes exactly the locals the body reads and does not assign.
    chunk, task = chunks.sources
    assert chunk.startswith(f"def f_chunk0({', '.join([*sorted({'out', *reads}), LO, HI])}):")
    # The task takes the chunk's index and a tuple of what its call reads.
    assert task.startswith("def f_task0(__hpo0_c, __hpvm_pack):\n    (")


def test_chunk_functions_are_numbered_in_the_order_of_the_code():
    chunks = Chunks("g")
    for _ in range(3):
        chunks.loop("i", local("n"), _body([], False))
    names = [s.split("(")[0] for s in chunks.sources]
    assert names == [
        "def g_chunk0",
        "def g_task0",
        "def g_chunk1",
        "def g_task1",
        "def g_chunk2",
        "def g_task2",
    ]


# -- the chunks of real programs ---------------------------------------------------------


def _stored(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def free_variables_hold(sources: list[str]) -> int:
    """Check every chunk function of ``sources`` against Python's rule (the rule the back
    end's ``outline.py`` used to apply to the text): its parameters are the locals of its
    graph function that its loop reads and does not assign. The number of chunks."""
    functions = {f.name: f for s in sources for f in ast.parse(s).body if isinstance(f, ast.FunctionDef)}
    count = 0
    for name, chunk in functions.items():
        if "_chunk" not in name:
            continue
        graph = functions[name.rsplit("_chunk", 1)[0]]
        local_names = {a.arg for a in graph.args.args} | _stored(graph)
        (loop,) = chunk.body
        want = sorted((_loaded(loop) & local_names) - _stored(loop))
        assert [a.arg for a in chunk.args.args] == [*want, LO, HI], name
        count += 1
    return count


@pytest.mark.parametrize("case", CASES, ids=str)
def test_chunks_take_exactly_the_free_variables_of_their_loop(case):
    assert free_variables_hold(get_backend("cpu").prepare(case.root).gen.sources) >= 1


def test_private_copies_assigned_inside_an_if_are_passed_to_the_chunk():
    """The privatized-atomics loop runs inside ``if __hp0_on:``, reading the private copies
    assigned there; the plain loop in the ``else`` branch must not take them."""
    sources = get_backend("cpu").prepare(histogram2_root).gen.sources
    chunks = [s for s in sources if s.startswith("def ") and "_chunk" in s.split("(")[0]]
    assert len(chunks) == 3  # the plain loop's two: ids masked or not (loopnest.py)
    assert "__hp0_P0" in chunks[0].split(")")[0]
    assert all("__hp0_P0" not in chunk.split(")")[0] for chunk in chunks[1:])
    src = grid((9, 11))
    same_as_interp(histogram2_root, (src, np.zeros(16, np.int64)), "cpu")  # 16 bins: private copies
    same_as_interp(histogram2_root, (src, np.zeros(500, np.int64)), "cpu")  # more bins than instances: plain


def test_a_flattened_loop_passes_the_parents_inputs_to_its_chunk():
    sources = get_backend("cpu").prepare(tiles_root).gen.sources
    (chunk,) = [s for s in sources if s.startswith("def ") and "_chunk" in s.split("(")[0]]
    params = chunk.split("(")[1].split(")")[0].split(", ")
    assert "__hf0_n" in params and "__hf0_nc" in params
    assert any(p.startswith("__hf0_a") for p in params)  # a parent input, set before the loop
    assert not any(p.startswith("__hf0_p") for p in params)  # the parent ids: set in the loop
    for tw, th in [(5, 3), (1, 1), (15, 6)]:
        same_as_interp(tiles_root, (grid((6, 15)), np.zeros((6, 15), np.int64), tw, th), "cpu")


# -- an exception in a chunk of the private-copies loop ------------------------------------


@hpvm.leaf(ins=("src", "bins"), outs=("bins",))
def strict_histogram(src: hpvm.i64[:], bins: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if src[i] < 0:
        raise ValueError("negative sample")
    hpvm.atomic_add(bins, src[i] % bins.shape[0], 1)


@hpvm.internal()
def strict_histogram_root(src: hpvm.i64[:], bins: hpvm.i64[:]):
    node = hpvm.create_node_1d(strict_histogram, src.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_an_exception_in_a_chunk_of_the_private_copies_loop_reaches_the_caller():
    assert get_backend("cpu").prepare(strict_histogram_root).gen.privatized
    src = np.arange(10_000, dtype=np.int64)
    same_as_interp(strict_histogram_root, (src, np.zeros(8, np.int64)), "cpu")
    src[-1] = -1  # the last chunk's
    bins = np.zeros(8, np.int64)
    hpvm.track_memory(bins)
    hpvm.track_memory(src)
    with fails(hpvm.NodeExecutionError, "strict_histogram_root/strict_histogram", "negative sample"):
        hpvm.wait(hpvm.launch(strict_histogram_root, (src, bins), target="cpu"))
