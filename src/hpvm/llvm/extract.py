"""EXTRACT (seed 004): LLVM IR with PREPARE's directive regions (``prepare.py``), optimized
or not, back to a dataflow graph.

The regions are written back as HPVM IR in LLVM form — one internal node function per
internal region (its ``createNode*`` calls with the sizes' arithmetic copied out of the
optimized code, its edges and binds from the bundles), one leaf node function per leaf
region (its task's instructions copied, the re-reads of its input slots replaced by its
arguments, the stores to its output slots by its returned struct) — and that text is
imported by ``from_hpvm_ir``, which builds and verifies the graph as for any HPVM IR. So
every leaf's body is an ``LLVMBody`` of the extracted module, and every check the importer
makes holds for extracted programs too.

A parallel loop another front end marked with ``detach_task`` / ``reattach_task`` /
``local_barrier`` alone (the RFC's Tapir example) is read by ``tapir.py``; anything else is
an ``LLVMImportError`` (``LLVMExtractError``) naming the function and the instruction.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import InternalFunction
from . import abi
from .directives import ENTRY, EXIT, MARKER, bundles, callee, constant
from .errors import LLVMExtractError
from .export import Connection, create_node
from .importer import define_line, from_hpvm_ir, is_size_arithmetic, parse_verified, return_type

_NAME = re.compile(r'%("(?:[^"\\]|\\.)*"|[-\w.$]+)')
_ARG = '"hpvm.arg"'
_GRAPH = (
    "createNode",
    "createNode1D",
    "createNode2D",
    "createNode3D",
    "createEdge",
    "bind.input",
    "bind.output",
)


def extract(text: str) -> InternalFunction:
    """The dataflow graph of LLVM IR ``text`` with directive regions (PREPARE's, or a
    parallel loop of another front end); ``LLVMImportError`` if it does not parse or
    verify, or its directives do not map onto a graph."""
    module = parse_verified(text, "extract(): ")
    fn = _region_function(module)
    if fn is None:  # another front end's parallel loop, or nothing EXTRACT reads
        from .tapir import extract_loops

        return extract_loops(module)
    return from_hpvm_ir(write_hpvm_ir(module, fn), file="<extract>")


def _region_function(module: Any) -> Any:
    """The one function with directive regions, or ``None`` if none has any."""
    found = [
        f
        for f in module.functions
        if not f.is_declaration and any(callee(i) == ENTRY for b in f.blocks for i in b.instructions)
    ]
    if len(found) > 1:
        names = ", ".join(f"@{f.name}" for f in found)
        raise LLVMExtractError(
            f"extract(): several functions hold directive regions ({names}); extract one program at a time"
        )
    return found[0] if found else None


def name_values(fn: Any) -> None:
    """Names every unnamed argument, block and value of ``fn`` (``.v3``, ``.b2``), so that
    instructions can be copied by their text."""
    k = 0
    for a in fn.arguments:
        if not a.name:
            a.name, k = f".v{k}", k + 1
    for b in fn.blocks:
        if not b.name:
            b.name, k = f".b{k}", k + 1
        for ins in b.instructions:
            if not ins.name and str(ins.type) != "void":
                ins.name, k = f".v{k}", k + 1


@dataclass
class Region:
    """One node's region: what its entry call's bundles say."""

    entry: Any
    name: str
    function: str
    sizes: list[Any]
    nid: int
    parent: int
    index: int
    in_slots: list[str]
    out_slots: list[str]
    connections: list[tuple[int, Connection, int]] = field(default_factory=list)  # (seq, call, source index)


def _ints(fn: Any, ins: Any, values: list[Any], what: str) -> list[int]:
    out = []
    for v in values:
        c = constant(v)
        if c is None:
            raise LLVMExtractError(
                f"@{fn.name}: '{str(ins).strip()}': the {what} bundle holds constants only, not {v}"
            )
        out.append(c)
    return out


def _region(fn: Any, ins: Any) -> Region:
    b = bundles(ins)
    where = f"@{fn.name}: '{str(ins).strip()[:200]}'"
    node = _ints(fn, ins, b.get("HPVM_node"), "HPVM_node")
    create = b.get("HPVM_create_node")
    if len(node) != 3 or not create or create[0].value_kind.name != "function":
        raise LLVMExtractError(
            f'{where}: a region EXTRACT reads has bundles "HPVM_create_node"(ptr @function, sizes...) and '
            '"HPVM_node"(id, parent, index), as PREPARE writes them (docs/llvm.md); other regions are not '
            "a dataflow graph"
        )
    label = _call_attribute(ins, "hpvm.node") or f"n{node[0]}"
    region = Region(
        ins, label, create[0].name, create[1:], *node,
        in_slots=[v.name for v in b.get("HPVM_in_slots")], out_slots=[v.name for v in b.get("HPVM_out_slots")],
    )  # fmt: skip
    for tag, width in (("HPVM_bind_input", 4), ("HPVM_edge", 6), ("HPVM_bind_output", 4)):
        values = _ints(fn, ins, b.get(tag), tag)
        if len(values) % width:
            raise LLVMExtractError(f"{where}: the {tag} bundle holds groups of {width} constants")
        for k in range(0, len(values), width):
            g = values[k : k + width]
            if tag == "HPVM_bind_input":
                region.connections.append((g[0], Connection("in", None, label, g[1], g[2], bool(g[3])), -1))
            elif tag == "HPVM_edge":
                call = Connection("edge", None, label, g[3], g[4], bool(g[5]), bool(g[2]))
                region.connections.append((g[0], call, g[1]))
            else:
                region.connections.append((g[0], Connection("out", label, None, g[1], g[2], bool(g[3])), -1))
    return region


def _call_attribute(ins: Any, key: str) -> str | None:
    for item in ins.attributes:
        raw = item.decode() if isinstance(item, bytes) else str(item)
        m = re.fullmatch(rf'"{re.escape(key)}"="((?:[^"\\]|\\.)*)"', raw)
        if m:
            return m.group(1)
    return None


class Copier:
    """Copies instructions of the optimized function into a node function: ``scope`` maps
    the names of the values that stand for the node's arguments (its input slots, or the
    root's own arguments) to the arguments; ``inside`` (if given) are the names of the
    instructions that may be copied (a task's)."""

    def __init__(
        self,
        fn: Any,
        named: dict[str, Any],
        scope: dict[str, str],
        prefix: str,
        inside: set[str] | None,
        what: str,
    ):
        self.fn = fn
        self.named = named
        self.scope = scope
        self.prefix = prefix
        self.inside = inside
        self.what = what
        self.lines: list[str] = []
        self.done: dict[str, str] = {}

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why} ({self.what})")

    def value(self, v: Any, user: Any) -> str:
        kind = v.value_kind.name
        if kind == "argument":
            if v.name in self.scope:
                return self.scope[v.name]
            raise self.fail(user, f"uses argument %{v.name}, which is none of this node's inputs")
        if kind in ("function", "global_variable"):
            return "@" + abi.quote(v.name)
        if kind != "instruction":
            text = str(v).strip()
            return text.split(" ", 1)[1] if " " in text else text
        if v.name in self.done:
            return self.done[v.name]
        v = self.named[v.name]  # the instruction itself (an operand's value cannot say its opcode)
        if v.opcode == "load" and list(v.operands)[0].name in self.scope:
            return self.scope[list(v.operands)[0].name]
        if self.inside is None and not is_size_arithmetic(v):
            raise self.fail(
                v,
                "a replication size LLVM computes with an instruction hpvm's size expressions have no "
                "form for (they are add, sub, mul, division, remainder, min, max of the ports); "
                "extract before optimizing, or at -O0",
            )
        if self.inside is not None and v.name not in self.inside:
            raise self.fail(
                user,
                f"uses %{v.name}, computed outside its region (seed 004's property C1: values a region "
                "defines stay in it, and it uses only those and its inputs)",
            )
        return self.copy(v)

    def copy(self, ins: Any) -> str:
        if ins.opcode in ("phi", "br", "switch", "ret", "invoke", "callbr", "indirectbr"):
            raise self.fail(ins, f"a {ins.opcode} in a node's straight-line code; a task is one basic block")
        operands = list(ins.operands)
        if ins.opcode == "call":
            operands = operands[:-1]
        renamed = {}
        for op in operands:
            if op.value_kind.name in ("argument", "instruction"):
                renamed[op.name] = self.value(op, ins)
        text = str(ins).strip()
        own = None
        if ins.name:
            # (".fold": an inner smin/smax of a min of several, which the import reads as one)
            own = f"%{self.prefix}{len(self.done)}" + (".fold" if ins.name.endswith(".fold") else "")
            self.done[ins.name] = own
            text = text.split(" = ", 1)[1]

        def swap(m: re.Match[str]) -> str:
            name = m.group(1).strip('"')
            if name not in renamed:
                raise self.fail(ins, f"refers to %{name}, which EXTRACT cannot follow")
            return renamed[name]

        text = _NAME.sub(swap, text)
        self.lines.append(f"  {own} = {text}" if own else f"  {text}")
        return own or ""


class _Writer:
    """The HPVM IR in LLVM form of one function with PREPARE's regions."""

    def __init__(self, module: Any, fn: Any):
        self.module = module
        self.fn = fn
        self.regions: dict[int, Region] = {}
        self.exits: dict[str, Any] = {}
        self.tasks: dict[tuple[str, int], Any] = {}
        self.blocks = {b.name: b for b in fn.blocks}
        self.block_of: dict[str, Any] = {}
        self.named: dict[str, Any] = {}
        for b in fn.blocks:
            for ins in b.instructions:
                self.block_of[ins.name or str(ins)] = b
                if ins.name:
                    self.named[ins.name] = ins
                which = callee(ins)
                if which == ENTRY:
                    r = _region(fn, ins)
                    if r.nid in self.regions:
                        raise LLVMExtractError(
                            f"@{fn.name}: '{str(ins).strip()[:200]}': a second region of node {r.nid} (LLVM "
                            "duplicated a region: the directive intrinsics must be noduplicate)"
                        )
                    self.regions[r.nid] = r
                elif which == EXIT:
                    self.exits[list(ins.operands)[0].name] = ins
                elif which == MARKER:
                    b_ = bundles(ins)
                    task = b_.get("HPVM_task")
                    kinds = [t for t in ("detach_task", "reattach_task", "local_barrier") if t in b_.tags]
                    if task and kinds and constant(task[0]) is not None:
                        key = (kinds[0], constant(task[0]) or 0)
                        if key in self.tasks:
                            raise LLVMExtractError(
                                f"@{fn.name}: '{str(ins).strip()}': a second {kinds[0]} marker of node {key[1]} "
                                "(the markers must be noduplicate)"
                            )
                        self.tasks[key] = ins
        self.definitions: dict[str, list[str]] = {}

    def children(self, parent: int) -> list[Region]:
        return sorted((r for r in self.regions.values() if r.parent == parent), key=lambda r: r.index)

    def text(self) -> str:
        fn = self.fn
        scope = {a.name: "%" + abi.quote(a.name) for a in fn.arguments}
        root = self.internal(define_line(fn).rstrip().removesuffix("{").rstrip(), return_type(fn), scope, -1)
        node_functions = {r.function for r in self.regions.values()}
        kept = []
        for line in without_function(self.module, fn.name):
            m = re.match(r'declare\b[^@]*@("(?:[^"\\]|\\.)*"|[-\w.$]+)\(', line)
            if not (m and m.group(1).strip('"') in node_functions):
                kept.append(line)
        declared = {f.name for f in self.module.functions}
        decls = [abi.DECLARATIONS[k] for k in _GRAPH if f"llvm.hpvm.{k}" not in declared]
        bodies = [line for lines in self.definitions.values() for line in [""] + lines]
        return "\n".join([*kept, *decls, "", *root, *bodies]) + "\n"

    def internal(self, head: str, ret: str, scope: dict[str, str], nid: int) -> list[str]:
        where = f"the sizes of the nodes node {nid} creates" if nid >= 0 else "the sizes of the root's nodes"
        copier = Copier(self.fn, self.named, scope, f".s{nid + 1}.", None, where)
        lines = [f"{head} {{", "entry:"]
        kids = self.children(nid)
        calls: list[tuple[int, Connection]] = []
        for r in kids:
            sizes = [copier.value(v, r.entry) for v in r.sizes]
            lines += copier.lines
            copier.lines = []
            lines.append(create_node(r.name, len(sizes), r.function, sizes))
            self.node_function(r)
            for seq, call, src in r.connections:
                if call.kind == "edge":
                    source = next((k for k in kids if k.index == src), None)
                    if source is None:
                        raise LLVMExtractError(
                            f"@{self.fn.name}: '{str(r.entry).strip()[:200]}': an edge from node {src}, which "
                            "its parent does not create"
                        )
                    call = Connection("edge", source.name, r.name, call.a, call.b, call.stream, call.repl)
                calls.append((seq, call))
        lines += [c.line() for _, c in sorted(calls, key=lambda x: x[0])]
        return [*lines, f"  ret {ret} undef", "}"]

    def node_function(self, r: Region) -> None:
        if r.function in self.definitions:
            return
        decl = self.module.get_function(r.function)
        names, params = [], []
        for k, a in enumerate(decl.arguments):
            attrs = [x.decode() if isinstance(x, bytes) else str(x) for x in a.attributes]
            name = next(
                (m.group(1) for x in attrs for m in [re.fullmatch(r'"hpvm\.arg"="(.*)"', x)] if m), f"arg{k}"
            )
            names.append("%" + abi.quote(name))
            kept = " ".join(x for x in attrs if not x.startswith(_ARG))
            params.append(f"{a.type} {kept} {names[-1]}")
        attrs = [x.decode() if isinstance(x, bytes) else str(x) for x in decl.attributes]
        ret = return_type(decl)
        head = f"define {ret} @{abi.quote(r.function)}({', '.join(params)}) {' '.join(attrs)}"
        self.definitions[r.function] = []  # (a function creating itself is the importer's to refuse)
        if len(r.in_slots) != len(names):
            raise LLVMExtractError(
                f"@{self.fn.name}: '{str(r.entry).strip()[:200]}': {len(r.in_slots)} input slots for "
                f"@{r.function}, which takes {len(names)} arguments"
            )
        scope = dict(zip(r.in_slots, names))
        if '"hpvm.kind"="internal"' in attrs or any(x.parent == r.nid for x in self.regions.values()):
            self.definitions[r.function] = self.internal(head, ret, scope, r.nid)
        else:
            self.definitions[r.function] = self.leaf(r, head, ret, scope)

    def leaf(self, r: Region, head: str, ret: str, scope: dict[str, str]) -> list[str]:
        task = self.task(r)
        copier = Copier(
            self.fn, self.named, scope, ".t", {i.name for i in task if i.name}, f"the task of node {r.name}"
        )
        fields = [f.strip() for f in ret.strip()[1:-1].split(",")] if ret.strip() not in ("{}", "{ }") else []
        outputs = ["undef"] * len(fields)
        for ins in task:
            which = callee(ins) or ""
            if which.startswith(("llvm.stacksave", "llvm.stackrestore")):
                continue
            ops = list(ins.operands)
            if ins.opcode == "store" and ops[1].name in r.out_slots:
                outputs[r.out_slots.index(ops[1].name)] = copier.value(ops[0], ins)
            elif ins.opcode == "load" and ops[0].name in scope:
                continue
            elif ins.name not in copier.done:
                copier.copy(ins)
        value = "undef"
        for k, (t, v) in enumerate(zip(fields, outputs)):
            copier.lines.append(f"  %.out{k} = insertvalue {ret} {value}, {t} {v}, {k}")
            value = f"%.out{k}"
        return [
            f"{head} {{",
            "entry:",
            *(self.inlinable(line) for line in copier.lines),
            f"  ret {ret} {value if fields else 'zeroinitializer'}",
            "}",
        ]

    def inlinable(self, line: str) -> str:
        """``line`` without PREPARE's ``noinline`` on the call of a leaf's body: it kept the
        body whole through LLVM's optimizer; the leaf written back should let a back end
        inline its body into the loop over instances (the cpu back end vectorizes there)."""
        m = re.search(r" #(\d+)$", line)
        if m is None or " call " not in line or m.group(1) not in self.noinline_groups:
            return line
        return line[: m.start()]

    @functools.cached_property
    def noinline_groups(self) -> set[str]:
        """The attribute groups that make a call ``noinline`` (PREPARE's mark)."""
        return set(re.findall(r"^attributes #(\d+) = \{ noinline \}$", str(self.module), re.M))

    def task(self, r: Region) -> list[Any]:
        """The instructions of one instance of ``r``'s node: between the entry and the exit,
        or, replicated, between the task's ``detach_task`` marker and ``reattach_task``."""
        where = f"@{self.fn.name}: '{str(r.entry).strip()[:200]}'"
        if r.sizes:
            detach = self.tasks.get(("detach_task", r.nid))
            reattach = self.tasks.get(("reattach_task", r.nid))
            if detach is None or reattach is None:
                raise LLVMExtractError(
                    f"{where}: a replicated node's loop has no detach_task/reattach_task markers"
                )
            term = list(self.block_of[detach.name].instructions)[-1]
            m = re.match(r"br i1 %\S+, label %(\"[^\"]*\"|\S+), label", str(term).strip())
            if m is None:
                raise LLVMExtractError(
                    f"@{self.fn.name}: '{str(term).strip()}': the detach_task marker must feed a conditional branch "
                    "to the task (seed 004's B4)"
                )
            start, end = self.blocks[m.group(1).strip('"')], reattach
            first = None
        else:
            exit_ = self.exits.get(r.entry.name)
            if exit_ is None:
                raise LLVMExtractError(f"{where}: the region has no llvm.directive.region.exit")
            start, end, first = self.block_of[r.entry.name], exit_, r.entry
        out, started = [], first is None
        for ins in start.instructions:
            if started and (ins.name or str(ins)) == (end.name or str(end)):
                return out
            if started:
                out.append(ins)
            elif ins.name == first.name:
                started = True
        raise LLVMExtractError(
            f"{where}: the task of node {r.name} is not one basic block (its code branches, or LLVM split it); "
            "EXTRACT reads straight-line tasks"
        )


def write_hpvm_ir(module: Any, fn: Any) -> str:
    """HPVM IR in LLVM form for the regions of ``fn`` in ``module``."""
    name_values(fn)
    return _Writer(module, fn).text()


def without_function(module: Any, name: str) -> list[str]:
    """The lines of ``module``'s text without the definition of function ``name`` (which
    EXTRACT writes again as HPVM IR)."""
    kept, skip = [], False
    for line in str(module).splitlines():
        if line.startswith("define") and f"@{abi.quote(name)}(" in line:
            skip = True
        if skip:
            skip = line != "}"
            continue
        kept.append(line)
    return kept


__all__ = ["Copier", "extract", "name_values", "write_hpvm_ir"]
