"""``hpvm.tensor.from_torch``: a PyTorch model imported into a tensor DFG, then fused.

HPVM's frontends (Keras, PyTorch) map each tensor operation of a network to its own leaf
node and let FuseHPVMTensorNodes (seed 001) merge the patterns it knows. This module does
the same for a ``torch.nn.Module``:

1. ``torch.fx.symbolic_trace`` turns the model (in eval mode) into a graph of layer calls,
   and ``ShapeProp`` runs it once on the example input to learn every tensor's shape.
2. ``translate.py`` walks that graph and ``layers.py`` turns each supported layer into zero,
   one or two tensor operations, written to an ``oplist.OpList`` (a Conv2d with a bias is a
   ``convolution`` and an ``add``, a Linear a ``mul`` by the transposed weight and an
   ``add``, a Flatten before a Linear nothing), which checks every operation's result shape
   against PyTorch's.
3. Each operation becomes a ``TENSOR_TARGET`` leaf with real Python source (one generated
   module, registered with ``linecache``), so it prints, saves and runs on ``interp`` like
   a hand-written leaf; the root binds its input and one array parameter per weight.
4. ``hpvm.tensor.fuse`` fuses the root. ``TensorProgram`` holds both roots and the weights.

Anything the tensor path cannot express raises ``UnsupportedLayerError`` naming the layer
(its fx node and module type) and the argument; a model that cannot be imported at all
(it does not trace, more than one input, a non-float32 weight) raises ``ModelImportError``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import UNKNOWN_LOCATION, ModelImportError
from ..ir.bodies import OpCall, Operand
from ..ir.graph import (
    TENSOR_TARGET,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
)
from ..ir.types import ArrayType, f32
from .imported import TensorProgram
from .leaves import make_tensor_leaf
from .translate import TensorOp, Translator, Weight, identifier


def from_torch(model: Any, example_input: Any, name: str | None = None, fuse: bool = True) -> TensorProgram:
    """Import ``model`` (a ``torch.nn.Module``) as an HPVM tensor program; fuse it.

    ``example_input`` is one input batch (a float32 torch tensor or NumPy array); it fixes
    the shapes the graph is checked and typed with (the batch size may differ later).
    ``name`` names the root (default: the model's class name, lower case). With
    ``fuse=False`` the program runs the unfused graph (``program.root is program.unfused_root``).
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ModelImportError(f"from_torch() imports a torch.nn.Module, not {type(model).__name__}")
    example = _example_tensor(example_input)
    root_name = identifier(name or type(model).__name__.lower(), "model")
    traced = _trace(model, example)
    translator = Translator(traced, model)
    ops = translator.run()
    unfused = _build_root(root_name, translator.input_param, translator.input_shape, ops, translator.weights)
    root = unfused
    if fuse:
        from . import fuse as fuse_graph

        root = fuse_graph(unfused)
    weights = [w.array for w in translator.weights]
    return TensorProgram(
        root=root,
        unfused_root=unfused,
        weights=weights,
        input_shape=tuple(example.shape),
        output_shape=ops[-1].shape,
        model_name=type(model).__name__,
        example_input=example.numpy().copy(),
    )


# ---------------------------------------------------------------------------------------
# Tracing


def _example_tensor(example_input: Any) -> Any:
    import torch

    if isinstance(example_input, np.ndarray):
        example_input = torch.from_numpy(example_input)
    if not isinstance(example_input, torch.Tensor):
        raise ModelImportError(
            f"from_torch(): example_input must be a torch.Tensor or NumPy array (one input batch), "
            f"not {type(example_input).__name__}"
        )
    if example_input.dtype != torch.float32:
        raise ModelImportError(
            f"from_torch(): example_input is {example_input.dtype}; the tensor path computes in "
            "float32 — pass example_input.float()"
        )
    if example_input.dim() < 2:
        raise ModelImportError(
            f"from_torch(): example_input has shape {tuple(example_input.shape)}; give a batch "
            "(N, C, H, W) for images or (N, features)"
        )
    return example_input.detach().cpu()


def _trace(model: Any, example: Any) -> Any:
    """The model as a ``torch.fx.GraphModule`` (traced in eval mode) with shapes propagated."""
    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    for pname, tensor in itertools.chain(model.named_parameters(), model.named_buffers()):
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            raise ModelImportError(
                f"from_torch(): the model's '{pname}' is {tensor.dtype}; the tensor path computes "
                "in float32 — convert the model with model.float()"
            )
    was_training = model.training
    model.eval()
    try:
        try:
            traced = torch.fx.symbolic_trace(model)
        except Exception as e:
            raise ModelImportError(
                f"from_torch(): torch.fx cannot trace {type(model).__name__} ({type(e).__name__}: {e}); "
                "the model's forward must not branch on tensor values"
            ) from e
        placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != 1:
            raise ModelImportError(
                f"from_torch(): {type(model).__name__}.forward takes {len(placeholders)} inputs "
                f"({', '.join(n.name for n in placeholders)}); the tensor path imports models with one input tensor"
            )
        try:
            with torch.no_grad():
                ShapeProp(traced).propagate(example)
        except Exception as e:
            raise ModelImportError(
                f"from_torch(): running {type(model).__name__} on the example input of shape "
                f"{tuple(example.shape)} failed ({type(e).__name__}: {e}); pass an input the model accepts"
            ) from e
    finally:
        model.train(was_training)
    return traced


# ---------------------------------------------------------------------------------------
# Building the DFG: one TENSOR_TARGET leaf per operation, each with a tensor body


def _build_root(
    name: str, input_param: str, input_shape: tuple[int, ...], ops: list[TensorOp], weights: list[Weight]
) -> InternalFunction:
    """The root: input and weights as parameters, one leaf node per operation.

    An edge's source port is unique in a child graph (seed 000), so an operation whose
    result several operations use (a residual connection) returns it once per use: output
    ``k`` feeds its ``k``-th user, the root's output bind counting as a user.
    """
    users: dict[str, list[tuple[str, int]]] = {op.name: [] for op in ops}  # producer -> (user, port)
    for op in ops:
        for port, value in enumerate(op.inputs):
            if value.producer is not None:
                users[value.producer].append((op.name, port))
    users[ops[-1].name].append(("", 0))  # the root's output
    outputs = {op.name: max(1, len(users[op.name])) for op in ops}

    root_params = [Param(input_param, ArrayType(f32, len(input_shape)))]
    root_params += [Param(w.param, ArrayType(f32, w.array.ndim)) for w in weights]
    index = {p.name: i for i, p in enumerate(root_params)}
    graph = ChildGraph()
    nodes: dict[str, Node] = {}
    for op in ops:
        leaf = _leaf(op, outputs[op.name])
        node = Node(op.name, leaf, (), leaf.location)
        graph.nodes.append(node)
        nodes[op.name] = node
    for op in ops:
        node = nodes[op.name]
        for port, value in enumerate(op.inputs):
            if value.producer is None:
                graph.in_binds.append(InputBind(index[input_param], node, port))
            else:
                sp = users[value.producer].index((op.name, port))
                graph.edges.append(Edge(nodes[value.producer], sp, node, port))
        for port, (_, weight) in enumerate(op.weights, start=len(op.inputs)):
            graph.in_binds.append(InputBind(index[weight.param], node, port))
    last_op = ops[-1].name
    graph.out_binds.append(OutputBind(nodes[last_op], users[last_op].index(("", 0)), 0))
    return InternalFunction(name, root_params, graph=graph, hint=TENSOR_TARGET, location=UNKNOWN_LOCATION)


def _leaf(op: TensorOp, outputs: int) -> LeafFunction:
    """The leaf of one operation: ``op(inputs..., weights..., constants...)`` returned once
    per user (edges leave distinct ports)."""
    params = [Param(n, ArrayType(f32, len(v.shape))) for n, v in zip(op.input_names, op.inputs)]
    params += [Param(role, ArrayType(f32, w.array.ndim)) for role, w in op.weights]
    args = [Operand("param", i) for i in range(len(params))]
    args += [Operand("const", _constant(c)) for c in op.constants]
    call = OpCall(op.op, tuple(args))
    leaf = make_tensor_leaf(
        op.name,
        params,
        [ArrayType(f32, len(op.shape))] * outputs,
        [call],
        [Operand("local", 0)] * outputs,
        TENSOR_TARGET,
    )
    leaf.__doc__ = op.origin
    return leaf


def _constant(value: Any) -> Any:
    """A constant argument as the operation takes it: floats as floats, the rest as ints."""
    return float(value) if isinstance(value, float) else int(value)
