"""The typed constructors of the leaf IR: one typing rule per construct, shared by all.

The builder (from Python), the text parser and the verifier make or re-check every
expression through these functions, so a value's type is decided in exactly one place, by
``ir/numeric.py``'s rules (Numba's typing) and ``ir/intrinsics.py``'s table. A construct the
rules refuse raises ``TypeProblem`` with the reason; each caller turns it into its own
error (``LeafIRUnsupported``, ``ParseError``, a verifier problem).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import instance_context as ictx
from .. import numeric as nt
from ..intrinsics import Intrinsic, atomic_dtypes
from ..types import ArrayType, NodeHandleType, PortType, ScalarType, node_t, scalar_type
from . import ops

BOOL = scalar_type("bool")
I64 = scalar_type("i64")
U8_ARRAY = ArrayType(scalar_type("u8"), 1)

#: ``math`` functions of one argument that keep float32 and compute everything else in float64.
MATH1 = frozenset(
    "sqrt exp expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
    "fabs erf erfc gamma lgamma degrees radians".split()
)
#: ``math`` functions of two arguments (``numeric.math2_type``). Numba lacks ``math.fmod``
#: (the ``cpu`` back end refuses it); it is typed like the others for the GPU back ends.
MATH2 = frozenset({"pow", "atan2", "hypot", "copysign", "fmod"})
#: ``math`` functions giving an integer (``numeric.floor_type``) or a boolean.
MATH_INT = frozenset({"floor", "ceil", "trunc"})
MATH_BOOL = frozenset({"isnan", "isinf", "isfinite"})
#: NumPy's scalar functions of one argument (typed by the ufunc loop Numba picks).
NUMPY1 = frozenset(
    "sqrt exp expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh "
    "arcsinh arccosh arctanh floor ceil trunc rint fabs exp2 cbrt absolute isnan isinf isfinite".split()
)
#: NumPy's scalar functions of two arguments (typed by the ufunc loop too).
NUMPY2 = frozenset({"arctan2", "hypot", "copysign"})
#: Builtins the leaf language calls as functions (``int``/``float``/``bool`` are casts).
BUILTINS = frozenset({"min", "max", "abs", "round"})
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


class TypeProblem(Exception):
    """Why a construct cannot be typed (internal: callers report it their own way)."""


def _scalar(e: ops.Expr, what: str) -> np.dtype:
    if not isinstance(e.type, ScalarType):
        raise TypeProblem(f"{what} must be a scalar, not {_describe(e.type)}")
    return e.type.dtype


def _describe(t: PortType | None) -> str:
    if t is None:
        return "no value"
    if isinstance(t, ArrayType):
        return f"an array ({t})"
    if isinstance(t, NodeHandleType):
        return "a node handle"
    return str(t)


def _st(dtype: np.dtype) -> ScalarType:
    return scalar_type(dtype)


def const(value: object, type: ScalarType | None = None) -> ops.Const:
    """A constant; its type is Numba's for the literal (``numeric.value_type``) unless given."""
    if type is None:
        dtype = nt.value_type(value)
        if dtype is None:
            raise TypeProblem(f"the constant {value!r} is not a number or a boolean")
        type = _st(dtype)
    if type.dtype.kind == "b":
        return ops.Const(bool(value), type)  # type: ignore[arg-type]
    if type.dtype.kind in "iu":
        v = int(value)  # type: ignore[call-overload]
        info = np.iinfo(type.dtype)
        if not info.min <= v <= info.max:
            raise TypeProblem(f"the integer {v} does not fit in {type}")
        return ops.Const(v, type)
    return ops.Const(float(value), type)  # type: ignore[arg-type]


def unary(op: str, x: ops.Expr) -> ops.Unary:
    if op == "not":
        _scalar(x, "the operand of 'not'")
        return ops.Unary(op, x, BOOL)
    t = nt.unary_type(op, _scalar(x, f"the operand of unary '{op}'"))
    if op == "~" and isinstance(x, ops.Const) and t == nt.BOOL:
        t = nt.INT64  # Numba types a bool *literal* as an int here: ~True is -2, not False
    if t is None:
        raise TypeProblem(f"unary '{op}' is not defined on {x.type}")
    return ops.Unary(op, x, _st(t))


def binary(op: str, left: ops.Expr, right: ops.Expr) -> ops.Binary:
    if op not in nt.BINARY_OPS:
        raise TypeProblem(f"'{op}' is not a binary operator of the leaf language")
    a = _scalar(left, f"the left operand of '{op}'")
    b = _scalar(right, f"the right operand of '{op}'")
    t = nt.binary_type(op, a, b)
    if t is None:
        raise TypeProblem(f"'{op}' is not defined on {left.type} and {right.type}")
    return ops.Binary(op, left, right, _st(t))


def compare(cmp_ops: Sequence[str], operands: Sequence[ops.Expr]) -> ops.Compare:
    if len(operands) != len(cmp_ops) + 1 or not cmp_ops:
        raise TypeProblem("a comparison needs one operator between each two operands")
    for op in cmp_ops:
        if op not in CMP_OPS:
            raise TypeProblem(f"the comparison '{op}' is not supported ({', '.join(CMP_OPS)} are)")
    for e in operands:
        _scalar(e, "a compared value")
    return ops.Compare(tuple(cmp_ops), tuple(operands), BOOL)


def boolop(op: str, values: Sequence[ops.Expr]) -> ops.BoolOp:
    """``and``/``or``: Python gives one of the operands, so the type is their promotion."""
    if op not in ("and", "or") or len(values) < 2:
        raise TypeProblem(f"'{op}' needs two or more operands")
    dtypes = [_scalar(v, f"an operand of '{op}'") for v in values]
    return ops.BoolOp(op, tuple(values), _st(nt.promote(*dtypes)))


def ifexp(test: ops.Expr, body: ops.Expr, orelse: ops.Expr) -> ops.IfExp:
    _scalar(test, "the condition of 'if ... else'")
    t = nt.promote(_scalar(body, "a value of 'if ... else'"), _scalar(orelse, "a value of 'if ... else'"))
    return ops.IfExp(test, body, orelse, _st(t))


def _array(e: ops.Expr, what: str) -> ArrayType:
    if not isinstance(e.type, ArrayType):
        raise TypeProblem(f"{what} must be an array, not {_describe(e.type)}")
    return e.type


def _index(e: ops.Expr) -> None:
    t = e.type
    if not (isinstance(t, ScalarType) and t.dtype.kind in "iu"):
        raise TypeProblem(f"an index must be an integer, not {_describe(t)}")


def load(array: ops.Expr, indices: Sequence[ops.Expr]) -> ops.Load:
    t = _array(array, "what is indexed")
    if not 1 <= len(indices) <= t.rank:
        raise TypeProblem(f"{len(indices)} indices into a {t.rank}-D array ({t})")
    for i in indices:
        _index(i)
    result: ScalarType | ArrayType = (
        t.elem if len(indices) == t.rank else ArrayType(t.elem, t.rank - len(indices))
    )
    return ops.Load(array, tuple(indices), result)


def store_problem(array: ops.Expr, indices: Sequence[ops.Expr], value: ops.Expr) -> str | None:
    """Why ``array[indices] = value`` is wrong in the IR (every dimension indexed, the value
    already of the element type), or None."""
    try:
        elem = load(array, indices).type
    except TypeProblem as e:
        return str(e)
    if not isinstance(elem, ScalarType):
        return f"a store needs one index per dimension of {array.type}"
    if value.type != elem:
        return f"a store of {_describe(value.type)} into an element of {array.type} (cast it to {elem})"
    return None


def shape(array: ops.Expr, axis: int) -> ops.Shape:
    t = _array(array, "'.shape'")
    if not 0 <= axis < t.rank:
        raise TypeProblem(f".shape[{axis}] of a {t.rank}-D array ({t})")
    return ops.Shape(array, axis, I64)


def size(array: ops.Expr) -> ops.Size:
    _array(array, "'.size'")
    return ops.Size(array, I64)


def retype(array: ops.Expr, elem: ScalarType) -> ops.Retype:
    t = _array(array, "'.view(...)'")
    if t.rank != 1:
        raise TypeProblem(f".view(...) of a {t.rank}-D array (only 1-D arrays are viewed as another type)")
    return ops.Retype(array, ArrayType(elem, 1))


#: The NumPy functions making a local array, by what they fill it with.
ALLOC_FILLS = ("zeros", "ones", "empty")


def alloc(fill: str, shape: Sequence[ops.Expr], elem: ScalarType) -> ops.Alloc:
    """A new local array of ``shape`` (integer extents) and element type ``elem``."""
    if fill not in ALLOC_FILLS:
        raise TypeProblem(f"np.{fill}() does not make a local array ({', '.join(ALLOC_FILLS)} do)")
    if not 1 <= len(shape) <= 8:
        raise TypeProblem(f"a local array of {len(shape)} dimensions")
    for extent in shape:
        _index(extent)
    return ops.Alloc(fill, tuple(shape), ArrayType(elem, len(shape)))


def cast(value: ops.Expr, type: ScalarType) -> ops.Cast:
    _scalar(value, f"what is converted to {type}")
    return ops.Cast(value, type)


def convert(value: ops.Expr, type: PortType) -> ops.Expr:
    """``value`` as a place of ``type`` holds it: itself when the types agree, a ``Cast``
    between scalar types, else ``TypeProblem``."""
    if value.type == type:
        return value
    if isinstance(type, ScalarType) and isinstance(value.type, ScalarType):
        return ops.Cast(value, type)
    raise TypeProblem(f"{_describe(value.type)} where {_describe(type)} is expected")


def call(func: str, args: Sequence[ops.Expr]) -> ops.Call:
    """A function of the leaf language, by canonical name (``math.sqrt``, ``np.exp``, ``min``)."""
    module, _, name = func.rpartition(".")
    dtypes = [_scalar(a, f"an argument of {func}()") for a in args]

    def arity(n: int) -> None:
        if len(args) != n:
            raise TypeProblem(f"{func}() takes {n} argument(s), not {len(args)}")

    if module == "math" and name in MATH1:
        arity(1)
        t = nt.math_type(dtypes[0])
    elif module == "math" and name in MATH2:
        arity(2)
        t = nt.math2_type(name, dtypes[0], dtypes[1])
    elif module == "math" and name in MATH_INT:
        arity(1)
        t = nt.floor_type(dtypes[0])
    elif module == "math" and name in MATH_BOOL:
        arity(1)
        t = nt.BOOL
    elif module == "np" and (name in NUMPY1 or name in NUMPY2):
        arity(1 if name in NUMPY1 else 2)
        loop = nt.ufunc_loop(getattr(np, name), tuple(dtypes))  # Numba's loop choice, as for arrays
        if loop is None:
            raise TypeProblem(f"{func}() has no loop for {', '.join(str(a.type) for a in args)}")
        t = np.dtype(loop.split("->")[1])
    elif not module and name in ("min", "max"):
        if len(args) < 2:
            raise TypeProblem(f"{name}() of scalars takes two or more arguments")
        t = nt.promote(*dtypes)
    elif not module and name == "abs":
        arity(1)
        t = nt.abs_type(dtypes[0])
    elif not module and name == "round":
        arity(1)  # round(x): int64 for every scalar type (Numba's), a float rounded half to even
        t = nt.INT64
    else:
        raise TypeProblem(f"{func}() is not a function of the leaf language")
    return ops.Call(func, tuple(args), _st(t))


def math_constant(name: str) -> ops.Const:
    """``math.pi``, ``math.e``, ``math.inf``...: a float64 constant."""
    return const(float(getattr(math, name)))


def intrinsic(entry: Intrinsic, args: Sequence[ops.Expr]) -> ops.IntrinsicOp:
    """An intrinsic call, typed and checked by its entry of ``ir/intrinsics.py``."""
    arity = entry.arity
    if entry.kind == "atomic" and args and isinstance(args[0].type, ArrayType):
        # an atomic on an element of an n-D array has its n indices spread out:
        # hpvm.atomic_add(a, (i, j), v) is (a, i, j, v)
        arity += args[0].type.rank - 1
    if len(args) != arity:
        raise TypeProblem(f"{entry.spelled}() takes {arity} argument(s), not {len(args)}")
    result: PortType | None
    if entry.kind in ("handle", "dims", "query"):
        for a in args:
            if a.type != node_t:
                raise TypeProblem(f"{entry.spelled}() takes a node handle, not {_describe(a.type)}")
        result = node_t if entry.kind == "handle" else I64
    elif entry.kind == "malloc":
        t = _scalar(args[0], f"the size given to {entry.spelled}()")
        if t.kind not in "iu":
            raise TypeProblem(f"{entry.spelled}() takes a number of bytes (an integer), not {args[0].type}")
        result = U8_ARRAY
    elif entry.kind == "barrier":
        result = None
    elif entry.kind == "atomic":
        assert entry.op is not None
        t = _array(args[0], f"the first argument of {entry.spelled}()")
        if t.dtype not in atomic_dtypes(entry.op):
            allowed = ", ".join(str(_st(d)) for d in atomic_dtypes(entry.op))
            raise TypeProblem(f"{entry.spelled}() on an array of {t.elem} (it works on {allowed})")
        for index in args[1:-1]:
            _index(index)
        _scalar(args[-1], f"the value given to {entry.spelled}()")
        result = t.elem
    else:  # pragma: no cover - a new kind in the table without a rule here
        raise TypeProblem(f"no typing rule for the intrinsic kind '{entry.kind}'")
    return ops.IntrinsicOp(entry, tuple(args), result)


def ctx_read(level: int, field: int) -> ops.CtxRead:
    """A read of ``field`` (an offset within a level, ``instance_context.FIELD_NAMES``) of
    ancestor ``level`` of the instance context: an i64."""
    if level < 0:
        raise TypeProblem(f"a context read of level {level} (levels count from 0, the leaf's node)")
    if not 0 <= field < ictx.STRIDE:
        raise TypeProblem(
            f"a context read of field {field} (a level has {ictx.STRIDE}: 0 to {ictx.STRIDE - 1})"
        )
    return ops.CtxRead(level, field, I64)


def unify(old: PortType, new: PortType) -> PortType | None:
    """The type of a variable assigned values of both types (Numba's unification: scalars
    promote without widening; arrays and handles must agree), or None."""
    if old == new:
        return old
    if isinstance(old, ScalarType) and isinstance(new, ScalarType):
        return _st(nt.promote(old.dtype, new.dtype))
    return None


def range_var(bounds: Sequence[ops.Expr]) -> ScalarType:
    """The loop variable's type of ``range(*bounds)`` (integer bounds only)."""
    for b in bounds:
        t = _scalar(b, "a bound of range()")
        if t.kind not in "iub":
            raise TypeProblem(f"range() needs integer bounds, not {b.type}")
    return _st(nt.range_type([b.type.dtype for b in bounds]))  # type: ignore[union-attr]


#: How the verifier re-derives an expression's type: the constructor that would make it.
def retyped(e: ops.Expr) -> ops.Expr:
    """``e`` made again by its constructor from its own operands (``TypeProblem`` if the
    rules refuse it); the verifier compares the result's type with ``e.type``."""
    if isinstance(e, ops.Const):
        return const(e.value, e.type)
    if isinstance(e, ops.Unary):
        return unary(e.op, e.operand)
    if isinstance(e, ops.Binary):
        return binary(e.op, e.left, e.right)
    if isinstance(e, ops.Compare):
        return compare(e.ops, e.operands)
    if isinstance(e, ops.BoolOp):
        return boolop(e.op, e.values)
    if isinstance(e, ops.IfExp):
        return ifexp(e.test, e.body, e.orelse)
    if isinstance(e, ops.Load):
        return load(e.array, e.indices)
    if isinstance(e, ops.Shape):
        return shape(e.array, e.axis)
    if isinstance(e, ops.Size):
        return size(e.array)
    if isinstance(e, ops.Retype):
        return retype(e.array, e.type.elem)
    if isinstance(e, ops.Cast):
        return cast(e.value, e.type)
    if isinstance(e, ops.Alloc):
        return alloc(e.fill, e.shape, e.type.elem)
    if isinstance(e, ops.Call):
        return call(e.func, e.args)
    if isinstance(e, ops.IntrinsicOp):
        return intrinsic(e.intrinsic, e.args)
    if isinstance(e, ops.CtxRead):
        return ctx_read(e.level, e.field)
    return e  # Var: checked against the declarations by the verifier
