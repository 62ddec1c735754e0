"""Collecting one kernel's parameters, arguments and outputs into a ``KernelSpec``.

The plan feeds it the columns each leaf argument comes from; it turns uniform values into
kernel parameters (arrays deduplicated, marked read-only unless a leaf writes them), rows
of storages into ``row`` arguments (with their index maps), and decides which ``malloc``
pools live in shared memory for this kernel.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from ...errors import CompileError, LaunchError
from ...ir.graph import Node
from ...ir.types import ArrayType, ScalarType
from .schedule import Step
from .spec import ArgRef, KernelOutput, KernelParam, KernelSpec, LeafCall, SharedBuffer
from .values import Column, Storage


class SpecBuilder:
    """Collects a kernel's parameters, arguments and outputs while the step is planned."""

    def __init__(self, ex: Any, step: Step, parents: int):
        self.ex = ex
        self.step = step
        self.parents = parents
        self.params: list[dict[str, Any]] = []
        self.values: list[Any] = []
        self.by_object: dict[int, int] = {}
        self.array_objects: list[tuple[Any, bool]] = []
        self.outputs: list[KernelOutput] = []
        self.shared_refs: list[tuple[int, ArgRef, Storage]] = []  # (param index into args), ...
        self.args_shared: dict[int, int] = {}

    @property
    def shared_possible(self) -> bool:
        return bool(self.shared_refs)

    def _param(
        self, kind: str, dtype: np.dtype, rank: int, value: Any, obj: Any = None, writes: bool = False
    ) -> int:
        if obj is not None and id(obj) in self.by_object:
            index = self.by_object[id(obj)]
            self.params[index]["read_only"] &= not writes
            self.array_objects.append((obj, writes))
            return index
        index = len(self.params)
        self.params.append(
            {
                "name": f"p{index}",
                "kind": kind,
                "dtype": _dtype_name(dtype),
                "rank": rank,
                "read_only": not writes,
            }
        )
        self.values.append(value)
        if obj is not None:
            self.by_object[id(obj)] = index
            self.array_objects.append((obj, writes))
        return index

    def arg(self, col: Column, where: str, ptype: Any, writes: bool, node: Node) -> ArgRef:
        ex = self.ex
        if col.is_uniform:
            value = col.uniform
            if isinstance(ptype, ArrayType):
                if not isinstance(value, np.ndarray):
                    raise LaunchError(
                        f"node '{node.name}' ({node.location}): expected an array, got {value!r}"
                    )
                return ArgRef(
                    "param",
                    param=self._param(
                        "array", value.dtype, value.ndim, ex.array_handle(value), value, writes
                    ),
                )
            if not isinstance(ptype, ScalarType):
                raise CompileError(
                    f"node '{node.name}' ({node.location}): the {ex.dev.backend} back end cannot pass a "
                    f"value of type {ptype} to a kernel"
                )
            return ArgRef("param", param=self._param("scalar", ptype.dtype, 0, ptype.dtype.type(value)))
        storage = col.storage
        assert storage is not None
        handle = storage.on_device(ex.dev, ex.ctx)
        shape = storage.shape
        sidx = self._param("array", storage.dtype, len(shape), handle, storage, writes)
        midx = -1
        if col.map is not None:
            m = np.ascontiguousarray(col.map, dtype=np.int64)
            midx = self._param("array", np.dtype(np.int64), 1, ex.table(m))
        ref = ArgRef("row", param=sidx, index="parent" if where == "parent" else "flat", map=midx)
        if storage.pool and storage.shared_step == id(self.step) and where == "parent":
            self.shared_refs.append((len(self.shared_refs), ref, storage))
            return ArgRef("shared", shared=len(self.shared_refs) - 1)
        return ref

    def output(self, call: int, port: int, storage: Storage, mode: str) -> None:
        index = self._param("array", storage.dtype, 1, storage.device, storage, True)
        self.outputs.append(KernelOutput(call, port, index, mode))  # type: ignore[arg-type]

    def build(
        self, calls: list[LeafCall], dims: int, ctx_levels: int, use_shared: bool
    ) -> tuple[KernelSpec, list[Any]]:
        shared: list[SharedBuffer] = []
        limit = self.ex.dev.shared_memory_bytes
        used = 0
        replace: dict[int, ArgRef] = {}
        for k, ref, storage in self.shared_refs:
            length = int(np.prod(storage.shape[1:]))
            nbytes = length * storage.dtype.itemsize
            if use_shared and used + nbytes <= limit:
                used += nbytes
                replace[k] = ArgRef("shared", shared=len(shared))
                shared.append(SharedBuffer(ref, storage.dtype.name, length))
            else:
                replace[k] = ref  # stays in global memory
        if replace:
            calls = [
                LeafCall(
                    c.leaf, c.node, tuple(replace[a.shared] if a.kind == "shared" else a for a in c.args)
                )
                for c in calls
            ]
            # a buffer in shared memory is not written through its global pool
            for k, _, storage in self.shared_refs:
                if replace[k].kind == "shared":
                    self.array_objects = [(o, w and o is not storage) for o, w in self.array_objects]
        name = _kernel_name(tuple(c.node for c in calls))
        params = tuple(KernelParam(**p) for p in self.params)
        spec = KernelSpec(
            name,
            dims,
            ctx_levels,
            params,
            tuple(calls),
            tuple(self.outputs),
            tuple(shared),
            self.step.barrier,
        )
        return spec, list(self.values)


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype: Any) -> str:
    """``np.dtype(dtype).name``, which takes microseconds: a launch path asks for it per parameter."""
    return np.dtype(dtype).name


@functools.lru_cache(maxsize=1024)
def _kernel_name(nodes: tuple[str, ...]) -> str:
    """A readable kernel name from its nodes' names ("k_p_saxpy")."""
    return "k_" + "_".join(re.sub(r"\W", "_", node) for node in nodes)
