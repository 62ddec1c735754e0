"""EXTRACT of another front end's parallel loop (seed 004's Tapir example): a function whose
loop body is marked ``detach_task`` / ``reattach_task``, with ``local_barrier`` after the
loop, becomes a root creating one leaf replicated over the loop's trip count.

What maps onto a graph, and is read: one such loop per function (the module's one function
with markers), or a nest of up to three (each loop's task the next loop, with code without
side effects around it; the innermost loop's index is x), each counting from 0 by 1 to a
bound computed from the function's integer arguments (its latch compares the next index
with the bound: ``eq``, ``ne``, ``ult`` or ``slt``); the innermost task any number of
blocks (``outline.py``) using the function's arguments and the indices; no other side
effects in the function. The indices become ``llvm.hpvm.getNodeInstanceID.*``; each
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
from .outline import FunctionIndex, Outline, same_value

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
    """A nest of one to three marked loops, each loop's task the next loop (and code without
    side effects around it), the innermost task the leaf."""

    def __init__(self, module: Any, fn: Any):
        self.module = module
        self.fn = fn
        self.blocks = {b.name: b for b in fn.blocks}
        self.named = {i.name: i for b in fn.blocks for i in b.instructions if i.name}
        self.block_of = {i.name: b for b in fn.blocks for i in b.instructions if i.name}
        self.index = FunctionIndex(fn)
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
        counts = {kind: len(found) for kind, found in markers.items()}
        if len(set(counts.values())) != 1 or not 1 <= counts["detach_task"] <= 3:
            raise LLVMExtractError(
                f"@{fn.name}: {counts['detach_task']} detach_task, {counts['reattach_task']} reattach_task and "
                f"{counts['local_barrier']} local_barrier markers; EXTRACT reads one parallel loop, or a nest of "
                "up to three, per function (each loop one detach_task, one reattach_task, one local_barrier)"
            )
        self.levels = self.nest(markers["detach_task"], markers["reattach_task"])

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why}")

    def nest(self, detaches: list[Any], reattaches: list[Any]) -> list[tuple[Any, Outline]]:
        """(header block, task) of each loop, outermost first: a detach marker's branch
        enters its task, and its task's reattach block rejoins where the marker skips to."""
        levels = []
        for d in detaches:
            header = self.block_of[d.name]
            term = list(header.instructions)[-1]
            m = re.fullmatch(rf"br i1 %{re.escape(d.name)}, label %(\S+), label %(\S+)", str(term).strip())
            if m is None:
                raise self.fail(
                    term, "the detach_task marker must feed the branch into the task (seed 004's B4)"
                )
            start, skip = self.blocks[m.group(1)], m.group(2)
            mine = [
                r for r in reattaches if f"label %{skip}" in str(list(self.block_of[r.name].instructions)[-1])
            ]
            if len(mine) != 1:
                raise self.fail(d, "no reattach_task marker rejoins where this detach_task marker skips to")
            levels.append((header, Outline(self.fn, None, mine[0], start=start, index=self.index)))
        inner = {id(level): sum(self.block_of[d.name].name in {b.name for b in o.blocks} for d in detaches)
                 for level in levels for o in [level[1]]}  # fmt: skip
        levels.sort(key=lambda level: -inner[id(level)])
        for k, (_, task) in enumerate(levels[:-1]):
            if levels[k + 1][0].name not in {b.name for b in task.blocks}:
                raise self.fail(
                    task.end, "several marked loops that do not nest: EXTRACT reads one loop or one nest"
                )
        return levels

    def text(self) -> str:
        fn = self.fn
        args = {a.name: "%" + abi.quote(a.name) for a in fn.arguments}
        params, inner, binds = ports(fn, self.named.values(), "task")
        sizes = Copier(fn, self.named, args, ".s", None, "the loop's trip count")
        axes = "xyz"[: len(self.levels)][::-1]  # outermost loop first; the innermost is x
        trips, ivs = [], {}
        for (header, _), axis in zip(self.levels, axes):
            iv, bound = self.induction(header)
            trips.append(sizes.value(bound, header))
            ivs[iv.name] = axis
        leaf_task = self.levels[-1][1]
        self.check_outside(leaf_task)
        around = Copier(fn, self.named, args, ".t", self.around(), f"the loops' tasks in @{fn.name}")
        for name, axis in ivs.items():
            around.done[name] = f"%.index.{axis}"

        def outside(value: Any, user: Any) -> str:
            if value.value_kind.name == "argument":
                return ""
            if value.name in ivs:
                return f"  %{abi.quote(value.name)} = add i64 %.index.{ivs[value.name]}, 0"
            if self.named[value.name].opcode == "alloca":
                raise self.fail(user, f"uses %{value.name}, memory of the function outside its task")
            lines = len(around.lines)
            own = around.value(value, user)
            return "\n".join(
                [*around.lines[lines:], f"  %{abi.quote(value.name)} = {same_value(str(value.type), own)}"]
            )

        leaf = abi.quote(fn.name + ".task")
        prologue = ["  %.node = call ptr @llvm.hpvm.getNode()"]
        prologue += [
            f"  %.index.{a} = call i64 @llvm.hpvm.getNodeInstanceID.{a}(ptr %.node)" for a in sorted(axes)
        ]
        body = leaf_task.text(
            f'define {{}} @{leaf}({", ".join(inner)}) "hpvm.kind"="leaf"',
            "{}",
            prologue,
            lambda name: None,
            outside,
        )
        dims = len(trips)
        create = f"createNode{dims}D(ptr @{leaf}, {', '.join(f'i64 {t}' for t in trips[::-1])})"
        root = abi.quote(fn.name)
        lines = [
            *body,
            "",
            f'define {{}} @{root}({", ".join(params)}) "hpvm.kind"="internal" {{',
            "entry:",
            *sizes.lines,
            f"  %task = call ptr @llvm.hpvm.{create}",
            *binds,
            "  ret {} undef",
            "}",
        ]
        kept = without_function(self.module, fn.name)
        declared = {f.name for f in self.module.functions}
        decls = [line for k, line in abi.DECLARATIONS.items() if f"llvm.hpvm.{k}" not in declared]
        return "\n".join([*kept, *decls, "", *lines]) + "\n"

    def around(self) -> set[str]:
        """The instructions of the outer loops' tasks around the inner loops (without side
        effects, checked): what the leaf may compute again from the instance's ids."""
        names: set[str] = set()
        for _, task in self.levels[:-1]:
            names |= {i.name for b in task.blocks for i in task.part(b) if i.name}
        return names

    def induction(self, header: Any) -> tuple[Any, Any]:
        """The loop's index (a phi of its header from 0, stepping by 1) and its bound."""
        phis = [i for i in header.instructions if i.opcode == "phi" and str(i.type) == "i64"]
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
            list(header.instructions)[-1],
            "no loop index EXTRACT reads: an i64 phi from 0 stepping by 1, compared (eq, ne, ult, slt) "
            "with its bound",
        )

    def check_outside(self, task: Outline) -> None:
        """No side effects but in the innermost task: the rest of the function is loops."""
        inside = {str(i) for b in task.blocks for i in task.part(b)}
        for b in self.fn.blocks:
            for i in b.instructions:
                if callee(i) == MARKER or i.opcode in _PURE or str(i) in inside:
                    continue
                raise self.fail(
                    i,
                    "side effects outside the parallel loop's task: EXTRACT maps a function that is one "
                    "marked loop (or nest) onto a graph (a root creating one replicated leaf)",
                )


def ports(
    fn: Any, instructions: Any, node: str, known: dict[str, str] | None = None
) -> tuple[list[str], list[str], list[str]]:
    """A foreign function's arguments as ports: (the root's parameters, the leaf's, the
    ``bind.input`` calls of node ``%node``). A pointer argument is an array port, its element
    type from the first ``getelementptr`` through it (or ``known``, else bytes), with an ``i64``
    size; both an input and an output (``"in" "out"``): a foreign function says nothing of
    which memory it writes, and a back end copies back only what a leaf declares it writes
    (checked code and ``interp`` refuse a write to an undeclared array)."""
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
            params += [f'ptr {port} "in" "out" {name}', f'i64 "hpvm.size" {size}']
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
