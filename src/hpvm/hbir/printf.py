"""printf in HBIR code: which conversions a format has, and a format with its ``%s`` string
literals put in.

Why a module of its own: the checker judges printf calls with these, and the code generator
rewrites them with the same rules (``codegen.py``), so both read one definition of what a
format may hold.
"""

from __future__ import annotations

import re

from . import ast as A

_CONVERSION = re.compile(r"%[-+ #0]*[0-9]*(?:\.[0-9]+)?(?:hh|h|ll|l|z)?(.)")
PRINTF_CONVERSIONS = set("diuxXofFeEgGcs")
#: The most values one printf may print (each tile's log keeps this many per line).
LOG_VALUES = 8


def printf_conversions(fmt: str) -> list[str] | str:
    """The conversion letters of a printf format (``%%`` excluded), or what is wrong."""
    out = []
    for m in _CONVERSION.finditer(fmt):
        letter = m.group(1)
        if letter == "%":
            continue
        if letter not in PRINTF_CONVERSIONS:
            return (
                f"printf conversion '{m.group(0)}' is not supported; use %d, %u, %x, %o, %c, %f, %e, %g, "
                "or %s with a string literal"
            )
        out.append(letter)
    return out


#: C's escapes in string literals (the text keeps them as written; printing decodes them).
C_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "0": "\0"}


def c_unescape(text: str) -> str:
    """A string literal's text as written (``a\\n``) → the characters it stands for."""
    return re.sub(r"\\(.)", lambda m: C_ESCAPES.get(m.group(1), m.group(1)), text)


def inline_strings(fmt: str, args: tuple[A.Expr, ...]) -> tuple[str, tuple[A.Expr, ...]]:
    """``printf("%-6s=%d", "x", v)`` → ``("x     =%d", (v,))``: each ``%s`` replaced by its
    string literal, formatted with the conversion's flags, width and precision, and escaped
    for the format (``%`` → ``%%``, ``\\`` → ``\\\\``) — the string is known when the
    program is lowered, so only numbers travel through the tiles' log. Assumes the checker's
    word that every ``%s`` has a string literal."""
    rest = list(args)
    values: list[A.Expr] = []
    out: list[str] = []
    at = 0
    for m in _CONVERSION.finditer(fmt):
        if m.group(1) == "%":
            continue
        arg = rest.pop(0)
        if m.group(1) != "s":
            values.append(arg)
            continue
        spec = re.sub(r"(hh|h|ll|l|z)$", "", m.group(0)[1:-1])  # flags, width, precision
        text = ("%" + spec + "s") % c_unescape(arg.value)  # type: ignore[union-attr]
        out += [fmt[at : m.start()], _format_escaped(text)]
        at = m.end()
    out.append(fmt[at:])
    return "".join(out), tuple(values)


_REESCAPE = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0", "%": "%%"}


def _format_escaped(text: str) -> str:
    """Characters → the text of a printf format that prints them."""
    return "".join(_REESCAPE.get(ch, ch) for ch in text)
