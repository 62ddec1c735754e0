"""Tensor leaves in LLVM form: seed 001's ``llvm.hpvm.tensor.*`` intrinsic calls.

Why. A tensor leaf (``hpvm.tensor.convolution(x, w, 1, 1, 1, 1)``...) is not code Numba
compiles: HPVM writes it as calls of its tensor intrinsics on opaque tensor pointers, and its
tensor runtime (here: the ``tensor`` back end, or the interpreter) carries out each call. So
does the export: a tensor leaf's node function is straight-line calls

    %t0 = call ptr @llvm.hpvm.tensor.convolution(ptr %x, ptr %w, i32 1, i32 1, i32 1, i32 1)
    %t1 = call ptr @llvm.hpvm.tensor.relu(ptr %t0)

and a returned struct whose array fields hold the result pointers. The size and extents of a
result the leaf computed are ``i64 0``: the tensor runtime knows a tensor's shape, as in
HPVM-C, where such a leaf ends with ``__hpvm__return(2, r, (size_t) 0)``.

The intrinsics' names are HPVM's (``_`` becomes ``.``: ``pool_max`` →
``llvm.hpvm.tensor.pool.max``); their operands are ``ptr`` for tensors, ``i32`` for integer
parameters (pads, strides, windows, groups) and ``double`` for real ones (``clipped_relu``'s
bounds, ``batchnorm``'s epsilon), every parameter written (defaults filled in). A scalar
port passed to an operation is converted to the operand's type (``trunc``, ``sitofp``...),
and the importer reads through those conversions back to the port.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from ..ir.bodies import OpCall, Operand, TensorBody
from ..ir.graph import LeafFunction
from ..ir.tensorops import OPS
from ..ir.tensorops.body import NotATensorLeaf, parse_tensor_leaf
from ..ir.types import ArrayType, ScalarType
from . import abi
from .errors import LLVMExportError, LLVMImportError

PREFIX = "llvm.hpvm.tensor."
_REAL_PARAMS = frozenset({"lo", "hi", "epsilon"})
_I32 = (-(2**31), 2**31 - 1)


def intrinsic(op: str) -> str:
    """HPVM's name of tensor operation ``op``."""
    return PREFIX + op.replace("_", ".")


def _op_of(name: str) -> str | None:
    """The tensor operation an intrinsic's name calls, else ``None``."""
    if not name.startswith(PREFIX):
        return None
    op = name[len(PREFIX) :].replace(".", "_")
    return op if op in OPS else None


def operand_types(op: str) -> list[str]:
    """The LLVM types of ``op``'s operands, in its parameters' order."""
    d = OPS[op]
    return [
        "ptr" if k in d.tensors else "double" if p in _REAL_PARAMS else "i32" for k, p in enumerate(d.params)
    ]


def declaration(op: str) -> str:
    return f"declare ptr @{intrinsic(op)}({', '.join(operand_types(op))})"


# -- export ---------------------------------------------------------------------------------


def _double(value: float) -> str:
    """An exact LLVM literal of a double (its bits in hex)."""
    bits = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
    return f"0x{bits:016X}"


def _convert(have: str, want: str, signed: bool) -> str | None:
    """The LLVM instruction converting a scalar of type ``have`` to ``want``."""
    if have == want:
        return None
    ints = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
    reals = {"float": 32, "double": 64}
    if have in ints and want in ints:
        return "trunc" if ints[have] > ints[want] else ("sext" if signed else "zext")
    if have in ints and want in reals:
        return "sitofp" if signed else "uitofp"
    if have in reals and want in ints:
        return "fptosi"
    return "fptrunc" if reals[have] > reals[want] else "fpext"


def tensor_operations(fn: LeafFunction) -> TensorBody | None:
    """``fn``'s tensor operations when it is a tensor leaf: a ``TensorBody``, or Python in
    the tensor form (docs/tensor.md) that calls at least one operation; else ``None``."""
    if isinstance(fn.body, TensorBody):
        return fn.body
    try:
        read = parse_tensor_leaf(fn)
    except NotATensorLeaf:
        return None
    return TensorBody(read.calls, read.returns) if read.calls else None


def tensor_call(
    fn: LeafFunction, body: TensorBody, args: list[tuple[str, str]], tmp: str, ret: str
) -> tuple[set[str], list[str], str]:
    """Tensor leaf ``fn``'s operations ``body`` applied to ``args`` ((LLVM type, operand) per
    ABI argument): (the operations it uses, its instructions, the operand of its output
    struct, of type ``ret``). ``tmp`` prefixes the temporaries' names."""
    leading = abi.leading_indices([p.type for p in fn.params])
    ports = [args[k] for k in leading]  # (type, operand) of each port's first argument
    lines: list[str] = []
    used: set[str] = set()
    for k, call in enumerate(body.calls):
        used.add(call.op)
        actual = []
        for j, (want, operand) in enumerate(zip(operand_types(call.op), call.args)):
            value = _value(fn, ports, operand, want, f"%{tmp}.c{k}.{j}", lines, call.op, tmp)
            actual.append(f"{want} {value}")
        lines.append(f"  %{tmp}t{k} = call ptr @{intrinsic(call.op)}({', '.join(actual)})")
    fields: list[tuple[str, str]] = []
    for out_type, operand in zip(fn.out_types, body.returns):
        if isinstance(out_type, ArrayType):
            if operand.kind == "local":
                fields.append(("ptr", f"%{tmp}t{operand.value}"))
                fields += [("i64", "0")] * (abi.arity(out_type) - 1)
            elif operand.kind == "param":
                first = leading[operand.value]
                fields += args[first : first + abi.arity(out_type)]
            else:
                raise LLVMExportError(f"{fn.describe()}: returns the constant {operand.value!r} as an array")
        else:
            want = abi.llvm_types(out_type)[0]
            value = _value(fn, ports, operand, want, f"%{tmp}.r{len(fields)}", lines, "return", tmp)
            fields.append((want, value))
    value = "undef"
    for k, (t, v) in enumerate(fields):
        lines.append(f"  %{tmp}.out{k} = insertvalue {ret} {value}, {t} {v}, {k}")
        value = f"%{tmp}.out{k}"
    return used, lines, value if fields else "zeroinitializer"


def _value(
    fn: LeafFunction,
    ports: list[tuple[str, str]],
    operand: Operand,
    want: str,
    temp: str,
    lines: list[str],
    op: str,
    tmp: str,
) -> str:
    """``operand`` as an LLVM value of type ``want`` (conversions appended to ``lines``);
    ``ports``: (type, operand) of each port's first argument."""
    if operand.kind == "local":
        return f"%{tmp}t{operand.value}"
    if operand.kind == "param":
        port = fn.params[operand.value]
        name = ports[operand.value][1]
        if isinstance(port.type, ArrayType):
            if want != "ptr":
                raise LLVMExportError(f"{fn.describe()}: passes the array '{port.name}' as a scalar to {op}")
            return name
        have = abi.llvm_types(port.type)[0]
        if want == "ptr":
            raise LLVMExportError(f"{fn.describe()}: passes the scalar '{port.name}' as a tensor to {op}")
        how = _convert(have, want, isinstance(port.type, ScalarType) and port.type.dtype.kind != "u")
        if how is None:
            return name
        lines.append(f"  {temp} = {how} {have} {name} to {want}")
        return temp
    value = operand.value
    if want == "double":
        return _double(value)
    if (
        want == "i32"
        and isinstance(value, (int,))
        and not isinstance(value, bool)
        and _I32[0] <= value <= _I32[1]
    ):
        return str(int(value))
    if want in ("i1", "i8", "i16", "i64") and isinstance(value, int):
        return str(int(value))
    raise LLVMExportError(
        f"{fn.describe()}: the constant {value!r} passed to {op} has no {want} form (integers of 32 bits "
        "for pads, strides, windows and groups)"
    )


# -- import ---------------------------------------------------------------------------------


def uses_tensor_intrinsics(instructions: list[Any]) -> bool:
    return any(_callee(ins) is not None and _callee(ins).startswith(PREFIX) for ins in instructions)


def _callee(ins: Any) -> str | None:
    if ins.opcode != "call":
        return None
    return list(ins.operands)[-1].name


_CONVERSIONS = frozenset(
    {"trunc", "sext", "zext", "sitofp", "uitofp", "fptosi", "fptoui", "fpext", "fptrunc"}
)


def tensor_body(
    fn: Any,
    instructions: list[Any],
    leading: list[int],
    ret_fields: list[int],
    line_of: Callable[[Any], int] | None = None,
) -> TensorBody:
    """The ``TensorBody`` of leaf node function ``fn``, whose body calls tensor intrinsics:
    ``leading[k]`` is the LLVM argument index of port ``k``, ``ret_fields[k]`` the struct
    field of output ``k``; ``line_of(instruction)``, each call's line (in the module's text:
    the C front end maps it to the ``.c`` line), which messages about the operation name.
    ``LLVMImportError`` for anything but straight-line tensor calls, conversions of scalar
    ports, and the returned struct."""
    args = {a.name: i for i, a in enumerate(fn.arguments)}
    port_of = {index: k for k, index in enumerate(leading)}
    locals_: dict[str, int] = {}
    calls: list[OpCall] = []
    values: dict[str, Any] = {}  # conversions: result name -> its operand
    ret: Any = None
    inserts: dict[str, tuple[Any, Any, int]] = {}  # insertvalue result -> (aggregate, value, field)

    def where(ins: Any) -> str:
        return f"@{fn.name}: '{str(ins).strip()}'"

    def operand(v: Any, ins: Any) -> Operand:
        while v.name in values:
            v = values[v.name]
        kind = v.value_kind.name
        if kind == "argument":
            index = args[v.name]
            if index not in port_of:
                raise LLVMImportError(f"{where(ins)}: passes an array's size or extent to a tensor operation")
            return Operand("param", port_of[index])
        if v.name in locals_:
            return Operand("local", locals_[v.name])
        if kind == "constant_int":
            return Operand("const", int(str(v).split()[-1]))
        if kind == "constant_fp":
            text = str(v).split()[-1]
            return Operand("const", _fp(text))
        raise LLVMImportError(
            f"{where(ins)}: an operand of a tensor operation must be a port, a result or a constant"
        )

    for ins in instructions:
        op = ins.opcode
        if op == "call":
            name = _callee(ins) or ""
            which = _op_of(name)
            if which is None:
                raise LLVMImportError(
                    f"{where(ins)}: a tensor leaf calls only llvm.hpvm.tensor.* intrinsics "
                    f"({', '.join(intrinsic(o) for o in sorted(OPS))})"
                )
            operands = list(ins.operands)[:-1]
            if len(operands) != len(OPS[which].params):
                raise LLVMImportError(
                    f"{where(ins)}: {name} takes {len(OPS[which].params)} operands "
                    f"({', '.join(OPS[which].params)}), not {len(operands)}"
                )
            line = line_of(ins) if line_of is not None else 0
            calls.append(OpCall(which, tuple(operand(v, ins) for v in operands), line))
            locals_[ins.name] = len(calls) - 1
        elif op in _CONVERSIONS:
            values[ins.name] = list(ins.operands)[0]
        elif op == "insertvalue":
            aggregate, value = list(ins.operands)[:2]
            m = re.search(r",\s*(\d+)\s*$", str(ins).split("!dbg")[0].strip())
            inserts[ins.name] = (aggregate, value, int(m.group(1)) if m else -1)
        elif op == "ret":
            ret = list(ins.operands)[0] if list(ins.operands) else None
        else:
            raise LLVMImportError(
                f"{where(ins)}: a leaf that calls tensor intrinsics holds only those calls, conversions of "
                "its scalar ports and its returned struct"
            )
    fields: dict[int, Any] = {}
    while ret is not None and ret.name in inserts:
        aggregate, value, index = inserts[ret.name]
        fields.setdefault(index, value)
        ret = aggregate
    returns = []
    for k, index in enumerate(ret_fields):
        if index not in fields:
            raise LLVMImportError(f"@{fn.name}: output {k} (struct field {index}) is never set")
        returns.append(operand(fields[index], fields[index]))
    return TensorBody(tuple(calls), tuple(returns))


def _fp(text: str) -> float:
    if text.lower().startswith("0x"):
        return struct.unpack("<d", struct.pack("<Q", int(text[2:], 16)))[0]
    return float(text)
