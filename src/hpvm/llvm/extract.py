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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import InternalFunction
from ..ir.llvmcontext import own_context
from . import abi
from .directives import ENTRY, EXIT, MARKER, bundles
from .errors import LLVMExtractError
from .export import Connection, create_node
from .importer import define_line, from_hpvm_ir, is_size_arithmetic, parse_verified, return_type
from .outline import FunctionIndex, Outline

_NAME = re.compile(rf"%({abi.NAME})")
_CALLS_ENTRY = re.compile(rf"\bcall token @{re.escape(ENTRY)}\(")
_UNNAMED_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|%(\d+)\b(?![-\w.$])|^(\d+):', re.M)
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
    from .foreign import extract_foreign, foreign_regions
    from .tapir import extract_loops

    with own_context() as parse:  # (the written text's type names do not depend on the process)
        module = parse_verified(parse, text, "extract(): ")
        if ('"DIR.OSS"' in text or '"DIR.OMP.' in text) and foreign_regions(module):  # OmpSs-2's or Intel's
            return extract_foreign(module)
        fn = _region_function(module)
        if fn is None:  # another front end's parallel loop, or nothing EXTRACT reads
            return extract_loops(module)
        written = write_hpvm_ir(parse, module, fn)
    return from_hpvm_ir(written, file="<extract>")


def _region_function(module: Any) -> Any:
    """The one function with directive regions, or ``None`` if none has any."""
    found = [
        f
        for f in module.functions
        if not f.is_declaration and _CALLS_ENTRY.search(str(f))  # (its text: one call into LLVM)
    ]
    if len(found) > 1:
        names = ", ".join(f"@{f.name}" for f in found)
        raise LLVMExtractError(
            f"extract(): several functions hold directive regions ({names}); extract one program at a time"
        )
    return found[0] if found else None


def name_values(fn: Any) -> None:
    """Names every unnamed argument, block and value of ``fn`` (``.v3``, ``.b2``), so that
    instructions can be copied by their text (``with_names`` does it by the text, where the
    module can be parsed again). A function whose text shows no unnamed value (``%7``, a
    ``7:`` block) is left alone, without reading it one value at a time."""
    if not _unnamed(str(fn)):
        return
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
    """One node's region: what its entry call's bundles and attributes say (``prepare.py``
    writes them)."""

    entry: Any
    name: str
    function: str
    sizes: list[Any]
    nid: int
    parent: int
    index: int
    in_slots: list[str]
    out_slots: list[str]
    size_slots: list[str]
    connections: list[tuple[int, Connection, int]] = field(default_factory=list)  # (seq, call, source index)


def _region(module: Any, fn: Any, ins: Any) -> Region:
    b = bundles(ins)
    where = f"@{fn.name}: '{str(ins).strip()[:200]}'"
    ident, function = _call_attribute(ins, "hpvm.id"), _call_attribute(ins, "hpvm.function")
    if ident is None or function is None or not re.fullmatch(r"-?\d+ -?\d+ -?\d+", ident):
        raise LLVMExtractError(
            f'{where}: a region EXTRACT reads is one PREPARE wrote: its entry call has the attributes "hpvm.id"'
            '="id parent index" and "hpvm.function"="name" beside the RFC\'s bundles (docs/llvm.md); other '
            "regions are not a dataflow graph"
        )
    decl = next((f for f in module.functions if f.name == function), None)
    if decl is None:
        raise LLVMExtractError(f"{where}: node function @{function} is not declared in the module")
    nid, parent, index = (int(x) for x in ident.split())
    sizes = b.get("HPVM_create_node")
    nargs, nout = len(list(decl.arguments)), len(_fields(return_type(decl)))
    values = [v.name for v in b.get("dataflow_values")]
    if len(values) != 2 * nargs + nout + len(sizes):
        raise LLVMExtractError(
            f'{where}: "dataflow_values" holds {len(values)} values; PREPARE lists the {nargs} values of '
            f"@{function}, then its {nargs} input slots, {nout} output slots and {len(sizes)} size slots"
        )
    label = _call_attribute(ins, "hpvm.node") or f"n{nid}"
    region = Region(
        ins, label, function, sizes, nid, parent, index, in_slots=values[nargs : 2 * nargs],
        out_slots=values[2 * nargs : 2 * nargs + nout], size_slots=values[2 * nargs + nout :],
    )  # fmt: skip
    for item in filter(
        None, (x.strip() for x in (_call_attribute(ins, "hpvm.connections") or "").split(";"))
    ):
        kind, *rest = item.split()
        g = [int(x) for x in rest if re.fullmatch(r"-?\d+", x)]
        g = g if len(g) == len(rest) else []
        if kind == "in" and len(g) == 4:
            region.connections.append((g[0], Connection("in", None, label, g[1], g[2], bool(g[3])), -1))
        elif kind == "edge" and len(g) == 6:
            call = Connection("edge", None, label, g[3], g[4], bool(g[5]), bool(g[2]))
            region.connections.append((g[0], call, g[1]))
        elif kind == "out" and len(g) == 4:
            region.connections.append((g[0], Connection("out", label, None, g[1], g[2], bool(g[3])), -1))
        else:
            raise LLVMExtractError(
                f'{where}: "hpvm.connections" holds {item!r}, no connection PREPARE writes'
            )
    return region


def _fields(ret: str) -> list[str]:
    """The field types of a literal struct type's text (``{ float, i64 }``)."""
    inner = ret.strip()[1:-1].strip()
    return [f.strip() for f in inner.split(",")] if inner else []


def _call_attribute(ins: Any, key: str) -> str | None:
    for item in ins.attributes:
        raw = item.decode() if isinstance(item, bytes) else str(item)
        m = re.search(rf'(?:^|\s)"{re.escape(key)}"="((?:[^"\\]|\\.)*)"', raw)
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
            raise self.fail(
                ins,
                f"a {ins.opcode} where EXTRACT copies straight-line code (sizes, and the code between "
                "nested loops, which it computes again for every instance)",
            )
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


class Regions:
    """The regions of one function PREPARE wrote (optimized or not), and the HPVM IR in LLVM
    form they outline to (``text``)."""

    def __init__(self, module: Any, fn: Any):
        self.module = module
        self.fn = fn
        self.regions: dict[int, Region] = {}
        self.exits: dict[str, Any] = {}
        self.index = FunctionIndex(fn)
        self.blocks = self.index.by_name
        self.named = self.index.named
        for ins in self.index.name:
            which = self.index.callee(ins)
            if which == ENTRY:
                r = _region(module, fn, ins)
                if r.nid in self.regions:
                    raise LLVMExtractError(
                        f"@{fn.name}: '{str(ins).strip()[:200]}': a second region of node {r.nid} (LLVM "
                        "duplicated a region: the directive intrinsics must be noduplicate)"
                    )
                self.regions[r.nid] = r
            elif which == EXIT:
                self.exits[list(ins.operands)[0].name] = ins
        self.definitions: dict[str, list[str]] = {}

    @functools.cached_property
    def used_in(self) -> dict[str, set[str]]:
        """Each value's name → the names of the blocks using it (read once, when needed, from
        the function's text: walking every operand through llvmlite took a second on edge
        detection)."""
        found: dict[str, set[str]] = {}
        block = ""
        for line in str(self.fn).splitlines():
            label = abi.LABEL_LINE.match(line)
            if label:
                block = label.group(1).strip('"')
            elif line.startswith("  "):
                for name in _NAME.findall(line.split(" = ", 1)[1] if " = " in line else line):
                    found.setdefault(name.strip('"'), set()).add(block)
        return found

    def block_of(self, ins: Any) -> Any:
        return self.index.block_of[ins]

    def children(self, parent: int) -> list[Region]:
        return sorted((r for r in self.regions.values() if r.parent == parent), key=lambda r: r.index)

    def text(self) -> str:
        fn = self.fn
        scope = {a.name: "%" + abi.quote(a.name) for a in fn.arguments}
        root = self.internal(define_line(fn).rstrip().removesuffix("{").rstrip(), return_type(fn), scope, -1)
        node_functions = {r.function for r in self.regions.values()}
        kept = []
        for line in without_function(self.module, fn.name):
            m = re.match(rf"declare\b[^@]*@({abi.NAME})\(", line)
            if not (m and m.group(1).strip('"') in node_functions) and not line.startswith("@llvm.used = "):
                kept.append(line)
        declared = {f.name for f in self.module.functions}
        decls = [line for k, line in abi.DECLARATIONS.items() if f"llvm.hpvm.{k}" not in declared]
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
        """The leaf's task outlined (``outline.py``): its blocks copied as they are, the
        allocas it uses (its slots among them) made its own, the loop's index computed from
        the instance's ids, its input slots filled from its arguments, its output slots
        returned."""
        outline, label, index = self.task(r)
        where = f"the task of node {r.name}"
        names = {self.index.name_of_block[b] for b in outline.blocks}
        inits = dict(zip(r.in_slots, (scope[s] for s in r.in_slots)))
        inits.update({slot: f"%.x.n{'xyz'[k]}" for k, slot in enumerate(r.size_slots)})

        def allocas(name: str) -> str | None:
            if name not in r.in_slots + r.out_slots + r.size_slots:
                home = self.index.name_of_block[self.block_of(self.named[name])]
                if self.used_in.get(name, set()) - names - {home}:
                    raise self.fail(
                        self.named[name],
                        f"memory of the function that {where} and code outside it both use (seed 004's C2)",
                    )
            return inits.get(name)

        def outside(value: Any, user: Any) -> str:
            if index is not None and value.name == index.name:
                return f"  %{abi.quote(index.name)} = add i64 %.x.flat, 0"
            raise self.fail(
                user,
                f"uses %{value.name}, computed outside its region ({where}; seed 004's C1: values a region "
                "defines stay in it, and it uses only those, its re-reads and its loop's index)",
            )

        prologue = ["  %.x.node = call ptr @llvm.hpvm.getNode()"]
        axes = "xyz"[: len(r.sizes)]
        for axis in axes:
            prologue.append(f"  %.x.i{axis} = call i64 @llvm.hpvm.getNodeInstanceID.{axis}(ptr %.x.node)")
            prologue.append(f"  %.x.n{axis} = call i64 @llvm.hpvm.getNumNodeInstances.{axis}(ptr %.x.node)")
        if axes:
            flat = f"%.x.i{axes[-1]}"
            for k in range(len(axes) - 2, -1, -1):
                prologue.append(f"  %.x.f{k} = mul i64 {flat}, %.x.n{axes[k]}")
                prologue.append(f"  %.x.g{k} = add i64 %.x.f{k}, %.x.i{axes[k]}")
                flat = f"%.x.g{k}"
            prologue.append(f"  %.x.flat = add i64 {flat}, 0")
        fields, value, epilogue = _fields(ret), "undef", []
        for j, t in enumerate(fields):
            epilogue.append(f"  %.x.out{j} = load {t}, ptr %{abi.quote(r.out_slots[j])}")
            epilogue.append(f"  %.x.ret{j} = insertvalue {ret} {value}, {t} %.x.out{j}, {j}")
            value = f"%.x.ret{j}"
        # PREPARE's instance ids (the loop's index divided by the sizes) are the ids again
        ids = {f".n{r.nid}.{axis}": f"%.n{r.nid}.{axis} = add i64 %.x.i{axis}, 0" for axis in axes}
        done = (epilogue, value if fields else "zeroinitializer")
        return outline.text(head, ret, prologue, allocas, outside, label, done, ids)

    def slot_type(self, alloca: Any) -> str:
        m = re.search(r"= alloca (.+?)(?:, align \d+)?$", str(alloca).strip())
        assert m is not None
        return m.group(1)

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why}")

    def task(self, r: Region) -> tuple[Outline, str, Any]:
        """(the region of one instance of ``r``'s node, the label its outlined entry takes,
        the loop's index): from the entry, or the block the header's ``detach_task`` marker
        branches to, to the exit or the ``reattach_task`` marker."""
        where = f"@{self.fn.name}: '{str(r.entry).strip()[:200]}'"
        exit_ = self.exits.get(r.entry.name)
        if exit_ is None:
            raise LLVMExtractError(f"{where}: the region has no llvm.directive.region.exit")
        entry_block = self.block_of(r.entry)
        if not r.sizes:
            outline = Outline(self.fn, r.entry, exit_, index=self.index)
            return self.checked(r, outline), self.index.name_of_block[entry_block], None
        detach, header = self.find_marker(entry_block, r.entry, "detach_task", exit_)
        if detach is None:
            raise LLVMExtractError(f"{where}: a replicated node's region has no detach_task marker")
        term = self.index.instructions[header][-1]
        m = re.fullmatch(
            rf"br i1 %{re.escape(abi.quote(detach.name))}, label %(\"[^\"]*\"|\S+), label %\S+",
            str(term).strip(),
        )
        if m is None:
            raise self.fail(
                term, "the detach_task marker must feed the conditional branch into the task (seed 004's B4)"
            )
        start = self.blocks[m.group(1).strip('"')]
        reattach, _ = self.find_marker(start, None, "reattach_task", exit_)
        if reattach is None:
            raise LLVMExtractError(
                f"{where}: the task after the detach_task marker reaches no reattach_task marker"
            )
        phis = [i for i in self.index.instructions[header] if i.opcode == "phi" and str(i.type) == "i64"]
        outline = self.checked(r, Outline(self.fn, None, reattach, start=start, index=self.index))
        return outline, self.index.name_of_block[header], phis[0] if len(phis) == 1 else None

    def checked(self, r: Region, outline: Outline) -> Outline:
        """``outline``, refused if a leaf's task runs into another directive."""
        if not any(x.parent == r.nid for x in self.regions.values()):  # (an internal node's children)
            for b in outline.blocks:
                for ins in outline.part(b):
                    which = self.index.callee(ins)
                    if which in (ENTRY, EXIT) or (which == MARKER and r.sizes):
                        raise self.fail(
                            ins, f"the task of node {r.name} runs into another region's directive"
                        )
        return outline

    def find_marker(self, start: Any, after: Any, tag: str, stop: Any) -> tuple[Any, Any]:
        """The first ``tag`` marker reached from ``start`` (breadth first), and its block."""
        seen, queue = set(), [start]
        end = self.block_of(stop)
        while queue:
            b = queue.pop(0)
            if b in seen:
                continue
            seen.add(b)
            for ins in self.index.cut(b, after if b == start else None, stop):
                if self.index.callee(ins) == MARKER and f'"{tag}"' in self.index.text[ins]:
                    return ins, b
            if b != end:
                queue += self.index.successors(b)
        return None, None


def read_regions(parse: Callable[[str], Any], text: str) -> Regions:
    """The regions of the one function of LLVM IR ``text`` that holds PREPARE's regions,
    read from modules ``parse`` makes (an ``own_context()``'s, which they must not outlive)."""
    module = parse_verified(parse, text, "extract(): ")
    fn = _region_function(module)
    if fn is None:
        raise LLVMExtractError("extract(): no function holds llvm.directive.region.entry calls")
    return Regions(*with_names(parse, module, fn))


def write_hpvm_ir(parse: Callable[[str], Any], module: Any, fn: Any) -> str:
    """HPVM IR in LLVM form for the regions of ``fn`` in ``module`` (``parse``: the
    context's, for ``with_names``)."""
    return Regions(*with_names(parse, module, fn)).text()


def with_names(parse: Callable[[str], Any], module: Any, fn: Any) -> tuple[Any, Any]:
    """``module`` and ``fn`` with every unnamed argument, block and value of ``fn`` named
    (``%7`` becomes ``%.u7``), so that instructions can be copied by their text: the
    function's text renamed and the module parsed again, which costs a tenth of naming the
    values one by one through llvmlite (``name_values``). Unchanged if nothing is unnamed."""
    if not _unnamed(str(fn)):
        return module, fn
    lines = str(module).splitlines(keepends=True)
    head = f"@{abi.quote(fn.name)}("
    start = next(k for k, line in enumerate(lines) if line.startswith("define") and head in line)
    end = next(k for k in range(start, len(lines)) if lines[k].startswith("}"))
    if not abi.LABEL_LINE.match(lines[start + 1]):  # an unnamed entry block, which LLVM prints without label:
        # its number follows the unnamed arguments'
        numbered = sum(m.group(1) is not None for m in _UNNAMED_OR_STRING.finditer(lines[start]))
        lines.insert(start + 1, f"{numbered}:\n")
        end += 1
    body = _UNNAMED_OR_STRING.sub(_named, "".join(lines[start:end]))
    renamed = parse_verified(parse, "".join([*lines[:start], body, *lines[end:]]), "extract(): ")
    return renamed, renamed.get_function(fn.name)


def _unnamed(text: str) -> bool:
    """Whether a function's ``text`` shows an unnamed value (``%7``, a ``7:`` block; not in
    a string)."""
    return any(m.group(1) is not None or m.group(2) is not None for m in _UNNAMED_OR_STRING.finditer(text))


def _named(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return f"%.u{m.group(1)}"
    if m.group(2) is not None:
        return f".u{m.group(2)}:"
    return m.group(0)  # (a string: left as it is)


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


__all__ = [
    "Copier",
    "Region",
    "Regions",
    "extract",
    "name_values",
    "read_regions",
    "with_names",
    "write_hpvm_ir",
]
