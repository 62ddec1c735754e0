"""FuseHPVMTensorNodes: the patterns, the conditions, pairwise fusion with de-duplicated
arguments, rewiring, the original left intact, and random chains (fused == unfused)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_programs import T1, T2, T4, conv, everything, everything_inputs, lenet_inputs, lenet_like, run

import hpvm
from hpvm.cli import main
from hpvm.ir.graph import (
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
    functions,
)
from hpvm.ir.printer import print_program
from hpvm.ir.program_file import load_program, save_program
from hpvm.ir.tensorops.patterns import match_length
from hpvm.ir.types import ArrayType, f32
from hpvm.passes import FuseHPVMTensorNodes, PassManager

A4, A2, A1 = ArrayType(f32, 4), ArrayType(f32, 2), ArrayType(f32, 1)
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _apply(root: InternalFunction) -> tuple[InternalFunction, SimpleNamespace]:
    """The fused root, and what the pass fused (its records, as ``.fused``)."""
    module = PassManager([FuseHPVMTensorNodes()]).run_module(root)
    return module.root, SimpleNamespace(fused=module.notes.get(FuseHPVMTensorNodes.name, []))


def test_patterns_longest_first() -> None:
    assert match_length(["convolution", "add", "relu", "pool_max", "relu"]) == 4
    assert match_length(["convolution", "add", "tanh"]) == 3
    assert match_length(["convolution", "add", "pool_mean", "relu"]) == 3
    assert match_length(["convolution", "add", "softmax"]) == 2
    assert match_length(["mul", "add", "clipped_relu", "pool_max"]) == 3
    assert match_length(["mul", "add"]) == 2
    assert match_length(["convolution", "relu"]) == 0
    assert match_length(["group_convolution", "add"]) == 0
    assert match_length(["add", "relu"]) == 0


def test_lenet_like_fuses_the_seed_patterns_and_leaves_the_original_intact() -> None:
    before = print_program(lenet_like)
    fused, p = _apply(lenet_like)
    assert print_program(lenet_like) == before
    assert [(r.replaced, r.ops) for r in p.fused] == [
        (("conv", "bias4", "relu4", "maxpool"), ("convolution", "add", "relu", "pool_max")),
        (("fc", "bias2", "tanh2"), ("mul", "add", "tanh")),
    ]
    assert [n.name for n in fused.graph.nodes] == ["conv_bias4_relu4_maxpool", "fc_bias2_tanh2", "softmax2"]
    hpvm.verify(fused)
    first = fused.graph.nodes[0].function
    assert isinstance(first, LeafFunction)
    # seed 001 step 6: all_fused(t1, t2, t3): conv(t1, t2), add(r1, t3), relu(r2), pool(r3)
    assert [p.name for p in first.params] == ["x", "w", "b"]
    assert first.source.splitlines()[1:] == [
        "    t0 = hpvm.tensor.convolution(x, w, 1, 1, 1, 1)",
        "    t1 = hpvm.tensor.add(t0, b)",
        "    t2 = hpvm.tensor.relu(t1)",
        "    t3 = hpvm.tensor.pool_max(t2, 2, 2, 0, 0, 2, 2)",
        "    return t3",
    ]
    assert first.ins == ("x", "w", "b") and first.outs == () and first.hint == hpvm.TENSOR_TARGET
    args = lenet_inputs()
    np.testing.assert_array_equal(run(fused, args, "interp")[0], run(lenet_like, args, "interp")[0])


def test_fuse_is_the_public_entry_point() -> None:
    fused = hpvm.tensor.fuse(lenet_like)
    assert fused is not lenet_like and len(fused.graph.nodes) == 3


def test_fusion_inside_nested_graphs_and_multi_op_leaves_untouched() -> None:
    fused, p = _apply(everything)
    assert p.fused == []  # its leaves are multi-operation leaves: nothing to fuse
    assert print_program(fused) == print_program(everything)
    args = everything_inputs()
    np.testing.assert_array_equal(run(fused, args, "interp")[0], run(everything, args, "interp")[0])


def test_fused_program_saves_loads_and_runs() -> None:
    fused = hpvm.tensor.fuse(lenet_like)

    def check(tmp: str) -> None:
        save_program(fused, tmp)
        loaded = load_program(tmp).root
        args = lenet_inputs()
        np.testing.assert_array_equal(run(loaded, args, "interp")[0], run(fused, args, "interp")[0])

    import tempfile

    with tempfile.TemporaryDirectory(prefix="tensorcore_") as d:
        check(f"{d}/fused.hpvm")


# -- building graphs of single-operation nodes directly ----------------------------------

_LEAVES: dict[str, LeafFunction] = {}


def _leaf(name: str) -> LeafFunction:
    return _LEAVES[name]


def _register(fn: LeafFunction) -> LeafFunction:
    _LEAVES[fn.name] = fn
    return fn


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def k_conv(x: T4, w: T4) -> T4:
    return hpvm.tensor.convolution(x, w, 1, 1, 1, 1)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def k_add4(x: T4, b: T1) -> T4:
    return hpvm.tensor.add(x, b)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("b", "x"))
def k_add4_swapped(b: T1, x: T4) -> T4:
    return hpvm.tensor.add(x, b)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_relu4(x: T4) -> T4:
    return hpvm.tensor.relu(x)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_clip4(x: T4) -> T4:
    return hpvm.tensor.clipped_relu(x, 0.0, 1.0)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_sigmoid4(x: T4) -> T4:
    return hpvm.tensor.sigmoid(x)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_maxpool(x: T4) -> T4:
    return hpvm.tensor.pool_max(x, 2, 2, 0, 0, 2, 2)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_meanpool(x: T4) -> T4:
    return hpvm.tensor.pool_mean(x, 3, 3, 1, 1, 1, 1)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "g", "b", "m", "v"))
def k_bn(x: T4, g: T1, b: T1, m: T1, v: T1) -> T4:
    return hpvm.tensor.batchnorm(x, g, b, m, v, 1e-5)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def k_flat_mul(x: T4, w: T2) -> T2:
    return hpvm.tensor.mul(x, w)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def k_mul(x: T2, w: T2) -> T2:
    return hpvm.tensor.mul(x, w)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def k_add2(x: T2, b: T1) -> T2:
    return hpvm.tensor.add(x, b)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_tanh2(x: T2) -> T2:
    return hpvm.tensor.tanh(x)


@_register
@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def k_softmax(x: T2) -> T2:
    return hpvm.tensor.softmax(x)


class Chain:
    """A root graph built node by node: each node consumes the previous one's output."""

    def __init__(self, x: np.ndarray):
        self.params = [Param("x", A4 if x.ndim == 4 else A2)]
        self.args: list[Any] = [x]
        self.graph = ChildGraph()
        self.prev: Node | None = None
        self.outputs = 0

    def param(self, value: np.ndarray) -> int:
        self.params.append(Param(f"p{len(self.params)}", ArrayType(f32, value.ndim)))
        self.args.append(value)
        return len(self.params) - 1

    def node(self, leaf: str, data_port: int = 0, **weights: Any) -> Node:
        fn = _leaf(leaf)
        node = Node(self.graph.unique_name(leaf), fn, ())
        self.graph.nodes.append(node)
        if self.prev is None:
            self.graph.in_binds.append(InputBind(0, node, data_port))
        else:
            self.graph.edges.append(Edge(self.prev, 0, node, data_port, ONE_TO_ONE))
        names = [p.name for p in fn.params]
        for name, value in weights.items():
            ip = value if isinstance(value, int) else self.param(value)
            self.graph.in_binds.append(InputBind(ip, node, names.index(name)))
        self.prev = node
        return node

    def expose(self) -> None:
        """Bind the current node's output to a root output too (a second user)."""
        assert self.prev is not None
        self.graph.out_binds.append(OutputBind(self.prev, 0, self.outputs))
        self.outputs += 1

    def root(self) -> InternalFunction:
        if self.prev is not None and not any(b.src is self.prev for b in self.graph.out_binds):
            self.graph.out_binds.append(OutputBind(self.prev, 0, self.outputs))
        return InternalFunction("chain", self.params, graph=self.graph)


def _ops_of(root: InternalFunction) -> list[tuple[str, ...]]:
    from hpvm.tensor.leaves import parse_tensor_leaf

    return [parse_tensor_leaf(n.function).ops for n in root.graph.nodes]  # type: ignore[arg-type]


def test_add_fed_on_its_second_port_and_shared_arguments_are_deduplicated() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    ch = Chain(x)
    w = ch.param(rng.standard_normal((4, 4)).astype(np.float32))
    ch.node("k_mul", w=w)
    ch.node("k_add2", b=ch.param(rng.standard_normal(4).astype(np.float32)))
    root = ch.root()
    fused, p = _apply(root)
    assert len(p.fused) == 1

    # mul(x, w) then add(t, w) with w from the same root input: one parameter in the fusion
    ch2 = Chain(x)
    w2 = ch2.param(rng.standard_normal((4, 4)).astype(np.float32))
    ch2.node("k_mul", w=w2)
    node = Node("addw", _same_input_add(), ())
    ch2.graph.nodes.append(node)
    ch2.graph.edges.append(Edge(ch2.prev, 0, node, 0, ONE_TO_ONE))  # type: ignore[arg-type]
    ch2.graph.in_binds.append(InputBind(w2, node, 1))
    ch2.prev = node
    root2 = ch2.root()
    fused2, _ = _apply(root2)
    (only,) = fused2.graph.nodes
    assert [p.name for p in only.function.params] == ["x", "w"]
    assert sorted((b.ip, b.ic) for b in fused2.graph.in_binds) == [(0, 0), (1, 1)]
    assert "t1 = hpvm.tensor.add(t0, w)" in only.function.source  # type: ignore[union-attr]
    np.testing.assert_array_equal(run(fused2, ch2.args, "interp")[0], run(root2, ch2.args, "interp")[0])

    # the conv result feeding the add's second port fuses too (the seed fuses by operation)
    ch3 = Chain(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    ch3.node("k_conv", w=rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
    ch3.node("k_add4_swapped", data_port=1, b=rng.standard_normal(3).astype(np.float32))
    root3 = ch3.root()
    fused3, p3 = _apply(root3)
    assert len(fused3.graph.nodes) == 1
    np.testing.assert_array_equal(run(fused3, ch3.args, "interp")[0], run(root3, ch3.args, "interp")[0])


def _same_input_add() -> LeafFunction:
    @hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
    def add_w(x: T2, w: T2) -> T2:
        return hpvm.tensor.add(x, w)

    return add_w


def test_a_second_user_of_an_intermediate_prevents_fusion() -> None:
    rng = np.random.default_rng(1)
    ch = Chain(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    ch.node("k_conv", w=rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    ch.node("k_add4", b=rng.standard_normal(2).astype(np.float32))
    ch.expose()  # the add's result is also a root output
    ch.node("k_relu4")
    root = ch.root()
    fused, p = _apply(root)
    assert [r.ops for r in p.fused] == [("convolution", "add")]  # conv->add->relu would hide it
    assert _ops_of(fused) == [("convolution", "add"), ("relu",)]
    a, b = run(fused, ch.args, "interp"), run(root, ch.args, "interp")
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_streaming_edges_replicated_nodes_and_other_hints_are_not_fused() -> None:
    rng = np.random.default_rng(2)
    ch = Chain(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    ch.node("k_conv", w=rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    ch.node("k_add4", b=rng.standard_normal(2).astype(np.float32))
    ch.graph.edges[0].stream = True
    assert _apply(ch.root())[1].fused == []

    @hpvm.leaf(hint=hpvm.CPU_TARGET, ins=("x", "b"))
    def cpu_add(x: T4, b: T1) -> T4:
        return hpvm.tensor.add(x, b)

    ch2 = Chain(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    ch2.node("k_conv", w=rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    _LEAVES["cpu_add"] = cpu_add
    ch2.node("cpu_add", b=rng.standard_normal(2).astype(np.float32))
    assert _apply(ch2.root())[1].fused == []


def test_cli_show_before_and_after_fusion(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "prog.hpvm"
    save_program(lenet_like, path)
    assert main(["show", str(path)]) == 0
    before = capsys.readouterr().out
    assert main(["show", str(path), "--fuse-tensors"]) == 0
    after = capsys.readouterr().out
    assert "bias4" in before and "conv_bias4_relu4_maxpool" not in before
    assert "conv_bias4_relu4_maxpool" in after and "fc_bias2_tanh2" in after


# -- random chains: fused and unfused give the same results -------------------------------


Step = Callable[[Chain, np.random.Generator, tuple[int, ...]], tuple[int, ...]]


def _s_conv(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    k = int(rng.integers(1, 4))
    ch.node("k_conv", w=rng.standard_normal((k, shape[1], 3, 3)).astype(np.float32) * 0.5)
    return (shape[0], k, shape[2], shape[3])


def _s_add4(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    b = rng.standard_normal(shape[1]).astype(np.float32)
    if rng.integers(2):
        ch.node("k_add4", b=b)
    else:
        ch.node("k_add4_swapped", data_port=1, b=b)
    return shape


def _s_unary(name: str) -> Step:
    def step(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
        ch.node(name)
        return shape

    return step


def _s_maxpool(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    ch.node("k_maxpool")
    return (*shape[:2], shape[2] // 2, shape[3] // 2)


def _s_bn(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    c = shape[1]
    ch.node(
        "k_bn",
        g=rng.standard_normal(c).astype(np.float32),
        b=rng.standard_normal(c).astype(np.float32),
        m=rng.standard_normal(c).astype(np.float32),
        v=(np.abs(rng.standard_normal(c)) + 0.5).astype(np.float32),
    )
    return shape


def _s_flat_mul(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    m = int(rng.integers(1, 5))
    k = int(np.prod(shape[1:]))
    ch.node("k_flat_mul", w=rng.standard_normal((k, m)).astype(np.float32) * 0.3)
    return (shape[0], m)


def _s_mul(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    m = int(rng.integers(1, 5))
    ch.node("k_mul", w=rng.standard_normal((shape[1], m)).astype(np.float32) * 0.5)
    return (shape[0], m)


def _s_add2(ch: Chain, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    ch.node("k_add2", b=rng.standard_normal(shape[1]).astype(np.float32))
    return shape


STEPS4: dict[str, Step] = {
    "conv": _s_conv,
    "add": _s_add4,
    "relu": _s_unary("k_relu4"),
    "clip": _s_unary("k_clip4"),
    "sigmoid": _s_unary("k_sigmoid4"),
    "maxpool": _s_maxpool,
    "meanpool": _s_unary("k_meanpool"),
    "bn": _s_bn,
    "flatten_mul": _s_flat_mul,
}
STEPS2: dict[str, Step] = {
    "mul": _s_mul,
    "add": _s_add2,
    "tanh": _s_unary("k_tanh2"),
    "softmax": _s_unary("k_softmax"),
}


def _build(seed: int, length: int, expose: frozenset[int]) -> Chain:
    rng = np.random.default_rng(seed)
    shape: tuple[int, ...] = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), 8, 8)
    ch = Chain(rng.standard_normal(shape).astype(np.float32))
    for i in range(length):
        table = STEPS4 if len(shape) == 4 else STEPS2
        names = [n for n in table if not (n == "maxpool" and shape[2] < 2)]
        # favour the pattern starts and their continuations so that chains match often
        weights = np.array([3.0 if n in ("conv", "add", "mul", "flatten_mul") else 1.0 for n in names])
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        shape = table[name](ch, rng, shape)
        if i in expose:
            ch.expose()
    return ch


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**20),
    length=st.integers(1, 9),
    expose=st.frozensets(st.integers(0, 8), max_size=2),
)
def test_random_chains_fused_equal_unfused(seed: int, length: int, expose: frozenset[int]) -> None:
    ch = _build(seed, length, expose)
    root = ch.root()
    before = print_program(root)
    fused, p = _apply(root)  # verified by the pass manager
    hpvm.verify(fused)
    assert print_program(root) == before
    # every fused node is one of the patterns, and no pattern is left unfused on a chain
    # whose intermediates have no other user
    for r in p.fused:
        assert match_length(r.ops) == len(r.ops) >= 2
    exposed = {id(b.src) for b in fused.graph.out_binds}
    ops = _ops_of(fused)
    nodes = fused.graph.nodes
    for i, node_ops in enumerate(ops):
        if len(node_ops) == 1 and i + 1 < len(ops) and id(nodes[i]) not in exposed:
            assert match_length([node_ops[0], *ops[i + 1]]) < 2 or len(ops[i + 1]) > 1
    unfused = run(root, ch.args, "interp")
    for a, b in zip(run(fused, ch.args, "interp"), unfused):
        np.testing.assert_array_equal(a, b)  # the same NumPy operations in the same order
    if HAVE_TORCH:  # the tensor back end runs the fused nodes as layer calls
        for a, b in zip(run(fused, ch.args, "tensor"), unfused):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_conv_node_alone_stays(tmp_path: Any) -> None:
    @hpvm.internal()
    def only_conv(x: T4, w: T4):
        c = hpvm.create_node(conv)
        hpvm.bind_in(c, 0, 0)
        hpvm.bind_in(c, 1, 1)
        hpvm.bind_out(c, 0, 0)

    fused, p = _apply(only_conv)
    assert p.fused == [] and [n.name for n in fused.graph.nodes] == ["conv"]
    assert [f.name for f in functions(fused)] == ["conv", "only_conv"]


def test_fuse_rejects_an_invalid_program() -> None:
    @hpvm.internal()
    def broken(x: T4, w: T4):
        c = hpvm.create_node(conv)
        hpvm.bind_in(c, 0, 0)  # input 1 has no feed

    with pytest.raises(hpvm.VerificationError, match="has no feed"):
        hpvm.tensor.fuse(broken)
