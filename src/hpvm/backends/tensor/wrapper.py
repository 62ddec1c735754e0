"""DFG2LLVM_WrapperAPI (seed 001): inside one tensor leaf, pattern-matched operations become
one layer call.

``lower(leaf)`` turns a tensor leaf's operations into the *steps* the ``tensor`` back end
runs: each run of operations that matches one of seed 001's patterns (``patterns.PATTERNS``,
longest first) becomes one ``layer`` step — ``conv_layer`` (convolution, bias add, optional
activation, optional pooling; seed 001's ``wrapper_ConvLayer2``) or ``fc_layer`` (matrix
multiply, bias add, optional activation; ``wrapper_FCLayer``) — and every other operation
one ``op`` step. ``layers.LAYERS`` runs a layer step as one runtime call.

A run matches when each operation consumes the result of the one before it, as its first
operand (``x``), and that result has no other use in the leaf and is not returned: then
replacing the run by one call computing only its last result keeps the leaf's meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...ir.bodies import OpCall, Operand
from ...ir.tensorops import ACTIVATIONS, defaulted
from ...ir.tensorops.body import TensorLeaf
from ...ir.tensorops.patterns import match_length


@dataclass(frozen=True)
class Step:
    """One runtime call of a compiled tensor leaf; its result is the leaf's local ``result``."""

    kind: str  # "op" (one operation) or "layer" (a matched pattern)
    name: str  # the operation, or "conv_layer" / "fc_layer"
    ops: tuple[str, ...]  # the operations the call performs
    args: tuple[Operand, ...]  # the call's arguments
    result: int  # index of the leaf call whose result this produces
    line: int


_NONE = Operand("const", None)
_ZERO = Operand("const", 0)


def lower(leaf: TensorLeaf) -> list[Step]:
    """The steps of ``leaf``: matched patterns as layer calls, other operations one by one."""
    calls = leaf.calls
    uses = _use_counts(calls, leaf.returns)
    steps: list[Step] = []
    i = 0
    while i < len(calls):
        chain = [i]
        while (
            len(chain) < 4
            and chain[-1] + 1 < len(calls)
            and uses[chain[-1]] == 1
            and calls[chain[-1] + 1].args[0] == Operand("local", chain[-1])
        ):
            chain.append(chain[-1] + 1)
        length = match_length([calls[k].op for k in chain])
        if length >= 2:
            steps.append(_layer([calls[k] for k in chain[:length]], chain[length - 1]))
            i += length
        else:
            call = calls[i]
            steps.append(Step("op", call.op, (call.op,), call.args, i, call.line))
            i += 1
    return steps


def _use_counts(calls: Sequence[OpCall], returns: Sequence[Operand]) -> list[int]:
    counts = [0] * len(calls)
    for operand in [a for c in calls for a in c.args] + list(returns):  # a returned value is a use
        if operand.kind == "local":
            counts[operand.value] += 1
    return counts


def _layer(run: Sequence[OpCall], result: int) -> Step:
    first, bias = run[0], run[1].args[1]
    activation = next((c for c in run[2:] if c.op in ACTIVATIONS), None)
    act_args: tuple[Operand, ...] = (_NONE, _ZERO, _ZERO)
    if activation is not None:
        lo, hi = (_ZERO, _ZERO)
        if activation.op == "clipped_relu":  # its bounds as given, else their defaults
            lo, hi = (
                *activation.args[1:3],
                *(Operand("const", v) for v in defaulted("clipped_relu", activation.args)),
            )
        act_args = (Operand("const", activation.op), lo, hi)
    ops = tuple(c.op for c in run)
    if first.op == "mul":
        return Step(
            "layer", "fc_layer", ops, (first.args[0], first.args[1], bias, *act_args), result, first.line
        )
    pool = next((c for c in run[2:] if c.op not in ACTIVATIONS), None)
    pool_args: tuple[Operand, ...] = (_NONE, *(_ZERO,) * 6)
    if pool is not None:
        pool_args = (Operand("const", pool.op), *pool.args[1:])
    args = (*first.args, bias, *act_args, *pool_args)
    return Step("layer", "conv_layer", ops, args, result, first.line)


__all__ = ["Step", "lower"]
