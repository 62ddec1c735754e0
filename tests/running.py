"""Running a graph the way most tests do: track the array arguments, launch, wait."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import hpvm


def run_tracked(root: Any, args: tuple, target: str) -> tuple:
    """Launch ``root`` with ``args`` on ``target`` (its array arguments tracked first) and
    return what ``wait`` returns. Needs an initialised runtime (the ``hpvm_runtime``
    fixture)."""
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    return hpvm.wait(hpvm.launch(root, args, target=target))


def line_of(fn: Any, text: str) -> int:
    """The file line of the first line of leaf ``fn``'s source containing ``text``."""
    lines, first = inspect.getsourcelines(fn.pyfunc)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in {fn.name}")


def replicated_root(leaf: Any, dims: int) -> Any:
    """A root named ``root_of_<leaf>`` that runs ``leaf`` replicated in ``dims``
    dimensions: its inputs are the leaf's (same names, bound in order) followed by the
    ``dims`` replication sizes ``n0``, ``n1``...; the leaf's outputs are bound to its own."""
    params = [
        inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=p.type)
        for p in leaf.params
    ]
    size_params = [
        inspect.Parameter(f"n{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hpvm.i64)
        for i in range(dims)
    ]

    def build(*symbols: Any) -> None:
        sizes = symbols[len(params) :]
        k = hpvm.create_node_nd(dims, leaf, *sizes)
        for port in range(len(params)):
            hpvm.bind_in(k, port, port)
        for oc in range(len(leaf.out_types)):
            hpvm.bind_out(k, oc, oc)

    build.__signature__ = inspect.Signature(params + size_params)  # type: ignore[attr-defined]
    build.__name__ = f"root_of_{leaf.name}"
    build.__annotations__ = {p.name: p.annotation for p in params + size_params}
    return hpvm.internal(build)


@contextmanager
def interp_leaves_from(from_ir: bool) -> Iterator[None]:
    """Inside, the interpreter runs each leaf in the leaf IR's dialect from its IR
    (``from_ir``) or every leaf from its syntax tree; the functions it made are dropped on
    entry and exit, so each path makes its own."""
    from hpvm.backends.base import get_backend

    backend = get_backend("interp")
    previous, backend.from_ir = backend.from_ir, from_ir
    backend._functions.clear()
    try:
        yield
    finally:
        backend.from_ir = previous
        backend._functions.clear()


def runs_from_its_ir(leaf: Any) -> bool:
    """Whether the interpreter can run ``leaf`` from its leaf IR (``from_ir.ir_function``):
    a test running a leaf on both paths checks first that there are two."""
    from hpvm.backends.interp.from_ir import ir_function

    return ir_function(leaf) is not None


def every_run_quick(monkeypatch: Any, *roots: Any) -> None:
    """Every run counts as quick (``quick.QUICK_RUN_S`` raised: a loaded machine must not
    decide where one runs), and the durations recorded for ``roots`` before the test are
    forgotten — the autouse fixtures of the quick-launch tests."""
    from hpvm.runtime import quick

    monkeypatch.setattr(quick, "QUICK_RUN_S", 60.0)
    for root in roots:
        quick.forget(root)


def full_path_launches(monkeypatch: Any) -> list[int]:
    """Every run counts as quick (``every_run_quick``'s limit), and the returned one-item list
    counts the launches that take the full path (``Runtime._launch_once``): every other one
    of a field program's plain launches was a replay (the Python replay or the compiled one)."""
    from hpvm.runtime import api, quick

    monkeypatch.setattr(quick, "QUICK_RUN_S", 60.0)
    calls = [0]
    launch_once = api.Runtime._launch_once

    def counting(self: Any, *args: Any) -> Any:
        calls[0] += 1
        return launch_once(self, *args)

    monkeypatch.setattr(api.Runtime, "_launch_once", counting)
    return calls


def queued_launches(monkeypatch: Any) -> list[int]:
    """The returned one-item list counts the launches queued for a worker (not run inside
    ``launch``: ``Runtime._launch_once``'s handle has a slot) — a field program's host loop."""
    from hpvm.runtime import api

    queued = [0]
    launch_once = api.Runtime._launch_once

    def counting(self: Any, *args: Any) -> Any:
        handle = launch_once(self, *args)
        queued[0] += handle.slot is not None
        return handle

    monkeypatch.setattr(api.Runtime, "_launch_once", counting)
    return queued


def queued_with_retiring_workers(monkeypatch: Any, idle_s: float = 0.005) -> list[int]:
    """Every launch queued to a worker (no run counts as quick), idle workers ending after
    ``idle_s``; the returned one-item list counts the workers that ended idle
    (``WorkerPool._retire``) — the field programs that pause longer than a worker lives."""
    from hpvm.runtime import quick, workers

    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)
    monkeypatch.setattr(quick, "WAITED_AT_ONCE", 1 << 30)  # (nor made quick by a host that waits at once)
    monkeypatch.setattr(workers, "IDLE_RETIRE_S", idle_s)
    ended = [0]
    retire = workers.WorkerPool._retire

    def counting(self: Any) -> bool:
        gone = retire(self)
        ended[0] += gone
        return gone

    monkeypatch.setattr(workers.WorkerPool, "_retire", counting)
    return ended


def spy_direct_calls(record: Any, calls: list[str] | None = None) -> list[str]:
    """A replay record's dispatcher calls (``Replay.entry``, ``Replay.single``) replaced by
    ones that append their name to ``calls`` (a new list if none) before calling through:
    a native call (``backends/cpu/native.py``), which bypasses them, leaves it as it was."""
    calls = [] if calls is None else calls
    for name in ("entry", "single"):
        func = getattr(record, name)
        if func is not None:

            def spy(*args: Any, func: Any = func, name: str = name) -> Any:
                calls.append(name)
                return func(*args)

            setattr(record, name, spy)
    return calls
