"""The tensor operations a translation (``translate.py``) produces, and the list it builds.

``OpList`` is what every layer handler (``layers.py``) writes to: the tensor each fx node
computed (``values``), the operations so far (``ops``: each checked against PyTorch's result
shape with the operation's own shape rules, so a layer the tensor path would get wrong is
refused with ``UnsupportedLayerError``), and the weights they use (one root parameter per
module tensor, shared when a module is called twice). Apart from the walk over the fx graph
so that the handlers depend on this and not on the walk.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HPVMError, UnsupportedLayerError

SHORT = {"convolution": "conv", "group_convolution": "group_conv"}  # in leaf names


@dataclass
class Value:
    """A tensor of the imported graph: the graph input (producer None) or an op's result.

    ``flat`` is set on the result of a Flatten: the same tensor as ``producer``'s result,
    seen as (N, K); only a Linear may use it (``mul`` flattens its input itself).
    """

    producer: str | None
    shape: tuple[int, ...]
    flat_by: str | None = None  # the fx node that flattened it


@dataclass
class Weight:
    """A root array parameter: a weight tensor bound into the nodes that use it."""

    param: str
    array: np.ndarray


@dataclass
class TensorOp:
    """One tensor operation: a leaf node ``name`` calling ``hpvm.tensor.<op>``.

    The call's arguments are the tensor ``inputs`` (values), then the ``weights`` (root
    parameters, by leaf parameter name), then the literal ``constants``.
    """

    name: str
    op: str
    inputs: list[Value]
    weights: list[tuple[str, Weight]]
    constants: tuple[Any, ...]
    shape: tuple[int, ...]
    origin: str  # the layer, for messages
    input_names: list[str] = field(default_factory=list)


class OpList:
    """The operations, weights and fx-node values of one translation (``modules``: the
    traced model's modules by name, for weight names)."""

    def __init__(self, modules: dict[str, Any]):
        self.modules = modules
        self.values: dict[Any, Value | None] = {}  # fx node -> tensor (None: not a tensor, e.g. size())
        self.ops: list[TensorOp] = []
        self.weights: list[Weight] = []
        self._weight_keys: dict[tuple[str, str], Weight] = {}
        self.names = Names({"hpvm"})
        self.param_names = Names(set())

    def prune(self, output: str) -> None:
        """Keep the operations the output depends on (a layer whose result nobody uses is
        dead code), and the weights they use; the output's operation is then the last."""
        needed = {output}
        for op in reversed(self.ops):
            if op.name in needed:
                needed.update(v.producer for v in op.inputs if v.producer is not None)
        self.ops = [op for op in self.ops if op.name in needed]
        used = {id(w) for op in self.ops for _, w in op.weights}
        self.weights = [w for w in self.weights if id(w) in used]

    def input(self, node: Any, where: str) -> Value:
        if len(node.args) != 1 or node.kwargs:
            raise UnsupportedLayerError(
                f"{where} is called with {len(node.args)} arguments; layers take one tensor"
            )
        return self.tensor(node.args[0], node, "input")

    def tensor(self, arg: Any, user: Any, role: str, allow_flat: bool = False) -> Value:
        value = self.values.get(arg) if hasattr(arg, "op") else None
        if value is None:
            raise UnsupportedLayerError(
                f"fx node '{user.name}': its {role} is {describe_arg(arg)}, not a tensor computed by the model"
            )
        if value.flat_by is not None and not allow_flat:
            self.flatten_misuse(value, f"fx node '{user.name}'")
        return value

    def flatten_misuse(self, value: Value, user: str) -> None:
        raise UnsupportedLayerError(
            f"the Flatten at fx node '{value.flat_by}' feeds {user}; the tensor path expresses Flatten "
            "only as the input of a Linear layer (HPVM's mul flattens its input) — put a Linear right after it"
        )

    def require_rank(self, x: Value, rank: int, where: str, role: str) -> None:
        if len(x.shape) != rank:
            raise UnsupportedLayerError(
                f"{where}: its {role} has shape {x.shape}; it takes a {rank}-D NCHW tensor"
            )

    def weight(self, module: Any, attr: str, role: str, tensor: Any, transpose: bool = False) -> Weight:
        """The root parameter holding ``module.<attr>`` (one per module and tensor, shared by reuses)."""
        target = next(name for name, m in self.modules.items() if m is module)
        key = (target or "model", attr)
        found = self._weight_keys.get(key)
        if found is None:
            array = tensor.detach().cpu().numpy().astype(np.float32, copy=True)
            if transpose:
                array = np.ascontiguousarray(array.T)
            param = self.param_names.take(identifier(f"{target}_{role}".replace(".", "_"), "w"))
            found = self._weight_keys[key] = Weight(param, array)
            self.weights.append(found)
        return found

    def emit(
        self,
        node: Any,
        op: str,
        inputs: list[Value],
        weights: list[tuple[str, Weight]],
        constants: tuple[Any, ...],
        where: str,
    ) -> Value:
        """Add one operation; check its result shape with the operation's own rules."""
        from .ops import Meta, infer

        name = self.names.take(identifier(f"{node.name}_{SHORT.get(op, op)}", "op"))
        metas: list[Any] = [Meta(v.shape, "float32") for v in inputs]
        metas += [Meta(w.array.shape, "float32") for _, w in weights]
        try:
            result = infer(op, [*metas, *constants]).shape
        except HPVMError as e:
            raise UnsupportedLayerError(f"{where}: the tensor path cannot express it: {e}") from None
        expected = shape(node)
        if tuple(result) != expected:  # every operation of a layer keeps the layer's result shape
            raise UnsupportedLayerError(
                f"{where}: as HPVM's {op} it would give shape {tuple(result)}, but PyTorch gives "
                f"{expected}; an argument of this layer is not supported by the tensor path"
            )
        input_names = ["x", "y"][: len(inputs)]
        self.ops.append(TensorOp(name, op, inputs, weights, constants, tuple(result), where, input_names))
        return Value(name, tuple(result))


def shape(node: Any) -> tuple[int, ...]:
    meta = node.meta.get("tensor_meta")
    shape = getattr(meta, "shape", None)
    if shape is None:
        raise UnsupportedLayerError(
            f"fx node '{node.name}' does not produce one tensor (it gives {type(meta).__name__}); "
            "the tensor path imports layers with one tensor result"
        )
    return tuple(int(s) for s in shape)


def describe_arg(arg: Any) -> str:
    if hasattr(arg, "op"):
        return f"fx node '{arg.name}' ({arg.op} {arg.target})"
    return f"the constant {arg!r}"


def identifier(text: str, fallback: str) -> str:
    name = re.sub(r"\W", "_", text)
    if not name or name[0].isdigit():
        name = f"{fallback}_{name}"
    if keyword.iskeyword(name):
        name += "_"
    return name


class Names:
    """Unique identifiers: a name already taken gets ``_1``, ``_2``…"""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def take(self, base: str) -> str:
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name
