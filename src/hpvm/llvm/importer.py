"""``from_hpvm_ir(text)``: the dataflow graph of HPVM IR in LLVM form, as HPVM's BuildDFG
pass builds it.

The root is the function an ``llvm.hpvm.launch`` call launches, else the one function that
builds a graph and that no ``createNode`` creates. From it, each ``createNode*`` call makes a
node (its replication sizes from constants, the parent's integer ports and their
arithmetic), ``createEdge`` an edge, ``bind.input`` / ``bind.output`` binds; port indices
are LLVM argument and struct-field indices, grouped into ports: by ``"hpvm.port"`` where the
module says (``abi.py``; the calls for an array's size and extents must accompany the call
for its pointer), else by how the program connects them (``grouping.py``: a ``(ptr, i64)``
pair is one array port ``u8[:]`` when it always travels together, else a pointer-only
``u8[*]`` and an ``i64``). Leaves keep their code: an ``LLVMBody`` naming their function in
the module text.

Every misuse is an ``LLVMImportError`` naming the function and the instruction's text.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParseError, SourceLocation, VerificationError
from ..ir.bodies import LLVMBody, TensorBody, llvm_struct_return
from ..ir.expr import BinOp, Call, Const, Expr, Param, Shape
from ..ir.graph import (
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
)
from ..ir.graph import Param as Port
from ..ir.layouts import Layout
from ..ir.parser import parse_layout
from ..ir.types import ArrayType, PortType, ScalarType, parse_type
from ..ir.verify import verify
from . import abi, grouping, tensorleaf
from .directives import constant
from .errors import LLVMImportError
from .outline import FunctionIndex
from .upgrade import upgraded_module

_ATTR = re.compile(r'"((?:[^"\\]|\\.)*)"(?:="((?:[^"\\]|\\.)*)")?')
_BINOPS = {"add": "+", "sub": "-", "mul": "*", "sdiv": "//", "udiv": "//", "srem": "%", "urem": "%"}
_CASTS = frozenset({"sext", "zext", "trunc"})


def from_hpvm_ir(text: str, file: str = "<llvm>", root: str | None = None) -> InternalFunction:
    """The root node function of the graph ``text`` describes; ``LLVMImportError`` if it
    does not parse, does not verify or is not HPVM IR. ``file``: where the text came from,
    for the locations of node functions (the line of their ``define``). Text of HPVM's own
    tools (LLVM 9–16: typed pointers, bare ``in``/``out``, hint metadata) is upgraded first
    (``upgrade.py``), keeping its lines where they were. ``root``: the root node function's
    LLVM name (default: the launched one, else the one builder no one creates). A leaf
    launched as the root, as HPVM allows, is the one node of a graph that binds every
    input and output to it."""
    text, module = upgraded_module(text, None if file == "<llvm>" else file)
    return _Importer(_verified(module), text, file).run(root)


def parse_verified(text: str, api: str = "") -> Any:
    """The llvmlite module of ``text``, verified; ``LLVMImportError`` (``api``: the function
    to name in it) if it does not parse or verify."""
    import llvmlite.binding as llvm

    try:
        module = llvm.parse_assembly(text)
    except RuntimeError as e:
        raise LLVMImportError(f"{api}the text is not valid LLVM IR: {str(e).strip()}") from None
    return _verified(module, api)


def _verified(module: Any, api: str = "") -> Any:
    try:
        module.verify()
    except RuntimeError as e:
        raise LLVMImportError(f"{api}the text is not valid LLVM IR: {str(e).strip()}") from None
    return module


def _port_name(name: str, taken: set[str]) -> str:
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


def _string_attrs(attrs: Any) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for item in attrs:
        raw = item.decode() if isinstance(item, bytes) else str(item)
        for key, value in _ATTR.findall(raw):
            found[key] = value if "=" in raw[raw.find(f'"{key}"') :].split(" ", 1)[0] else None
    return found


def _instr(ins: Any) -> str:
    return str(ins).strip()


_const = constant


@dataclass
class _Ports:
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


def return_type(fn: Any) -> str:
    """The return type of a function, from its ``define`` (or ``declare``) line."""
    head = define_line(fn)
    before = head.split(f"@{abi.quote(fn.name)}(", 1)[0]
    before = re.sub(r"^\s*(?:define|declare)\s+", "", before).strip()
    if before.endswith("}"):
        return before[before.rfind("{") :]
    return before.split()[-1] if before else "void"


def define_line(fn: Any) -> str:
    """A function's ``define`` (or ``declare``) line."""
    for line in str(fn).splitlines():
        if line.startswith(("define", "declare")):
            return line
    return ""


class _Importer:
    def __init__(self, module: Any, text: str, file: str):
        self.module = module
        self.text = text
        self.file = file
        self.lines = {
            m.group(1) or m.group(2): text.count("\n", 0, m.start()) + 1
            for m in re.finditer(r'^define\b[^@\n]*@(?:"([^"]*)"|([\w.$-]+))\(', text, re.M)
        }
        self.defined = {f.name: f for f in module.functions if not f.is_declaration}
        self.fields: dict[str, list[str]] = {}  # return_fields, by function
        self.walked: dict[str, list[Any]] = {}  # instructions, by function (kept: ids below stay theirs)
        self.texts: dict[int, str] = {}
        self.intrinsics: dict[int, str | None] = {}
        self.offsets = [0, *(m.end() for m in re.finditer("\n", text))]  # where each line starts
        self.text_lines = text.splitlines()
        self.built: dict[str, NodeFunction] = {}
        self.building: set[str] = set()
        # Each node function's outputs as its return struct declares them (an internal
        # function's out_types come from its binds, which may be missing: the verifier says so).
        self.out_ports: dict[int, _Ports] = {}
        # The (ptr, i64) pairs that are one port (grouping.py), by their first index.
        self.folded = grouping.folded_pairs(self.signatures(), self.links())

    # -- the root ---------------------------------------------------------------------
    def run(self, root_name: str | None = None) -> InternalFunction:
        if root_name is None:
            root_name = self.root()
        elif root_name not in self.defined:
            raise LLVMImportError(f"@{root_name}: the module defines no such function to use as the root")
        found = self.function(root_name, "the module's root (launched, or created by no one)")
        root = found if isinstance(found, InternalFunction) else leaf_graph(found)
        try:
            verify(root)
        except VerificationError as e:
            raise LLVMImportError(f"the imported graph breaks HPVM's rules: {e}") from None
        return root

    def root(self) -> str:
        launched: list[str] = []
        builders: list[str] = []
        created: set[str] = set()
        for name, fn in self.defined.items():
            if not self.mentions(name, "launch", *abi.GRAPH_INTRINSICS):
                continue
            for ins in self.instructions(fn):
                which = self.intrinsic_of(ins)
                if which == "launch":
                    target = list(ins.operands)[0]
                    if target.value_kind.name == "function" and target.name not in launched:
                        launched.append(target.name)
                elif which is not None and which.startswith("createNode"):
                    created.add(list(ins.operands)[0].name)
                    if name not in builders:
                        builders.append(name)
                elif which in abi.GRAPH_INTRINSICS and name not in builders:
                    builders.append(name)
        if len(launched) > 1:
            raise LLVMImportError(
                f"the module launches several graphs (@{', @'.join(launched)}); import one root at a "
                f"time: from_hpvm_ir(text, root='{launched[0]}')"
            )
        if launched:
            return launched[0]
        roots = [b for b in builders if b not in created]
        if not roots:
            before = re.search(r"\bcall\b[^\n]*@__hpvm__createNodeND\(", self.text) is not None
            raise LLVMImportError(
                "no root node function: no function calls llvm.hpvm.createNode* outside the "
                "functions created by others; a program needs a function that builds its graph"
                + ("; this text calls __hpvm__createNodeND: it is HPVM-C before GenHPVM (clang's "
                   "output), which hpvm.c.compile (hpvm c run FILE.ll) reads" if before else "")
            )  # fmt: skip
        if len(roots) > 1:
            raise LLVMImportError(
                f"several functions build a graph that no one creates (@{', @'.join(roots)}); "
                "launch one with llvm.hpvm.launch or keep one root per module"
            )
        return roots[0]

    def instructions(self, fn: Any) -> list[Any]:
        """``fn``'s instructions, listed once with their texts (``outline.FunctionIndex``:
        the function printed once, not each instruction; every step through llvmlite is a
        foreign call, and the import walks the graph builders several times)."""
        found = self.walked.get(fn.name)
        if found is None:
            index = FunctionIndex(fn)
            found = self.walked[fn.name] = [
                ins for block in index.blocks for ins in index.instructions[block]
            ]
            for ins in found:
                self.texts[id(ins)] = index.text[ins]
                callee = index.callee(ins)
                self.intrinsics[id(ins)] = (
                    callee[len(abi.PREFIX) :]
                    if callee is not None and callee.startswith(abi.PREFIX)
                    else None
                )
        return found

    def text_of(self, ins: Any) -> str:
        """The text of an instruction of ``instructions``."""
        return self.texts[id(ins)]

    def intrinsic_of(self, ins: Any) -> str | None:
        """``createNode1D`` for an instruction of ``instructions`` calling
        ``llvm.hpvm.createNode1D``, else ``None``."""
        return self.intrinsics[id(ins)]

    # -- one node function ------------------------------------------------------------
    def function(self, name: str, where: str) -> NodeFunction:
        if name in self.built:
            return self.built[name]
        fn = self.defined.get(name)
        if fn is None:
            raise LLVMImportError(f"{where}: creates a node of @{name}, which the module does not define")
        if name in self.building:
            raise LLVMImportError(f"{where}: @{name} creates a node of itself (graphs are acyclic)")
        self.building.add(name)
        attrs = _string_attrs(fn.attributes)
        params, ins, outs = self.params(fn)
        ins = self.ordered(fn, attrs, "hpvm.ins", ins, "in")
        outs = self.ordered(fn, attrs, "hpvm.outs", outs, "out")
        outputs = self.outputs(fn, attrs)
        hint = attrs.get("hpvm.hint")
        label = attrs.get("hpvm.name") or name
        graph_calls = self.mentions(name, *abi.GRAPH_INTRINSICS) and [
            i for i in self.instructions(fn) if (self.intrinsic_of(i) or "") in abi.GRAPH_INTRINSICS
        ]
        made: NodeFunction
        if graph_calls:
            declared = outputs.types if "hpvm.declared" in attrs else None
            made = InternalFunction(
                label, params, graph=ChildGraph(), hint=hint, ins=ins, outs=outs, declared_outputs=declared,
                location=self.where(name),
            )  # fmt: skip
            self.built[name] = made
            self.out_ports[id(made)] = outputs
            self.graph(fn, made, params, outputs)
        else:
            self.check_leaf(fn)
            body: LLVMBody | TensorBody = LLVMBody(self.text, name)
            if self.mentions(name, tensorleaf.PREFIX.removeprefix(abi.PREFIX)):
                instructions = self.instructions(fn)
                if tensorleaf.uses_tensor_intrinsics(instructions):
                    body = tensorleaf.tensor_body(
                        fn, instructions, _ports_of_params(params).leading, outputs.leading
                    )
            made = LeafFunction(
                None, label, params, outputs.types, hint=hint, ins=ins, outs=outs,
                location=self.where(name), body=body,
            )  # fmt: skip
            self.built[name] = made
            self.out_ports[id(made)] = outputs
        self.building.discard(name)
        return made

    def where(self, name: str) -> SourceLocation:
        """The line of the function's ``define`` in the text."""
        return SourceLocation(self.file, self.lines.get(name, 0))

    def mentions(self, function: str, *intrinsics: str) -> bool:
        """Whether ``function``'s text names any of ``intrinsics`` (``llvm.hpvm.`` left out),
        read from the module's text: a filter before walking its instructions, each of which
        costs several calls into LLVM (on edge detection, reading every leaf's instructions
        to find none of these was most of an import's time). ``True`` where the function is
        not found in the text (then its instructions are looked at)."""
        start = self.lines.get(function)
        if start is None:
            return True
        end = self.text.find("\n}", self.offsets[start - 1])
        body = self.text[self.offsets[start - 1] : None if end < 0 else end]
        return any(f"{abi.PREFIX}{name}" in body for name in intrinsics)

    def may_build(self, function: str) -> bool:
        """Whether ``function``'s text calls a graph intrinsic."""
        return self.mentions(function, "createNode", "createEdge", "bind.")

    def where_in(self, function: str, instruction: str) -> SourceLocation:
        """The line of ``instruction`` (as llvmlite prints it) in ``function``'s body in the
        text; the function's ``define`` line if it is not found there."""
        start = self.lines.get(function, 0)
        head = instruction.split(", !dbg")[0].strip()
        lines = self.text_lines
        for k in range(start, len(lines)):
            if lines[k].startswith("}"):
                break
            if lines[k].strip().startswith(head):
                return SourceLocation(self.file, k + 1)
        return self.where(function)

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
            attrs = _string_attrs(a.attributes)
            name = _port_name(a.name or f"arg{i}", {p.name for p in params})
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

    def outputs(self, fn: Any, attrs: dict[str, str | None]) -> _Ports:
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
        return _Ports(types, abi.leading_indices(types))

    # -- which (ptr, i64) pairs are one port (grouping.py) ----------------------------------
    def signatures(self) -> dict[tuple[str, str], grouping.Signature]:
        """Every defined function's arguments and return fields, with the ports declared on
        them. (What cannot be read is left to the import proper, which says what is wrong.)"""
        found: dict[tuple[str, str], grouping.Signature] = {}
        for name, fn in self.defined.items():
            args = list(fn.arguments)
            declared: dict[int, int] = {}
            for k, a in enumerate(args):
                spelled = _string_attrs(a.attributes).get("hpvm.port")
                if spelled is not None:
                    declared[k] = _arity_of(spelled)
            found[(name, grouping.IN)] = grouping.Signature(tuple(str(a.type) for a in args), declared)
            try:
                fields = self.return_fields(fn)
            except LLVMImportError:
                fields = []
            spelled = _string_attrs(fn.attributes).get("hpvm.outputs")
            declared = {}
            if spelled is not None:  # every field is a declared port's
                try:
                    types = self.declared_outputs(fn, spelled)
                    declared = dict(zip(abi.leading_indices(types), map(abi.arity, types)))
                except LLVMImportError:
                    declared = dict.fromkeys(range(len(fields)), 1)
            found[(name, grouping.OUT)] = grouping.Signature(tuple(fields), declared)
        return found

    def links(self) -> list[grouping.Link]:
        """Every bind and edge of the module, in LLVM indices."""
        found: list[grouping.Link] = []
        for name, fn in self.defined.items():
            if not self.may_build(name):
                continue
            made: dict[str, str] = {}  # a createNode call's value (%n1) -> the function it creates
            for ins in self.instructions(fn):
                which = self.intrinsic_of(ins)
                if which is None:
                    continue
                text = self.text_of(ins)
                args = call_arguments(text)
                if which.startswith("createNode"):
                    if args and args[0][1].startswith("@") and (value := _defined_value(text)):
                        made[value] = args[0][1][1:].strip('"')
                    continue
                if which not in ("createEdge", "bind.input", "bind.output"):
                    continue
                keys = tuple(v for t, v in args if t == "ptr")
                nodes = [made.get(v) for v in keys]
                consts = [_integer(v) for _, v in args[len(keys) :]]
                if None in nodes or None in consts or len(nodes) != (2 if which == "createEdge" else 1):
                    continue
                if which == "createEdge":
                    repl, sp, dp, stream = consts
                    src = grouping.End(nodes[0], grouping.OUT, sp)  # type: ignore[arg-type]
                    dst = grouping.End(nodes[1], grouping.IN, dp)  # type: ignore[arg-type]
                    call: tuple[object, ...] = ("edge", name, keys, repl, stream)
                elif which == "bind.input":
                    ip, ic, stream = consts
                    src = grouping.End(name, grouping.IN, ip)  # type: ignore[arg-type]
                    dst = grouping.End(nodes[0], grouping.IN, ic)  # type: ignore[arg-type]
                    call = ("in", name, keys, stream)
                else:
                    oc, op, stream = consts
                    src = grouping.End(nodes[0], grouping.OUT, oc)  # type: ignore[arg-type]
                    dst = grouping.End(name, grouping.OUT, op)  # type: ignore[arg-type]
                    call = ("out", name, keys, stream)
                found.append(grouping.Link(call, src, dst))
        return found

    def check_leaf(self, fn: Any) -> None:
        if not self.mentions(fn.name, *abi.HOST_INTRINSICS):
            return
        for ins in self.instructions(fn):
            which = self.intrinsic_of(ins)
            if which is not None and which in abi.HOST_INTRINSICS:
                raise LLVMImportError(
                    f"@{fn.name}: '{self.text_of(ins)}' is a host intrinsic in a leaf node function; "
                    "only host code launches and waits for graphs"
                )

    # -- an internal node's graph -----------------------------------------------------
    def graph(self, fn: Any, made: InternalFunction, params: list[Port], outputs: _Ports) -> None:
        graph = made.graph
        nodes: dict[str, Node] = {}
        own_in = _Ports([p.type for p in params], abi.leading_indices([p.type for p in params]))
        own = {i: i for i in self.instructions(fn)}  # (an operand → the instruction it is)
        companions: list[tuple[tuple[Any, ...], str]] = []
        leaders: set[tuple[Any, ...]] = set()
        if len(list(fn.blocks)) != 1:
            raise LLVMImportError(
                f"@{fn.name}: an internal node function is one basic block of graph intrinsics; "
                "this one branches"
            )
        for ins in self.instructions(fn):
            text = self.text_of(ins)
            which = self.intrinsic_of(ins)
            where = f"@{fn.name}: '{text}'"
            if which is not None and which.startswith("createNode"):
                ops = list(ins.operands)
                target = ops[0]
                if not target.value_kind.name == "function":
                    raise LLVMImportError(f"{where}: the node function must be a function, not {target}")
                child = self.function(target.name, where)
                sizes = tuple(self.size(fn, params, own, o, where) for o in ops[1:-1])
                name = ins.name or f"n{len(graph.nodes)}"
                name = graph.unique_name(name)
                node = Node(name, child, sizes, location=self.where_in(fn.name, text))
                graph.nodes.append(node)
                nodes[_defined_value(text)] = node
            elif which in ("createEdge", "bind.input", "bind.output"):
                args = call_arguments(text)
                node_ops = [v for t, v in args if t == "ptr"]
                handles = []
                for v in node_ops:
                    found = nodes.get(v)
                    if found is None:
                        raise LLVMImportError(f"{where}: {v} is not a node this function created")
                    handles.append(found)
                consts = [_integer(v) for _, v in args[len(node_ops) :]]
                at = self.where_in(fn.name, text)  # the call's line (an edge or bind's location)
                if any(c is None for c in consts):
                    raise LLVMImportError(
                        f"{where}: replication kind, ports and stream flag must be constants"
                    )
                if which == "createEdge":
                    src, dst = handles
                    repl, sp, dp, stream = consts
                    a = self.locate(
                        self.out_ports[id(src.function)],
                        sp,
                        where,
                        f"output of @{src.function.name}",
                    )
                    b = self.locate(_ports_of(dst.function), dp, where, f"input of @{dst.function.name}")
                    tsrc, tdst = self.out_ports[id(src.function)].types[a[0]], dst.function.params[b[0]].type
                    key: tuple[Any, ...] = ("edge", src.name, a[0], dst.name, b[0])
                    record = Edge(src, a[0], dst, b[0], repl=int(repl), stream=bool(stream), location=at)  # type: ignore[arg-type]
                    target_list: list[Any] = graph.edges
                elif which == "bind.input":
                    (dst,) = handles
                    ip, ic, stream = consts
                    a = self.locate(own_in, ip, where, f"input of @{fn.name}")
                    b = self.locate(_ports_of(dst.function), ic, where, f"input of @{dst.function.name}")
                    tsrc, tdst = params[a[0]].type, dst.function.params[b[0]].type
                    key = ("in", a[0], dst.name, b[0])
                    record = InputBind(a[0], dst, b[0], stream=bool(stream), location=at)
                    target_list = graph.in_binds
                else:
                    (src,) = handles
                    oc, op, stream = consts
                    a = self.locate(
                        self.out_ports[id(src.function)],
                        oc,
                        where,
                        f"output of @{src.function.name}",
                    )
                    b = self.locate(outputs, op, where, f"output of @{fn.name}")
                    tsrc, tdst = self.out_ports[id(src.function)].types[a[0]], outputs.types[b[0]]
                    key = ("out", src.name, a[0], b[0])
                    record = OutputBind(src, a[0], b[0], stream=bool(stream), location=at)
                    target_list = graph.out_binds
                if tsrc != tdst:
                    raise LLVMImportError(
                        f"{where}: connects a {tsrc} to a {tdst}; both ends must have the same type"
                    )
                if a[1] != b[1]:
                    raise LLVMImportError(
                        f"{where}: connects part {a[1]} of a {tsrc} port to part {b[1]} of the other; "
                        "an array's pointer, size and extents go to the same parts"
                    )
                if a[1] == 0:
                    leaders.add(key)
                    target_list.append(record)
                else:
                    companions.append((key, where))
            elif which is not None:
                raise LLVMImportError(
                    f"{where}: llvm.hpvm.{which} in an internal node function; internal nodes only "
                    "create nodes, edges and binds (queries, memory and synchronization belong in leaves)"
                )
            elif ins.opcode == "ret" or self.is_size_arithmetic(ins):
                continue
            else:
                raise LLVMImportError(
                    f"{where}: computation in a function that builds a graph; a leaf may not call "
                    "graph intrinsics, and an internal node function holds only llvm.hpvm.createNode*, "
                    "createEdge, bind.input, bind.output, the integer arithmetic of replication sizes "
                    "and its ret"
                )
        for key, where in companions:
            if key not in leaders:
                raise LLVMImportError(
                    f"{where}: connects the size or an extent of an array port without a call for its "
                    "pointer; connect the pointer (the port's first argument) too"
                )

    @staticmethod
    def is_size_arithmetic(ins: Any) -> bool:
        return is_size_arithmetic(ins)

    @staticmethod
    def locate(ports: _Ports, index: int, where: str, what: str) -> tuple[int, int]:
        found = ports.port(index)
        if found is None:
            raise LLVMImportError(
                f"{where}: index {index} is no {what}, which has LLVM indices 0..{ports.count() - 1}"
            )
        return found

    def size(self, fn: Any, params: list[Port], own: dict[Any, Any], value: Any, where: str) -> Expr:
        """A replication size as an expression over the parent's ports."""
        kind = value.value_kind.name
        const = _const(value)
        if const is not None:
            return Const(const)
        if kind == "argument":
            return self.size_argument(fn, params, value.name, where)
        ins = own.get(value) if kind == "instruction" else None
        if ins is None:
            raise LLVMImportError(
                f"{where}: a replication size must be an integer expression of the ports, not {value}"
            )
        ops = list(ins.operands)
        if ins.opcode in _CASTS:
            return self.size(fn, params, own, ops[0], where)
        divisor = _const(ops[1]) if ins.opcode == "udiv" else None
        if ins.opcode == "lshr" and _const(ops[1]) is not None:  # LLVM's form of udiv by 2^k
            divisor = 1 << _const(ops[1])
        if divisor is not None and ops[0].value_kind.name == "argument":
            shape = self.byte_size(fn, params, ops[0].name, divisor)
            if shape is not None:
                return shape
        if ins.opcode == "lshr" and divisor is not None:  # (sizes are not negative)
            return BinOp("//", self.size(fn, params, own, ops[0], where), Const(divisor))
        power = _const(ops[1]) if ins.opcode in ("shl", "and") else None
        if ins.opcode == "shl" and power is not None:  # LLVM's form of a product by 2^k
            return BinOp("*", self.size(fn, params, own, ops[0], where), Const(1 << power))
        if ins.opcode == "and" and power is not None and power >= 0 and (power + 1) & power == 0:
            # LLVM's form of a remainder by 2^k (sizes are not negative)
            return BinOp("%", self.size(fn, params, own, ops[0], where), Const(power + 1))
        if ins.opcode == "or" and " or disjoint " in f" {_instr(ins)} ":  # an add without carries
            lhs = self.size(fn, params, own, ops[0], where)
            return BinOp("+", lhs, self.size(fn, params, own, ops[1], where))
        if ins.opcode in _BINOPS:
            lhs = self.size(fn, params, own, ops[0], where)
            return BinOp(_BINOPS[ins.opcode], lhs, self.size(fn, params, own, ops[1], where))
        callee = ops[-1].name if ins.opcode == "call" else ""
        if callee in ("llvm.smin.i64", "llvm.smax.i64"):
            fn_name = callee[6:9]
            args: list[Expr] = []
            for o in ops[:-1]:
                e = self.size(fn, params, own, o, where)
                folded = o.value_kind.name == "instruction" and o.name.endswith(".fold")
                args.extend(e.args if folded and isinstance(e, Call) and e.fn == fn_name else [e])
            return Call(fn_name, tuple(args))
        raise LLVMImportError(
            f"{where}: its size '{_instr(ins)}' is not integer arithmetic (add, sub, mul, sdiv, "
            "srem, udiv, lshr/shl/and by a constant, or disjoint, casts, llvm.smin/smax.i64) of the "
            "function's ports"
        )

    @staticmethod
    def byte_size(fn: Any, params: list[Port], arg: str, divisor: int | None) -> Expr | None:
        """``a.shape[0]`` when argument ``arg`` is the byte size of a 1-D array port ``a``
        (folded with its pointer) and ``divisor`` its element size."""
        found = _ports_of_params(params).port(_argument_index(fn, arg))
        if found is None or found[1] != 1:
            return None
        p = params[found[0]]
        if isinstance(p.type, ArrayType) and p.type.rank == 1 and divisor == p.type.dtype.itemsize:
            return Shape(p.name, 0)
        return None

    def size_argument(self, fn: Any, params: list[Port], arg: str, where: str) -> Expr:
        ports = _ports_of_params(params)
        found = ports.port(_argument_index(fn, arg))
        if found is not None:
            port, offset = found
            t = params[port].type
            if offset == 0 and isinstance(t, ScalarType) and t.is_integer:
                return Param(params[port].name)
            if isinstance(t, ArrayType) and offset >= 2:
                return Shape(params[port].name, offset - 2)
            shape = self.byte_size(fn, params, arg, 1)  # a byte array's size is its length
            if shape is not None:
                return shape
        raise LLVMImportError(
            f"{where}: a replication size uses argument %{arg}, which is not an integer port "
            "(nor an array's extent)"
        )


def leaf_graph(leaf: NodeFunction) -> InternalFunction:
    """A leaf launched as a root (HPVM's BuildDFG accepts it; seed 000 launches internal
    nodes): the root of a graph of one node, that leaf, with every input and output bound."""
    params = [Port(p.name, p.type, p.layout) for p in leaf.params]
    root = InternalFunction(
        f"{leaf.name}_root", params, graph=ChildGraph(), hint=leaf.hint, ins=leaf.ins, outs=leaf.outs,
        location=leaf.location,
    )  # fmt: skip
    node = Node(leaf.name, leaf, (), leaf.location)
    root.graph.nodes.append(node)
    root.graph.in_binds.extend(InputBind(k, node, k) for k in range(len(params)))
    root.graph.out_binds.extend(OutputBind(node, k, k) for k in range(len(leaf.out_types)))
    return root


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


_VALUE = re.compile(rf"[%@]?{abi.NAME}$")


def call_arguments(text: str) -> list[tuple[str, str]]:
    """``(type, value)`` of each argument of the call instruction ``text``, as written
    (``ptr %n1``, ``i32 0``; parameter attributes between them left out): how the graph
    intrinsics' arguments are read without a call into LLVM per operand."""
    start = text.find("(", text.find("@"))
    parts: list[str] = []
    depth, quoted, begin = 0, False, start + 1
    for k in range(start + 1, len(text)):
        c = text[k]
        if quoted:
            quoted = c != '"' or text[k - 1] == "\\"
        elif c == '"':
            quoted = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>" and depth:
            depth -= 1
        elif c == ")" or (c == "," and depth == 0):
            parts.append(text[begin:k].strip())
            begin = k + 1
            if c == ")":
                break
    found = []
    for part in parts:
        if part:
            value = _VALUE.search(part)
            found.append((part.split(" ", 1)[0], value.group(0) if value else part))
    return found


def _defined_value(text: str) -> str:
    """The value an instruction's text defines (``%n1`` of ``%n1 = call …``), else ``""``."""
    m = abi.DEFINES.match(text)
    return f"%{m.group(1)}" if m else ""


def _integer(value: str) -> int | None:
    """An integer constant as a call argument writes it (``true`` is 1), else ``None``."""
    if value in ("true", "false"):
        return int(value == "true")
    return int(value) if re.fullmatch(r"-?\d+", value) else None


def _argument_index(fn: Any, name: str) -> int:
    """The index of ``fn``'s argument called ``name`` (-1: none)."""
    return next((k for k, a in enumerate(fn.arguments) if a.name == name), -1)


def _arity_of(spelled: str) -> int:
    """How many LLVM arguments the port ``"hpvm.port"="spelled"`` takes (1 if it does not parse)."""
    try:
        return abi.arity(parse_type(spelled))
    except TypeError:
        return 1


def _ports_of_params(params: list[Port]) -> _Ports:
    types = [p.type for p in params]
    return _Ports(types, abi.leading_indices(types))


def _ports_of(fn: NodeFunction) -> _Ports:
    return _ports_of_params(fn.params)


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


__all__ = ["define_line", "from_hpvm_ir", "is_size_arithmetic", "parse_verified", "return_type"]
