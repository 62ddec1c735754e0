"""PREPARE (seed 004): a program as one ordinary LLVM function whose node functions are
inlined into regions marked by ``llvm.directive.region.entry`` / ``exit`` calls, for LLVM's
own pipeline to optimize, and for EXTRACT (``extract.py``) to read back.

The form (docs/llvm.md, "PREPARE and EXTRACT"), node by node in each graph's topological
order, inside its parent's region:

- every input of a node is stored into a slot of its own (an ``alloca`` in the entry block)
  before its region and re-read inside it; every output goes to a slot too. The slots are
  listed in the region's bundles, and the directive calls are opaque, so LLVM can neither
  hoist a re-read above the entry (property C2) nor reuse a value one region computed in
  another (C1): each region computes from its own re-reads;
- a replicated node is a loop over all its instances (x fastest, one loop) whose body is
  marked ``detach_task`` / ``reattach_task``, with ``local_barrier`` after it, as in the
  RFC's HPVM and Tapir examples; the directive intrinsics are ``noduplicate``, so LLVM
  neither unrolls nor unswitches such a loop (it would copy the markers);
- a leaf's task is its node function inlined: the export's call of its body (Numba's
  adapter, or an LLVM body kept as it is), made ``noinline`` at the call so that EXTRACT
  finds each body whole; the body keeps its ``llvm.hpvm.*`` queries (the loop's induction
  variable is not substituted for them: the body is shared by all instances), and its
  allocas stay in the task between ``llvm.stacksave`` / ``stackrestore``;
- the graph's structure rides in operand bundles of the entry: ``"HPVM_create_node"(ptr
  @fn, sizes...)`` (the node function, declared with its attributes), ``"HPVM_node"(id,
  parent id, index)``, ``"dataflow_values"``/``"attributes"`` (the RFC's: the values passed
  in, 0 in / 1 out / 2 inout / -1 not a pointer), the slots, and the edges and binds in the
  export's LLVM indices. The node's name is the entry call's ``"hpvm.node"`` attribute.
"""

from __future__ import annotations

from itertools import count

from ..ir.graph import InternalFunction, LeafFunction, Node, NodeFunction
from ..ir.types import ArrayType
from . import abi
from .export import (
    Connection,
    Program,
    Sizes,
    abi_args,
    assemble,
    connections,
    declaration,
    definition,
    fields,
)

DIRECTIVES = (
    "declare token @llvm.directive.region.entry() noduplicate nounwind",
    "declare void @llvm.directive.region.exit(token) noduplicate nounwind",
    "declare i1 @llvm.directive.marker() noduplicate nounwind",
    "declare ptr @llvm.stacksave.p0()",
    "declare void @llvm.stackrestore.p0(ptr)",
)
#: The RFC's "attributes" bundle: how a node uses each value it is given.
IN, OUT, INOUT, NOT_POINTER = 0, 1, 2, -1


def prepare(root: InternalFunction) -> str:
    """The program rooted at ``root`` as LLVM IR with directive regions (seed 004's
    PREPARE); it parses and verifies. ``LLVMExportError`` for a leaf the export cannot
    write."""
    return assemble(root, lambda program: _Preparer(program).lines())


def _bundle(tag: str, operands: list[str]) -> str:
    return f'"{tag}"({", ".join(operands)})'


def _i32(values: list[int]) -> list[str]:
    return [f"i32 {v}" for v in values]


def _i1(flag: bool) -> str:
    return f"i1 {'true' if flag else 'false'}"


def topological(fn: InternalFunction) -> list[Node]:
    """``fn``'s nodes, sources of edges before their destinations (else in graph order)."""
    done: list[Node] = []
    pending = list(fn.graph.nodes)
    while pending:
        ready = next(
            n for n in pending if all(e.src in done for e in fn.graph.edges if e.dst is n and e.src is not n)
        )
        done.append(ready)
        pending.remove(ready)
    return done


class _Preparer:
    def __init__(self, program: Program):
        self.program = program
        self.allocas: list[str] = []
        self.body: list[str] = []
        self.decls: list[str] = []
        self.ids = count()

    def lines(self) -> list[str]:
        program, root = self.program, self.program.root
        refs = program.refs
        decls = [*DIRECTIVES, *(declaration(fn, refs) for fn in program.functions if fn is not root)]
        ret_fields = fields(root.out_types)
        outs = [self.slot(t, f".root.out{k}") for k, t in enumerate(ret_fields)]
        args = [f"%{abi.quote(name)}" for _, name in abi_args(root)]
        self.graph(root, args, outs, -1)
        ret = "{ " + ", ".join(ret_fields) + " }" if ret_fields else "{}"
        value = "undef"
        for k, (t, slot) in enumerate(zip(ret_fields, outs)):
            self.body.append(f"  %.root.r{k} = load {t}, ptr {slot}")
            self.body.append(f"  %.root.v{k} = insertvalue {ret} {value}, {t} %.root.r{k}, {k}")
            value = f"%.root.v{k}"
        header = definition(root, refs)
        return [*decls, *self.decls, header, "entry:", *self.allocas, *self.body, f"  ret {ret} {value}", "}"]

    def slot(self, t: str, name: str) -> str:
        operand = "%" + abi.quote(name)
        self.allocas.append(f"  {operand} = alloca {t}")
        return operand

    def emit(self, line: str) -> None:
        self.body.append(line)

    # -- one graph: its nodes in topological order --------------------------------------
    def graph(self, fn: InternalFunction, args: list[str], outs: list[str], parent: int) -> None:
        names = [name for _, name in abi_args(fn)]
        sizes = Sizes(fn, lambda name: args[names.index(name)], f".g{parent}.s")
        conns = connections(fn)
        index = {node.name: k for k, node in enumerate(fn.graph.nodes)}
        ids = {node.name: next(self.ids) for node in fn.graph.nodes}
        out_slots = {
            node.name: [
                self.slot(t, f".n{ids[node.name]}.out{k}")
                for k, t in enumerate(fields(node.function.out_types))
            ]
            for node in fn.graph.nodes
        }
        for node in topological(fn):
            nid = ids[node.name]
            values = [sizes.value(s) for s in node.sizes]
            self.body += sizes.lines
            sizes.lines = []
            self.node(node, nid, parent, index, values, args, conns, out_slots)
        for seq, c in enumerate(conns):
            if c.kind == "out":
                t = fields(fn.out_types)[c.b]
                self.emit(f"  %.g{parent}.o{seq} = load {t}, ptr {out_slots[c.src or ''][c.a]}")
                self.emit(f"  store {t} %.g{parent}.o{seq}, ptr {outs[c.b]}")

    def node(
        self,
        node: Node,
        nid: int,
        parent: int,
        index: dict[str, int],
        sizes: list[str],
        args: list[str],
        conns: list[Connection],
        out_slots: dict[str, list[str]],
    ) -> None:
        fn, tag = node.function, f".n{nid}"
        types = [t for t, _ in abi_args(fn)]
        values = ["undef"] * len(types)
        ins, edges, binds_out = [], [], []
        for seq, c in enumerate(conns):
            if c.kind == "in" and c.dst == node.name:
                values[c.b] = args[c.a]
                ins += [f"i32 {seq}", *_i32([c.a, c.b]), _i1(c.stream)]
            elif c.kind == "edge" and c.dst == node.name:
                src = out_slots[c.src or ""][c.a]
                values[c.b] = f"%{tag}.e{c.b}"
                self.emit(f"  {values[c.b]} = load {types[c.b]}, ptr {src}")
                edges += [
                    f"i32 {seq}",
                    f"i32 {index[c.src or '']}",
                    _i1(c.repl),
                    *_i32([c.a, c.b]),
                    _i1(c.stream),
                ]
            elif c.kind == "out" and c.src == node.name:
                binds_out += [f"i32 {seq}", *_i32([c.a, c.b]), _i1(c.stream)]
        if sizes:  # the trip count, re-read after the entry: LLVM may not fold away a task
            total = sizes[0]
            for k, s in enumerate(sizes[1:]):
                self.emit(f"  %{tag}.total{k} = mul i64 {total}, {s}")
                total = f"%{tag}.total{k}"
            self.emit(f"  store i64 {total}, ptr {self.slot('i64', f'{tag}.trip')}")
        slots = [self.slot(t, f"{tag}.in{k}") for k, t in enumerate(types)]
        for t, v, s in zip(types, values, slots):
            self.emit(f"  store {t} {v}, ptr {s}")
        outs = out_slots[node.name]
        bundles = [
            _bundle(
                "HPVM_create_node",
                [f"ptr @{abi.quote(self.program.refs[id(fn)])}", *(f"i64 {s}" for s in sizes)],
            ),
            _bundle("HPVM_node", _i32([nid, parent, index[node.name]])),
            _bundle("dataflow_values", [f"{t} {v}" for t, v in zip(types, values)]),
            _bundle("attributes", _i32(_uses(fn))),
            _bundle("HPVM_in_slots", [f"ptr {s}" for s in slots]),
            _bundle("HPVM_out_slots", [f"ptr {s}" for s in outs]),
            _bundle("HPVM_trip_count", [f"ptr %{tag}.trip"] if sizes else []),
            _bundle("HPVM_bind_input", ins),
            _bundle("HPVM_edge", edges),
            _bundle("HPVM_bind_output", binds_out),
        ]
        label = f'"hpvm.node"="{node.name}"'
        self.emit(f"  %{tag} = call token @llvm.directive.region.entry() {label} [ {', '.join(bundles)} ]")
        if sizes:
            self.replicated(fn, nid, sizes, slots, outs)
        else:
            self.task(fn, nid, slots, outs)
        out_list = ", ".join(f"ptr {s}" for s in outs)
        exit_bundles = f'"HPVM_create_node"(), "dataflow_values"({out_list})'
        self.emit(f"  call void @llvm.directive.region.exit(token %{tag}) [ {exit_bundles} ]")

    def replicated(
        self, fn: NodeFunction, nid: int, sizes: list[str], slots: list[str], outs: list[str]
    ) -> None:
        """One loop over all instances, its body the task (the RFC's HPVM example)."""
        tag = f".n{nid}"
        total = f"%{tag}.count"
        self.emit(f"  {total} = load i64, ptr %{tag}.trip")
        pre = f"{tag}.pre"
        self.emit(f"  br label %{pre}")
        self.emit(f"{pre}:")
        self.emit(f"  br label %{tag}.head")
        self.emit(f"{tag}.head:")
        self.emit(f"  %{tag}.i = phi i64 [ 0, %{pre} ], [ %{tag}.next, %{tag}.latch ]")
        self.emit(f"  %{tag}.more = icmp ult i64 %{tag}.i, {total}")
        self.emit(f"  br i1 %{tag}.more, label %{tag}.detach, label %{tag}.join")
        self.emit(f"{tag}.detach:")
        task = f'"HPVM_task"(i32 {nid}), "dataflow_values"({", ".join(f"ptr {s}" for s in slots + outs)})'
        self.emit(f'  %{tag}.c = call i1 @llvm.directive.marker() [ "detach_task"(), {task} ]')
        self.emit(f"  br i1 %{tag}.c, label %{tag}.body, label %{tag}.latch")
        self.emit(f"{tag}.body:")
        allocas = self.task(fn, nid, slots, outs)
        listed = ", ".join(f"ptr {a}" for a in allocas)
        self.emit(
            f'  %{tag}.r = call i1 @llvm.directive.marker() [ "reattach_task"(), "HPVM_task"(i32 {nid}), '
            f'"dataflow_values"({listed}) ]'
        )
        self.emit(f"  br label %{tag}.latch")
        self.emit(f"{tag}.latch:")
        self.emit(f"  %{tag}.next = add nuw i64 %{tag}.i, 1")
        self.emit(f"  br label %{tag}.head")
        self.emit(f"{tag}.join:")
        self.emit(
            f'  %{tag}.b = call i1 @llvm.directive.marker() [ "local_barrier"(), "HPVM_task"(i32 {nid}) ]'
        )

    def task(self, fn: NodeFunction, nid: int, slots: list[str], outs: list[str]) -> list[str]:
        """One instance: the node function inlined, its inputs re-read from their slots.
        Returns the allocas it made (the reattach marker lists them)."""
        tag = f".n{nid}"
        types = [t for t, _ in abi_args(fn)]
        loaded = [f"%{tag}.a{k}" for k in range(len(types))]
        if isinstance(fn, InternalFunction):
            for t, v, s in zip(types, loaded, slots):
                self.emit(f"  {v} = load {t}, ptr {s}")
            self.graph(fn, loaded, outs, nid)
            return []
        assert isinstance(fn, LeafFunction)
        self.emit(f"  %{tag}.sp = call ptr @llvm.stacksave.p0()")
        for t, v, s in zip(types, loaded, slots):
            self.emit(f"  {v} = load {t}, ptr {s}")
        decls, lines, out = self.program.leaf_call(fn, list(zip(types, loaded)), tag, " noinline")
        self.decls += decls
        self.body += lines
        ret = "{ " + ", ".join(fields(fn.out_types)) + " }"
        for k, (t, slot) in enumerate(zip(fields(fn.out_types), outs)):
            self.emit(f"  %{tag}.f{k} = extractvalue {ret} {out}, {k}")
            self.emit(f"  store {t} %{tag}.f{k}, ptr {slot}")
        self.emit(f"  call void @llvm.stackrestore.p0(ptr %{tag}.sp)")
        return [line.split(" = ")[0].strip() for line in lines if " = alloca " in line]


def _uses(fn: NodeFunction) -> list[int]:
    """The RFC's "attributes" of a node's values: in, out, inout, or not a pointer."""
    out = []
    for p in fn.params:
        if isinstance(p.type, ArrayType):
            use = {(True, False): IN, (False, True): OUT, (True, True): INOUT}.get(
                (p.name in fn.ins, p.name in fn.outs), INOUT
            )
            out += [use] + [NOT_POINTER] * (abi.arity(p.type) - 1)
        else:
            out += [NOT_POINTER] * abi.arity(p.type)
    return out


__all__ = ["DIRECTIVES", "prepare", "topological"]
