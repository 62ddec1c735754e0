"""The assertion mode: run-time checks of the seed's restrictions A1–A9 and B1–B6 (A7's
bookkeeping: roles.py).

Called only when ``svm.init(check=True)`` (A1 and B1 are checked always: the runtime
cannot re-initialise a live kernel or use a stream with no place). Each failure is an
``SVMRestrictionError`` naming the restriction, the kernel, the stream or block, and the
control-code line. Which restrictions cannot be checked at run time, and why: docs/svm.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import roles
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
        touched = any(hold.stream is obj for hold in state.roles)
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


def kernel_arguments(k: Kernel) -> dict[str, Any]:
    """The streams and blocks a kernel was given, by member: its data members (and members
    that are lists, tuples or dicts of them, as ``name[i]``), as the seed's LLC reads them
    from the init function. The scratch block is not among them (``KernelState.scratch``)."""
    from .blocks import Block
    from .streams import Stream

    found: dict[str, Any] = {}
    for name, value in vars(k).items():
        if name == "_svm":
            continue
        if isinstance(value, Stream | Block):
            found[name] = value
        elif isinstance(value, list | tuple | dict):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(item, Stream | Block):
                    found[f"{name}[{key!r}]"] = item
    return found


def kernel_resources(k: Kernel) -> list[Any]:
    """Every stream and block ``k`` was given (its arguments and its scratch block), once each."""
    found = {id(v): v for v in kernel_arguments(k).values()}
    if k._svm.scratch is not None:
        found.setdefault(id(k._svm.scratch), k._svm.scratch)
    return list(found.values())


def _described(obj: Any) -> str:
    return "None" if obj is None else f"{_kind(obj)} {obj.name}"


def b3_same_scratch(k: Kernel, scratch: Any) -> None:
    """B3 for the scratch block, at a re-initialisation (``kernel_init`` of an initialised kernel)."""
    state = k._svm
    if state.scratch is not scratch:
        raise SVMRestrictionError(
            "B3",
            f"kernel_init({state.name}) at {caller_line()} passes scratch {_described(scratch)}, its "
            f"initialisation at {state.init_line} passed {_described(state.scratch)}; every initialisation "
            "of a kernel must pass the same stream and block arguments: pass the same scratch block, or "
            "use another kernel variable",
        )


def b3_same_arguments(k: Kernel) -> None:
    """B3 for the stream and block members, at ``kernel_run`` after a re-initialisation: the
    members now against those the kernel held when ``kernel_init`` was called again (the init
    function sets them after ``kernel_init``, as the seed's amplifierInit does)."""
    state = k._svm
    previous = state.previous_arguments
    if previous is None:
        return
    now = kernel_arguments(k)
    for slot in sorted(set(previous) | set(now)):
        before, after = previous.get(slot), now.get(slot)
        if before is not after:
            if before is not None and after is not None and before.name == after.name:
                before_text = f"{_described(before)} (initialised at {before._init_line})"
                after_text = f"another {_described(after)} (initialised at {after._init_line})"
            else:
                before_text, after_text = _described(before), _described(after)
            raise SVMRestrictionError(
                "B3",
                f"kernel_run({state.name}) at {caller_line()}: kernel {state.name} was re-initialised at "
                f"{state.init_line} with {after_text} as its member {slot!r}, its previous "
                f"initialisation ({state.previous_init_line}) with {before_text}; every initialisation "
                "of a kernel must pass the same stream and block arguments: pass the same ones, or use "
                "another kernel variable",
            )


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


def on_run(ctx: Context, k: Kernel, resources: list[Any]) -> None:
    """B1, A6 and B3 for every resource at ``kernel_run``; A7 for the roles the kernel
    declares (roles.py). Holds ``cond``."""
    state = k._svm
    where = f"kernel_run({state.name}) at {caller_line()}"
    for obj in resources:
        if obj._signature is None:
            raise SVMRestrictionError(
                "B1",
                f"{where}: its {_kind(obj)} {obj.name} was never initialised; call its init function before "
                "running the kernel",
            )
        _location_reached(ctx, k, obj, where)
    b3_same_arguments(k)
    roles.hold_declared(ctx, k, where)


def kernel_uses_stream(ctx: Context, kernel: Kernel, s: Any, role: str) -> None:
    """A6 and A7 when a work function pushes (writer) or pops / peeks (reader)."""
    if (id(s), role) in kernel._svm.role_keys:
        return
    _location_reached(ctx, kernel, s, f"a {role} operation")
    roles.hold(ctx, kernel, s, role, f"a {'pop/peek' if role == 'reader' else 'push'}")


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
