"""PREPARE (seed 004): a program as one ordinary LLVM function whose node functions are
inlined into regions marked by ``llvm.directive.region.entry`` / ``exit`` calls, for LLVM's
own pipeline to optimize in context, and for EXTRACT (``extract.py``) to outline back.

The form is the RFC's HPVM example (docs/llvm.md, "PREPARE and EXTRACT"), node by node in
each graph's topological order, inside its parent's region:

- the entry carries exactly the RFC's bundles: ``"HPVM_create_node"(sizes...)``,
  ``"dataflow_values"(...)`` and ``"attributes"(...)`` (0 in, 1 out, 2 inout, -1 not a
  pointer); the exit ``"HPVM_create_node"(), "dataflow_values"()``;
- a replicated node is the RFC's loop over its instances (x fastest, one loop): the
  header's ``detach_task`` marker feeds the branch into the task, which ends in
  ``reattach_task``; the latch counts to the trip count (a guard skips an empty loop). The
  directive intrinsics are ``noduplicate``, so LLVM neither unrolls nor unswitches it;
- a leaf's task is its node function *inlined* (Numba's adapter, or an LLVM body kept as
  it is, run through LLVM's always-inliner), its ``getNodeInstanceID`` /
  ``getNumNodeInstances`` / ``getNumDims`` queries of its own node replaced by the loop's
  index and sizes ("Loop index, instead of HPVM intrinsic calls to generate index");
  queries of a parent node stay calls. A Numba body's error status is tested in the task:
  when it raised, the task calls ``__hpvm_leaf_error`` and skips its outputs;
- PREPARE's measures for properties C1/C2 (the RFC: "pointers to local allocations ...
  need to be passed to relevant intrinsics"): every input of a node is stored into a slot
  (an ``alloca``) before its entry and re-read inside its task, every output and size goes
  to a slot too, and the slots follow the node's own values in ``dataflow_values`` (with
  their uses in ``attributes``), so the opaque entry may write them: LLVM can neither hoist
  a re-read above the entry nor give one region a value another computed;
- what LLVM values cannot say rides in string attributes of the entry call (LLVM keeps
  them): ``"hpvm.node"`` (the node's name), ``"hpvm.function"`` (its node function,
  declared with the export's attributes and kept by ``@llvm.used``), ``"hpvm.id"`` (id,
  parent id, index in its graph) and ``"hpvm.connections"`` (edges and binds in the
  export's LLVM indices, with their order).
"""

from __future__ import annotations

import re
from itertools import count

from ..ir.graph import InternalFunction, LeafFunction, Node, NodeFunction
from ..ir.llvm_text import global_name, mark_always_inline
from ..ir.llvmcontext import own_context
from ..ir.types import ArrayType
from . import abi, seedrule
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
)
#: The RFC's "attributes" bundle: how a node uses each value it is given.
IN, OUT, INOUT, NOT_POINTER = 0, 1, 2, -1
AXES = "xyz"


def prepare(root: InternalFunction, inline: bool = True) -> str:
    """The program rooted at ``root`` as LLVM IR with directive regions (seed 004's
    PREPARE); it parses and verifies. ``LLVMExportError`` for a leaf the export cannot
    write. ``inline=False`` leaves each task a call of its leaf's body (its queries calls
    inside it): the form before this issue, kept for ``benchmarks/llvmpar_inline.py`` to
    measure what inlining buys; EXTRACT reads both."""
    state: dict[str, _Preparer] = {}

    def write(program: Program) -> list[str]:
        state["p"] = _Preparer(program)
        return state["p"].lines()

    if not inline:
        return assemble(root, write)
    return assemble(root, write, lambda program, text: state["p"].inline(text))


def _bundle(tag: str, operands: list[str]) -> str:
    return f'"{tag}"({", ".join(operands)})'


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


def connection_text(c: Connection, seq: int, src_index: int) -> str:
    """One connection as ``"hpvm.connections"`` writes it (``extract.py`` reads it back)."""
    flags = f"{int(c.stream)}"
    if c.kind == "edge":
        return f"edge {seq} {src_index} {int(c.repl)} {c.a} {c.b} {flags}"
    return f"{c.kind} {seq} {c.a} {c.b} {flags}"


class _Preparer:
    def __init__(self, program: Program):
        self.program = program
        self.allocas: list[str] = []
        self.body: list[str] = []
        self.decls: list[str] = []
        self.ids = count()
        self.leaf_tasks: dict[int, int] = {}  # node id → its number of dimensions
        self.node_functions: list[str] = []

    def lines(self) -> list[str]:
        program, root = self.program, self.program.root
        refs = program.refs
        decls = [*DIRECTIVES, *(declaration(fn, refs) for fn in program.functions if fn is not root)]
        self.node_functions = [refs[id(fn)] for fn in program.functions if fn is not root]
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
        used = []
        if self.node_functions:
            listed = ", ".join(f"ptr @{abi.quote(n)}" for n in self.node_functions)
            used = [
                f"@llvm.used = appending global [{len(self.node_functions)} x ptr] [{listed}], "
                'section "llvm.metadata"'
            ]
        header = definition(root, refs)
        body = [f"  ret {ret} {value}", "}"]
        return [*used, *decls, *self.decls, header, "entry:", *self.allocas, *self.body, *body]

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
        written = []
        for seq, c in enumerate(conns):
            if c.kind == "in" and c.dst == node.name:
                values[c.b] = args[c.a]
                written.append(connection_text(c, seq, -1))
            elif c.kind == "edge" and c.dst == node.name:
                src = out_slots[c.src or ""][c.a]
                values[c.b] = f"%{tag}.e{c.b}"
                self.emit(f"  {values[c.b]} = load {types[c.b]}, ptr {src}")
                written.append(connection_text(c, seq, index[c.src or ""]))
            elif c.kind == "out" and c.src == node.name:
                written.append(connection_text(c, seq, -1))
        size_slots = [self.slot("i64", f"{tag}.size{k}") for k in range(len(sizes))]
        for s, slot in zip(sizes, size_slots):
            self.emit(f"  store i64 {s}, ptr {slot}")
        slots = [self.slot(t, f"{tag}.in{k}") for k, t in enumerate(types)]
        for t, v, s in zip(types, values, slots):
            self.emit(f"  store {t} {v}, ptr {s}")
        outs = out_slots[node.name]
        listed = [f"{t} {v}" for t, v in zip(types, values)] + [f"ptr {s}" for s in slots + outs + size_slots]
        uses = _uses(fn) + [IN] * len(slots) + [OUT] * len(outs) + [IN] * len(size_slots)
        bundles = [
            _bundle("HPVM_create_node", [f"i64 {s}" for s in sizes]),
            _bundle("dataflow_values", listed),
            _bundle("attributes", [f"i32 {u}" for u in uses]),
        ]
        attrs = " ".join(
            f'"{k}"="{v}"'
            for k, v in (
                ("hpvm.node", node.name),
                ("hpvm.function", self.program.refs[id(fn)]),
                ("hpvm.id", f"{nid} {parent} {index[node.name]}"),
                ("hpvm.connections", "; ".join(written)),
            )
        )
        self.emit(f"  %{tag} = call token @llvm.directive.region.entry() {attrs} [ {', '.join(bundles)} ]")
        end = f"{tag}.end"
        if sizes:
            self.replicated(fn, nid, size_slots, slots, outs)
        else:
            self.task(fn, nid, [], slots, outs, end)
            self.emit(f"  br label %{end}")
            self.emit(f"{end}:")
        self.emit(
            f'  call void @llvm.directive.region.exit(token %{tag}) [ "HPVM_create_node"(), "dataflow_values"() ]'
        )

    def replicated(
        self, fn: NodeFunction, nid: int, size_slots: list[str], slots: list[str], outs: list[str]
    ) -> None:
        """The RFC's loop over all instances: header (index, ``detach_task``), task, latch."""
        tag = f".n{nid}"
        total = ""
        for k, slot in enumerate(size_slots):  # the trip count, re-read after the entry
            self.emit(f"  %{tag}.n{k} = load i64, ptr {slot}")
            if total:
                self.emit(f"  %{tag}.count{k} = mul i64 {total}, %{tag}.n{k}")
                total = f"%{tag}.count{k}"
            else:
                total = f"%{tag}.n{k}"
        self.emit(f"  br label %{tag}.preheader")
        self.emit(f"{tag}.preheader:")
        self.emit(f"  %{tag}.none = icmp eq i64 {total}, 0")
        self.emit(f"  br i1 %{tag}.none, label %{tag}.end, label %{tag}.header")
        self.emit(f"{tag}.header:")
        self.emit(f"  %{tag}.i = phi i64 [ 0, %{tag}.preheader ], [ %{tag}.i.next, %{tag}.latch ]")
        self.emit(f'  %{tag}.c = call i1 @llvm.directive.marker() [ "detach_task"() ]')
        self.emit(f"  br i1 %{tag}.c, label %{tag}.body, label %{tag}.latch")
        self.emit(f"{tag}.body:")
        self.task(fn, nid, size_slots, slots, outs, f"{tag}.reattach")
        self.emit(f"  br label %{tag}.reattach")
        self.emit(f"{tag}.reattach:")
        self.emit(f'  %{tag}.r = call i1 @llvm.directive.marker() [ "reattach_task"() ]')
        self.emit(f"  br label %{tag}.latch")
        self.emit(f"{tag}.latch:")
        self.emit(f"  %{tag}.i.next = add nuw nsw i64 %{tag}.i, 1")
        self.emit(f"  %{tag}.exitcond = icmp eq i64 %{tag}.i.next, {total}")
        self.emit(f"  br i1 %{tag}.exitcond, label %{tag}.end, label %{tag}.header")
        self.emit(f"{tag}.end:")

    def task(
        self, fn: NodeFunction, nid: int, size_slots: list[str], slots: list[str], outs: list[str], done: str
    ) -> None:
        """One instance: the node function inlined, its inputs re-read from their slots."""
        tag = f".n{nid}"
        types = [t for t, _ in abi_args(fn)]
        if isinstance(fn, LeafFunction):
            self.instance_ids(nid, size_slots)
        loaded = [f"%{tag}.a{k}" for k in range(len(types))]
        for t, v, s in zip(types, loaded, slots):
            self.emit(f"  {v} = load {t}, ptr {s}")
        if isinstance(fn, InternalFunction):
            self.graph(fn, loaded, outs, nid)
            return
        assert isinstance(fn, LeafFunction)
        decls, lines, out = self.program.leaf_call(fn, list(zip(types, loaded)), tag, check=True, escape=done)
        self.decls += [d for d in decls if d not in self.decls]
        for line in lines:  # the task's own allocas go where the inliner puts the body's
            (self.allocas if " = alloca " in line else self.body).append(line)
        ret = "{ " + ", ".join(fields(fn.out_types)) + " }"
        for k, (t, slot) in enumerate(zip(fields(fn.out_types), outs)):
            self.emit(f"  %{tag}.f{k} = extractvalue {ret} {out}, {k}")
            self.emit(f"  store {t} %{tag}.f{k}, ptr {slot}")

    def instance_ids(self, nid: int, size_slots: list[str]) -> None:
        """``%.nK.x``/``y``/``z`` (the instance's index on each axis, from the loop's index)
        and ``%.nK.nx``/``ny``/``nz`` (the sizes, re-read in the task): what the queries of
        the inlined body become (``_substitute``)."""
        tag = f".n{nid}"
        self.leaf_tasks[nid] = len(size_slots)
        sizes = []
        for k, axis in enumerate(AXES):
            if k < len(size_slots):
                self.emit(f"  %{tag}.n{axis} = load i64, ptr {size_slots[k]}")
                sizes.append(f"%{tag}.n{axis}")
            else:
                self.emit(f"  %{tag}.n{axis} = add i64 1, 0")
        # x = i % nx, y = i / nx % ny, z = i / nx / ny: the last one the quotient itself, so
        # that each id keeps its name through LLVM's optimizer (EXTRACT replaces them by the
        # instance's ids again: a back end then sees which id each access moves with)
        dims, rest = len(size_slots), f"%{tag}.i"
        for k, axis in enumerate(AXES):
            if k >= dims:
                self.emit(f"  %{tag}.{axis} = add i64 0, 0")
            elif k == dims - 1:
                if k == 0:
                    self.emit(f"  %{tag}.{axis} = add i64 {rest}, 0")
            else:
                self.emit(f"  %{tag}.{axis} = urem i64 {rest}, {sizes[k]}")
                quotient = f"%{tag}.{AXES[k + 1]}" if k + 2 == dims else f"%{tag}.q{axis}"
                self.emit(f"  {quotient} = udiv i64 {rest}, {sizes[k]}")
                rest = quotient

    # -- after writing: the bodies inlined, their queries substituted --------------------
    def inline(self, text: str) -> str:
        """``text`` with every leaf body (and whatever reaches an HPVM intrinsic) inlined into
        the root by LLVM's always-inliner, then the queries substituted. In contexts of their
        own (``ir/llvmcontext.py``): the text's type names do not depend on the process."""
        program = self.program
        root = program.refs[id(program.root)]
        graph = seedrule.CallGraph(text, printed=True)
        bodies = {leaf.adapter for leaf in program.compiled.values()} | set(program.kept.values())
        names = (bodies | graph.reaching()) - {root}
        seedrule.refuse_recursion(graph, names, {})
        marked, like = mark_always_inline(text, {global_name(n) for n in names}, like=global_name(root))
        if like is not None:
            marked = re.sub(
                rf"^(define [^\n]*@{re.escape(global_name(root))}\([^\n]*\)) #\d+ \{{",
                rf"\1 #{like} {{",
                marked,
                count=1,
                flags=re.M,
            )
        with own_context() as parse:
            module = parse(marked)
            seedrule.run_passes(module, ("always_inliner",))
            for fn in module.functions:
                if fn.name in names and not fn.is_declaration:
                    fn.linkage = "internal"
            seedrule.run_passes(module, ("global_dead_code_eliminate",))
            out = _substitute(str(module), self.leaf_tasks)
        with own_context() as parse:  # (a second context: in the first, the types' names are taken)
            checked = parse(out)
            checked.verify()
            return str(checked)


_VALUE = rf"%{abi.NAME}"
_QUERY = re.compile(
    rf"^  ({_VALUE}) = (?:tail |musttail |notail )?call (i64|i32) "
    rf"@llvm\.hpvm\.(getNodeInstanceID|getNumNodeInstances|getNumDims)(?:\.([xyz]))?\(ptr ({_VALUE})\)"
)
_GET_NODE = re.compile(rf"^  ({_VALUE}) = (?:tail |notail )?call ptr @llvm\.hpvm\.getNode\(\)")
_TASK_START = re.compile(r"^  %\.n(\d+)\.nx = ")
_TASK_END = re.compile(r'^  (?:%\.n(\d+)\.r = call i1 @llvm\.directive\.marker\(\) \[ "reattach_task"|call void '
                       r"@llvm\.directive\.region\.exit\(token %\.n(\d+)\))")  # fmt: skip


def _substitute(text: str, tasks: dict[int, int]) -> str:
    """The queries of each leaf task's own node (``getNode()``'s) replaced by its loop's
    index and sizes, and ``getNode()`` calls left unused dropped. Read in the text as the
    always-inliner left it: an inlined body lies between its task's first line and its
    end marker."""
    lines = text.split("\n")
    current: int | None = None
    nodes: set[str] = set()
    node_lines: dict[str, int] = {}
    for k, line in enumerate(lines):
        if m := _TASK_START.match(line):
            current, nodes = int(m.group(1)), set()
            continue
        if current is None:
            continue
        if _TASK_END.match(line):
            current = None
            continue
        if m := _GET_NODE.match(line):
            nodes.add(m.group(1))
            node_lines[m.group(1)] = k
        elif (m := _QUERY.match(line)) and m.group(5) in nodes:
            name, t, query, axis = m.group(1), m.group(2), m.group(3), m.group(4)
            tag = f"%.n{current}"
            if query == "getNumDims":
                lines[k] = f"  {name} = add {t} {tasks[current]}, 0"
            elif query == "getNodeInstanceID":
                lines[k] = f"  {name} = add i64 {tag}.{axis}, 0"
            else:
                lines[k] = f"  {name} = add i64 {tag}.n{axis}, 0"
    out = "\n".join(lines)
    unused = {
        k for name, k in node_lines.items() if len(re.findall(re.escape(name) + r"(?![-\w.$])", out)) == 1
    }
    return "\n".join(line for k, line in enumerate(lines) if k not in unused)


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


__all__ = ["AXES", "DIRECTIVES", "connection_text", "prepare", "topological"]
