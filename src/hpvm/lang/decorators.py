"""``@hpvm.leaf`` and ``@hpvm.internal``: turn annotated Python functions into node functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import VerificationError
from ..ir.graph import HINTS, InternalFunction, LeafFunction, location_of, signature_ports
from .builder import trace


def _check_hint(hint: Any, pyfunc: Callable[..., Any]) -> str | None:
    if hint is not None and hint not in HINTS:
        raise VerificationError(
            f"'{pyfunc.__name__}' ({location_of(pyfunc)}): hint {hint!r} is not one of "
            "hpvm.CPU_TARGET, hpvm.GPU_TARGET, hpvm.TENSOR_TARGET (or None)"
        )
    return hint


def _names(value: Any, what: str, pyfunc: Callable[..., Any]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        names = tuple(value)
    except TypeError:
        names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise VerificationError(
            f"'{pyfunc.__name__}' ({location_of(pyfunc)}): {what} must be a tuple of parameter "
            f"names, e.g. {what}=('a', 'b'), not {value!r}"
        )
    return names


def _check_attributes(fn: Any) -> Any:
    from ..ir.verify import function_problems

    problems = function_problems(fn)
    if problems:
        raise VerificationError(problems)
    return fn


def leaf(
    hint: str | None = None, ins: Any = (), outs: Any = ()
) -> Callable[[Callable[..., Any]], LeafFunction]:
    """Declare a leaf node function: Python (the Numba subset) that computes.

    ``ins`` / ``outs`` name the array parameters the leaf reads / writes; every parameter
    and result is annotated with an HPVM type (``hpvm.f32[:]``, ``hpvm.i64``, ...).
    """

    def wrap(pyfunc: Callable[..., Any]) -> LeafFunction:
        params, outputs = signature_ports(pyfunc, "leaf", require_return=True)
        fn = LeafFunction(
            pyfunc,
            pyfunc.__name__,
            params,
            outputs or [],
            hint=_check_hint(hint, pyfunc),
            ins=_names(ins, "ins", pyfunc),
            outs=_names(outs, "outs", pyfunc),
            location=location_of(pyfunc),
        )
        fn.__doc__ = pyfunc.__doc__
        return _check_attributes(fn)

    if callable(hint) and not isinstance(hint, str):  # used bare: @hpvm.leaf
        pyfunc, hint = hint, None
        return wrap(pyfunc)  # type: ignore[return-value]
    return wrap


def internal(
    hint: str | None = None, ins: Any = (), outs: Any = ()
) -> Callable[[Callable[..., Any]], InternalFunction]:
    """Declare an internal node function: a builder of its child graph, traced once."""

    def wrap(pyfunc: Callable[..., Any]) -> InternalFunction:
        params, outputs = signature_ports(pyfunc, "internal", require_return=False)
        fn = InternalFunction(
            pyfunc.__name__,
            params,
            builder=pyfunc,
            hint=_check_hint(hint, pyfunc),
            ins=_names(ins, "ins", pyfunc),
            outs=_names(outs, "outs", pyfunc),
            location=location_of(pyfunc),
            declared_outputs=outputs,
            tracer=trace,
        )
        fn.__doc__ = pyfunc.__doc__
        return _check_attributes(fn)

    if callable(hint) and not isinstance(hint, str):
        pyfunc, hint = hint, None
        return wrap(pyfunc)  # type: ignore[return-value]
    return wrap
