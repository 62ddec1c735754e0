"""What the OpenCL emitter passes around: C expressions with their types and bounds, array
views, C names for the leaf's names, literals, and the back end's ``CompileError``.

Why a module of its own: every part of the emitter (statements, expressions, arrays,
intrinsics, the signature) builds and reads these values, and the leaf IR gives only the
types — C spellings, the address space of an array and what is known about a value's sign
are the back end's own facts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ...errors import CompileError, SourceLocation
from ...ir.graph import LeafFunction
from . import cltypes as ct

OUT_PREFIX = "hpvm__out"
CTX_NAME = "hpvm__ctx"


@dataclass
class Val:
    """A scalar C expression of ``dtype``. ``lb``: a lower bound of its value when known (an
    index with ``lb >= 0`` needs no wrap); ``const``: its value when the IR has it as a
    constant; ``effects``: evaluating it has side effects (an atomic)."""

    code: str
    dtype: np.dtype
    lb: int | float | None = None
    const: bool | int | float | None = None
    effects: bool = False

    @property
    def nonneg(self) -> bool:
        return self.dtype.kind in "ub" or (self.lb is not None and self.lb >= 0)


@dataclass
class View:
    """An array value: a view of the leaf's array parameter (or private array) ``base``."""

    base: str
    ptr: str
    dtype: np.dtype
    space: str
    off: str
    shape: list[str]
    strides: list[str]

    @property
    def rank(self) -> int:
        return len(self.shape)


def fail(leaf: LeafFunction, where: SourceLocation | int | None, what: str) -> CompileError:
    """The back end's error for ``leaf``: ``where`` a location (a line of the IR, already the
    file's), a line of the leaf's source, or ``None`` for the leaf's own place."""
    if where is None:
        place = leaf.location
    elif isinstance(where, int):
        place = leaf.where(where)
    else:
        place = where
    return CompileError(
        f"leaf '{leaf.name}' ({place.file}:{place.line}): {what}; the opencl back end cannot "
        "translate this to OpenCL C — run this node with target='cpu' or target='interp'"
    )


# -- literals ---------------------------------------------------------------------------------


def float_literal(value: float, dtype: np.dtype) -> str:
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if dtype == ct.F32:
            text += "f"
        return f"({text})" if text.startswith("-") else text  # -(-0.0) is not --0.0
    return text if dtype == ct.F32 else f"((double){text})"


def int_literal(value: int, dtype: np.dtype) -> str:
    if dtype == ct.I64 and value == -(2**63):
        return "(-9223372036854775807L - 1)"
    if value < 0:
        return f"({ct.literal(str(value), dtype)})"
    return ct.literal(str(value), dtype)


def constant(value: bool | int | float, dtype: np.dtype) -> Val:
    """A constant of the IR as a C literal of its type."""
    if dtype == ct.BOOL:
        return Val("true" if value else "false", ct.BOOL, int(bool(value)), bool(value))
    if ct.is_int(dtype):
        return Val(int_literal(int(value), dtype), dtype, int(value), int(value))
    v = float(value)
    return Val(float_literal(v, dtype), dtype, 0 if v >= 0 else None, v)


def cast(value: Val, dtype: np.dtype) -> str:
    """``value`` as C code of ``dtype`` (a constant is written in the new type directly)."""
    if value.dtype == dtype:
        return value.code
    if dtype == ct.BOOL:
        return f"({value.code} != 0)"
    if value.const is not None and not isinstance(value.const, bool):
        if ct.is_float(dtype):
            return float_literal(float(value.const), dtype)
        if ct.is_integral(value.dtype):
            info = np.iinfo(dtype)
            if info.min <= value.const <= info.max:
                return int_literal(int(value.const), dtype)
    return f"(({ct.c_name(dtype)}){value.code})"


# -- C code helpers ---------------------------------------------------------------------------

_SIMPLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^\(?-?[0-9.]+[fLU]*\)?$")


def simple(code: str) -> bool:
    """A C expression cheap and pure enough to repeat (a name or a literal)."""
    return bool(_SIMPLE.match(code))


def strip_parens(code: str) -> str:
    """``(a == b)`` → ``a == b`` when the parentheses enclose the whole expression."""
    if not (code.startswith("(") and code.endswith(")")):
        return code
    depth = 0
    for k, ch in enumerate(code):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(code) - 1:
            return code
    return code[1:-1]


# -- names ------------------------------------------------------------------------------------

_C_RESERVED = set(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union
    unsigned void volatile while bool true false half uchar ushort uint ulong size_t ptrdiff_t
    intptr_t uintptr_t global local constant private kernel read_only write_only read_write
    image2d_t image3d_t sampler_t event_t complex imaginary main printf barrier""".split()
)
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|float|double|half|bool)\d+$")
_C_FUNCTIONS = set(
    """sqrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh expm1
    log1p erf erfc tgamma lgamma exp2 cbrt fabs floor ceil trunc rint round abs min max fmin fmax
    isnan isinf isfinite atan2 hypot copysign fmod pow pown as_int as_uint as_long as_ulong
    as_float as_double mad fma clamp sign select convert_int get_local_id get_group_id
    get_global_id get_local_size get_num_groups get_global_size get_work_dim""".split()
)


class CNames:
    """The C name of each of the leaf's names: itself unless it clashes with C, OpenCL's
    built-ins and macros, or the emitter's own ``hpvm``/``__`` names."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, py: str) -> str:
        c = self.names.get(py)
        if c is None:
            c = py
            if (
                c in _C_RESERVED
                or c in _C_FUNCTIONS
                or _VECTOR.match(c)
                or "__" in c
                or c.startswith(("_", "hpvm"))
                or c.isupper()  # OpenCL's macros are upper case: M_PI, FLT_MAX, CLK_LOCAL_MEM_FENCE...
                or not c.isascii()
            ):
                c = "v_" + re.sub(r"[^A-Za-z0-9]+", "_", py).strip("_")
            base, k = c, 1
            while c in self.used:
                k += 1
                c = f"{base}_{k}"
            self.names[py] = c
            self.used.add(c)
        return c
