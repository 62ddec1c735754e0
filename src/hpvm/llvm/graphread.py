"""An internal node function's graph: its ``createNode*`` calls as nodes, ``createEdge``
as edges, ``bind.input`` / ``bind.output`` as binds, and nothing else.

Why a class of its own: a graph builder is checked against seed 000's rules for internal
nodes (one basic block of graph intrinsics and size arithmetic; both ends of a connection
of one type; an array's companions connected with its pointer) apart from how its ports
and its children's are read, which it is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import ChildGraph, Edge, InputBind, InternalFunction, Node, NodeFunction, OutputBind
from ..ir.graph import Param as Port
from . import abi
from .errors import GraphCall, LLVMImportError
from .portread import Ports, ports_of
from .sizes import is_size_arithmetic, refuse_negative, size
from .textindex import ModuleText, call_arguments, defined_value, integer


@dataclass
class _Building:
    """One graph being read: the builder ``fn``, its ports, the nodes made so far (by the
    value of their ``createNode`` call), and the connections of arrays' companions (size,
    extents) with the leading (pointer) connections they must come with."""

    fn: Any
    graph: ChildGraph
    params: list[Port]
    outputs: Ports
    own: dict[Any, Any]  # (an operand → the instruction it is)
    nodes: dict[str, Node] = field(default_factory=dict)
    companions: list[tuple[tuple[Any, ...], GraphCall]] = field(default_factory=list)
    leaders: set[tuple[Any, ...]] = field(default_factory=set)
    #: how many calls so far read alike but for their ``!dbg`` (``GraphCall.alike``)
    seen: Counter[str] = field(default_factory=Counter)

    @property
    def own_in(self) -> Ports:
        types = [p.type for p in self.params]
        return Ports(types, abi.leading_indices(types))


class GraphReader:
    """Reads graphs of the module ``index`` indexes; ``function(name, where)`` imports a
    child node function, ``out_ports`` (by ``id`` of a node function) its outputs."""

    def __init__(
        self,
        index: ModuleText,
        function: Callable[[str, str | GraphCall], NodeFunction],
        out_ports: dict[int, Ports],
    ):
        self.index = index
        self.function = function
        self.out_ports = out_ports

    def graph(self, fn: Any, made: InternalFunction, params: list[Port], outputs: Ports) -> None:
        """Fills ``made.graph`` from the builder ``fn`` (its ports ``params``, ``outputs``)."""
        if len(list(fn.blocks)) != 1:
            raise LLVMImportError(
                f"@{fn.name}: an internal node function is one basic block of graph intrinsics; "
                "this one branches"
            )
        g = _Building(fn, made.graph, params, outputs, {i: i for i in self.index.instructions(fn)})
        for ins in self.index.instructions(fn):
            text = self.index.text_of(ins)
            which = self.index.intrinsic_of(ins)
            head = text.split(", !dbg")[0].strip()
            call = GraphCall(fn.name, text, g.seen[head], self.index.where_in(fn.name, text, g.seen[head]))
            g.seen[head] += 1
            if which is not None and which.startswith("createNode"):
                self.create(g, ins, text, call)
            elif which in ("createEdge", "bind.input", "bind.output"):
                self.connect(g, which, text, call)
            elif which is not None:
                raise call.error(
                    "computation",
                    f"llvm.hpvm.{which} in an internal node function; internal nodes only "
                    "create nodes, edges and binds (queries, memory and synchronization belong in leaves)",
                )
            elif ins.opcode == "ret" or is_size_arithmetic(ins):
                continue
            else:
                raise call.error(
                    "computation",
                    "computation in a function that builds a graph; a leaf may not call "
                    "graph intrinsics, and an internal node function holds only llvm.hpvm.createNode*, "
                    "createEdge, bind.input, bind.output, the integer arithmetic of replication sizes "
                    "and its ret",
                )
        for key, where in g.companions:
            if key not in g.leaders:
                raise where.error(
                    "companion",
                    "connects the size or an extent of an array port without a call for its "
                    "pointer; connect the pointer (the port's first argument) too",
                )

    def create(self, g: _Building, ins: Any, text: str, where: GraphCall) -> None:
        """A ``createNode*`` call: a node of the function it names, its sizes read back."""
        ops = list(ins.operands)
        target = ops[0]
        if not target.value_kind.name == "function":
            raise where.error("function", f"the node function must be a function, not {target}")
        child = self.function(target.name, where)
        sizes = tuple(size(g.fn, g.params, g.own, o, where) for o in ops[1:-1])
        refuse_negative(sizes, target.name, where)
        name = g.graph.unique_name(ins.name or f"n{len(g.graph.nodes)}")
        node = Node(name, child, sizes, location=where.at)
        g.graph.nodes.append(node)
        g.nodes[defined_value(text)] = node

    def connect(self, g: _Building, which: str, text: str, where: GraphCall) -> None:
        """A ``createEdge`` / ``bind.input`` / ``bind.output`` call: an edge or a bind between
        ports of one type, an array's companions (size, extents) with its pointer."""
        fn, params, outputs = g.fn, g.params, g.outputs
        args = call_arguments(text)
        node_ops = [v for t, v in args if t == "ptr"]
        handles = []
        for v in node_ops:
            found = g.nodes.get(v)
            if found is None:
                raise where.error("node", f"{v} is not a node this function created")
            handles.append(found)
        consts = [integer(v) for _, v in args[len(node_ops) :]]
        at = where.at  # the call's line (an edge or bind's location)
        if any(c is None for c in consts):
            raise where.error("constant", "replication kind, ports and stream flag must be constants")
        if which == "createEdge":
            src, dst = handles
            repl, sp, dp, stream = consts
            a = self.locate(self.out_ports[id(src.function)], sp, where, f"output of @{src.function.name}")
            b = self.locate(ports_of(dst.function), dp, where, f"input of @{dst.function.name}")
            tsrc, tdst = self.out_ports[id(src.function)].types[a[0]], dst.function.params[b[0]].type
            key: tuple[Any, ...] = ("edge", src.name, a[0], dst.name, b[0])
            record = Edge(src, a[0], dst, b[0], repl=int(repl), stream=bool(stream), location=at)  # type: ignore[arg-type]
            target_list: list[Any] = g.graph.edges
        elif which == "bind.input":
            (dst,) = handles
            ip, ic, stream = consts
            a = self.locate(g.own_in, ip, where, f"input of @{fn.name}")
            b = self.locate(ports_of(dst.function), ic, where, f"input of @{dst.function.name}")
            tsrc, tdst = params[a[0]].type, dst.function.params[b[0]].type
            key = ("in", a[0], dst.name, b[0])
            record = InputBind(a[0], dst, b[0], stream=bool(stream), location=at)
            target_list = g.graph.in_binds
        else:
            (src,) = handles
            oc, op, stream = consts
            a = self.locate(self.out_ports[id(src.function)], oc, where, f"output of @{src.function.name}")
            b = self.locate(outputs, op, where, f"output of @{fn.name}")
            tsrc, tdst = self.out_ports[id(src.function)].types[a[0]], outputs.types[b[0]]
            key = ("out", src.name, a[0], b[0])
            record = OutputBind(src, a[0], b[0], stream=bool(stream), location=at)
            target_list = g.graph.out_binds
        if tsrc != tdst:
            raise where.error("type", f"connects a {tsrc} to a {tdst}; both ends must have the same type")
        if a[1] != b[1]:
            raise where.error(
                "part",
                f"connects part {a[1]} of a {tsrc} port to part {b[1]} of the other; "
                "an array's pointer, size and extents go to the same parts",
            )
        if a[1] == 0:
            g.leaders.add(key)
            target_list.append(record)
        else:
            g.companions.append((key, where))

    @staticmethod
    def locate(ports: Ports, index: int, where: GraphCall, what: str) -> tuple[int, int]:
        """The port and part of LLVM index ``index`` of ``ports``; ``what``: ``input of @f``
        or ``output of @f``, for the message."""
        found = ports.port(index)
        if found is None:
            count = ports.count()
            has = f"which has LLVM indices 0..{count - 1}" if count else f"which has no {what.split()[0]}s"
            raise where.error(what.split()[0], f"index {index} is no {what}, {has}")
        return found
