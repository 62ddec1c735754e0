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

The reading is shared out: ``textindex.py`` (the module's text, indexed: instructions,
lines), ``portread.py`` (a function's ports), ``linkscan.py`` (every bind and edge, for
``grouping.py``), ``graphread.py`` (an internal node's graph) and ``sizes.py`` (replication
sizes); this module finds the root and imports node functions, one each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import VerificationError
from ..ir.bodies import LLVMBody, TensorBody
from ..ir.graph import (
    ChildGraph,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
    WrittenPorts,
    functions,
)
from ..ir.graph import Param as Port
from ..ir.llvmcontext import own_context
from ..ir.types import ArrayType, ScalarType
from ..ir.verify import verify
from . import abi, grouping, tensorleaf
from .errors import GraphCall, LLVMImportError
from .graphread import GraphReader
from .linkscan import links
from .portread import PortReader, Ports, ports_of_params, string_attrs
from .sizes import is_size_arithmetic
from .tensorports import type_tensor_ports
from .textindex import ModuleText, call_arguments, define_line, return_type
from .upgrade import upgraded_module


def from_hpvm_ir(
    text: str, file: str = "<llvm>", root: str | None = None, tensor_ports: bool = True
) -> InternalFunction:
    """The root node function of the graph ``text`` describes; ``LLVMImportError`` if it
    does not parse, does not verify or is not HPVM IR. ``file``: where the text came from,
    for the locations of node functions (the line of their ``define``). Text of HPVM's own
    tools (LLVM 9–16: typed pointers, bare ``in``/``out``, hint metadata) is upgraded first
    (``upgrade.py``), keeping its lines where they were. ``root``: the root node function's
    LLVM name (default: the launched one, else the one builder no one creates). A leaf
    launched as the root, as HPVM allows, is the one node of a graph that binds every
    input and output to it. ``tensor_ports``: type the byte-array ports of tensor leaves
    (HPVM's ``(i8*, i64)`` tensors) as tensors (``tensorports.py``; the C front end does it
    itself, with its own messages)."""
    with own_context() as parse:  # (the leaves keep the text, not LLVM's print of it: ir/llvmcontext.py)
        text, module = upgraded_module(text, parse, None if file == "<llvm>" else file)
        made = _Importer(_verified(module), text, file).run(root)
    if tensor_ports and _byte_tensor_ports(made):
        type_tensor_ports(made, _text_locator(text, file), LLVMImportError)
    return made


def _byte_tensor_ports(root: InternalFunction) -> bool:
    """Whether a tensor leaf of ``root``'s graph takes a byte array (HPVM's ``i8*``
    tensors), not the typed tensors an export of an hpvm program carries."""
    return any(
        isinstance(fn, LeafFunction)
        and isinstance(fn.body, TensorBody)
        and any(p.type == ArrayType(ScalarType("u8"), 1) for p in fn.params)
        for fn in functions(root)
    )


def _text_locator(text: str, file: str) -> Callable[[str, str, str | None], str]:
    """``tensorports.Locate`` over the module's text: ``file:line`` of the first
    ``llvm.hpvm.<call>`` naming the node's value (and the other node's, for an edge)."""
    lines = text.splitlines()

    def locate(call: str, node: str, other: str | None) -> str:
        for k, line in enumerate(lines, 1):
            if (
                f"@llvm.hpvm.{call}(" in line
                and f"%{node}," in line
                and (other is None or f"%{other}," in line)
            ):
                return f"{file}:{k}"
        return file

    return locate


def parse_verified(parse: Callable[[str], Any], text: str, api: str = "") -> Any:
    """The llvmlite module of ``text``, parsed by ``parse`` (an ``own_context()``'s:
    ``ir/llvmcontext.py``) and verified; ``LLVMImportError`` (``api``: the function to name
    in it) if it does not parse or verify."""
    try:
        module = parse(text)
    except RuntimeError as e:
        raise LLVMImportError(f"{api}the text is not valid LLVM IR: {str(e).strip()}") from None
    return _verified(module, api)


def _verified(module: Any, api: str = "") -> Any:
    try:
        module.verify()
    except RuntimeError as e:
        raise LLVMImportError(f"{api}the text is not valid LLVM IR: {str(e).strip()}") from None
    return module


def _refused(where: str | GraphCall, problem: str) -> LLVMImportError:
    """The error for a node function that cannot be a node: ``where`` is a ``createNode``
    call (a ``GraphCallError``) or what made it the root."""
    return (
        where.error("function", problem)
        if isinstance(where, GraphCall)
        else LLVMImportError(f"{where}: {problem}")
    )


class _Importer:
    """One import of one module: its root, then each node function once (``built``)."""

    def __init__(self, module: Any, text: str, file: str):
        self.module = module
        self.index = ModuleText(text, file)
        self.defined = {f.name: f for f in module.functions if not f.is_declaration}
        self.built: dict[str, NodeFunction] = {}
        self.building: set[str] = set()
        # Each node function's outputs as its return struct declares them (an internal
        # function's out_types come from its binds, which may be missing: the verifier says so).
        self.out_ports: dict[int, Ports] = {}
        self.ports = PortReader(self.defined)
        # The (ptr, i64) pairs that are one port (grouping.py), by their first index.
        self.ports.folded = grouping.folded_pairs(self.ports.signatures(), links(self.index, self.defined))
        self.graphs = GraphReader(self.index, self.function, self.out_ports)

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
            if not self.index.mentions(name, "launch", *abi.GRAPH_INTRINSICS):
                continue
            for ins in self.index.instructions(fn):
                which = self.index.intrinsic_of(ins)
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
            before = re.search(r"\bcall\b[^\n]*@__hpvm__createNodeND\(", self.index.text) is not None
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

    def function(self, name: str, where: str | GraphCall) -> NodeFunction:
        """Node function ``@name``, imported once; ``where``: the call creating a node of it
        (or what makes it the root), for messages."""
        if name in self.built:
            return self.built[name]
        fn = self.defined.get(name)
        if fn is None:
            raise _refused(where, f"creates a node of @{name}, which the module does not define")
        if name in self.building:
            raise _refused(where, f"@{name} creates a node of itself (graphs are acyclic)")
        self.building.add(name)
        attrs = string_attrs(fn.attributes)
        params, ins, outs = self.ports.params(fn)
        ins = self.ports.ordered(fn, attrs, "hpvm.ins", ins, "in")
        outs = self.ports.ordered(fn, attrs, "hpvm.outs", outs, "out")
        outputs = self.ports.outputs(fn, attrs)
        hint = attrs.get("hpvm.hint")
        label = attrs.get("hpvm.name") or name
        graph_calls = self.index.mentions(name, *abi.GRAPH_INTRINSICS) and [
            i
            for i in self.index.instructions(fn)
            if (self.index.intrinsic_of(i) or "") in abi.GRAPH_INTRINSICS
        ]
        made: NodeFunction
        if graph_calls:
            declared = outputs.types if "hpvm.declared" in attrs else None
            made = InternalFunction(
                label, params, graph=ChildGraph(), hint=hint, ins=ins, outs=outs, declared_outputs=declared,
                location=self.index.where(name),
            )  # fmt: skip
            self.built[name] = made
            self.out_ports[id(made)] = outputs
            self.graphs.graph(fn, made, params, outputs)
        else:
            self.check_leaf(fn)
            body: LLVMBody | TensorBody = LLVMBody(self.index.text, name)
            if self.index.mentions(name, tensorleaf.PREFIX.removeprefix(abi.PREFIX)):
                instructions = self.index.instructions(fn)
                if tensorleaf.uses_tensor_intrinsics(instructions):
                    body = tensorleaf.tensor_body(
                        fn,
                        instructions,
                        ports_of_params(params).leading,
                        outputs.leading,
                        line_of=lambda ins, name=name: (
                            self.index.where_in(name, self.index.text_of(ins)).line
                        ),
                    )
            made = LeafFunction(
                None, label, params, outputs.types, hint=hint, ins=ins, outs=outs,
                location=self.index.where(name), body=body,
            )  # fmt: skip
            self.built[name] = made
            self.out_ports[id(made)] = outputs
        self.building.discard(name)
        made.written = written_ports(ports_of_params(params).leading, outputs.leading)
        return made

    def check_leaf(self, fn: Any) -> None:
        if not self.index.mentions(fn.name, *abi.HOST_INTRINSICS):
            return
        for ins in self.index.instructions(fn):
            which = self.index.intrinsic_of(ins)
            if which is not None and which in abi.HOST_INTRINSICS:
                raise LLVMImportError(
                    f"@{fn.name}: '{self.index.text_of(ins)}' is a host intrinsic in a leaf node function; "
                    "only host code launches and waits for graphs"
                )


def written_ports(ins: Sequence[int], outs: Sequence[int]) -> WrittenPorts | None:
    """The LLVM function's numbering of its ports (its arguments and return fields: a
    pointer and its size are two, one port of the graph), where it is not the graph's."""
    if list(ins) == list(range(len(ins))) and list(outs) == list(range(len(outs))):
        return None
    return WrittenPorts(tuple(ins), tuple(outs))


def leaf_graph(leaf: NodeFunction) -> InternalFunction:
    """A leaf launched as a root (HPVM's BuildDFG accepts it; seed 000 launches internal
    nodes): the root of a graph of one node, that leaf, with every input and output bound."""
    params = [Port(p.name, p.type, p.layout) for p in leaf.params]
    root = InternalFunction(
        f"{leaf.name}_root", params, graph=ChildGraph(), hint=leaf.hint, ins=leaf.ins, outs=leaf.outs,
        location=leaf.location,
    )  # fmt: skip
    root.written = leaf.written
    node = Node(leaf.name, leaf, (), leaf.location)
    root.graph.nodes.append(node)
    root.graph.in_binds.extend(InputBind(k, node, k) for k in range(len(params)))
    root.graph.out_binds.extend(OutputBind(node, k, k) for k in range(len(leaf.out_types)))
    return root


__all__ = [
    "call_arguments",
    "define_line",
    "from_hpvm_ir",
    "is_size_arithmetic",
    "parse_verified",
    "return_type",
]
