"""Hand-built graphs of tensor leaves shared by the tensor back-end, fusion and wrapper tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import hpvm

T4 = hpvm.f32[:, :, :, :]
T2 = hpvm.f32[:, :]
T1 = hpvm.f32[:]


# -- single-operation leaves (what an importer emits: one node per operation) ------------


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def conv(x: T4, w: T4) -> T4:
    return hpvm.tensor.convolution(x, w, 1, 1, 1, 1)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def bias4(x: T4, b: T1) -> T4:
    return hpvm.tensor.add(x, b)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def relu4(x: T4) -> T4:
    return hpvm.tensor.relu(x)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def maxpool(x: T4) -> T4:
    return hpvm.tensor.pool_max(x, 2, 2, 0, 0, 2, 2)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w"))
def fc(x: T4, w: T2) -> T2:
    return hpvm.tensor.mul(x, w)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def bias2(x: T2, b: T1) -> T2:
    return hpvm.tensor.add(x, b)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def tanh2(x: T2) -> T2:
    return hpvm.tensor.tanh(x)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def softmax2(x: T2) -> T2:
    return hpvm.tensor.softmax(x)


@hpvm.internal()
def lenet_like(x: T4, w1: T4, b1: T1, w2: T2, b2: T1):
    """conv -> add -> relu -> pool -> mul -> add -> tanh -> softmax, one node per operation."""
    nodes = [hpvm.create_node(f) for f in (conv, bias4, relu4, maxpool, fc, bias2, tanh2, softmax2)]
    hpvm.bind_in(nodes[0], 0, 0)
    hpvm.bind_in(nodes[0], 1, 1)
    hpvm.bind_in(nodes[1], 2, 1)
    hpvm.bind_in(nodes[4], 3, 1)
    hpvm.bind_in(nodes[5], 4, 1)
    for a, b in zip(nodes, nodes[1:]):
        hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(nodes[-1], 0, 0)


def lenet_inputs(seed: int = 0, batch: int = 2) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    f = np.float32
    return (
        rng.standard_normal((batch, 3, 8, 8)).astype(f),
        rng.standard_normal((4, 3, 3, 3)).astype(f),
        rng.standard_normal(4).astype(f),
        rng.standard_normal((64, 10)).astype(f) * 0.2,
        rng.standard_normal(10).astype(f),
    )


# -- every operation, with scalar parameters and a multi-output leaf ---------------------


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "g", "be", "m", "v"))
def block(x: T4, w: T4, g: T1, be: T1, m: T1, v: T1, pad: hpvm.i64) -> tuple[T4, T4]:
    """A multi-operation leaf with two outputs and a scalar parameter."""
    y = hpvm.tensor.group_convolution(x, w, pad, pad, 1, 1, 2)
    z = hpvm.tensor.batchnorm(y, g, be, m, v, 1e-5)
    a = hpvm.tensor.clipped_relu(z)
    return a, hpvm.tensor.pool_min(z, 3, 3, 1, 1, 2, 2)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("a", "b"))
def combine(a: T4, b: T4) -> T4:
    p = hpvm.tensor.pool_mean(a, 3, 3, 1, 1, 2, 2)
    s = hpvm.tensor.add(p, b)
    return hpvm.tensor.sigmoid(s)


@hpvm.internal()
def inner(x: T4, w: T4, g: T1, be: T1, m: T1, v: T1, pad: hpvm.i64):
    n = hpvm.create_node(block)
    for i in range(7):
        hpvm.bind_in(n, i, i)
    c = hpvm.create_node(combine)
    hpvm.edge(n, c, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(n, c, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_out(c, 0, 0)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "w", "b"))
def head(x: T4, w: T2, b: T1) -> T2:
    y = hpvm.tensor.mul(x, w)
    z = hpvm.tensor.add(y, b)
    return hpvm.tensor.relu(z)


@hpvm.internal()
def everything(x: T4, w: T4, g: T1, be: T1, m: T1, v: T1, pad: hpvm.i64, wf: T2, bf: T1):
    """A hierarchical graph (an internal child) using every operation."""
    i = hpvm.create_node(inner)
    for k in range(7):
        hpvm.bind_in(i, k, k)
    h = hpvm.create_node(head)
    hpvm.edge(i, h, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(h, 7, 1)
    hpvm.bind_in(h, 8, 2)
    hpvm.bind_out(h, 0, 0)


def everything_inputs(seed: int = 1) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    f = np.float32
    return (
        rng.standard_normal((2, 4, 9, 9)).astype(f),
        rng.standard_normal((6, 2, 3, 3)).astype(f),
        rng.standard_normal(6).astype(f),
        rng.standard_normal(6).astype(f),
        rng.standard_normal(6).astype(f),
        (np.abs(rng.standard_normal(6)) + 0.5).astype(f),
        np.int64(1),
        rng.standard_normal((6 * 5 * 5, 7)).astype(f) * 0.1,
        rng.standard_normal(7).astype(f),
    )


def run(root: Any, args: Sequence[Any], target: str | None) -> tuple[Any, ...]:
    """Launch and wait (init/cleanup around it), arrays tracked."""
    hpvm.init()
    try:
        for a in args:
            if isinstance(a, np.ndarray):
                hpvm.track_memory(a)
        return hpvm.wait(hpvm.launch(root, tuple(args), target=target))
    finally:
        hpvm.cleanup()


def unprepared_plan(root: Any) -> Any:
    """``root``'s graph plan without the inference-time rewrites of prepared layers (what
    the WrapperAPI's layer calls alone make of it): the reference the rewrites must match."""
    from hpvm.backends.tensor.backend import _runtime
    from hpvm.backends.tensor.plan import compile_graph

    return compile_graph(root, _runtime(), prepare=False)


def run_unprepared(root: Any, args: Sequence[Any]) -> tuple[Any, ...]:
    """Run ``unprepared_plan(root)`` on ``args`` (NumPy arrays and scalars); NumPy outputs."""
    import torch

    with torch.inference_mode():
        inputs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
        outputs = unprepared_plan(root).run(*inputs)
        return tuple(o.numpy() if isinstance(o, torch.Tensor) else o for o in outputs)
