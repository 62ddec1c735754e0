"""Seed 001's fusion patterns, shared by FuseHPVMTensorNodes and the WrapperAPI lowering.

The exhaustive list (longest first), over operation *categories*: ``activation`` is any of
``ops.ACTIVATIONS``, ``pooling`` any of ``ops.POOLINGS``::

    convolution -> add -> activation -> pooling
    convolution -> add -> activation
    convolution -> add -> pooling
    convolution -> add
    mul -> add -> activation
    mul -> add
"""

from __future__ import annotations

from collections.abc import Sequence

from .rules import ACTIVATIONS, POOLINGS

PATTERNS: tuple[tuple[str, ...], ...] = (
    ("convolution", "add", "activation", "pooling"),
    ("convolution", "add", "activation"),
    ("convolution", "add", "pooling"),
    ("convolution", "add"),
    ("mul", "add", "activation"),
    ("mul", "add"),
)
#: The operations that can start a pattern.
STARTS = frozenset(p[0] for p in PATTERNS)


def category(op: str) -> str:
    """The pattern category of an operation: ``activation``, ``pooling`` or its own name."""
    if op in ACTIVATIONS:
        return "activation"
    if op in POOLINGS:
        return "pooling"
    return op


def match_length(ops: Sequence[str]) -> int:
    """The length of the longest pattern that ``ops`` starts with (0 when none does)."""
    cats = tuple(category(op) for op in ops)
    for pattern in PATTERNS:  # longest first
        if cats[: len(pattern)] == pattern:
            return len(pattern)
    return 0
