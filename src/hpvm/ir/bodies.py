"""What a leaf computes with: its body, a value of a small sum type.

A leaf's ports and attributes are the graph's business; its *body* is the code. Front ends
produce bodies of different kinds, and each back end declares the kinds it runs
(``Backend.accepts``):

* ``PythonBody`` — Python source, the Numba subset (``hpvm.lang``, saved programs);
* ``TensorBody`` — a straight-line sequence of tensor operations (``hpvm.tensor``: the
  importer and FuseHPVMTensorNodes write these; no source is rendered and re-parsed);
* ``LLVMBody`` — one function of an LLVM IR module (the LLVM front end);
* ``GeneratedBody`` — Python generated from a foreign file (HBIR, ...), with a source map
  from each generated line to the foreign file's line, so an error in generated code names
  the line the user wrote.

Every kind can be printed in the text form (``ir/printer.py``), so a printed program with
bodies is the whole program. The verifier and the leaf analyses work on every kind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import SourceLocation
from .types import ArrayType, NodeHandleType, PortType

if TYPE_CHECKING:
    from .moduletext import ModuleText

PYTHON = "python"
TENSOR = "tensor"
LLVM = "llvm"
GENERATED = "generated"
KINDS = (PYTHON, TENSOR, LLVM, GENERATED)
#: The kinds whose code is Python a back end can run or compile as it is.
PYTHON_KINDS = frozenset({PYTHON, GENERATED})


@dataclass(frozen=True)
class PythonBody:
    """A Python function (the Numba subset). ``source`` is its ``def`` (dedented, without
    decorators) when known; ``line`` the file line that ``def`` is on.

    ``module``: the module text the body was read from (a program file), whose last ``def``
    it is. Until something needs to run the leaf, that text has not run and ``pyfunc`` is
    ``None``; ``LeafFunction.pyfunc`` runs it (``ir/moduletext.py``)."""

    pyfunc: Callable[..., Any] | None
    source: str | None = None
    line: int = 0
    module: ModuleText | None = field(default=None, compare=False, repr=False)

    kind = PYTHON


@dataclass(frozen=True)
class Operand:
    """An operand of a tensor operation: a leaf parameter (by index), the result of an
    earlier operation in the leaf (by index) or a constant."""

    kind: str  # "param", "local" or "const"
    value: Any

    def __repr__(self) -> str:
        return f"{self.kind}:{self.value!r}"


@dataclass(frozen=True)
class OpCall:
    """One operation of a tensor body; its result is local ``index`` (its position). ``args``
    holds every parameter of the operation, defaults filled in (``ir/tensorops``)."""

    op: str
    args: tuple[Operand, ...]
    line: int = field(default=0, compare=False)  # where it was written (0: generated)


@dataclass(frozen=True)
class TensorBody:
    """Straight-line tensor operations and what the leaf returns."""

    calls: tuple[OpCall, ...]
    returns: tuple[Operand, ...]

    kind = TENSOR

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(c.op for c in self.calls)


@dataclass(frozen=True)
class LLVMBody:
    """Function ``function`` of the LLVM IR module ``module`` (text), taking its ports as
    ``llvm_abi_types`` says (docs/llvm.md: the ABI of node functions in LLVM form)."""

    module: str
    function: str

    kind = LLVM


#: Port scalar type name → LLVM type (signedness is not an LLVM type's business).
LLVM_SCALARS = {
    "bool": "i1",
    "i8": "i8",
    "i16": "i16",
    "i32": "i32",
    "i64": "i64",
    "u8": "i8",
    "u16": "i16",
    "u32": "i32",
    "u64": "i64",
    "f32": "float",
    "f64": "double",
}


def llvm_abi_types(ptype: PortType) -> list[str]:
    """The LLVM arguments (or struct fields) one port takes in LLVM form: a scalar by
    value, a node handle as ``ptr``, an array as seed 000's ``(ptr, i64 bytes)`` pair, with
    one ``i64`` extent per dimension after it when its rank is 2 or more (a leaf cannot
    index a 2-D array without its shape); a pointer-only array (``u8[*]``) as its ``ptr``
    alone (HPVM's pointer, whose size, if any, is a port of its own)."""
    if isinstance(ptype, ArrayType) and not ptype.sized:
        return ["ptr"]
    if isinstance(ptype, ArrayType):
        return ["ptr", "i64"] + (["i64"] * ptype.rank if ptype.rank > 1 else [])
    if isinstance(ptype, NodeHandleType):
        return ["ptr"]
    return [LLVM_SCALARS[ptype.name]]


# What LLVM's printer writes bare (letters, digits, ``-``, ``.``, ``_``; not a digit first).
# Its lexer also reads ``$`` bare, but the printer quotes a name with a ``$``: ``@"a$"``.
_PLAIN_NAME = re.compile(r"[-a-zA-Z._][-a-zA-Z._0-9]*\Z")


def llvm_name(name: str) -> str:
    """An LLVM identifier's name as LLVM text writes it after its sigil: bare when it may be,
    else quoted, as LLVM's printer escapes it: ``\\`` as ``\\\\``, and every other byte of
    its UTF-8 that is not printable ASCII, or is ``"``, as ``\\XX`` (``"a b"``,
    ``"gr\\C3\\B6\\C3\\9Fe"``). ``ir.llvm_text.name_of`` reads it back."""
    if _PLAIN_NAME.match(name):
        return name
    escaped = "".join(
        "\\\\" if b == 0x5C else chr(b) if 0x20 <= b < 0x7F and b != 0x22 else f"\\{b:02X}"
        for b in name.encode()
    )
    return f'"{escaped}"'


@dataclass(frozen=True)
class LLVMStruct:
    """The struct type a node function returns (seed 000: one field per output), however
    its module spells it: ``spelled`` is ``{ float }``, ``<{ ptr, i64 }>`` (packed) or
    ``%struct.out.f`` (named, as HPVM's GenHPVM names them); ``fields`` its field types."""

    spelled: str
    fields: tuple[str, ...]
    packed: bool = False

    @property
    def literal(self) -> str:
        """The same struct spelled as a literal type (``<{ ptr, i64 }>``, ``{}``)."""
        inner = "{ " + ", ".join(self.fields) + " }" if self.fields else "{}"
        return f"<{inner}>" if self.packed else inner


def llvm_struct_return(fn: Any) -> LLVMStruct | None:
    """The struct an llvmlite function ``fn`` returns, literal, packed or named alike, or
    ``None`` when it returns something else (``void``, a scalar)."""
    ret = fn.global_value_type.get_function_return()
    if not ret.is_struct:
        return None
    fields = tuple(str(e) if not e.is_struct or e.is_literal_struct else f"%{llvm_name(e.name)}"
                   for e in ret.elements)  # fmt: skip
    spelled = str(ret) if ret.is_literal_struct else f"%{llvm_name(ret.name)}"
    return LLVMStruct(spelled, fields, ret.is_packed_struct)


#: The function an exported leaf calls when its body raised (docs/llvm.md, the ABI of
#: node functions): ``void @__hpvm_leaf_error(i32 status, ptr excinfo)``, Numba's nonzero
#: status code and its exception-info pointer. Not an HPVM intrinsic: part of hpvm's ABI,
#: defined by the runtime that runs the leaf (``backends/llvm_native``), which records the
#: first error of each call and raises it as a ``NodeExecutionError``.
LEAF_ERROR = "__hpvm_leaf_error"
LEAF_ERROR_DECLARATION = f"declare void @{LEAF_ERROR}(i32, ptr)"


@dataclass(frozen=True)
class GeneratedBody:
    """Python generated from a foreign file. ``lines[k]`` is the line of ``origin`` that
    generated line ``k + 1`` of ``source`` came from (0: no line of its own).

    ``context``: the name of one more parameter the function takes after the leaf's ports,
    which receives the instance context (``ir/instance_context.py``) — what a leaf cloned
    with its context (seed 001's step 1, ``passes/clone_leaves.py``) reads instead of calling
    the query intrinsics. ``cloned_from``: that leaf, while the program is in memory (what
    back ends compile in its module's namespace and quote in messages). ``module``: the
    compiled text, run when the leaf must run (``pyfunc`` is ``None`` until then), as for
    ``PythonBody``.
    """

    pyfunc: Callable[..., Any] | None
    source: str
    origin: str
    lines: tuple[int, ...] = field(default=())
    context: str | None = None
    cloned_from: Any = field(default=None, compare=False, repr=False)
    module: ModuleText | None = field(default=None, compare=False, repr=False)

    kind = GENERATED

    def origin_of(self, generated_line: int) -> SourceLocation:
        """The foreign file's line for a line of the generated source."""
        k = generated_line - 1
        line = self.lines[k] if 0 <= k < len(self.lines) else 0
        return SourceLocation(self.origin, line)

    def generated_line(self, origin_line: int) -> int:
        """The first line of the generated source that ``origin_line`` of the foreign file
        generated (0: none) — ``origin_of`` maps it back to ``origin_line``. Code written
        from the leaf's IR, whose lines are the foreign file's, takes these lines so that it
        runs as the generated code's lines do (``backends/interp/from_ir.py``)."""
        return self.lines.index(origin_line) + 1 if origin_line and origin_line in self.lines else 0


LeafBody = PythonBody | TensorBody | LLVMBody | GeneratedBody


def const_text(value: Any) -> str:
    """A numeric constant as the text form and Python write it (``float("inf")`` in Python,
    ``inf`` in the text form is handled by the printer)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


__all__ = [
    "GENERATED",
    "KINDS",
    "LLVM",
    "PYTHON",
    "PYTHON_KINDS",
    "TENSOR",
    "GeneratedBody",
    "LEAF_ERROR",
    "LEAF_ERROR_DECLARATION",
    "LLVMBody",
    "LLVMStruct",
    "LLVM_SCALARS",
    "LeafBody",
    "OpCall",
    "Operand",
    "PythonBody",
    "TensorBody",
    "const_text",
    "llvm_abi_types",
    "llvm_name",
    "llvm_struct_return",
]
