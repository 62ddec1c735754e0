"""Inference-time rewrites of a generated graph function, across node boundaries.

``plan`` first lists a graph's runtime calls as ``Instr``s (one per WrapperAPI step of each
leaf, one per internal child graph), then rewrites the list, then renders it as Python.
The rewrites see the whole graph as straight-line code, so they apply whether the
operations sit in one fused node or in a chain of single-operation nodes:

- ``fold_layers`` (root graph only): a convolution whose weight is a root parameter, with
  what follows it in a chain — ``add`` of a 1-D root parameter (the bias), ``batchnorm``
  with root-parameter statistics and a constant epsilon, an activation with constant
  bounds, a pooling with constant sizes, each optional, in this order, and before the
  activation an ``add`` of any other tensor (a residual connection) — becomes one
  ``prepared.Prepared`` call (batch-norm folded into the weights, one oneDNN call with the
  residual add and the activation as post-ops); so does a ``mul`` by a 2-D root parameter with an optional bias
  ``add`` and activation (one ``F.linear`` on the transposed weight). A chain continues only through a value that the next
  operation reads as its first operand and that nothing else reads (no other operation, no
  graph output): only then does computing the last value alone keep the graph's meaning.
- ``in_place``: an activation or ``add`` whose first operand is a tensor made by an earlier
  step of the same function and read by nothing else runs in place on it (``relu_``…),
  sparing an allocation and a pass over memory. Graph inputs and the results of child
  graphs (which may be a graph's input passed through) are never written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...ir.tensorops import ACTIVATIONS, POOLINGS, defaulted
from .prepared import Prepared, Spec


@dataclass(frozen=True)
class Val:
    """An expression of generated code: a graph input (``index``), a tensor an earlier step
    made (``var``: a fresh tensor no one else holds), another value (``other``: a child
    graph's result) or a constant (``value``)."""

    text: str
    kind: str
    index: int = -1
    value: Any = None


@dataclass
class Instr:
    """One runtime call: ``results = callee(args)``; ``op`` is the step's name (``None`` for
    a child graph's call), ``line`` the leaf's line for the comment."""

    results: list[str]
    callee: str
    args: list[Val]
    op: str | None = None
    line: int | None = None
    ops: tuple[str, ...] = field(default=())  # the operations the call performs


@dataclass
class Comment:
    text: str


Item = Instr | Comment
Bind = Callable[[str, Any], str]  # (key, value) -> the key, bound in the generated code's globals

_VERSIONS = Val("_v", "other")  # the generated root function's weight-version parameter


def use_counts(items: Sequence[Item], outputs: Sequence[str]) -> dict[str, int]:
    """How often each expression is read (a graph output counts as a read)."""
    counts: dict[str, int] = {}
    for text in [a.text for i in items if isinstance(i, Instr) for a in i.args] + list(outputs):
        counts[text] = counts.get(text, 0) + 1
    return counts


def fold_layers(
    items: list[Item], outputs: Sequence[str], param_ranks: Sequence[int | None], bind: Bind
) -> tuple[list[Item], list[int]]:
    """``items`` with convolution and dense chains as ``Prepared`` calls (module
    docstring), and the root parameters those calls derive weights from (sorted)."""
    uses = use_counts(items, outputs)
    readers = {a.text: k for k, i in enumerate(items) if isinstance(i, Instr) for a in i.args[:1]}
    items = list(items)
    weights: set[int] = set()
    for k, item in enumerate(items):
        if not isinstance(item, Instr):
            continue
        start = _start(item, param_ranks)
        if start is None:
            continue
        fields, arrays, other, stage = start  # other: a residual add's other operand
        last, ops = k, list(item.ops)
        while len(items[last].results) == 1 and uses.get(items[last].results[0], 0) == 1:
            nxt_k = readers.get(items[last].results[0])
            nxt = items[nxt_k] if nxt_k is not None else None
            step = _absorb(nxt, stage, fields, arrays, other, param_ranks) if isinstance(nxt, Instr) else None
            if step is None:
                break
            stage = step
            assert isinstance(nxt, Instr) and nxt_k is not None
            ops += nxt.ops
            items[last] = Comment(f"# (its {items[last].op} is in the prepared call below)")  # type: ignore[union-attr]
            last = nxt_k
        spec = Spec(**fields, residual=bool(other), ops=tuple(ops))
        callee = bind(f"_{spec.kind}{k}", Prepared(spec))
        result = items[last].results  # type: ignore[union-attr]
        items[last] = Instr(
            result, callee, [item.args[0], *arrays, *other, _VERSIONS], "prepared", item.line, spec.ops
        )
        weights.update(a.index for a in arrays)
    return items, sorted(weights)


def _is_input(v: Val, ranks: Sequence[int | None], rank: int) -> bool:
    return v.kind == "input" and 0 <= v.index < len(ranks) and ranks[v.index] == rank


def _consts(vals: Sequence[Val]) -> bool:
    return all(v.kind == "const" for v in vals)


def _start(
    item: Instr, ranks: Sequence[int | None]
) -> tuple[dict[str, Any], list[Val], list[Val], int] | None:
    """The chain a convolution or dense step starts: (spec fields, array operands, the
    residual operand if any, stage
    reached: 1 bias, 2 batchnorm, 3 residual add, 4 activation, 5 pooling), or ``None`` when it cannot be
    prepared (a weight that is not a root parameter, a scalar that is not a constant)."""
    args = item.args
    fields: dict[str, Any] = dict(bias=False, batchnorm=None, activation=None, lo=0.0, hi=0.0, pool=None)
    if item.op in ("mul", "fc_layer"):  # fc_layer(x, w, b, activation, lo, hi)
        if not _is_input(args[1], ranks, 2):
            return None
        if item.op == "mul":
            return dict(fields, kind="linear"), [args[1]], [], 0
        if not _is_input(args[2], ranks, 1) or not _consts(args[3:]):
            return None
        fields.update(kind="linear", bias=True, activation=args[3].value, lo=args[4].value, hi=args[5].value)
        return fields, [args[1], args[2]], [], 4 if args[3].value is not None else 1
    if item.op not in ("convolution", "group_convolution", "conv_layer"):
        return None
    if not _is_input(args[1], ranks, 4) or not _consts(args[2:6]):
        return None
    fields.update(
        kind="conv", vpad=args[2].value, hpad=args[3].value, vstride=args[4].value, hstride=args[5].value
    )
    arrays = [args[1]]
    if item.op == "group_convolution":
        if not _consts(args[6:7]):
            return None
        fields["groups"] = args[6].value
        return fields, arrays, [], 0
    if item.op == "convolution":
        return fields, arrays, [], 0
    # conv_layer(x, w, vpad, hpad, vstride, hstride, b, activation, lo, hi, pool, wh, ww, ...):
    # b is the bias (a 1-D root array, or a 4-D one in HPVM's (1, K, 1, 1) layout: checked
    # per call, ``_absorb``) or, any other tensor, a residual operand
    if not _consts(args[7:]):
        return None
    fields.update(activation=args[7].value, lo=args[8].value, hi=args[9].value)
    other = []
    if _is_input(args[6], ranks, 1):
        fields["bias"] = True
        arrays.append(args[6])
    elif _is_input(args[6], ranks, 4):
        fields.update(bias=True, channel_bias=True)
        arrays.append(args[6])
    else:
        other.append(args[6])
    stage = 4 if args[7].value is not None else (3 if other else 1)
    if args[10].value is not None:
        fields["pool"] = tuple(a.value for a in args[10:17])
        stage = 5
    return fields, arrays, other, stage


def _absorb(
    nxt: Instr,
    stage: int,
    fields: dict[str, Any],
    arrays: list[Val],
    other: list[Val],
    ranks: Sequence[int | None],
) -> int | None:
    """Take the operation ``nxt`` into the chain (updating ``fields``, ``arrays`` and
    ``other``); the new stage, or ``None`` when it does not continue the chain."""
    args, conv = nxt.args, fields["kind"] == "conv"
    if nxt.op == "add" and stage < 1 and _is_input(args[1], ranks, 1):
        fields["bias"] = True
        arrays.append(args[1])
        return 1
    if nxt.op == "add" and conv and stage < 1 and _is_input(args[1], ranks, 4):
        # HPVM's bias layout, (1, K, 1, 1): a bias when it has that shape, which the call
        # checks (``Spec.channel_bias``); the chain then runs unfolded
        fields.update(bias=True, channel_bias=True)
        arrays.append(args[1])
        return 1
    if nxt.op == "batchnorm" and conv and stage < 2 and all(_is_input(a, ranks, 1) for a in args[1:5]):
        if not _consts(args[5:6]):
            return None
        fields["batchnorm"] = float(args[5].value)
        arrays.extend(args[1:5])
        return 2
    if nxt.op == "add" and conv and stage < 3 and args[1].kind != "const":  # a residual add
        other.append(args[1])
        return 3
    if nxt.op in ACTIVATIONS and stage < 4 and _consts(args[1:]):
        fields["activation"] = nxt.op
        if nxt.op == "clipped_relu":
            lo, hi = (*(a.value for a in args[1:3]), *defaulted("clipped_relu", args))
            fields.update(lo=float(lo), hi=float(hi))
        return 4
    if nxt.op in POOLINGS and conv and stage < 5 and _consts(args[1:]):
        fields["pool"] = (nxt.op, *(a.value for a in args[1:]))
        return 5
    return None


_IN_PLACE_OPS = {"relu": "relu_", "tanh": "tanh_", "sigmoid": "sigmoid_", "clipped_relu": "clipped_relu_", "add": "add_"}  # fmt: skip


def in_place(items: list[Item], outputs: Sequence[str], runtime: dict[str, Any], bind: Bind) -> list[Item]:
    """``items`` with activations and adds on otherwise unread fresh tensors in place."""
    uses = use_counts(items, outputs)
    out: list[Item] = []
    for item in items:
        if (
            isinstance(item, Instr)
            and item.op in _IN_PLACE_OPS
            and item.args[0].kind == "var"
            and uses.get(item.args[0].text) == 1
        ):
            name = _IN_PLACE_OPS[item.op]
            item = Instr(item.results, bind(f"_{name}", runtime[name]), item.args, name, item.line, item.ops)
        out.append(item)
    return out


__all__ = ["Comment", "Instr", "Item", "Val", "fold_layers", "in_place", "use_counts"]
