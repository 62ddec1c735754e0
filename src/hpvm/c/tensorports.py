"""Tensor ports: the ``void *`` ports of an HPVM-C graph that carry tensors, typed as such.

Why. HPVM-C passes a tensor as ``(void *t, size_t bytes)``, which the importer reads as a
byte array ``u8[:]`` like any other buffer. A tensor operation needs the tensor's shape,
which lives in the tensor runtime (``struct Tensor``), not in the port. So after import,
every port that reaches a tensor operand — a tensor leaf's parameter passed to an
operation, its results, and the internal nodes' ports bound to them up to the root — is
retyped ``f32[:, :, :, :]`` (HPVM's tensors are 4-D NCHW float tensors), and the host side
passes the runtime's NumPy array for it (``tensorrt.py``). The LLVM text is untouched: a
rank-4 port would take six LLVM arguments where HPVM-C passes two.
"""

from __future__ import annotations

from ..ir.bodies import TensorBody
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction, Param
from ..ir.tensorops import OPS
from ..ir.types import ArrayType, PortType, ScalarType
from .errors import HPVMCError

TENSOR = ArrayType(ScalarType("f32"), 4)


def is_tensor(t: PortType) -> bool:
    return t == TENSOR


def _retype(fn: NodeFunction, index: int) -> None:
    p = fn.params[index]
    if not is_tensor(p.type):
        fn.params[index] = Param(p.name, TENSOR, p.layout)


def type_tensor_ports(root: InternalFunction, file: str) -> bool:
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
            _type_internal(fn, file)
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
                _retype(fn, operand.value)
    for k, operand in enumerate(body.returns):
        if operand.kind == "local" or (operand.kind == "param" and is_tensor(fn.params[operand.value].type)):
            fn.outputs[k] = TENSOR


def _type_internal(fn: InternalFunction, file: str) -> None:
    """A parent port bound to a child's tensor port is a tensor port; an edge from a tensor
    output must end at a tensor input (and the other way round)."""
    for b in fn.graph.in_binds:
        if is_tensor(b.dst.function.params[b.ic].type):
            _retype(fn, b.ip)
    for b in fn.graph.in_binds:
        parent, child = fn.params[b.ip].type, b.dst.function.params[b.ic].type
        if is_tensor(parent) != is_tensor(child):
            raise HPVMCError(
                f"{b.location}: {fn.name}'s parameter {fn.params[b.ip].name} is bound to a tensor "
                f"operand and to {b.dst.function.name}'s {b.dst.function.params[b.ic].name}, which a "
                "leaf reads as plain memory; pass tensors only to tensor leaves (hpvm does not "
                "convert between a tensor and a buffer)"
            )
    for e in fn.graph.edges:
        src, dst = e.src.function.out_types[e.sp], e.dst.function.params[e.dp].type
        if is_tensor(src) != is_tensor(dst):
            raise HPVMCError(
                f"{e.location}: the edge from output {e.sp} of {e.src.function.name} to "
                f"{e.dst.function.name}'s {e.dst.function.params[e.dp].name} joins a tensor and plain "
                "memory; a tensor leaf's results go to tensor leaves (hpvm does not convert)"
            )


__all__ = ["TENSOR", "is_tensor", "type_tensor_ports"]
