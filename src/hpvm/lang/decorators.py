"""``@hpvm.leaf`` and ``@hpvm.internal``: turn annotated Python functions into node functions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ParseError, VerificationError
from ..ir.graph import HINTS, InternalFunction, LeafFunction, Param, location_of, signature_ports
from ..ir.layouts import Layout
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


def _with_layouts(params: list[Param], layouts: Any, kind: str, pyfunc: Callable[..., Any]) -> list[Param]:
    """The parameters with the ``layouts={"a": hpvm.Layout.block(), "b": "chunked(4)"}`` given.

    Whether a layout fits its parameter (an array, axes within its rank, ...) is the
    verifier's check, run by the decorator right after.
    """
    if layouts is None:
        return params
    where = f"{kind} '{pyfunc.__name__}' ({location_of(pyfunc)})"
    if not isinstance(layouts, Mapping):
        raise VerificationError(
            f"{where}: layouts maps parameter names to layouts, e.g. "
            f"layouts={{'a': hpvm.Layout.block()}}, not {layouts!r}"
        )
    names = [p.name for p in params]
    chosen: dict[str, Layout] = {}
    for name, value in layouts.items():
        if name not in names:
            raise VerificationError(
                f"{where}: layouts names {name!r}, which is not a parameter "
                f"(parameters: {', '.join(names) or 'none'})"
            )
        chosen[name] = _layout_value(value, name, where)
    return [dataclasses.replace(p, layout=chosen[p.name]) if p.name in chosen else p for p in params]


def _layout_value(value: Any, name: str, where: str) -> Layout:
    if isinstance(value, Layout):
        return value
    if isinstance(value, str):
        try:
            return Layout.parse(value)
        except ParseError as e:
            detail = str(e).split(": ", 1)[-1]
            raise VerificationError(
                f"{where}: the layout {value!r} of parameter '{name}' does not parse "
                f"(column {e.column}: {detail}); write e.g. 'block', 'chunked(4), axes(0)'"
            ) from None
    raise VerificationError(
        f"{where}: the layout of parameter '{name}' is {value!r}; give an hpvm.Layout "
        "(hpvm.Layout.block(), .chunked(n), .strided(), .replicated()) or its text, e.g. 'chunked(4)'"
    )


def _check_attributes(fn: Any) -> Any:
    from ..ir.verify import function_problems

    problems = function_problems(fn)
    if problems:
        raise VerificationError(problems)
    return fn


def leaf(
    hint: str | None = None, ins: Any = (), outs: Any = (), layouts: Mapping[str, Any] | None = None
) -> Callable[[Callable[..., Any]], LeafFunction]:
    """Declare a leaf node function: Python (the Numba subset) that computes.

    ``ins`` / ``outs`` name the array parameters the leaf reads / writes; every parameter
    and result is annotated with an HPVM type (``hpvm.f32[:]``, ``hpvm.i64``, ...).
    ``layouts`` gives array parameters a data layout (docs/layouts.md): parameter name →
    ``hpvm.Layout`` or its text spelling.
    """

    def wrap(pyfunc: Callable[..., Any]) -> LeafFunction:
        params, outputs = signature_ports(pyfunc, "leaf", require_return=True)
        fn = LeafFunction(
            pyfunc,
            pyfunc.__name__,
            _with_layouts(params, layouts, "leaf", pyfunc),
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
    hint: str | None = None, ins: Any = (), outs: Any = (), layouts: Mapping[str, Any] | None = None
) -> Callable[[Callable[..., Any]], InternalFunction]:
    """Declare an internal node function: a builder of its child graph, traced once.

    ``layouts`` gives array parameters a data layout, as for ``@hpvm.leaf``.
    """

    def wrap(pyfunc: Callable[..., Any]) -> InternalFunction:
        params, outputs = signature_ports(pyfunc, "internal", require_return=False)
        fn = InternalFunction(
            pyfunc.__name__,
            _with_layouts(params, layouts, "internal", pyfunc),
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
