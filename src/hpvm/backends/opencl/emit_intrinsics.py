"""The hpvm intrinsics in the OpenCL emitter: node handles (resolved to ancestor levels when
the kernel is generated), the structure queries (C expressions of a ``QueryMap``), atomics
(``helpers.py``'s functions, Python's values) and the calls a leaf cannot make on a device.

Why handles are levels: a node handle never exists at run time on the device; ``get_node()``
is level 0, ``get_parent_node(h)`` one level above ``h``, and a query of a handle reads the
instance context of that level. A handle whose level is not known when the kernel is
generated is a ``CompileError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir.leafir import ops
from ...ir.types import NodeHandleType
from . import cltypes as ct
from .values import Val, cast


@dataclass(frozen=True)
class Handle:
    level: int


def handle_levels(ir: ops.LeafIR) -> dict[str, int]:
    """The level of every node-handle variable assigned a handle of a known level."""
    assigns = [
        s
        for s in ops.walk_stmts(ir.body)
        if isinstance(s, ops.Assign) and isinstance(s.target.type, NodeHandleType)
    ]
    levels: dict[str, int] = {}
    for _ in range(8):
        for s in assigns:
            level = level_of(s.value, levels)
            if level is not None:
                levels[s.target.name] = level
    return levels


def level_of(e: ops.Expr, levels: dict[str, int]) -> int | None:
    if isinstance(e, ops.Var):
        return levels.get(e.name)
    if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_node":
        return 0
    if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_parent_node":
        inner = level_of(e.args[0], levels)
        return None if inner is None else inner + 1
    return None


class IntrinsicEmitter:
    """The intrinsic half of the emitter (mixed into ``emit_stmts.LeafEmitter``)."""

    helpers: Any
    handles: dict[str, int]
    queries: Any
    written: set[str]
    max_level: int
    level_lines: dict[int, int]
    uses_ctx: bool
    line: int

    def _expr_IntrinsicOp(self, e: ops.IntrinsicOp) -> Any:
        entry = e.intrinsic
        kind = entry.kind
        if kind == "handle":
            level = level_of(e, self.handles)
            if level is None:
                raise self.fail_at(f"{entry.spelled}() of a handle not known at compile time")
            return Handle(level)
        if kind in ("query", "dims"):
            level = level_of(e.args[0], self.handles)
            if level is None:
                raise self.fail_at(
                    f"the node handle passed to {entry.spelled}() is not known at compile time (use "
                    "hpvm.get_node() / hpvm.get_parent_node(...) directly or through a variable)"
                )
            self.max_level = max(self.max_level, level)
            self.level_lines.setdefault(level, self.line)
            self.uses_ctx = True
            if kind == "dims":
                return Val(self.queries.num_dims(level), ct.I64, 0)
            assert entry.axis is not None
            if entry.counts:
                return Val(self.queries.num_instances(level, entry.axis), ct.I64, 0)
            return Val(self.queries.instance_id(level, entry.axis), ct.I64, 0)
        if kind == "atomic":
            return self._atomic(e)
        if kind == "barrier":
            raise self.fail_at("hpvm.barrier() must be a statement of its own")
        if kind == "malloc":
            raise self.fail_at(
                "hpvm.malloc() is supported only in an allocation node whose buffer the launch "
                "plan places (a leaf that returns the buffer to a sibling under a replicated parent)"
            )
        raise self.fail_at(f"{entry.spelled}() cannot be called in a leaf")

    def _atomic(self, e: ops.IntrinsicOp) -> Val:
        op = e.intrinsic.op
        assert op is not None
        view = self.view(e.args[0])
        indices = self.indices(e.args[1:-1])
        value = self.scalar(e.args[-1])
        dtype = view.dtype
        ok = (dtype.kind in "iu" and dtype.itemsize in (4, 8)) or (
            dtype.kind == "f" and op in ("add", "sub", "min", "max")
        )
        if not ok:
            raise self.fail_at(f"atomic_{op} on a {dtype} array is not supported")
        self.written.add(view.base)
        ctype = ct.c_name(dtype)
        if op == "sub" and dtype.kind in "iu":
            fn = self.helpers.atomic("add", ctype, view.space)
            arg = f"-({cast(value, dtype)})"
        else:
            fn = self.helpers.atomic(op, ctype, view.space)
            arg = cast(value, dtype)
        return Val(
            f"{fn}(&{self.ref(view, indices)}, {arg})", dtype, 0 if dtype.kind == "u" else None, effects=True
        )
