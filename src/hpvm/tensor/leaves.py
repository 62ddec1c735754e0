"""Tensor leaves in the front end: making one from operations, and reading one.

``make_tensor_leaf`` makes a leaf whose body is a ``TensorBody`` (``ir/bodies``): the
operations themselves, no Python source to render and re-parse. It prints (with its body),
saves, shows and runs on ``interp`` and ``tensor`` like a leaf written by hand. Reading a
leaf as operations (``parse_tensor_leaf``) and writing one as Python (``render_leaf``) are
IR analyses (``hpvm.ir.tensorops.body``), re-exported here for the front end's users.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import SourceLocation
from ..ir.bodies import OpCall, Operand, TensorBody, const_text
from ..ir.graph import LeafFunction, Param
from ..ir.tensorops.body import (
    NotATensorLeaf,
    TensorLeaf,
    annotation,
    parse_tensor_leaf,
    python_name,
    render_leaf,
)
from ..ir.types import ArrayType, PortType


def make_tensor_leaf(
    name: str,
    params: Sequence[Param],
    outputs: Sequence[PortType],
    calls: Sequence[OpCall],
    returns: Sequence[Operand],
    hint: str | None,
    location: SourceLocation | None = None,
) -> LeafFunction:
    """A new leaf with a ``TensorBody``: every array parameter is read (``ins``), none written.

    ``location`` says where the operations came from (the model or the fused nodes); by
    default the leaf's rendered Python, which ``source`` gives and error messages quote.
    """
    name = python_name(name)
    body = TensorBody(tuple(calls), tuple(returns))
    arrays = tuple(p.name for p in params if isinstance(p.type, ArrayType))
    leaf = LeafFunction(
        None,
        name,
        list(params),
        list(outputs),
        hint=hint,
        ins=arrays,
        location=location or SourceLocation(f"<hpvm tensor leaf {name}>", 1),
        body=body,
    )
    if location is None:  # point at the rendered Python that runs it (its own file name)
        leaf.location = SourceLocation(leaf.pyfunc.__code__.co_filename, 1)
    return leaf


__all__ = [
    "NotATensorLeaf",
    "OpCall",
    "Operand",
    "TensorLeaf",
    "annotation",
    "const_text",
    "make_tensor_leaf",
    "parse_tensor_leaf",
    "python_name",
    "render_leaf",
]
