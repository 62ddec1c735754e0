"""Streaming stages of scalars: a batch of items run by one compiled loop.

The streaming runtime hands a stage the items waiting for it at once
(``Backend.run_stage_batch``). When every value the stage reads or sends is a scalar — the
root's inputs, what it imports from other stages, what it exports to them and the root
outputs it produces — the batch is laid out as one column (a NumPy array) per value, and
a generated loop (``GraphGen.batch_function``) calls the stage function for each item in
compiled code. An item then costs a loop iteration and its share of the column copies, not
a Python call of the stage with its conversions (about 20 µs: the stream's whole cost when
items are small). Stages with array values run item by item (``Backend.run_stage_batch``).

**An item that raises** stops the loop at its index. The items before it are delivered, and
the failing item is run again alone through ``run_stage``, whose exception names it as for
any other item. Running it again is safe because such a stage changes nothing the host can
see: it has no array argument, and what its leaves ``malloc`` dies with the item (the loop
empties the pool's stacks after every item).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ir.graph import InternalFunction
from ...ir.types import ScalarType
from .graphgen import StageSpec


def scalar_stage(root: InternalFunction, spec: StageSpec) -> bool:
    """Whether every value ``spec``'s stage reads or sends is a scalar (then it can run in a
    compiled batch loop). A per-instance value of a replicated node is an array."""
    if not all(isinstance(p.type, ScalarType) for p in root.params):
        return False
    if not all(isinstance(root.out_types[op], ScalarType) for op in spec.outputs):
        return False
    return all(
        mode == "last" and isinstance(node.function.out_types[port], ScalarType)
        for node, port, mode in (*spec.imports, *spec.exports)
    )


@dataclass
class BatchLayout:
    """How a scalar stage's items map to columns and back to ``run_stage``'s forms."""

    spec: StageSpec
    in_types: list[np.dtype]  # one per root input
    imports: list[tuple[str, tuple[int, str], np.dtype]]  # (node, (port, mode), dtype)
    out_types: list[np.dtype]  # the stage function's results: root outputs, then exports
    loop: Any = None  # the compiled loop (``Compiler.stage_batch``), once compiled

    @classmethod
    def of(cls, root: InternalFunction, spec: StageSpec) -> BatchLayout:
        def dtype(t: Any) -> np.dtype:
            return np.dtype(t.dtype)

        return cls(
            spec,
            [dtype(p.type) for p in root.params],
            [(n.name, (p, mode), dtype(n.function.out_types[p])) for n, p, mode in spec.imports],
            [dtype(root.out_types[op]) for op in spec.outputs]
            + [dtype(n.function.out_types[p]) for n, p, _ in spec.exports],
        )

    def in_columns(self, args_list: Sequence[Sequence[Any]]) -> list[np.ndarray]:
        """The root inputs of the items, a column each."""
        return [np.array([args[i] for args in args_list], t) for i, t in enumerate(self.in_types)]

    def import_columns(self, upstream_list: Sequence[dict[str, Any]]) -> list[np.ndarray]:
        """What the items import from other stages, a column each."""
        return [np.array([up[node][key] for up in upstream_list], t) for node, key, t in self.imports]

    def out_columns(self, count: int) -> list[np.ndarray]:
        """Empty columns for the stage function's results."""
        return [np.empty(count, t) for t in self.out_types]

    def rows(self, columns: list[np.ndarray], lo: int, hi: int) -> tuple[list[Any], list[dict[int, Any]]]:
        """Items ``lo`` to ``hi`` as ``run_stage`` returns them: what each sends to other
        stages (by node name) and its root outputs (by index, as their ports' NumPy type)."""
        spec = self.spec
        count = len(spec.outputs)
        if columns and (lo or hi < len(columns[0])):  # (slicing costs as much as 16 items)
            columns = [c[lo:hi] for c in columns]
        outs = [list(c) for c in columns[:count]]  # NumPy scalars, as run_stage gives
        exports = [c.tolist() for c in columns[count:]]
        if count == 1:
            (op,) = spec.outputs
            outputs = [{op: v} for v in outs[0]]
        else:
            outputs = (
                [dict(zip(spec.outputs, row)) for row in zip(*outs)] if outs else [{} for _ in range(hi - lo)]
            )
        if len(spec.exports) == 1:
            (node, port, mode), (values,) = spec.exports[0], exports
            return [{node.name: {(port, mode): v}} for v in values], outputs
        produced: list[Any] = [{} for _ in range(hi - lo)]
        for (node, port, mode), values in zip(spec.exports, exports):
            for item, v in zip(produced, values):
                item.setdefault(node.name, {})[(port, mode)] = v
        return produced, outputs
