"""Tensor ports: the ``void *`` / ``i8*`` ports of an HPVM graph that carry tensors, typed as such.

Why. HPVM-C passes a tensor as ``(void *t, size_t bytes)``, and HPVM's own IR (GenHPVM's
output of its DNN benchmarks) as an ``(i8*, i64)`` pair, which the importer reads as a
byte array ``u8[:]`` like any other buffer. A tensor operation needs the tensor's shape,
which lives in the tensor runtime (``struct Tensor``), not in the port. So after import,
every port that reaches a tensor operand — a tensor leaf's parameter passed to an
operation, its results, the internal nodes' ports bound to them up to the root — is retyped
as a float32 array, and the host side passes the runtime's NumPy array for it
(HPVM-C: ``c/tensorrt.py``). Both front ends type them: the C front end with its own
messages (``HPVMCError`` at ``.c`` lines), ``llvm.from_hpvm_ir`` for HPVM IR whose tensor
leaves take byte arrays (``LLVMImportError`` at lines of the text). The LLVM text is untouched: a rank-4 port would take six LLVM arguments
where HPVM-C passes two.

HPVM's tensors are all 4-D (NCHW); hpvm's operations take some operands with fewer
dimensions, so a port's rank is what its use needs (the host passes a view of the 4-D
tensor; ``tensorrt.TensorRuntime.launch_value``):

- ``f32[:, :, :, :]`` (``TENSOR``): images, filters, and anything without a rule below;
- ``f32[:, :]`` (``MATRIX``): ``mul``'s weights, HPVM's (1, 1, K, M) → (K, M);
- ``f32[:]`` (``CHANNELS``): batchnorm's gamma, beta, mean and variance, and the bias
  added to a 2-D ``mul`` result: HPVM's (1, C, 1, 1) → (C,).

A ``mul`` result is 2-D, (N, M), and so is what is computed from it; such a port fed by an
edge keeps that type. A root output of rank 2 or 1 reaches C as HPVM's 4-D shape,
(N, M, 1, 1) or (1, C, 1, 1).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import HPVMError
from ..ir.bodies import Operand, TensorBody
from ..ir.graph import Edge, InternalFunction, LeafFunction, NodeFunction, Param
from ..ir.tensorops import OPS
from ..ir.types import ArrayType, PortType, ScalarType
from ..ir.verify import topological_order

TENSOR = ArrayType(ScalarType("f32"), 4)
MATRIX = ArrayType(ScalarType("f32"), 2)
CHANNELS = ArrayType(ScalarType("f32"), 1)
_FOUR_D = frozenset({"convolution", "group_convolution", "pool_max", "pool_min", "pool_mean"})

#: ``locate(call, node, other)``: ``file:line`` of the first ``llvm.hpvm.<call>`` on child
#: ``node`` (an edge: from ``node`` to ``other``), for the errors.
Locate = Callable[[str, str, str | None], str]


def is_tensor(t: PortType) -> bool:
    """A tensor port: the C front end's other arrays are all byte arrays ``u8[:]``."""
    return t in (TENSOR, MATRIX, CHANNELS)


def _name(t: PortType) -> str:
    return {TENSOR: "a 4-D tensor", MATRIX: "a 2-D (K, M) matrix", CHANNELS: "a (C,) vector"}.get(t, str(t))


def type_tensor_ports(root: InternalFunction, locate: Locate, error: type[HPVMError]) -> bool:
    """Retype the tensor ports of ``root``'s graph in place; whether it has tensor leaves.
    ``error``: the front end's class for a misuse (``HPVMCError``, ``LLVMImportError``)."""
    typer = _Typer(locate, error)
    typer.internal(root, [None] * len(root.params))
    return typer.found


def _demand(op: str, k: int, x: PortType) -> PortType | None:
    """The type operand ``k`` of ``op`` needs (``x``: its first operand's type); ``None``
    where it takes what it is given."""
    if op in _FOUR_D:
        return TENSOR
    if op == "mul":
        return MATRIX if k == 1 else None
    if op == "batchnorm":
        return CHANNELS if k >= 1 else None
    if op == "add" and k == 1:
        return CHANNELS if x == MATRIX else TENSOR
    return None


class _Typer:
    """Types a graph from the root down: a node's inputs are typed before it is, in
    topological order, and a parent's ports take the types their children's ports chose."""

    def __init__(self, locate: Locate, error: type[HPVMError]):
        self.locate = locate
        self.error = error
        self.found = False

    def visit(self, fn: NodeFunction, feeds: list[PortType | None]) -> None:
        if isinstance(fn, LeafFunction):
            if isinstance(fn.body, TensorBody):
                self.found = True
                self.leaf(fn, fn.body, feeds)
        elif isinstance(fn, InternalFunction):
            self.internal(fn, feeds)

    def internal(self, fn: InternalFunction, feeds: list[PortType | None]) -> None:
        """``feeds[i]``: the tensor type an edge above delivers to parameter ``i``, else ``None``."""
        graph = fn.graph
        for node in topological_order(graph):
            child = node.function
            child_feeds: list[PortType | None] = [None] * len(child.params)
            for b in graph.in_binds:
                if b.dst is node:
                    child_feeds[b.ic] = feeds[b.ip]
            for e in graph.edges:
                if e.dst is node:
                    src = e.src.function.out_types[e.sp]
                    child_feeds[e.dp] = src if is_tensor(src) else None
            self.visit(child, child_feeds)
            for b in graph.in_binds:
                if b.dst is node and is_tensor(child.params[b.ic].type):
                    where = self.locate("bind.input", node.name, None)
                    _retype(fn, b.ip, child.params[b.ic].type, where, self.error)
            for e in graph.edges:
                if e.dst is node:
                    self.check_edge(fn, e)
        for b in graph.in_binds:
            parent, child_type = fn.params[b.ip].type, b.dst.function.params[b.ic].type
            if is_tensor(parent) and not is_tensor(child_type):
                raise self.error(
                    f"{self.locate('bind.input', b.dst.name, None)}: {fn.name}'s parameter "
                    f"{fn.params[b.ip].name} is bound to a tensor operand and to "
                    f"{b.dst.function.name}'s {b.dst.function.params[b.ic].name}, which a leaf reads as "
                    "plain memory; pass tensors only to tensor leaves (hpvm does not convert between "
                    "a tensor and a buffer)"
                )

    def check_edge(self, fn: InternalFunction, e: Edge) -> None:
        src = e.src.function.out_types[e.sp]
        dst = e.dst.function.params[e.dp]
        where = self.locate("createEdge", e.src.name, e.dst.name)
        if is_tensor(src) != is_tensor(dst.type):
            raise self.error(
                f"{where}: the edge from output {e.sp} of {e.src.function.name} to "
                f"{e.dst.function.name}'s {dst.name} joins a tensor and plain memory; a tensor "
                "leaf's results go to tensor leaves (hpvm does not convert)"
            )
        if src != dst.type:
            raise self.error(
                f"{where}: the edge from {e.src.function.name} carries {_name(src)}, but "
                f"{e.dst.function.name} uses its {dst.name} as {_name(dst.type)}"
            )

    def leaf(self, fn: LeafFunction, body: TensorBody, feeds: list[PortType | None]) -> None:
        local: list[PortType] = []

        def type_of(op: str, operand: Operand, demand: PortType | None) -> PortType:
            kind, value = operand.kind, operand.value
            if kind == "local":
                have = local[value]
            else:
                have = feeds[value] or demand or TENSOR
                _retype(fn, value, have, str(fn.location), self.error)
            if demand is not None and have != demand:
                raise self.error(
                    f"{fn.location}: {fn.name} passes {_name(have)} where {op} takes {_name(demand)}"
                    + (" (a mul result is 2-D: (N, M))" if have == MATRIX else "")
                )
            return have

        for call in body.calls:
            op = call.op
            tensors = OPS[op].tensors
            x = type_of(op, call.args[tensors[0]], _demand(op, 0, TENSOR))
            for k in tensors[1:]:
                operand = call.args[k]
                demand = _demand(op, k, x)
                if operand.kind != "local" and feeds[operand.value] is not None:
                    demand = None if op == "add" else demand  # (an edge-fed addend: as given)
                type_of(op, operand, demand)
            local.append(TENSOR if op in _FOUR_D else MATRIX if op == "mul" else x)
        for k, operand in enumerate(body.returns):
            if operand.kind == "local":
                _check_sized(fn, fn.outputs[k], f"output {k}", str(fn.location), self.error)
                fn.outputs[k] = local[operand.value]
            elif operand.kind == "param" and is_tensor(fn.params[operand.value].type):
                fn.outputs[k] = fn.params[operand.value].type


def _check_sized(fn: NodeFunction, t: PortType, what: str, where: str, error: type[HPVMError]) -> None:
    """A tensor travels as a ``(void *, size_t)`` pair that is one port: a pointer that the
    program connects apart from its size (a ``u8[*]`` port) cannot carry one."""
    if isinstance(t, ArrayType) and not t.sized:
        raise error(
            f"{where}: {fn.name}'s {what} is a tensor whose pointer a bind or edge connects apart "
            "from its size (or that has no size after it); pass a tensor's (void *t, size_t bytes) "
            "pair together, each bind or edge of the pointer beside one of its size"
        )


def _retype(fn: NodeFunction, index: int, want: PortType, where: str, error: type[HPVMError]) -> None:
    p = fn.params[index]
    _check_sized(fn, p.type, f"parameter {p.name}", where, error)
    if is_tensor(p.type) and p.type != want:
        raise error(
            f"{where}: {fn.name}'s parameter {p.name} is used both as {_name(p.type)} and as "
            f"{_name(want)}; pass two tensors"
        )
    if p.type != want:
        fn.params[index] = Param(p.name, want, p.layout)


__all__ = ["CHANNELS", "MATRIX", "TENSOR", "is_tensor", "type_tensor_ports"]
