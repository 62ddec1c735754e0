"""Replication sizes in an internal node function: the integer arithmetic of its ports
that the ``createNode*`` calls take, read back as hpvm expressions.

Why a module of its own: sizes are the one computation a graph builder may hold, in the
forms the export writes them and LLVM's optimizer rewrites them (shifts, masks, ``or
disjoint``, ``smin``/``smax``); reading them is independent of the edges and binds.
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import BinOp, Call, Const, Expr, Param, Shape
from ..ir.graph import Param as Port
from ..ir.types import ArrayType, ScalarType
from .directives import constant as _const
from .errors import GraphCall
from .portread import ports_of_params

_BINOPS = {"add": "+", "sub": "-", "mul": "*", "sdiv": "//", "udiv": "//", "srem": "%", "urem": "%"}
_CASTS = frozenset({"sext", "zext", "trunc"})


def size(fn: Any, params: list[Port], own: dict[Any, Any], value: Any, where: GraphCall) -> Expr:
    """A replication size as an expression over the parent's ports."""
    kind = value.value_kind.name
    const = _const(value)
    if const is not None:
        return Const(const)
    if kind == "argument":
        return size_argument(fn, params, value.name, where)
    ins = own.get(value) if kind == "instruction" else None
    if ins is None:
        raise where.error(
            "size", f"a replication size must be an integer expression of the ports, not {value}"
        )
    ops = list(ins.operands)
    if ins.opcode in _CASTS:
        return size(fn, params, own, ops[0], where)
    divisor = _const(ops[1]) if ins.opcode == "udiv" else None
    if ins.opcode == "lshr" and _const(ops[1]) is not None:  # LLVM's form of udiv by 2^k
        divisor = 1 << _const(ops[1])
    if divisor is not None and ops[0].value_kind.name == "argument":
        shape = byte_size(fn, params, ops[0].name, divisor)
        if shape is not None:
            return shape
    if ins.opcode == "lshr" and divisor is not None:  # (sizes are not negative)
        return BinOp("//", size(fn, params, own, ops[0], where), Const(divisor))
    power = _const(ops[1]) if ins.opcode in ("shl", "and") else None
    if ins.opcode == "shl" and power is not None:  # LLVM's form of a product by 2^k
        return BinOp("*", size(fn, params, own, ops[0], where), Const(1 << power))
    if ins.opcode == "and" and power is not None and power >= 0 and (power + 1) & power == 0:
        # LLVM's form of a remainder by 2^k (sizes are not negative)
        return BinOp("%", size(fn, params, own, ops[0], where), Const(power + 1))
    if ins.opcode == "or" and " or disjoint " in f" {_instr(ins)} ":  # an add without carries
        lhs = size(fn, params, own, ops[0], where)
        return BinOp("+", lhs, size(fn, params, own, ops[1], where))
    if ins.opcode in _BINOPS:
        lhs = size(fn, params, own, ops[0], where)
        return BinOp(_BINOPS[ins.opcode], lhs, size(fn, params, own, ops[1], where))
    callee = ops[-1].name if ins.opcode == "call" else ""
    if callee in ("llvm.smin.i64", "llvm.smax.i64"):
        fn_name = callee[6:9]
        args: list[Expr] = []
        for o in ops[:-1]:
            e = size(fn, params, own, o, where)
            folded = o.value_kind.name == "instruction" and o.name.endswith(".fold")
            args.extend(e.args if folded and isinstance(e, Call) and e.fn == fn_name else [e])
        return Call(fn_name, tuple(args))
    raise where.error(
        "size",
        f"its size '{_instr(ins)}' is not integer arithmetic (add, sub, mul, sdiv, "
        "srem, udiv, lshr/shl/and by a constant, or disjoint, casts, llvm.smin/smax.i64) of the "
        "function's ports",
    )


def refuse_negative(sizes: tuple[Expr, ...], function: str, where: GraphCall) -> None:
    """Refuse a replication size that reads no port and folds below zero (``createNodeND(1,
    leaf, -4)``, ``N - 8`` with ``N`` 4, or ``sub i64 4, 8`` in an ``.ll``).

    Why here: such a size is known when the graph is read, yet before it surfaced only when
    the node was launched, far from the call that wrote it. A size that reads a port can
    only be checked at launch, with the port's value."""
    for k, s in enumerate(sizes):
        if s.params():
            continue
        try:
            value = s.evaluate({})
        except ZeroDivisionError:  # (a constant division by zero: LLVM's poison, left to launch)
            continue
        if value < 0:
            which = f"size {k + 1} of {len(sizes)}" if len(sizes) > 1 else "its size"
            folded = "" if isinstance(s, Const) else f" ({s} folds to {value})"
            raise where.error(
                "negative",
                f"{which} is {value}{folded}: a node of @{function} cannot have a negative number of instances",
            )


def byte_size(fn: Any, params: list[Port], arg: str, divisor: int | None) -> Expr | None:
    """``a.shape[0]`` when argument ``arg`` is the byte size of a 1-D array port ``a``
    (folded with its pointer) and ``divisor`` its element size."""
    found = ports_of_params(params).port(_argument_index(fn, arg))
    if found is None or found[1] != 1:
        return None
    p = params[found[0]]
    if isinstance(p.type, ArrayType) and p.type.rank == 1 and divisor == p.type.dtype.itemsize:
        return Shape(p.name, 0)
    return None


def size_argument(fn: Any, params: list[Port], arg: str, where: GraphCall) -> Expr:
    ports = ports_of_params(params)
    found = ports.port(_argument_index(fn, arg))
    if found is not None:
        port, offset = found
        t = params[port].type
        if offset == 0 and isinstance(t, ScalarType) and t.is_integer:
            return Param(params[port].name)
        if isinstance(t, ArrayType) and offset >= 2:
            return Shape(params[port].name, offset - 2)
        shape = byte_size(fn, params, arg, 1)  # a byte array's size is its length
        if shape is not None:
            return shape
    raise where.error(
        "size",
        f"a replication size uses argument %{arg}, which is not an integer port (nor an array's extent)",
    )


def is_size_arithmetic(ins: Any) -> bool:
    """Whether ``ins`` is an instruction of the integer arithmetic replication sizes are
    written in (as the export writes it, or as LLVM's optimizer rewrites it)."""
    if ins.opcode in _BINOPS or ins.opcode in _CASTS:
        return True
    if ins.opcode in ("lshr", "shl", "and"):  # udiv, mul, urem by a power of two, after LLVM's optimizer
        return _const(list(ins.operands)[1]) is not None
    if ins.opcode == "or":  # an add of values without common bits, after LLVM's optimizer
        return " or disjoint " in f" {_instr(ins)} "
    if ins.opcode == "call":
        return list(ins.operands)[-1].name in ("llvm.smin.i64", "llvm.smax.i64")
    return False


def _instr(ins: Any) -> str:
    return str(ins).strip()


def _argument_index(fn: Any, name: str) -> int:
    """The index of ``fn``'s argument called ``name`` (-1: none)."""
    return next((k for k, a in enumerate(fn.arguments) if a.name == name), -1)
