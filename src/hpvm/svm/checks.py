"""The assertion mode: run-time checks of the seed's restrictions A1–A9 and B1–B6.

Called only when ``svm.init(check=True)`` (A1 and B1 are checked always: the runtime
cannot re-initialise a live kernel or use a stream with no place). Each failure is an
``SVMRestrictionError`` naming the restriction, the kernel, the stream or block, and the
control-code line. Which restrictions cannot be checked at run time, and why: docs/svm.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import SVMError, SVMRestrictionError
from .runtime import LIVE, STATUS_NAMES, Context, current_kernel
from .where import caller_line, recursive_user_function

if TYPE_CHECKING:
    from .kernels import Kernel


def _kind(obj: Any) -> str:
    from .blocks import Block

    return "block" if isinstance(obj, Block) else "stream"


def b6_not_recursive(function: str) -> None:
    recursive = recursive_user_function()
    if recursive is not None:
        raise SVMRestrictionError(
            "B6",
            f"{function} at {caller_line()} runs inside {recursive}, which is called recursively; a function "
            "that declares streams, blocks or kernels must not be called recursively",
        )


def init_checks(ctx: Context, obj: Any, function: str, signature: tuple[str, str, int]) -> None:
    """A3, A2, B2 and B6 for a stream or block initialisation. Holds ``cond``."""
    name = getattr(obj, "name", "?")
    running = current_kernel()
    if running is not None:
        raise SVMRestrictionError(
            "A3",
            f"{function}({name}) called from the work function of kernel {running._svm.name} ({caller_line()}); "
            "initialisation functions belong in control code",
        )
    for kernel in ctx.kernels.values():
        state = kernel._svm
        touched = any(held is obj for held, _ in state.roles)
        if state.status in LIVE and (id(obj) in state.resources or touched):
            raise SVMRestrictionError(
                "A2",
                f"{function}({name}) at {caller_line()}: {_kind(obj)} {name} is used by kernel {state.name}, which "
                f"is {STATUS_NAMES[state.status]}; kernel_wait for it before re-initialising the {_kind(obj)}",
            )
    old = obj._signature
    if old is not None and old != signature:
        what = ("location", "element type", "flags")
        diffs = [f"{w} {a} (was {b})" for w, a, b in zip(what, signature, old) if a != b]
        raise SVMRestrictionError(
            "B2",
            f"{function}({name}) at {caller_line()} uses {', '.join(diffs)} from its initialisation at "
            f"{obj._init_line}; every initialisation of a {_kind(obj)} must use the same location, element "
            "size and flags",
        )
    b6_not_recursive(f"{function}({name})")


def kernel_resources(k: Kernel) -> list[Any]:
    """The streams and blocks a kernel was given: its data members (and members that are
    lists, tuples or dict values of them), as the seed's LLC reads them from the init
    function, plus its scratch block."""
    from .blocks import Block
    from .streams import Stream

    found: dict[int, Any] = {}

    def add(value: Any) -> None:
        if isinstance(value, Stream | Block):
            found.setdefault(id(value), value)

    for name, value in vars(k).items():
        if name == "_svm":
            continue
        add(value)
        if isinstance(value, list | tuple):
            for item in value:
                add(item)
        elif isinstance(value, dict):
            for item in value.values():
                add(item)
    add(k._svm.scratch)
    return list(found.values())


def _location_reached(ctx: Context, kernel: Kernel, obj: Any, function: str) -> None:
    state = kernel._svm
    if obj.location and obj.location not in ctx.machine.reachable(state.proc):
        kind = _kind(obj)
        raise SVMRestrictionError(
            "A6",
            f"{function}: kernel {state.name} on {state.proc} uses {kind} {obj.name} in {obj.location}, which "
            f"{state.proc} does not reach over links (it reaches: {', '.join(sorted(ctx.machine.reachable(state.proc))) or 'nothing'}); "
            f"kernel initialised at {state.init_line}, {kind} at {obj._init_line}",
        )


def _hold(ctx: Context, kernel: Kernel, s: Any, role: str, function: str) -> None:
    holders = s._readers if role == "reader" else s._writers
    if id(kernel) in holders:
        return
    for other in holders.values():
        if other is not kernel and other._svm.status in LIVE:
            raise SVMRestrictionError(
                "A7",
                f"stream {s.name} already has a {STATUS_NAMES[other._svm.status]} {role}, kernel "
                f"{other._svm.name}; kernel {kernel._svm.name} cannot also be its {role} ({function}, kernel "
                f"initialised at {kernel._svm.init_line}); kernel_wait for {other._svm.name} first",
            )
    holders[id(kernel)] = kernel
    kernel._svm.roles.append((s, role))


def on_run(ctx: Context, k: Kernel, resources: list[Any]) -> None:
    """A6 and B3 for every resource at ``kernel_run``; A7 for kernels that declare which
    streams they read and write (predefined and black-box kernels). Holds ``cond``."""
    state = k._svm
    for obj in resources:
        if obj._signature is None:
            raise SVMRestrictionError(
                "B1",
                f"kernel_run({state.name}) at {caller_line()}: its {_kind(obj)} {obj.name} was never initialised; "
                "call its init function before running the kernel",
            )
        _location_reached(ctx, k, obj, f"kernel_run({state.name}) at {caller_line()}")
    if state.previous_resources is not None:
        now = frozenset(id(r) for r in resources)
        if now != state.previous_resources:
            raise SVMRestrictionError(
                "B3",
                f"kernel {state.name} re-initialised at {state.init_line} with other streams or blocks than its "
                "previous initialisation; pass the same stream and block arguments every time",
            )
    roles = getattr(k, "_stream_roles", None)
    if roles is not None:
        for s, role in roles():
            _hold(ctx, k, s, role, f"kernel_run({state.name}) at {caller_line()}")


def kernel_uses_stream(ctx: Context, kernel: Kernel, s: Any, role: str) -> None:
    """A6 and A7 when a work function pushes (writer) or pops / peeks (reader)."""
    holders = s._readers if role == "reader" else s._writers
    if id(kernel) in holders:
        return
    _location_reached(ctx, kernel, s, f"a {role} operation")
    _hold(ctx, kernel, s, role, f"a {'pop/peek' if role == 'reader' else 'push'}")


def kernel_reaches(ctx: Context, kernel: Kernel, b: Any, function: str) -> None:
    _location_reached(ctx, kernel, b, function)


def a9_common_memory(ctx: Context, k: Kernel, dep: Kernel) -> None:
    a, b = k._svm, dep._svm
    machine = ctx.machine
    common = {m for m in machine.reachable(a.proc) & machine.reachable(b.proc) if m in machine.memories}
    if not common:
        raise SVMRestrictionError(
            "A9",
            f"kernel_add_dependence({a.name}, {b.name}) at {caller_line()}: {a.name} runs on {a.proc} and "
            f"{b.name} on {b.proc}, which share no memory, so {b.proc} cannot notify {a.proc}; place them on "
            "processors linked to a common memory",
        )


def push_flags(s: Any, ring: Any, n: int, eos: bool) -> None:
    """The flag hints a push would falsify (assertion mode)."""
    from .streams import STREAM_NEVER_WRAPS, STREAM_ONE_EOS

    if s.flags & STREAM_NEVER_WRAPS and ring.pushed + n > ring.capacity:
        raise SVMError(
            f"push onto stream {s.name} at {caller_line()}: it was declared STREAM_NEVER_WRAPS but "
            f"{ring.pushed + n} elements would have been pushed into its capacity of {ring.capacity}"
        )
    if s.flags & STREAM_ONE_EOS and eos and ring.has_eos():
        raise SVMError(
            f"push with EOS onto stream {s.name} at {caller_line()}: it was declared STREAM_ONE_EOS and "
            "already holds an EOS-tagged element"
        )
