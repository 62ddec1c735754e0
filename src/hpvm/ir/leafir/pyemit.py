"""Python from a leaf IR: the leaf as a ``def`` that runs what the IR says.

Why: a back end that *changes* a leaf (``dask/offsets.py`` shifts a chunk's instance ids)
used to rewrite the leaf's syntax tree; it now changes the leaf IR and emits Python from it,
reading no Python. The text is self-contained: it reads no name of the leaf's module (the
IR resolved them all), only ``np``, ``math`` and ``hpvm``: ``namespace()``, the names to run
it (and analyse it) in; a leaf with a variable of one of those names is not emitted), every
conversion the IR makes explicit is written (``np.float32(x)``), and each
constant not of a literal's own type is written with its type. ``emit_python`` also gives
each emitted line the leaf-file line it stands for (0 for none), the source map a
``GeneratedBody`` takes.

``build(leaf made from emit_python(ir)) == ir`` on every leaf of the suite (a test): the
emitted Python reads back as the same leaf IR. A *lowered* leaf (``leafir/lowering.py``)
is emitted as seed 001's clone (``clone=True``): what the ``CloneLeaves`` pass gives the
Numba back ends.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import instance_context as ictx
from ..intrinsics import LOWERED_PREFIX
from . import ops, rules
from .exprtext import ExprText, plain_constant

NP, MATH, HPVM = "np", "math", "hpvm"
#: The clone's context parameter and its barrier marker (``emit_python(..., clone=True)``).
CTX_PARAM = f"{LOWERED_PREFIX}ctx"
BARRIER_MARKER = f"{LOWERED_PREFIX}barrier"


def namespace() -> dict[str, Any]:
    """The names the emitted code reads: NumPy, ``math`` and the ``hpvm`` package, as leaf
    code sees them (the package is looked up when asked: the IR layer does not import the
    front end, the code it emits reads it as user code does)."""
    return {NP: np, MATH: math, HPVM: importlib.import_module("hpvm")}


_INDENT = "    "


def emit_problem(ir: ops.LeafIR) -> str | None:
    """Why ``ir`` cannot be emitted (``None``: it can)."""
    names = {p.name for p in ir.params} | {n for n, _ in ir.locals}
    taken = sorted(names & {NP, MATH, HPVM})
    return f"leaf '{ir.name}' has a variable named '{taken[0]}'" if taken else None


@dataclass(frozen=True)
class CloneSpelling:
    """What a back end changes in how its clone is spelled, beyond the default clone: more
    parameters after ``__hpvm_ctx`` (``extra_params``), intrinsics calling another function
    with leading arguments (``calls``: intrinsic name -> (callee, leading argument texts);
    ``cpu``'s pooled ``malloc``), and how a local array of a constant shape whose contents
    start undefined (``np.empty`` of constants) is made (``local_array``: a callee taking
    the shape and the dtype; ``cuda``'s thread-private ``cuda.local.array``)."""

    extra_params: tuple[str, ...] = ()
    calls: tuple[tuple[str, tuple[str, tuple[str, ...]]], ...] = ()
    local_array: str | None = None


def emit_python(
    ir: ops.LeafIR,
    name: str | None = None,
    *,
    clone: bool = False,
    spelling: CloneSpelling | None = None,
    writer: PythonText | None = None,
    blocks: BlockWriter | None = None,
) -> tuple[str, tuple[int, ...]]:
    """``ir`` as Python text (a ``def`` named ``name``, default the leaf's), and for each
    line of it the line of the leaf's file it stands for (``emit_problem`` first).

    ``clone``: ``ir`` is a lowered leaf (``leafir/lowering.py``) emitted as seed 001's clone:
    it takes the instance context as one more parameter, ``__hpvm_ctx`` (which its
    ``CtxRead`` reads index), calls the back end's implementation of each lowered intrinsic,
    ``__hpvm_<name>(...)`` (``intrinsics.LOWERED_PREFIX``), and marks each barrier with a
    statement ``__hpvm_barrier()`` — names the back end binds; ``spelling`` (implies
    ``clone``) what a back end changes in that (``CloneSpelling``). ``writer``: how the
    expressions of a leaf not lowered are written (the interpreter's
    ``OperatorCallsPython`` writes operators as calls); ``blocks``: how the statements of a
    leaf not lowered are written (a ``BlockWriter`` over ``writer``; the interpreter's writes
    each barrier as a ``yield``)."""
    clone = clone or spelling is not None
    spelling = spelling or _DEFAULT
    params = [p.name for p in ir.params] + ([CTX_PARAM, *spelling.extra_params] if clone else [])
    writer = (_CLONE if spelling == _DEFAULT else _Clone(spelling)) if clone else (writer or _PYTHON)
    out: list[tuple[str, int]] = [(f"def {name or ir.name}({', '.join(params)}):", ir.line)]
    (blocks if blocks is not None and not clone else BlockWriter(writer)).block(ir.body, 1, ir.line, out)
    return "\n".join(text for text, _ in out) + "\n", tuple(line for _, line in out)


class BlockWriter:
    """Writes statements as Python lines, each with the leaf line it stands for; a back end
    that emits a changed leaf (``cpu/barrier_emit.py``) overrides ``stmt`` for the statements
    it writes otherwise and passes its own expression writer ``text``."""

    def __init__(self, text: PythonText | None = None):
        self.text = text or _PYTHON

    def block(self, block: ops.Block, depth: int, line: int, out: list[tuple[str, int]]) -> None:
        before = len(out)
        for stmt in block:
            self.stmt(stmt, depth, out)
        if len(out) == before:
            out.append((f"{_INDENT * depth}pass", line))

    def stmt(self, stmt: ops.Stmt, depth: int, out: list[tuple[str, int]]) -> None:
        pad, t = _INDENT * depth, self.text
        if isinstance(stmt, ops.Assign):
            out.append((f"{pad}{stmt.target.name} = {t.expr(stmt.value)}", stmt.line))
        elif isinstance(stmt, ops.Store):
            value = t.expr(t.stored(stmt))
            out.append((f"{pad}{t.atom(stmt.array)}[{t.list(stmt.indices)}] = {value}", stmt.line))
        elif isinstance(stmt, ops.For):
            out.append((f"{pad}for {stmt.var.name} in range({t.list(range_args(stmt))}):", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.While):
            out.append((f"{pad}while {t.expr(stmt.test)}:", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.If):
            out.append((f"{pad}if {t.expr(stmt.test)}:", stmt.line))
            self.block(stmt.body, depth + 1, stmt.line, out)
            if stmt.orelse:
                out.append((f"{pad}else:", stmt.line))
                self.block(stmt.orelse, depth + 1, stmt.line, out)
        elif isinstance(stmt, ops.Return):
            out.append((f"{pad}return {t.list(stmt.values)}".rstrip(), stmt.line))
        elif isinstance(stmt, ops.Raise):
            out.append((f"{pad}raise" + ("" if stmt.exc is None else f" {stmt.exc}"), stmt.line))
        elif isinstance(stmt, ops.Break):
            out.append((f"{pad}break", stmt.line))
        elif isinstance(stmt, ops.Continue):
            out.append((f"{pad}continue", stmt.line))
        else:
            out.append((f"{pad}{t.expr(stmt.value)}", stmt.line))


def stored(store: ops.Store) -> ops.Expr:
    """The value a store writes, without its conversion to the element type: storing into
    the array converts it the same way (NumPy's and Numba's), and writing the conversion
    out would make a Python run (the GPU simulator's) raise where the store wraps around
    (``np.int32(2**40)`` raises, ``a[i] = 2**40`` into int32 keeps the low bits). The
    builder reads the store back with the same ``Cast``."""
    value = store.value
    return (
        value.value if isinstance(value, ops.Cast) and isinstance(value.value.type, ops.ScalarType) else value
    )


def range_args(loop: ops.For) -> tuple[ops.Expr, ...]:
    """``range``'s arguments as a user writes them: a step of 1 and a start of 0 left out
    (the builder reads them back as the same loop)."""
    if loop.step == _ONE:
        return (loop.stop,) if loop.start == _ZERO else (loop.start, loop.stop)
    return (loop.start, loop.stop, loop.step)


_ZERO, _ONE = ops.Const(0, ops.ScalarType("i64")), ops.Const(1, ops.ScalarType("i64"))


class PythonText(ExprText):
    """Python's spellings: NumPy scalar types and functions under the names ``np_name`` and
    ``math_name`` the emitted module gives NumPy and ``math`` (a subclass may rename them)."""

    np_name, math_name = NP, MATH

    def constant(self, c: ops.Const) -> str:
        plain = plain_constant(c)
        if plain is not None:
            return plain
        v = c.value
        text = repr(float(v)) if c.type.is_float else str(int(v))
        if c.type.is_float and not math.isfinite(v):
            text = (
                f"{self.np_name}.{'nan' if v != v else 'inf'}" if v != v or v > 0 else f"-{self.np_name}.inf"
            )
        return f"{self.dtype(c.type)}({text})"

    def dtype(self, t: ops.ScalarType) -> str:
        """The NumPy scalar type of ``t`` as the emitted code names it."""
        return f"{self.np_name}.{'bool_' if t.dtype == np.bool_ else t.dtype.name}"

    def alloc(self, e: ops.Alloc) -> str:
        return f"{self.np_name}.{e.fill}(({self.list(e.shape)},), {self.dtype(e.type.elem)})"

    def call(self, e: ops.Call) -> str:
        module, _, func = e.func.rpartition(".")
        prefix = {"math": f"{self.math_name}.", "np": f"{self.np_name}.", "": ""}[module]
        return f"{prefix}{func}({self.list(e.args)})"

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        return f"{HPVM}.{e.intrinsic.name}({self.arguments(e)})"

    def arguments(self, e: ops.IntrinsicOp) -> str:
        """An intrinsic's arguments as leaf code passes them: an atomic on an element of an
        n-D array takes its indices as one tuple (the IR spreads them out)."""
        args = e.args
        if e.intrinsic.kind == "atomic" and len(args) > 3:
            return f"{self.atom(args[0])}, ({self.list(args[1:-1])}), {self.expr(args[-1])}"
        return self.list(args)

    def ctx_read(self, e: ops.CtxRead) -> str:
        return f"{CTX_PARAM}[{ictx.index(e.level, e.field)}]"

    def stored(self, store: ops.Store) -> ops.Expr:
        """The value a store is written with (``stored``: without its conversion; a writer
        whose stores do not convert as compiled code does keeps it)."""
        return stored(store)


class _Clone(PythonText):
    """A lowered leaf as the clone: lowered intrinsics call ``__hpvm_<name>``, a barrier is
    the marker ``__hpvm_barrier()``; a ``CloneSpelling`` changes some of that."""

    def __init__(self, spelling: CloneSpelling):
        self.calls = dict(spelling.calls)
        self.local_array = spelling.local_array

    def alloc(self, e: ops.Alloc) -> str:
        if self.local_array and e.fill == "empty" and all(isinstance(x, ops.Const) for x in e.shape):
            return f"{self.local_array}(({self.list(e.shape)},), {self.dtype(e.type.elem)})"
        return super().alloc(e)

    def intrinsic(self, e: ops.IntrinsicOp) -> str:
        entry = e.intrinsic
        if entry.name in self.calls:
            callee, lead = self.calls[entry.name]
            return f"{callee}({', '.join([*lead, self.arguments(e)])})"
        if entry.lowered_call:
            return f"{LOWERED_PREFIX}{entry.name}({self.arguments(e)})"
        if entry.kind == "barrier":
            return f"{BARRIER_MARKER}()"
        return super().intrinsic(e)  # (a query not lowered: the IR was not lowered)


#: The names of the operators as the calls ``OperatorCallsPython`` writes spell them.
OPERATOR_NAMES = {
    "+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
    "<<": "lshift", ">>": "rshift", "&": "and", "|": "or", "^": "xor",
}  # fmt: skip
UNARY_NAMES = {"-": "neg", "+": "pos", "~": "invert"}


class OperatorCallsPython(PythonText):
    """Python in which every arithmetic operator, conversion and function call is a call of
    a name the running code binds (``needed``: each name and what it stands for), so that a
    runner decides how each computes — the interpreter binds Numba-typed operations
    (``backends/interp/from_ir.py``) — while the IR decides which one, from static types:

    * ``a + b`` → ``__hpvm_op_add(a, b)`` (``("binary", "+")``), ``-x`` → ``__hpvm_op_neg(x)``;
    * a ``Cast`` from scalar type S to D → ``__hpvm_cast_S_D(x)`` (``("cast", S, D)``);
    * ``math.sqrt(x)`` → ``__hpvm_call_math_sqrt(x)`` (``("call", "math.sqrt")``);
    * ``i64`` and ``f64`` constants as Python's ``int`` and ``float`` (the forms Numba-typed
      operations keep those types in); any other constant, and any operation or conversion
      of constants alone (``-1``, ``f32(0.5)``), as a name ``__hpvm_k<n>`` (``("value", e)``:
      the runner computes it once, as it would have each time);
    * the value of ``x if c else y`` converted to its type, the promotion of both branches
      (Numba's: a float32 branch of an ``if`` with a float64 one gives a float64);
    * a store's value with its conversion to the element type written out (the emitted
      Python of other writers leaves it to the store).

    Comparisons, ``not``, ``and``/``or``, conditionals, loads and stores stay Python's.
    """

    def __init__(self) -> None:
        self.needed: dict[str, tuple[Any, ...]] = {}

    def _ref(self, name: str, key: tuple[Any, ...]) -> str:
        name = f"__hpvm_{name}"
        self.needed[name] = key
        return name

    def constant(self, c: ops.Const) -> str:
        name = str(c.type)
        if name == "i64":
            return str(int(c.value))
        if name == "f64":
            v = float(c.value)
            return repr(v) if math.isfinite(v) else f"float('{v}')"
        return super().constant(c)

    def expr(self, e: ops.Expr) -> str:
        if _of_constants(e) and not (isinstance(e, ops.Const) and str(e.type) in ("i64", "f64", "bool")):
            return self._ref(f"k{len(self.needed)}", ("value", e))
        if isinstance(e, ops.Binary):
            call = self._ref(f"op_{OPERATOR_NAMES[e.op]}", ("binary", e.op))
            return f"{call}({self.expr(e.left)}, {self.expr(e.right)})"
        if isinstance(e, ops.Unary) and e.op in UNARY_NAMES:
            return f"{self._ref(f'op_{UNARY_NAMES[e.op]}', ('unary', e.op))}({self.expr(e.operand)})"
        if isinstance(e, ops.IfExp) and isinstance(e.type, ops.ScalarType):  # in the promoted type
            body, orelse = (rules.convert(b, e.type) for b in (e.body, e.orelse))
            return f"{self.atom(body)} if {self.atom(e.test)} else {self.atom(orelse)}"
        if isinstance(e, ops.Cast) and isinstance(e.value.type, ops.ScalarType):
            src, dst = str(e.value.type), str(e.type)
            return f"{self._ref(f'cast_{src}_{dst}', ('cast', src, dst))}({self.expr(e.value)})"
        return super().expr(e)

    def call(self, e: ops.Call) -> str:
        name = self._ref(f"call_{e.func.replace('.', '_')}", ("call", e.func))
        return f"{name}({self.list(e.args)})"

    def stored(self, store: ops.Store) -> ops.Expr:
        """The value with its conversion to the element type: a store of the Python forms
        (an ``int`` past int32) would not convert as compiled code does (it raises)."""
        return store.value


def _of_constants(e: ops.Expr) -> bool:
    """Whether ``e`` is a constant or arithmetic and conversions of constants alone."""
    if isinstance(e, ops.Const):
        return True
    if isinstance(e, (ops.Binary, ops.Unary, ops.Cast)) and (
        not isinstance(e, ops.Unary) or e.op in UNARY_NAMES
    ):
        return isinstance(e.type, ops.ScalarType) and all(_of_constants(o) for o in ops.operands(e))
    return False


_PYTHON = PythonText()
_DEFAULT = CloneSpelling()
_CLONE = _Clone(_DEFAULT)
#: An expression as Python (operands parenthesized when compound).
expr = _PYTHON.expr


__all__ = [
    "BARRIER_MARKER",
    "CTX_PARAM",
    "BlockWriter",
    "CloneSpelling",
    "OperatorCallsPython",
    "PythonText",
    "emit_problem",
    "emit_python",
    "expr",
    "namespace",
    "range_args",
]
