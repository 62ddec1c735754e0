"""The pass infrastructure: copying programs, verification after every pass, CodeGenTraversal."""

from __future__ import annotations

import pytest

import hpvm
from hpvm.ir.graph import InternalFunction, LeafFunction, Node, functions
from hpvm.ir.printer import print_program
from hpvm.passes import CodeGenTraversal, Module, Pass, PassManager, copy_program, run_passes


@hpvm.leaf()
def inc(v: hpvm.i64) -> hpvm.i64:
    return v + 1


@hpvm.leaf()
def dbl(v: hpvm.i64) -> hpvm.i64:
    return v * 2


@hpvm.internal()
def pair(v: hpvm.i64):
    a = hpvm.create_node(inc)
    b = hpvm.create_node(dbl)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal()
def top(v: hpvm.i64):
    d = hpvm.create_node(dbl)  # created first, but it consumes the second pair's output
    p1 = hpvm.create_node(pair)
    p2 = hpvm.create_node(pair)  # the same internal function used twice
    i = hpvm.create_node(inc)
    hpvm.bind_in(i, 0, 0)
    hpvm.edge(i, p1, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(p1, p2, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(p2, d, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(d, 0, 0)


def test_copy_program_copies_internals_once_and_shares_leaves() -> None:
    copy = copy_program(top)
    assert copy is not top and print_program(copy) == print_program(top)
    old = {f.name: f for f in functions(top)}
    new = list(functions(copy))
    for f in new:
        if isinstance(f, LeafFunction):
            assert f is old[f.name]
        else:
            assert f is not old[f.name] and f.graph is not old[f.name].graph
    p1, p2 = (n.function for n in copy.graph.nodes if n.name.startswith("pair"))
    assert p1 is p2  # shared in the original, shared in the copy
    copy.graph.nodes[0].name = "renamed"
    assert top.graph.nodes[0].name == "dbl"


class Recorder(CodeGenTraversal):
    name = "recorder"

    def __init__(self) -> None:
        self.visits: list[str] = []

    def visit_leaf(self, node: Node, parent: InternalFunction) -> None:
        self.visits.append(f"leaf {parent.name}/{node.name}")

    def visit_internal(self, fn: InternalFunction) -> None:
        self.visits.append(f"internal {fn.name}")


def test_codegen_traversal_is_bottom_up_and_topological() -> None:
    r = Recorder()
    r.apply(Module(top))
    assert r.visits == [
        "leaf top/inc",
        "leaf pair/inc",
        "leaf pair/dbl",
        "internal pair",  # its graph before itself, once although two nodes use it
        "leaf top/dbl",  # after the pairs it depends on, although created first
        "internal top",  # the root last
    ]


class Breaker(Pass):
    name = "breaker"

    def apply(self, module: Module) -> None:
        module.root.graph.in_binds.clear()


class Renamer(Pass):
    name = "renamer"

    def apply(self, module: Module) -> None:
        module.root = InternalFunction("renamed_root", module.root.params, graph=module.root.graph)


def test_the_module_is_verified_after_every_pass() -> None:
    with pytest.raises(hpvm.VerificationError, match=r"after pass 'breaker': input 0 \('v'\) of node 'inc'"):
        run_passes(top, [Renamer(), Breaker()])
    hpvm.verify(top)  # the original was not touched


def test_passes_may_replace_the_root_and_the_original_stays() -> None:
    before = print_program(top)
    out = PassManager([Renamer(), Recorder()]).run(top)
    assert out.name == "renamed_root" and top.name == "top"
    assert print_program(top) == before


def test_the_input_is_verified_and_only_passes_are_accepted() -> None:
    @hpvm.internal()
    def unfed(v: hpvm.i64):
        hpvm.create_node(inc)

    with pytest.raises(hpvm.VerificationError, match="has no feed"):
        run_passes(unfed, [])
    with pytest.raises(TypeError, match="is not a Pass"):
        PassManager([lambda m: None])  # type: ignore[list-item]


def test_cloning_a_leaf_read_from_text_runs_none_of_its_code() -> None:
    """CloneLeaves over a parsed program (``hpvm show --lowered``) reads each leaf's text and
    runs nothing; a clone that runs first runs its leaf's module and sees its names."""
    from hpvm.ir.parser import parse_program
    from hpvm.passes.clone_leaves import CloneLeaves, written_leaf

    text = (
        "leaf @scale(x: f32[:]) -> () ins(x) outs(x) python {\n"
        "  | import hpvm\n  | FACTOR = 3\n  |\n"
        "  | def scale(x):\n  |     i = hpvm.get_node_instance_id_x(hpvm.get_node())\n"
        "  |     x[i] = x[i] * FACTOR\n}\n"
        "internal @root(x: f32[:], n: i64) ins(x) outs(x) {\n  %s = node @scale[n]\n  bind in 0 -> %s.0\n}\n"
    )
    lowered = run_passes(parse_program(text), [CloneLeaves("cpu")])
    clone = lowered.graph.nodes[0].function
    leaf = written_leaf(clone)
    assert clone is not leaf and clone.pending_code is not None and leaf.pending_code is not None
    assert "__hpvm_ctx[0]" in clone.source and "FACTOR" in clone.source
    clone.materialize()
    assert leaf.pending_code is None and clone.pyfunc.__globals__["FACTOR"] == 3
