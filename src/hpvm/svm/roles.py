"""Restriction A7: which kernel reads and which writes a stream, over whole executions.

The seed: "only one WAITING, RUNNING, or PAUSED kernel may be reading a stream at any given
time and only one ... may be writing a stream". A kernel reads a stream for its whole
execution — from ``kernel_run`` (WAITING) to FINISHED — not from its first pop: the LLC
learns its streams statically, from the init function and the ``IStream``/``OStream``
types of the kernel's members.

So each execution that reads (writes) a stream leaves a ``Hold`` on it: its start is the
execution's ``kernel_run`` tick, its end the tick at which it finished (None while live).
Two holds of one role conflict when their intervals overlap. A kernel *declares* its roles
when its type says them (predefined and black-box kernels' ``_stream_roles``, or a user
kernel's members annotated ``IStream`` / ``OStream`` / ``IOStream``): those holds are taken
at ``kernel_run``, so a conflict is an error there. Any other kernel takes a hold at its
first pop / peek (reader) or push (writer), dated back to its ``kernel_run``: a kernel that
was WAITING while another read the stream and then finished is caught too.

Ticks count ``kernel_run``s and finishes of one ``svm.init()``; everything here holds the
runtime's ``cond`` and runs in the assertion mode only.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any

from .errors import SVMRestrictionError
from .runtime import LIVE, STATUS_NAMES, Context

if TYPE_CHECKING:
    from .kernels import Kernel

READER, WRITER = "reader", "writer"
# A member annotated with one of these names declares the kernel's role on that stream.
_ANNOTATED = {"IStream": (READER,), "OStream": (WRITER,), "IOStream": (READER, WRITER)}
_ANNOTATION_WORD = re.compile(r"\b(IOStream|IStream|OStream)\b")


class Hold:
    """One kernel execution reading or writing one stream, from tick ``start`` to ``end``."""

    __slots__ = ("end", "kernel", "role", "start", "stream")

    def __init__(self, kernel: Kernel, stream: Any, role: str, start: int):
        self.kernel, self.stream, self.role, self.start = kernel, stream, role, start
        self.end: int | None = None

    def overlaps(self, start: int) -> bool:
        """Was this execution live at some time from tick ``start`` (up to now) on?"""
        return self.end is None or self.end > start


def declared_roles(k: Kernel) -> list[tuple[Any, str]]:
    """The (stream, role) pairs ``k``'s type declares: ``k._stream_roles()`` (predefined
    kernels), else its members whose class annotation names ``IStream`` / ``OStream`` /
    ``IOStream`` (a list or tuple member: each stream in it)."""
    own = getattr(k, "_stream_roles", None)
    if own is not None:
        return list(own())
    from .streams import Stream

    found: list[tuple[Any, str]] = []
    for name, roles in _annotated_members(type(k)).items():
        value = getattr(k, name, None)
        items = value if isinstance(value, list | tuple) else (value,)
        found.extend((s, role) for s in items if isinstance(s, Stream) for role in roles)
    return found


def _annotated_members(cls: type) -> dict[str, tuple[str, ...]]:
    """Member name -> roles, from the annotations of ``cls`` and its bases. Read as text
    (``IStream`` and ``OStream`` are one class at run time, as in the seed, where they are
    typedefs of ``Stream``), so annotations need not be evaluated."""
    cached = cls.__dict__.get("_svm_annotated_roles")
    if cached is not None:
        return cached
    found: dict[str, tuple[str, ...]] = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in inspect.get_annotations(klass).items():
            text = annotation if isinstance(annotation, str) else getattr(annotation, "__svm_role__", "")
            match = _ANNOTATION_WORD.search(text) if isinstance(text, str) else None
            if match:
                found[name] = _ANNOTATED[match.group(1)]
    cls._svm_annotated_roles = found  # type: ignore[attr-defined]
    return found


def _conflict(ctx: Context, k: Kernel, s: Any, role: str, function: str) -> SVMRestrictionError | None:
    state = k._svm
    for hold in s._holds:
        other = hold.kernel
        if hold.role != role or other is k or not hold.overlaps(state.run_tick):
            continue
        theirs = other._svm
        verb = "read" if role == READER else "write"
        fix = (
            f"kernel_wait for {theirs.name} before kernel_run({state.name}), so that one kernel at a time "
            f"may {verb} {s.name}"
        )
        if hold.end is None:
            since = "" if function.startswith("kernel_run") else f", kernel run at {state.run_line}"
            return SVMRestrictionError(
                "A7",
                f"stream {s.name} already has a {STATUS_NAMES[theirs.status]} {role}, kernel {theirs.name}; "
                f"kernel {state.name} cannot also be its {role} ({function}{since}); {fix}",
            )
        return SVMRestrictionError(
            "A7",
            f"stream {s.name} had another {role}, kernel {theirs.name}, while kernel {state.name} was already "
            f"live (WAITING or later since its kernel_run at {state.run_line}): both were its {role}s at once "
            f"({function}); {fix}",
        )
    return None


def _take(ctx: Context, k: Kernel, s: Any, role: str) -> None:
    state = k._svm
    hold = Hold(k, s, role, state.run_tick)
    s._holds.append(hold)
    state.roles.append(hold)
    state.role_keys.add((id(s), role))
    oldest = min((q._svm.run_tick for q in ctx.kernels.values() if q._svm.status in LIVE), default=ctx.tick)
    s._holds = [h for h in s._holds if h.overlaps(min(oldest, state.run_tick))]


def hold_declared(ctx: Context, k: Kernel, function: str) -> None:
    """At ``kernel_run``: take every role ``k`` declares, or none if one conflicts."""
    wanted = [(s, role) for s, role in declared_roles(k) if (id(s), role) not in k._svm.role_keys]
    for s, role in wanted:
        error = _conflict(ctx, k, s, role, function)
        if error is not None:
            raise error
    for s, role in wanted:
        if (id(s), role) not in k._svm.role_keys:
            _take(ctx, k, s, role)


def hold(ctx: Context, k: Kernel, s: Any, role: str, function: str) -> None:
    """At a pop / peek (reader) or push (writer) of ``k``'s work function."""
    if (id(s), role) in k._svm.role_keys:
        return
    error = _conflict(ctx, k, s, role, function)
    if error is not None:
        raise error
    _take(ctx, k, s, role)
