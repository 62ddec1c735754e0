"""A node function's ports, read from its LLVM arguments and return fields: their types
(``"hpvm.port"``, else the LLVM types and ``grouping.py``'s pairs), names, layouts, and
which are ``in`` / ``out``.

Why a class of its own: the ports are seed 000's contract between a node and its graph;
reading them is one job — from the attributes the export writes, or from HPVM's bare LLVM
types — that the import of nodes and the grouping of ``(ptr, i64)`` pairs both need.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParseError
from ..ir.bodies import llvm_struct_return
from ..ir.graph import NodeFunction
from ..ir.graph import Param as Port
from ..ir.layouts import Layout
from ..ir.parser import parse_layout
from ..ir.types import ArrayType, PortType, ScalarType, parse_type
from . import abi, grouping
from .errors import LLVMImportError
from .textindex import return_type

_ATTR = re.compile(r'"((?:[^"\\]|\\.)*)"(?:="((?:[^"\\]|\\.)*)")?')


def port_name(name: str, taken: set[str]) -> str:
    """An LLVM argument's name as a port name that back ends can use as a Python identifier:
    a C parameter may be called ``in`` or ``lambda`` (``in_``, ``lambda_``), and LLVM allows
    ``x.addr`` (``x_addr``); a clash with an earlier port gets a number."""
    text = re.sub(r"\W", "_", name) or "_"
    if text[0].isdigit():
        text = "_" + text
    if keyword.iskeyword(text):
        text += "_"
    base, k = text, 1
    while text in taken:
        k += 1
        text = f"{base}_{k}"
    return text


def string_attrs(attrs: Any) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for item in attrs:
        raw = item.decode() if isinstance(item, bytes) else str(item)
        for key, value in _ATTR.findall(raw):
            found[key] = value if "=" in raw[raw.find(f'"{key}"') :].split(" ", 1)[0] else None
    return found


@dataclass
class Ports:
    """A function's ports, grouped from its LLVM arguments (or return fields)."""

    types: list[PortType]
    leading: list[int]
    names: list[str] = field(default_factory=list)

    def port(self, index: int) -> tuple[int, int] | None:
        """(port, offset within it) of LLVM index ``index``; ``None`` if out of range."""
        for k, first in enumerate(self.leading):
            if first <= index < first + abi.arity(self.types[k]):
                return k, index - first
        return None

    def count(self) -> int:
        return sum(abi.arity(t) for t in self.types)


class PortReader:
    """The ports of the functions of one module (``defined``: name → llvmlite function);
    ``folded``: the ``(ptr, i64)`` pairs that are one port (``grouping.folded_pairs``), set
    once the module's signatures and links are read."""

    def __init__(self, defined: dict[str, Any]):
        self.defined = defined
        self.fields: dict[str, list[str]] = {}  # return_fields, by function
        self.folded: set[grouping.End] = set()

    @staticmethod
    def ordered(
        fn: Any, attrs: dict[str, str | None], key: str, found: tuple[str, ...], marker: str
    ) -> tuple[str, ...]:
        """``found`` (the parameters marked ``marker``) in the order ``key`` records, if any."""
        spelled = attrs.get(key)
        if spelled is None:
            return found
        names = tuple(n.strip() for n in spelled.split(",") if n.strip())
        if sorted(names) != sorted(found):
            raise LLVMImportError(
                f'@{fn.name}: "{key}"="{spelled}" does not name the parameters marked "{marker}" '
                f"({', '.join(found) or 'none'}); name the same ones"
            )
        return names

    def params(self, fn: Any) -> tuple[list[Port], tuple[str, ...], tuple[str, ...]]:
        args = list(fn.arguments)
        params: list[Port] = []
        ins: list[str] = []
        outs: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            attrs = string_attrs(a.attributes)
            name = port_name(a.name or f"arg{i}", {p.name for p in params})
            t = self.port_type(
                fn,
                f"argument {i} (%{name})",
                attrs.get("hpvm.port"),
                [str(x.type) for x in args[i:]],
                grouping.End(fn.name, grouping.IN, i),
            )
            want = abi.llvm_types(t)
            got = [str(x.type) for x in args[i : i + len(want)]]
            if got != want:
                raise LLVMImportError(
                    f"@{fn.name}: argument {i} (%{name}) is a port of type {t}, which takes LLVM "
                    f"arguments ({', '.join(want)}) but the function has ({', '.join(got)}) there"
                )
            params.append(Port(name, t, self.layout(fn, name, attrs.get("hpvm.layout"))))
            if isinstance(t, ArrayType):
                if "in" in attrs:
                    ins.append(name)
                if "out" in attrs:
                    outs.append(name)
            i += len(want)
        return params, tuple(ins), tuple(outs)

    @staticmethod
    def layout(fn: Any, name: str, spelled: str | None) -> Layout | None:
        """The data layout ``"hpvm.layout"`` records (``docs/layouts.md``), if any."""
        if spelled is None:
            return None
        try:
            return parse_layout(spelled)
        except (ParseError, TypeError) as e:
            raise LLVMImportError(
                f'@{fn.name}: argument %{name} has "hpvm.layout"="{spelled}": {e}'
            ) from None

    def port_type(
        self, fn: Any, what: str, spelled: str | None, rest: list[str], at: grouping.End
    ) -> PortType:
        """The port starting at an argument or field (``at``): from ``"hpvm.port"`` if given,
        else from the LLVM types — ``ptr`` + ``i64`` that travel together (``grouping.py``) a
        byte array ``u8[:]``, any other ``ptr`` a pointer-only ``u8[*]``."""
        if spelled is not None:
            try:
                return parse_type(spelled)
            except TypeError as e:
                raise LLVMImportError(f'@{fn.name}: {what} has "hpvm.port"="{spelled}": {e}') from None
        first = rest[0]
        if first == "ptr":
            folded = len(rest) > 1 and rest[1] == "i64" and at in self.folded
            return ArrayType(ScalarType("u8"), 1, sized=folded)
        if first not in abi.LLVM_SCALAR:
            raise LLVMImportError(
                f"@{fn.name}: {what} has LLVM type {first}, which no port type maps to "
                f"(ports are {', '.join(abi.LLVM_SCALAR)}, or ptr)"
            )
        return ScalarType(abi.LLVM_SCALAR[first])

    def return_fields(self, fn: Any) -> list[str]:
        """The LLVM types of the fields of ``fn``'s returned struct (a node's outputs); read
        once per function (llvmlite prints the whole function to give its ``define``)."""
        found = self.fields.get(fn.name)
        if found is None:
            found = self.fields[fn.name] = self._return_fields(fn)
        return found

    @staticmethod
    def _return_fields(fn: Any) -> list[str]:
        returned = llvm_struct_return(fn)  # ({ ... }, <{ ... }>, or named: %struct.out.f)
        if returned is None:
            raise LLVMImportError(
                f"@{fn.name}: a node function returns a struct (one field per output, seed 000), "
                f"not {return_type(fn)}; return {{}} for none"
            )
        ret = returned.spelled
        fields = list(returned.fields)
        if any(f != "ptr" and f not in abi.LLVM_SCALAR for f in fields):
            raise LLVMImportError(
                f"@{fn.name}: the fields of its return type {ret} ({', '.join(fields)}) must be scalars or ptr"
            )
        return fields

    @staticmethod
    def declared_outputs(fn: Any, spelled: str) -> list[PortType]:
        """The output types ``"hpvm.outputs"`` spells."""
        try:
            body = spelled.strip()[1:-1].strip()
            return [parse_type(t) for t in _split_types(body)] if body else []
        except TypeError as e:
            raise LLVMImportError(f'@{fn.name}: "hpvm.outputs"="{spelled}": {e}') from None

    def outputs(self, fn: Any, attrs: dict[str, str | None]) -> Ports:
        fields = self.return_fields(fn)
        spelled = attrs.get("hpvm.outputs")
        types: list[PortType] = []
        if spelled is not None:
            types = self.declared_outputs(fn, spelled)
            want = [t for p in types for t in abi.llvm_types(p)]
            if want != fields:
                raise LLVMImportError(
                    f'@{fn.name}: "hpvm.outputs"="{spelled}" takes fields ({", ".join(want)}) but the '
                    f"function returns {return_type(fn)}"
                )
        else:
            k = 0
            while k < len(fields):
                t = self.port_type(
                    fn, f"return field {k}", None, fields[k:], grouping.End(fn.name, grouping.OUT, k)
                )
                types.append(t)
                k += abi.arity(t)
        return Ports(types, abi.leading_indices(types))

    def signatures(self) -> dict[tuple[str, str], grouping.Signature]:
        """Every defined function's arguments and return fields, with the ports declared on
        them. (What cannot be read is left to the import proper, which says what is wrong.)"""
        found: dict[tuple[str, str], grouping.Signature] = {}
        for name, fn in self.defined.items():
            args = list(fn.arguments)
            declared: dict[int, int] = {}
            for k, a in enumerate(args):
                spelled = string_attrs(a.attributes).get("hpvm.port")
                if spelled is not None:
                    declared[k] = _arity_of(spelled)
            found[(name, grouping.IN)] = grouping.Signature(tuple(str(a.type) for a in args), declared)
            try:
                fields = self.return_fields(fn)
            except LLVMImportError:
                fields = []
            spelled = string_attrs(fn.attributes).get("hpvm.outputs")
            declared = {}
            if spelled is not None:  # every field is a declared port's
                try:
                    types = self.declared_outputs(fn, spelled)
                    declared = dict(zip(abi.leading_indices(types), map(abi.arity, types)))
                except LLVMImportError:
                    declared = dict.fromkeys(range(len(fields)), 1)
            found[(name, grouping.OUT)] = grouping.Signature(tuple(fields), declared)
        return found


def _arity_of(spelled: str) -> int:
    """How many LLVM arguments the port ``"hpvm.port"="spelled"`` takes (1 if it does not parse)."""
    try:
        return abi.arity(parse_type(spelled))
    except TypeError:
        return 1


def ports_of_params(params: list[Port]) -> Ports:
    types = [p.type for p in params]
    return Ports(types, abi.leading_indices(types))


def ports_of(fn: NodeFunction) -> Ports:
    return ports_of_params(fn.params)


def _split_types(text: str) -> list[str]:
    """``f32[:, :], i64`` → ``["f32[:, :]", "i64"]`` (commas inside brackets stay)."""
    parts, depth, current = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(c, 0)
        current += c
    return [*parts, current.strip()] if current.strip() else parts
