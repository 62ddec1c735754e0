"""Tensor ports: the ``void *`` ports of an HPVM-C graph that carry tensors, typed as such.

Why. HPVM-C passes a tensor as ``(void *t, size_t bytes)``, which the importer reads as a
byte array ``u8[:]`` like any other buffer. A tensor operation needs the tensor's shape,
which lives in the tensor runtime (``struct Tensor``), not in the port. So after import,
every port that reaches a tensor operand — a tensor leaf's parameter passed to an
operation, its results, and the internal nodes' ports bound to them up to the root — is
retyped ``f32[:, :, :, :]`` (HPVM's tensors are 4-D NCHW float tensors), and the host side
passes the runtime's NumPy array for it (``tensorrt.py``). The exception: batchnorm's
per-channel operands (gamma, beta, mean, variance), which are (1, C, 1, 1) tensors in HPVM
and (C,) arrays in hpvm's ``batchnorm``: their ports are ``f32[:]``, and the host passes
the (C,) view of the tensor. The LLVM text is untouched: a
rank-4 port would take six LLVM arguments where HPVM-C passes two.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.bodies import TensorBody
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction, Param
from ..ir.tensorops import OPS
from ..ir.types import ArrayType, PortType, ScalarType
from .errors import HPVMCError

TENSOR = ArrayType(ScalarType("f32"), 4)
CHANNELS = ArrayType(ScalarType("f32"), 1)
#: (operation, operand) → the port type of a parameter passed there, when not ``TENSOR``.
_OPERAND_TYPES = {("batchnorm", k): CHANNELS for k in (1, 2, 3, 4)}


def is_tensor(t: PortType) -> bool:
    """A tensor port: the C front end's other arrays are all byte arrays ``u8[:]``."""
    return t in (TENSOR, CHANNELS)


def _retype(fn: NodeFunction, index: int, want: PortType, where: str) -> None:
    p = fn.params[index]
    if is_tensor(p.type) and p.type != want:
        raise HPVMCError(
            f"{where}: {fn.name}'s parameter {p.name} is passed both as a (1, C, 1, 1) "
            "per-channel operand of batchnorm and as a 4-D tensor; pass two tensors"
        )
    if p.type != want:
        fn.params[index] = Param(p.name, want, p.layout)


#: ``locate(call, node, other)``: ``file:line`` of the first ``llvm.hpvm.<call>`` on child
#: ``node`` (an edge: from ``node`` to ``other``), for the errors.
Locate = Callable[[str, str, str | None], str]


def type_tensor_ports(root: InternalFunction, locate: Locate) -> bool:
    """Retype the tensor ports of ``root``'s graph in place; whether it has tensor leaves."""
    seen: dict[int, bool] = {}

    def visit(fn: NodeFunction) -> bool:
        if id(fn) in seen:
            return seen[id(fn)]
        found = False
        if isinstance(fn, LeafFunction):
            if isinstance(fn.body, TensorBody):
                found = True
                _type_leaf(fn)
        elif isinstance(fn, InternalFunction):
            for node in fn.graph.nodes:
                found = visit(node.function) or found
            _type_internal(fn, locate)
        seen[id(fn)] = found
        return found

    return visit(root)


def _type_leaf(fn: LeafFunction) -> None:
    body = fn.body
    assert isinstance(body, TensorBody)
    for call in body.calls:
        for k in OPS[call.op].tensors:
            operand = call.args[k]
            if operand.kind == "param":
                want = _OPERAND_TYPES.get((call.op, k), TENSOR)
                _retype(fn, operand.value, want, str(fn.location))
    for k, operand in enumerate(body.returns):
        if operand.kind == "local":
            fn.outputs[k] = TENSOR
        elif operand.kind == "param" and is_tensor(fn.params[operand.value].type):
            fn.outputs[k] = fn.params[operand.value].type


def _type_internal(fn: InternalFunction, locate: Locate) -> None:
    """A parent port bound to a child's tensor port is a tensor port; an edge from a tensor
    output must end at a tensor input (and the other way round)."""
    for b in fn.graph.in_binds:
        child = b.dst.function.params[b.ic].type
        if is_tensor(child):
            _retype(fn, b.ip, child, locate("bind.input", b.dst.name, None))
    for b in fn.graph.in_binds:
        parent, child = fn.params[b.ip].type, b.dst.function.params[b.ic].type
        if is_tensor(parent) != is_tensor(child):
            raise HPVMCError(
                f"{locate('bind.input', b.dst.name, None)}: {fn.name}'s parameter {fn.params[b.ip].name} is bound to a tensor "
                f"operand and to {b.dst.function.name}'s {b.dst.function.params[b.ic].name}, which a "
                "leaf reads as plain memory; pass tensors only to tensor leaves (hpvm does not "
                "convert between a tensor and a buffer)"
            )
    for e in fn.graph.edges:
        src, dst = e.src.function.out_types[e.sp], e.dst.function.params[e.dp].type
        if is_tensor(src) != is_tensor(dst):
            raise HPVMCError(
                f"{locate('createEdge', e.src.name, e.dst.name)}: the edge from output {e.sp} of {e.src.function.name} to "
                f"{e.dst.function.name}'s {e.dst.function.params[e.dp].name} joins a tensor and plain "
                "memory; a tensor leaf's results go to tensor leaves (hpvm does not convert)"
            )


__all__ = ["TENSOR", "is_tensor", "type_tensor_ports"]
