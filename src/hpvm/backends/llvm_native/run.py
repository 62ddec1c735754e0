"""Every instance of an LLVM leaf node within one parent instance, from the host (``interp``).

Instance by instance through the JIT-compiled trampoline (``jit.py``), in row-major order as
the interpreter runs Python leaves; a leaf with barriers runs its instances through its
group function on this thread, as work-item loops (``wiloops.py``) or coroutines that
switch at each barrier (``coro.py``).
An instance whose code raised (an exported leaf's ``raise``: ``leaf_errors.py``) stops the
node with a ``NodeExecutionError`` naming that instance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from ...errors import HPVMError, LaunchError, NodeExecutionError
from ...ir import instance_context as ictx
from ...ir.graph import LeafFunction, Node
from ...ir.types import ArrayType
from . import instrument
from .checked import access_problem, failed_access
from .host import pack, unpack
from .instrument import Sink
from .jit import jit_leaf
from .leaf_errors import Raised, execution_error, recorded
from .native import HEADER, RAISED, native_leaf


def run_instances(
    node: Node,
    sizes: tuple[int, ...],
    inputs: Callable[[int], list[Any]],
    parent_levels: Sequence[int],
    where: Callable[[tuple[int, ...]], str],
    sink: Sink | None = None,
    checked: bool = False,
) -> list[tuple[Any, ...]]:
    """The outputs of every instance (row-major). ``parent_levels``: the parent instance's
    context (its level, its parent's... up to the root); ``where(ids)`` names an instance in
    messages. ``sink``: runs the instrumented clone, whose accesses go to ``sink`` (told
    each instance's input values first: ``sink.enter_call(values)``). ``checked``: the
    clone with its array accesses checked (``checked.py``): an access outside its array is
    an ``OutOfBoundsError`` naming the instance."""
    leaf = node.function
    assert isinstance(leaf, LeafFunction)
    native = native_leaf(leaf, recorded=sink is not None, checked=checked, warn=False)
    recording = instrument.recording(sink) if sink is not None else nullcontext()
    jitted = jit_leaf(native)
    ptypes = [p.type for p in leaf.params]
    count = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
    nout = max(1, len(native.outs))
    levels = max(native.levels, 1 + len(parent_levels) // ictx.STRIDE)
    parent = (list(parent_levels) + list(ictx.ROOT) * levels)[: ictx.STRIDE * (levels - 1)]
    instances = list(np.ndindex(*sizes)) if sizes else [()]

    def call_slots(values: list[Any], ids: tuple[int, ...]) -> np.ndarray:
        try:
            return pack(ptypes, [np.asarray(v) if isinstance(v, np.ndarray) else v for v in values])
        except ValueError as e:
            raise NodeExecutionError(f"{where(ids)}: {e}") from None

    def outputs(slots: np.ndarray, values: list[Any], ids: tuple[int, ...]) -> tuple[Any, ...]:
        arrays = [v for p, v in zip(leaf.params, values) if isinstance(p.type, ArrayType)]
        try:
            return unpack(leaf.out_types, slots, arrays)
        except ValueError as e:
            raise NodeExecutionError(f"{where(ids)}: {e}") from None

    if native.uses_barrier:
        if count == 0:
            return []
        values = inputs(0)
        for flat in range(1, count):
            if any(a is not b and not _same_scalar(a, b) for a, b in zip(values, inputs(flat))):
                raise LaunchError(
                    f"{where(instances[flat])}: leaf '{leaf.name}' uses barriers, so its instances run "
                    "in one call of its group function, which needs the same inputs in every instance; it receives "
                    "per-instance values (a one-to-one edge): send them through an array instead"
                )
        slots = call_slots(values, ())
        out = np.zeros(count * nout, dtype=np.uint64)
        par = np.array(parent or [0], dtype=np.int64)
        ext = [*sizes, *[1] * (3 - len(sizes))]
        err = np.zeros(5, dtype=np.int64)  # (coro.group_runner's err)
        assert jitted.group is not None
        if sink is not None:
            sink.enter_call(values)
        with recording:
            status = jitted.group(
                slots.ctypes.data,
                par.ctypes.data,
                len(parent),
                *ext,
                len(sizes),
                out.ctypes.data,
                1,
                err.ctypes.data,
            )
            if status == RAISED:  # the first instance (row-major) that raised
                raise _raised(where(instances[int(err[2])]), recorded(err[0], err[1]), err[3], err[4])
            instrument.raise_recorded()  # (after the leaf's own error, as for one instance below)
        if status != 0:
            raise LaunchError(
                f"{where(())}: leaf '{leaf.name}' uses barriers; what its {count} instances keep "
                "across barriers (coroutine frames or work-item-loop arrays) did not fit in memory: "
                "launch fewer instances per parent instance"
            )
        return [outputs(out[k * nout : (k + 1) * nout], values, instances[k]) for k in range(count)]
    ctx = np.zeros(HEADER + ictx.STRIDE * levels, dtype=np.int64)
    ctx[HEADER + ictx.STRIDE :] = parent
    out = np.zeros(nout, dtype=np.uint64)
    results = []
    with recording:
        for flat, ids in enumerate(instances):
            values = inputs(flat)
            slots = call_slots(values, ids)
            ctx[HEADER : HEADER + ictx.STRIDE] = ictx.level(len(sizes), list(ids), list(sizes))
            if sink is not None:
                sink.enter_call(values)
            jitted.call(slots.ctypes.data, ctx.ctypes.data, out.ctypes.data)
            if ctx[0]:  # the leaf raised (leaf_errors.py)
                raise _raised(where(ids), recorded(ctx[0], ctx[1]), ctx[2], ctx[3])
            # (what the race detector found, after the leaf's own error: a checked access
            # outside its array goes on with a stand-in value, and what the instance then
            # does with it — a store at index 0 — is a race the access caused; the
            # forgotten guard is the error to name)
            instrument.raise_recorded()
            results.append(outputs(out, values, ids))
    return results


def _raised(where: str, raised: Raised, offset: int, size: int) -> HPVMError:
    """What an instance that raised raises: ``OutOfBoundsError`` for a checked access
    outside its array (``checked.py``; ``offset`` and ``size``: what the instance recorded
    with it), else the leaf's own exception, wrapped."""
    access = failed_access(raised.exception)
    if access is not None:
        kind, what = access_problem(access, int(offset), int(size))
        return kind(f"{where}: {what}")
    return execution_error(where, raised)


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False
