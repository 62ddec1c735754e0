"""EXTRACT of another front end's parallel loop (seed 004's Tapir example): a function whose
loop body is marked ``detach_task`` / ``reattach_task``, with ``local_barrier`` after the
loop, becomes a root creating one leaf replicated over the loop's trip count.

What maps onto a graph, and is read: one such loop per function (the module's one function
with markers), counting from 0 by 1 to a bound computed from the function's integer
arguments (its latch compares the next index with the bound: ``eq``, ``ne``, ``ult`` or
``slt``); a task of one basic block using the function's arguments and the index; no other
side effects in the function. The index becomes ``llvm.hpvm.getNodeInstanceID.x``; each
pointer argument becomes an array port (its element type from the first
``getelementptr`` through it, else bytes) with an ``i64`` size the root receives (the loop
never needed it). Anything else is an ``LLVMExtractError`` naming the function and the
instruction.
"""

from __future__ import annotations

import re
from typing import Any

from ..ir.graph import InternalFunction
from . import abi
from .directives import MARKER, bundles, callee, constant
from .errors import LLVMExtractError
from .extract import Copier, name_values, without_function
from .importer import from_hpvm_ir

_PURE = frozenset(
    {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor"}
    | {"zext", "sext", "trunc", "icmp", "select", "phi", "br", "ret", "getelementptr"}
)
ELEMENTS = {"i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "float": "f32", "double": "f64"}


def extract_loops(module: Any) -> InternalFunction:
    """The graph of the module's one function with a marked parallel loop."""
    found = [
        f
        for f in module.functions
        if not f.is_declaration and any(callee(i) == MARKER for b in f.blocks for i in b.instructions)
    ]
    if not found:
        raise LLVMExtractError(
            "extract(): no function holds llvm.directive.region.entry or llvm.directive.marker calls; "
            "EXTRACT reads the regions llvm.prepare writes and parallel loops marked detach_task/"
            "reattach_task (llvm.from_hpvm_ir reads HPVM IR without them)"
        )
    if len(found) > 1:
        names = ", ".join(f"@{f.name}" for f in found)
        raise LLVMExtractError(
            f"extract(): several functions hold parallel loops ({names}); extract one at a time"
        )
    fn = found[0]
    name_values(fn)
    return from_hpvm_ir(_Loop(module, fn).text(), file="<extract>")


class _Loop:
    def __init__(self, module: Any, fn: Any):
        self.module = module
        self.fn = fn
        self.blocks = {b.name: b for b in fn.blocks}
        self.named = {i.name: i for b in fn.blocks for i in b.instructions if i.name}
        self.block_of = {i.name: b for b in fn.blocks for i in b.instructions if i.name}
        markers: dict[str, list[Any]] = {"detach_task": [], "reattach_task": [], "local_barrier": []}
        for b in fn.blocks:
            for i in b.instructions:
                if callee(i) == MARKER:
                    tags = [t for t in bundles(i).tags if t in markers]
                    if len(tags) != 1:
                        raise self.fail(
                            i, "a marker EXTRACT reads is detach_task, reattach_task or local_barrier"
                        )
                    markers[tags[0]].append(i)
        for kind, found in markers.items():
            if len(found) != 1:
                raise LLVMExtractError(
                    f"@{fn.name}: {len(found)} {kind} markers; EXTRACT reads one parallel loop per function "
                    "(one detach_task, one reattach_task, one local_barrier)"
                )
        self.detach, self.reattach = markers["detach_task"][0], markers["reattach_task"][0]

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why}")

    def text(self) -> str:
        fn = self.fn
        header = self.block_of[self.detach.name]
        term = list(header.instructions)[-1]
        m = re.fullmatch(
            rf"br i1 %{re.escape(self.detach.name)}, label %(\S+), label %(\S+)", str(term).strip()
        )
        if m is None:
            raise self.fail(term, "the detach_task marker must feed the branch into the task (seed 004's B4)")
        task_block = self.blocks[m.group(1)]
        task = []
        for ins in task_block.instructions:
            if ins.name and ins.name == self.reattach.name:
                break
            task.append(ins)
        else:
            raise self.fail(self.detach, "the task is not one basic block ending in the reattach_task marker")
        iv, bound = self.induction(header)
        args = list(fn.arguments)
        params, inner, binds = ports(fn, self.named.values(), "task")
        self.check_outside(task)
        sizes = Copier(
            fn,
            self.named,
            {a.name: "%" + abi.quote(a.name) for a in args},
            ".s",
            None,
            "the loop's trip count",
        )
        trip = sizes.value(bound, header)
        body = Copier(
            fn, self.named, {a.name: "%" + abi.quote(a.name) for a in args}, ".t", {i.name for i in task if i.name},
            f"the task of the loop in @{fn.name}",
        )  # fmt: skip
        body.done[iv.name] = "%.index"
        for ins in task:
            if ins.name not in body.done:
                body.copy(ins)
        leaf = abi.quote(fn.name + ".task")
        root = abi.quote(fn.name)
        lines = [
            f'define {{}} @{leaf}({", ".join(inner)}) "hpvm.kind"="leaf" {{',
            "entry:",
            "  %.node = call ptr @llvm.hpvm.getNode()",
            "  %.index = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %.node)",
            *body.lines,
            "  ret {} zeroinitializer",
            "}",
            "",
            f'define {{}} @{root}({", ".join(params)}) "hpvm.kind"="internal" {{',
            "entry:",
            *sizes.lines,
            f"  %task = call ptr @llvm.hpvm.createNode1D(ptr @{leaf}, i64 {trip})",
            *binds,
            "  ret {} undef",
            "}",
        ]
        kept = without_function(self.module, fn.name)
        declared = {f.name for f in self.module.functions}
        decls = [abi.DECLARATIONS[k] for k in ("getNode", "getNodeInstanceID.x", "createNode1D", "bind.input")
                 if f"llvm.hpvm.{k}" not in declared]  # fmt: skip
        return "\n".join([*kept, *decls, "", *lines]) + "\n"

    def induction(self, header: Any) -> tuple[Any, Any]:
        """The loop's index (a phi from 0, stepping by 1) and its bound."""
        phis = [
            i for b in self.fn.blocks for i in b.instructions if i.opcode == "phi" and str(i.type) == "i64"
        ]
        for phi in phis:
            text = str(phi).strip()
            start = re.search(r"\[ 0, %", text)
            nxt = re.findall(r"\[ %([-\w.$]+), %", text)
            if start is None or len(nxt) != 1 or nxt[0] not in self.named:
                continue
            step = self.named[nxt[0]]
            ops = list(step.operands)
            if step.opcode != "add" or ops[0].name != phi.name or constant(ops[1]) != 1:
                continue
            for user in self.named.values():
                if user.opcode != "icmp":
                    continue
                a, b = list(user.operands)
                pred = str(user).split("icmp ", 1)[1].split()[0]
                if a.name in (step.name, phi.name) and pred in ("eq", "ne", "ult", "slt"):
                    if a.name == phi.name and pred in ("eq", "ne"):
                        continue  # (a guard, not the latch)
                    return phi, b
        raise self.fail(
            self.detach,
            "no loop index EXTRACT reads: an i64 phi from 0 stepping by 1, compared (eq, ne, ult, slt) "
            "with its bound",
        )

    def check_outside(self, task: list[Any]) -> None:
        inside = {i.name for i in task if i.name} | {self.detach.name, self.reattach.name}
        for b in self.fn.blocks:
            for i in b.instructions:
                if i.name in inside or callee(i) == MARKER or i.opcode in _PURE:
                    continue
                if i.name == "" and str(i).strip() in {str(t).strip() for t in task}:
                    continue
                raise self.fail(
                    i,
                    "side effects outside the parallel loop's task: EXTRACT maps a function that is one "
                    "marked loop onto a graph (a root creating one replicated leaf)",
                )


def ports(
    fn: Any, instructions: Any, node: str, known: dict[str, str] | None = None
) -> tuple[list[str], list[str], list[str]]:
    """A foreign function's arguments as ports: (the root's parameters, the leaf's, the
    ``bind.input`` calls of node ``%node``). A pointer argument is an array port, its element
    type from the first ``getelementptr`` through it (or ``known``, else bytes), with an ``i64``
    size."""
    found: dict[str, str] = dict(known or {})
    for ins in instructions:
        if ins.opcode == "getelementptr":
            base = list(ins.operands)[0].name
            m = re.search(r"getelementptr (?:inbounds |nuw |nusw )*(\w+), ptr", str(ins))
            if m and base not in found and m.group(1) in ELEMENTS:
                found[base] = ELEMENTS[m.group(1)]
    params: list[str] = []
    inner: list[str] = []
    binds: list[str] = []
    k = 0
    for a in fn.arguments:
        t = str(a.type)
        name = "%" + abi.quote(a.name)
        if t == "ptr":
            port = f'"hpvm.port"="{found.get(a.name, "u8")}[:]"'
            size = "%" + abi.quote(a.name + ".size")
            params += [f"ptr {port} {name}", f'i64 "hpvm.size" {size}']
            inner += params[-2:]
            count = 2
        elif t in abi.LLVM_SCALAR:
            params.append(f"{t} {name}")
            inner.append(f"{t} {name}")
            count = 1
        else:
            raise LLVMExtractError(f"@{fn.name}: argument %{a.name} of type {t} is no port (scalars or ptr)")
        binds += [
            f"  call void @llvm.hpvm.bind.input(ptr %{node}, i32 {k + j}, i32 {k + j}, i1 false)"
            for j in range(count)
        ]
        k += count
    return params, inner, binds


__all__ = ["ELEMENTS", "extract_loops", "ports"]
