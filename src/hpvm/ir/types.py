"""Port types: scalars with a dtype, arrays with a dtype and a rank, and node handles.

Node-function parameters and results are annotated with these types. They are what the
verifier compares across edges and binds, what launches check arguments against and what
compiled back ends specialise on. Numba-style spelling is accepted: ``f32[:, :]`` is a
2-D float32 array, as is ``Array[f32, 2]``.

A *pointer-only* array, ``u8[*]`` (``hpvm.u8[...]`` in Python), is HPVM's pointer passed
without its size: in LLVM form one ``ptr`` where a sized array is a ``(ptr, i64 bytes)``
pair, because HPVM numbers a pointer and its size as two ports, which programs may connect
separately (docs/llvm.md, "What import groups"). At run time it is a 1-D NumPy array like
any array port: the memory the runtime knows from that address on. It is a type of its own:
an edge between ``u8[*]`` and ``u8[:]`` is a type error.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    """A scalar port: one value of a NumPy dtype."""

    name: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_SCALAR_DTYPES[self.name])

    @property
    def is_integer(self) -> bool:
        return self.dtype.kind in "iu"

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"

    def __getitem__(self, key: Any) -> ArrayType:
        """``f32[:]`` → 1-D array, ``f32[:, :]`` → 2-D array (Numba's spelling); ``u8[...]``
        → the pointer-only array ``u8[*]`` (``*`` is no Python subscript)."""
        if key is Ellipsis:
            return ArrayType(self, 1, sized=False)
        keys = key if isinstance(key, tuple) else (key,)
        if not keys or not all(isinstance(k, slice) and k == slice(None) for k in keys):
            raise TypeError(
                f"write an array type as {self.name}[:] or {self.name}[:, :] (or {self.name}[...] "
                "for a pointer without its size)"
            )
        return ArrayType(self, len(keys))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrayType:
    """An array port: a NumPy array of ``elem`` with ``rank`` dimensions, passed by reference.

    ``sized=False``: a pointer-only array (rank 1, written ``u8[*]``), HPVM's pointer whose
    size is a port of its own or none (see the module docstring)."""

    elem: ScalarType
    rank: int
    sized: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.rank <= 8:
            raise ValueError(f"array rank must be between 1 and 8, not {self.rank}")
        if not self.sized and self.rank != 1:
            raise ValueError(f"a pointer-only array has one dimension ({self.elem.name}[*]), not {self.rank}")

    @property
    def dtype(self) -> np.dtype:
        return self.elem.dtype

    def __str__(self) -> str:
        if not self.sized:
            return f"{self.elem.name}[*]"
        return f"{self.elem.name}[{', '.join(':' * self.rank)}]"


@dataclass(frozen=True)
class NodeHandleType:
    """An opaque handle to a node (seed 000's ``i8*`` node handles)."""

    def __str__(self) -> str:
        return "node"


PortType = ScalarType | ArrayType | NodeHandleType

_SCALAR_DTYPES = {
    "bool": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f32": np.float32,
    "f64": np.float64,
}
SCALAR_TYPES: dict[str, ScalarType] = {name: ScalarType(name) for name in _SCALAR_DTYPES}
_BY_DTYPE = {np.dtype(dt): SCALAR_TYPES[name] for name, dt in _SCALAR_DTYPES.items()}

bool_ = SCALAR_TYPES["bool"]
i8, i16, i32, i64 = (SCALAR_TYPES[n] for n in ("i8", "i16", "i32", "i64"))
u8, u16, u32, u64 = (SCALAR_TYPES[n] for n in ("u8", "u16", "u32", "u64"))
f32, f64 = SCALAR_TYPES["f32"], SCALAR_TYPES["f64"]
node_t = NodeHandleType()


class Array:
    """``Array[f32, 2]``: the subscript spelling of an array type."""

    def __class_getitem__(cls, key: Any) -> ArrayType:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError("write Array[dtype, rank], e.g. Array[hpvm.f32, 2]")
        elem, rank = key
        if not isinstance(rank, (int, np.integer)) or isinstance(rank, (bool, np.bool_)):
            raise TypeError(f"the rank in Array[dtype, rank] must be an int, not {rank!r}")
        return ArrayType(scalar_type(elem), int(rank))


def scalar_type(spec: Any) -> ScalarType:
    """The scalar type for a spelling: ``f32``, ``"f32"``, ``np.float32``, ``np.dtype``, ``int``."""
    if isinstance(spec, ScalarType):
        return spec
    if spec is None:  # np.dtype(None) is float64; a None annotation is no port type
        raise TypeError(f"None is not a scalar port type; use one of {', '.join(SCALAR_TYPES)}")
    if spec is builtins.int:
        return i64
    if spec is builtins.float:
        return f64
    if spec is builtins.bool:
        return bool_
    if isinstance(spec, str) and spec in SCALAR_TYPES:
        return SCALAR_TYPES[spec]
    try:
        dtype = np.dtype(spec)
    except TypeError:
        dtype = None
    if dtype is not None and dtype in _BY_DTYPE:
        return _BY_DTYPE[dtype]
    raise TypeError(f"{spec!r} is not a scalar port type; use one of {', '.join(SCALAR_TYPES)}")


def port_type(spec: Any) -> PortType:
    """Convert an annotation to a port type, or raise ``TypeError`` saying what is accepted."""
    if isinstance(spec, (ArrayType, NodeHandleType)):
        return spec
    if isinstance(spec, str):
        return _parse_annotation_text(spec)
    return scalar_type(spec)


def _parse_annotation_text(text: str) -> PortType:
    """A string annotation (``from __future__ import annotations`` makes every one a string).

    Besides the printed form (``f32[:, :]``, ``u8[*]``) this accepts the spellings used in
    code: ``hpvm.f32[:]``, ``hpvm.u8[...]``, ``Array[f32, 2]`` and NumPy names such as
    ``np.float32``.
    """
    text = text.strip().replace("hpvm.", "")
    if text.startswith("Array[") and text.endswith("]"):
        parts = [p.strip() for p in text[len("Array[") : -1].split(",")]
        if len(parts) == 2 and parts[1].isdigit():
            return ArrayType(scalar_type(_scalar_text(parts[0])), int(parts[1]))
        raise TypeError(f"bad array type {text!r}; write it like Array[f32, 2]")
    if text.endswith("]") and "[" in text:
        name, dims = text[:-1].split("[", 1)
        return parse_type(f"{name}[*]" if dims.strip() == "..." else text)
    return _scalar_text(text)


def _scalar_text(text: str) -> PortType:
    if text in ("node", "node_t"):
        return node_t
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    for prefix in ("numpy.", "np."):
        text = text.removeprefix(prefix)
    if text in ("int", "float", "bool"):
        return scalar_type(getattr(builtins, text))
    if text.isidentifier() and hasattr(np, text) and isinstance(getattr(np, text), type):
        return scalar_type(getattr(np, text))
    raise TypeError(f"unknown type {text!r}; scalars are {', '.join(SCALAR_TYPES)}")


def parse_type(text: str) -> PortType:
    """Parse the printed form of a type: ``i64``, ``f32[:, :]``, ``u8[*]``, ``node``."""
    text = text.strip()
    if text == "node":
        return node_t
    if text.endswith("]") and "[" in text:
        name, dims = text[:-1].split("[", 1)
        parts = [p.strip() for p in dims.split(",")]
        if parts == ["*"]:
            return ArrayType(scalar_type(name.strip()), 1, sized=False)
        if not all(p == ":" for p in parts):
            raise TypeError(
                f"bad array type {text!r}; write it like f32[:, :], or u8[*] for a pointer without "
                "its size (one dimension)"
            )
        return ArrayType(scalar_type(name.strip()), len(parts))
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    raise TypeError(f"unknown type {text!r}; scalars are {', '.join(SCALAR_TYPES)}")


def describe_value(value: Any) -> str:
    """A short description of a run-time value, for error messages."""
    if isinstance(value, np.ndarray):
        return f"a {value.ndim}-D {value.dtype} array"
    return f"{type(value).__name__} {value!r}"


def check_value(ptype: PortType, value: Any) -> str | None:
    """Why ``value`` cannot be passed to a port of type ``ptype``, or ``None`` when it can."""
    if isinstance(ptype, ArrayType):
        if not isinstance(value, np.ndarray):
            return f"expected {ptype} (a NumPy array), got {describe_value(value)}"
        if value.dtype != ptype.dtype or value.ndim != ptype.rank:
            return f"expected {ptype}, got {describe_value(value)}"
        if not ptype.sized and not value.flags.c_contiguous:
            return (
                f"expected {ptype} (a pointer: the memory from its address on), got a strided view; "
                "pass np.ascontiguousarray(...)"
            )
        return None
    if isinstance(ptype, NodeHandleType):
        return None
    if isinstance(value, np.ndarray):
        return f"expected a scalar {ptype}, got {describe_value(value)}"
    if isinstance(value, (bool, np.bool_)):
        return None if ptype == bool_ or ptype.is_integer else f"expected {ptype}, got a bool"
    if isinstance(value, (int, np.integer)):
        if ptype.is_float or ptype == bool_:
            return None
        info = np.iinfo(ptype.dtype)
        if not info.min <= int(value) <= info.max:
            return f"{value} does not fit in {ptype} ({info.min}..{info.max})"
        return None
    if isinstance(value, (float, np.floating)):
        return None if ptype.is_float else f"expected {ptype}, got float {value!r}"
    return f"expected {ptype}, got {describe_value(value)}"


def coerce_scalar(ptype: ScalarType, value: Any) -> Any:
    """The value as the port's NumPy scalar type (after ``check_value`` accepted it)."""
    return ptype.dtype.type(value)
