"""SplitByTarget on random hierarchies: every node gets the back end its leaves select, or
``mixed`` when they select several (and its function the node's dimensions as
``root_dims``); a shared internal function used under different hints or grids is split
per use; the input program is left as it was."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import BackendUnavailableError
from hpvm.ir.expr import Const
from hpvm.ir.graph import ChildGraph, InternalFunction, LeafFunction, Node, NodeFunction
from hpvm.ir.printer import print_program
from hpvm.passes import PassManager, SplitByTarget
from hpvm.passes.split_by_target import MIXED, TARGET

RESOLVE = {None: "cpu", "cpu": "cpu", "gpu": "opencl", "tensor": "tensor"}.__getitem__
HINTS = (None, hpvm.CPU_TARGET, hpvm.GPU_TARGET, hpvm.TENSOR_TARGET)


@hpvm.leaf()
def plain() -> None:
    pass


@hpvm.leaf(hint=hpvm.CPU_TARGET)
def on_cpu() -> None:
    pass


@hpvm.leaf(hint=hpvm.GPU_TARGET)
def on_gpu() -> None:
    pass


@hpvm.leaf(hint=hpvm.TENSOR_TARGET)
def on_tensor() -> None:
    pass


LEAVES = (plain, on_cpu, on_gpu, on_tensor)


def internal(
    name: str, children: list[NodeFunction], hint: str | None, dims: list[int] | None = None
) -> InternalFunction:
    """An internal function over ``children``, child i replicated 2 ways in ``dims[i]`` dims."""
    dims = dims or [0] * len(children)
    nodes = [Node(f"n{i}", f, (Const(2),) * d) for i, (f, d) in enumerate(zip(children, dims))]
    return InternalFunction(name, [], graph=ChildGraph(nodes=nodes), hint=hint)


@st.composite
def hierarchies(draw: st.DrawFn) -> InternalFunction:
    """Random trees of internal nodes over the four leaves, some internal functions used twice."""
    made: list[InternalFunction] = []

    def tree(depth: int) -> NodeFunction:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            if made and draw(st.booleans()):
                return draw(st.sampled_from(made))  # a shared use, maybe under another hint
            return draw(st.sampled_from(LEAVES))
        children = [tree(depth - 1) for _ in range(draw(st.integers(1, 3)))]
        dims = [draw(st.integers(0, 2)) for _ in children]
        fn = internal(f"f{len(made)}", children, draw(st.sampled_from(HINTS)), dims)
        made.append(fn)
        return fn

    return internal("root", [tree(3) for _ in range(draw(st.integers(1, 3)))], draw(st.sampled_from(HINTS)))


def expected(fn: NodeFunction, inherited: str | None) -> set[str]:
    """The back ends the leaves below ``fn`` select, from the hints alone."""
    hint = fn.hint if fn.hint is not None else inherited
    if isinstance(fn, LeafFunction) or not fn.graph.nodes:
        return {RESOLVE(hint)}
    return set().union(*(expected(n.function, hint) for n in fn.graph.nodes))


def check(fn: InternalFunction, inherited: str | None) -> None:
    hint = fn.hint if fn.hint is not None else inherited
    for node in fn.graph.nodes:
        want = expected(node.function, hint)
        assert node.attrs[TARGET] == (next(iter(want)) if len(want) == 1 else MIXED)
        if node.attrs[TARGET] == MIXED:  # its parts run one instance of it at a time
            assert node.function.root_dims == node.dims
        if isinstance(node.function, InternalFunction):
            check(node.function, hint)


@settings(max_examples=80, deadline=None)
@given(hierarchies())
def test_every_node_gets_the_back_end_its_leaves_select(root: InternalFunction) -> None:
    before = print_program(root)
    split = PassManager([SplitByTarget(RESOLVE)]).run(root)
    check(split, None)
    assert print_program(root) == before  # the input is untouched


def test_a_hint_without_a_back_end_names_the_node_path() -> None:
    root = internal("top", [internal("middle", [plain, on_gpu], None)], None)

    def resolve(hint: str | None) -> str:
        if hint == hpvm.GPU_TARGET:
            raise BackendUnavailableError("no back end for hint 'gpu' is available")
        return "cpu"

    with pytest.raises(BackendUnavailableError, match=r"node top/n0/n1 \(leaf 'on_gpu' .*hinted to 'gpu'"):
        PassManager([SplitByTarget(resolve)]).run(root)
