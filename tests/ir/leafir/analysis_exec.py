"""Helpers for the analyses' property tests: a leaf made from generated text, and running
its Python for chosen instance ids with arrays that record every element access."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import hpvm
from hpvm.errors import SourceLocation
from hpvm.ir.execution import executing
from hpvm.ir.graph import LeafFunction, Param


def make_leaf(params: Sequence[Param], body: str, name: str = "gen") -> LeafFunction:
    """A leaf whose Python is ``def gen(<params>):`` then ``body`` (already indented)."""
    source = f"def {name}({', '.join(p.name for p in params)}):\n{body}"
    namespace: dict[str, Any] = {"hpvm": hpvm, "np": np}
    exec(compile(source, "<gen>", "exec"), namespace)
    return LeafFunction(
        namespace[name], name, list(params), [], location=SourceLocation("<gen>", 1), source=source
    )


class Recording(np.ndarray):
    """An array that logs each element access: (``"load"``/``"store"``, its name, the index)."""

    log: list[tuple[str, str, tuple[int, ...]]]
    label: str

    def __getitem__(self, index: Any) -> Any:
        self.log.append(("load", self.label, _index(index)))
        return super().__getitem__(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.log.append(("store", self.label, _index(index)))
        super().__setitem__(index, value)


def _index(index: Any) -> tuple[int, ...]:
    return tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)


def recording(label: str, array: np.ndarray, log: list) -> Recording:
    out = array.view(Recording)
    out.log, out.label = log, label
    return out


class _Context:
    """The execution context of one instance of a 3-D node, for calling a leaf's Python."""

    def __init__(self, ids: tuple[int, int, int], counts: tuple[int, int, int]) -> None:
        self.ids, self.counts = ids, counts

    def get_node(self) -> Any:
        return "node"

    def get_parent_node(self, node: Any) -> Any:
        return "parent"

    def get_num_dims(self, node: Any) -> int:
        return 3

    def instance_id(self, node: Any, axis: int) -> int:
        return self.ids[axis] if node == "node" else 0

    def num_instances(self, node: Any, axis: int) -> int:
        return self.counts[axis] if node == "node" else 1

    def malloc(self, nbytes: int) -> Any:
        return np.zeros(nbytes, np.uint8)

    def atomic(self, op: str, array: Any, index: Any, value: Any) -> Any:
        old = array[index]
        array[index] = old + value
        return old

    def barrier(self) -> None:
        pass


@contextmanager
def instance(ids: tuple[int, int, int], counts: tuple[int, int, int] = (8, 1, 1)) -> Iterator[None]:
    with executing(_Context(ids, counts)):  # type: ignore[arg-type]
        yield
