"""EXTRACT of the directive regions other compilers write with seed 004's intrinsics:
OmpSs-2's (``"DIR.OSS"([n x i8] c"TASKLOOP\\00")``, its bounds in ``"QUAL.OSS.LOOP.*"``) and
Intel's OpenMP (``"DIR.OMP.PARALLEL.LOOP"()`` with ``"QUAL.OMP.NORMALIZED.IV:TYPED"`` /
``UB``, closed by ``"DIR.OMP.END.PARALLEL.LOOP"()`` on the exit), where they map onto HPVM.

What maps, and how (docs/llvm.md, "Other compilers' directives"): a function holding one
such region becomes a root whose ports are the function's arguments (``tapir.ports``),
creating one leaf: replicated over the loop's iteration space for a loop (OmpSs-2's
``TASKLOOP``, ``TASKLOOP.FOR``, ``TASK.FOR``; Intel's ``PARALLEL.LOOP``), one instance for
OmpSs-2's ``TASK``. The leaf is the region's code, outlined (``outline.py``): instance *k*
runs it once with the loop's induction variable set to ``lb + k*step`` (OmpSs-2) or the
normalized index *k* (Intel). Each alloca of the function the region uses becomes the
instance's own: ``FIRSTPRIVATE`` ones (and unlisted ones, OmpSs-2's default for a task's
locals) start with the value the function stored before the region. Memory the region
shares stays shared: pointer arguments (array ports) and globals — so ``sum += i`` on a
shared ``sum`` is the data race it is in OmpSs-2 when instances run in parallel.

The trip count is the root's replication size, an expression of its ports: each bound is a
constant, a value of the function's integer arithmetic of its arguments, or OmpSs-2's
``ptr @compute_lb, ptr %lb.addr...`` (a function returning the bound from the captured
pointers, as clang writes it), read through. For OmpSs-2's ``LOOP.TYPE`` (``<``, ``<=``,
``>``, ``>=``) it is ``max(0, (ub - lb + step - 1) // step)``, ``max(0, (ub - lb + step) //
step)``, ``max(0, (lb - ub - step - 1) // -step)`` and ``max(0, (lb - ub - step) // -step)``.
Anything else — another directive, a reduction, a collapsed loop, a second region, side
effects outside the region — is an ``LLVMExtractError`` naming the function and the call.
"""

from __future__ import annotations

import re
from typing import Any

from ..ir.graph import InternalFunction
from . import abi
from .directives import ENTRY, EXIT, bundles, callee
from .errors import LLVMExtractError
from .extract import Copier, name_values, without_function
from .importer import from_hpvm_ir
from .outline import FunctionIndex, Outline, same_value
from .tapir import ELEMENTS, ports

#: OmpSs-2 directives that map onto a graph: those that are loops, and the plain task.
OSS_LOOPS = frozenset({"TASKLOOP", "TASKLOOP.FOR", "TASK.FOR"})
OSS_TASK = "TASK"
INTEL_LOOPS = frozenset({"DIR.OMP.PARALLEL.LOOP"})
#: Qualifiers that change nothing for a graph of one leaf (scheduling, dependences among
#: tasks of which there is one, captured copies of bounds).
_IGNORED = re.compile(
    r"QUAL\.OSS\.(CAPTURED|CHUNKSIZE|GRAINSIZE|PRIORITY|COST|LABEL|DECL\.SOURCE|DEP\..*|IF|FINAL|WAIT)$"
    r"|QUAL\.OMP\.(SCHEDULE\..*|NUM_THREADS|DEFAULT\..*|NORMALIZED\.IV|NORMALIZED\.UB|SHARED|PRIVATE"
    r"|FIRSTPRIVATE|OFFLOAD\.ENTRY\.IDX)$"
)
_DATA = re.compile(
    r"QUAL\.(OSS|OMP)\.(SHARED|PRIVATE|FIRSTPRIVATE|LOOP\.IND\.VAR|NORMALIZED\.IV|NORMALIZED\.UB)$"
)
_OSS_LOOP = re.compile(r"QUAL\.OSS\.LOOP\.(LOWER\.BOUND|UPPER\.BOUND|STEP|TYPE)$")


def foreign_regions(module: Any) -> list[tuple[Any, Any]]:
    """(function, entry call) of every OmpSs-2 or Intel directive region in ``module``."""
    found = []
    for f in module.functions:
        if f.is_declaration:
            continue
        for b in f.blocks:
            for ins in b.instructions:
                if callee(ins) == ENTRY and _directive(ins)[0]:
                    found.append((f, ins))
    return found


def _directive(ins: Any) -> tuple[str, str]:
    """(family ``oss``/``omp``/``""``, directive name) of a directive call."""
    tags = bundles(ins).tags
    first = next(iter(tags), "")
    if first == "DIR.OSS":
        ops = tags[first]
        m = re.search(r'c"([^"]*?)(?:\\00)*"', str(ops[0])) if ops else None
        return "oss", m.group(1) if m else ""
    if first.startswith("DIR.OMP."):
        return "omp", first
    return "", ""


def extract_foreign(module: Any) -> InternalFunction:
    """The graph of the module's one function with an OmpSs-2 or Intel directive region."""
    regions = foreign_regions(module)
    fns = {f.name for f, _ in regions}
    if len(fns) > 1 or len(regions) > 1:
        where = ", ".join(sorted(f"@{n}" for n in fns))
        raise LLVMExtractError(
            f"extract(): {len(regions)} OmpSs-2/OpenMP directive regions ({where}); EXTRACT maps a function "
            "with one region onto a graph (a root creating its leaf): extract one at a time"
        )
    fn, entry = regions[0]
    written = str(entry).strip()  # (as the front end wrote it: before unnamed values get names)
    name_values(fn)
    return from_hpvm_ir(_Foreign(module, fn, entry, written).text(), file="<extract>")


class _Foreign:
    def __init__(self, module: Any, fn: Any, entry: Any, written: str):
        self.module = module
        self.fn = fn
        self.entry = entry
        self.family, self.directive = _directive(entry)
        self.where = f"@{fn.name}: '{written[:240]}'"
        self.named = {i.name: i for b in fn.blocks for i in b.instructions if i.name}
        self.bundles = bundles(entry)
        exits = [
            i
            for b in fn.blocks
            for i in b.instructions
            if callee(i) == EXIT and list(i.operands)[0].name == entry.name
        ]
        if len(exits) != 1:
            raise self.fail(f"the region has {len(exits)} llvm.directive.region.exit calls (one closes it)")
        self.exit = exits[0]
        self.index = FunctionIndex(fn)
        self.region = Outline(fn, entry, self.exit, index=self.index)
        self.args = {a.name: "%" + abi.quote(a.name) for a in fn.arguments}
        self.stores = self._stores_before()

    def fail(self, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"{self.where}: {why}")

    def _stores_before(self) -> dict[str, Any]:
        """Each alloca's value stored into it outside the region (its one store there)."""
        found: dict[str, list[Any]] = {}
        inside = {i.name or str(i) for b in self.region_blocks() for i in self.region_part(b)}
        for b in self.fn.blocks:
            for ins in b.instructions:
                if ins.opcode == "store" and (ins.name or str(ins)) not in inside:
                    value, ptr = list(ins.operands)
                    found.setdefault(ptr.name, []).append(value)
        return {k: v[0] for k, v in found.items() if len(v) == 1}

    def region_blocks(self) -> list[Any]:
        return self.region.blocks

    def region_part(self, block: Any) -> list[Any]:
        return self.region.part(block)

    # -- what the qualifiers say ----------------------------------------------------------
    def qualifiers(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for tag, ops in list(self.bundles.tags.items())[1:]:
            base = tag.removesuffix(":TYPED")
            if _DATA.match(base) or _OSS_LOOP.match(base):
                out.setdefault(base, []).extend(ops)
            elif not _IGNORED.match(base):
                raise self.fail(
                    f'the qualifier "{tag}" has no meaning in a graph of one leaf (reductions, lastprivate, '
                    "collapse ... are not mapped): remove it, or extract another way"
                )
        return out

    def scope(self) -> dict[str, str]:
        """What values outside the region read: its arguments, and each alloca holding one
        (stored once outside the region) read as that value."""
        scope = dict(self.args)
        for ptr, value in self.stores.items():
            kind = value.value_kind.name
            if kind == "argument":
                scope[ptr] = self.args[value.name]
            elif kind == "constant_int":
                scope[ptr] = str(value).split()[-1]
        return scope

    def bound(self, ops: list[Any], copier: Copier, what: str) -> tuple[str, str]:
        """(LLVM type, operand) of a loop bound: a constant, a value, or a compute function
        applied to captured pointers."""
        if not ops:
            raise self.fail(f"no {what}")
        head = ops[0]
        if head.value_kind.name == "function":
            fn = self.module.get_function(head.name)
            name_values(fn)
            rets = [i for b in fn.blocks for i in b.instructions if i.opcode == "ret"]
            if len(rets) != 1:
                raise self.fail(
                    f"@{fn.name}, the {what}'s compute function, has {len(rets)} returns (one, please)"
                )
            # a load through a captured pointer reads what the function stored there
            scope = {a.name: self._through(v, copier) for a, v in zip(fn.arguments, ops[1:])}
            named = {i.name: i for b in fn.blocks for i in b.instructions if i.name}
            sub = Copier(fn, named, scope, f"{copier.prefix}{head.name}.", None, f"the {what} (@{fn.name})")
            value = list(rets[0].operands)[0]
            out = sub.value(value, rets[0])
            copier.lines += sub.lines
            return str(value.type), out
        return str(head.type), copier.value(head, self.entry)

    def _through(self, pointer: Any, copier: Copier) -> str:
        stored = self.stores.get(pointer.name)
        if stored is None:
            raise self.fail(
                f"%{pointer.name}, a bound's captured pointer, is not stored once before the region"
            )
        return (
            copier.value(stored, self.entry)
            if stored.value_kind.name != "constant_int"
            else str(stored).split()[-1]
        )

    # -- the text -------------------------------------------------------------------------
    def text(self) -> str:
        quals = self.qualifiers()
        if self.family == "oss" and self.directive in OSS_LOOPS:
            trip, leaf_lines, init = self.oss_loop(quals)
        elif self.family == "oss" and self.directive == OSS_TASK:
            trip, leaf_lines, init = None, [], {}
        elif self.family == "omp" and self.directive in INTEL_LOOPS:
            trip, leaf_lines, init = self.intel_loop(quals)
        else:
            raise self.fail(
                f"the directive {self.directive or '(none)'} does not map onto a graph here: EXTRACT reads "
                f"OmpSs-2's {', '.join(sorted(OSS_LOOPS | {OSS_TASK}))} and Intel's "
                f"{', '.join(sorted(INTEL_LOOPS))} regions"
            )
        fn = self.fn
        params, inner, binds = ports(fn, self.named.values(), "task", self.elements())
        leaf_name = abi.quote(fn.name + ".task")
        shared = {v.name for v in quals.get("QUAL.OSS.SHARED", []) + quals.get("QUAL.OMP.SHARED", [])}
        if self.family == "omp":
            outline = Outline(fn, None, self.latch_start, start=self.body_start, index=self.index)
        else:
            outline = self.region
        written = {
            list(i.operands)[1].name for b in outline.blocks for i in outline.part(b) if i.opcode == "store"
        }
        shared &= written  # (a shared variable the region only reads has the value it had)
        body = outline.text(
            f'define {{}} @{leaf_name}({", ".join(inner)}) "hpvm.kind"="leaf"',
            "{}",
            prologue=leaf_lines,
            allocas=lambda name: self.alloca(name, shared, init),
            outside=self.outside,
        )
        root_sizes = trip[0] if trip else []
        create = (
            f"  %task = call ptr @llvm.hpvm.createNode1D(ptr @{leaf_name}, i64 {trip[1]})"
            if trip
            else f"  %task = call ptr @llvm.hpvm.createNode(ptr @{leaf_name})"
        )
        root = [
            f'define {{}} @{abi.quote(fn.name)}({", ".join(params)}) "hpvm.kind"="internal" {{',
            "entry:",
            *root_sizes,
            create,
            *binds,
            "  ret {} undef",
            "}",
        ]
        kept = without_function(self.module, fn.name)
        declared = {f.name for f in self.module.functions}
        decls = [line for k, line in abi.DECLARATIONS.items() if f"llvm.hpvm.{k}" not in declared]
        decls += [d for d in ("declare i64 @llvm.smax.i64(i64, i64)",) if "llvm.smax.i64" not in declared]
        return "\n".join([*kept, *decls, "", *body, "", *root]) + "\n"

    def elements(self) -> dict[str, str]:
        """Each pointer argument's element type, from the loads and stores through it (or
        through a local variable holding it, as ``-O0`` code reads it)."""
        holds = {}  # value name → the argument it is
        for ins in self.named.values():
            if ins.opcode == "load" and str(ins.type) == "ptr":
                held = self.stores.get(list(ins.operands)[0].name)
                if held is not None and held.value_kind.name == "argument":
                    holds[ins.name] = held.name
        found: dict[str, str] = {}
        for b in self.fn.blocks:
            for ins in b.instructions:
                ops = list(ins.operands)
                if ins.opcode == "getelementptr":
                    m = re.search(r"getelementptr (?:inbounds |nuw |nusw )*(\w+), ptr", str(ins))
                    ptr, t = ops[0], m.group(1) if m else ""
                if ins.opcode in ("load", "store"):
                    ptr = ops[0] if ins.opcode == "load" else ops[1]
                    t = str(ins.type if ins.opcode == "load" else ops[0].type)
                if ins.opcode in ("load", "store", "getelementptr"):
                    arg = ptr.name if ptr.value_kind.name == "argument" else holds.get(ptr.name)
                    if arg and arg not in found and t in ELEMENTS:
                        found[arg] = ELEMENTS[t]
        return found

    def alloca(self, name: str, shared: set[str], init: dict[str, str]) -> str | None:
        """The value an alloca the region uses starts with in each instance (``None``:
        uninitialized), or an error when it is shared."""
        if name in shared:
            raise self.fail(
                f"%{name}, a local variable of @{self.fn.name}, is shared with the task: a graph has no port "
                "for it (share memory through a pointer argument or a global)"
            )
        if name in init:
            return init[name]
        stored = self.stores.get(name)
        if stored is None:
            return None
        kind = stored.value_kind.name
        if kind == "argument":
            return self.args[stored.name]
        if kind in ("constant_int", "constant_fp"):
            return str(stored).split(" ", 1)[1]
        return None

    def outside(self, value: Any, user: Any) -> str:
        """A value the region uses but computed outside it: the function's integer
        arithmetic of its arguments, computed again in the leaf (an argument: the leaf's)."""
        if value.value_kind.name == "argument":
            return ""
        copier = Copier(
            self.fn, self.named, self.scope(), ".o.", None, "a value the region reads from outside it"
        )
        out = copier.value(value, user)
        return "\n".join([*copier.lines, f"  %{abi.quote(value.name)} = {same_value(str(value.type), out)}"])

    def oss_loop(
        self, quals: dict[str, list[Any]]
    ) -> tuple[tuple[list[str], str], list[str], dict[str, str]]:
        ind = quals.get("QUAL.OSS.LOOP.IND.VAR", [])
        if len(ind) != 1:
            raise self.fail(
                f"{len(ind)} induction variables (a collapsed loop is not mapped onto a graph yet)"
            )
        kind_ops = quals.get("QUAL.OSS.LOOP.TYPE", [])
        kinds = [int(str(v).split()[-1]) for v in kind_ops] if kind_ops else [0, 1, 1, 1, 1]
        if not 0 <= kinds[0] <= 3:
            raise self.fail(f"LOOP.TYPE {kinds[0]}: EXTRACT knows 0 (<), 1 (<=), 2 (>), 3 (>=)")
        signed = [k != 0 for k in (kinds[1:5] + [1, 1, 1, 1])[:4]]

        def bounds(prefix: str) -> tuple[list[str], str, str, str]:
            copier = Copier(self.fn, self.named, self.scope(), prefix, None, "the taskloop's bounds")
            out = []
            for q, s in zip(("LOWER.BOUND", "UPPER.BOUND", "STEP"), signed[1:]):
                t, v = self.bound(quals.get(f"QUAL.OSS.LOOP.{q}", []), copier, q.lower())
                out.append(_wide(copier, t, v, s))
            return copier.lines, out[0], out[1], out[2]

        lines, lb, ub, step = bounds(".r.")
        trip = [*lines]
        cmp = kinds[0]
        a, b = (ub, lb) if cmp < 2 else (lb, ub)
        trip.append(f"  %.trip.d = sub i64 {a}, {b}")
        if cmp >= 2:
            trip.append(f"  %.trip.neg = sub i64 0, {step}")
            trip.append(f"  %.trip.m = sub i64 %.trip.d, {step}")  # - step (step < 0: adds |step|)
            divisor = "%.trip.neg"
        else:
            trip.append(f"  %.trip.m = add i64 %.trip.d, {step}")
            divisor = step
        numerator = "%.trip.m"
        if cmp in (0, 2):
            trip.append("  %.trip.e = sub i64 %.trip.m, 1")
            numerator = "%.trip.e"
        trip.append(f"  %.trip.q = sdiv i64 {numerator}, {divisor}")
        trip.append("  %.trip = call i64 @llvm.smax.i64(i64 0, i64 %.trip.q)")
        # each instance: the induction variable = lb + id * step
        leaf, llb, _, lstep = bounds(".l.")
        var = ind[0].name
        t = self.var_type(var)
        leaf += [
            "  %.x.node = call ptr @llvm.hpvm.getNode()",
            "  %.x.id = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %.x.node)",
            f"  %.x.off = mul i64 %.x.id, {lstep}",
            f"  %.x.iv = add i64 {llb}, %.x.off",
        ]
        value = "%.x.iv"
        if t != "i64":
            leaf.append(f"  %.x.ivt = trunc i64 %.x.iv to {t}")
            value = "%.x.ivt"
        leaf.append(f"  store {t} {value}, ptr %{abi.quote(var)}")
        return (trip, "%.trip"), leaf, {var: ""}

    def intel_loop(
        self, quals: dict[str, list[Any]]
    ) -> tuple[tuple[list[str], str], list[str], dict[str, str]]:
        ivs, ubs = quals.get("QUAL.OMP.NORMALIZED.IV", []), quals.get("QUAL.OMP.NORMALIZED.UB", [])
        if not ivs or not ubs:
            raise self.fail("a PARALLEL.LOOP region without QUAL.OMP.NORMALIZED.IV and NORMALIZED.UB")
        iv, ub = ivs[0].name, ubs[0].name
        copier = Copier(self.fn, self.named, self.scope(), ".r.", None, "the loop's normalized upper bound")
        stored = self.stores.get(ub)
        if stored is None:
            raise self.fail(f"%{ub}, the normalized upper bound, is not stored once before the region")
        t = str(stored.type)
        last = _wide(copier, t, copier.value(stored, self.entry) if stored.value_kind.name != "constant_int"
                     else str(stored).split()[-1], True)  # fmt: skip
        trip = [
            *copier.lines,
            f"  %.trip.n = add i64 {last}, 1",
            "  %.trip = call i64 @llvm.smax.i64(i64 0, i64 %.trip.n)",
        ]
        self.body_start, self.latch_start = self.intel_blocks(iv)
        vt = self.var_type(iv)
        leaf = [
            "  %.x.node = call ptr @llvm.hpvm.getNode()",
            "  %.x.id = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %.x.node)",
        ]
        value = "%.x.id"
        if vt != "i64":
            leaf.append(f"  %.x.ivt = trunc i64 %.x.id to {vt}")
            value = "%.x.ivt"
        leaf.append(f"  store {vt} {value}, ptr %{abi.quote(iv)}")
        return (trip, "%.trip"), leaf, {iv: ""}

    def intel_blocks(self, iv: str) -> tuple[Any, Any]:
        """(the loop body's first block, the first instruction of its latch): the latch is
        the block storing ``iv + 1`` into the normalized index, the body what the loop's
        condition branches to."""
        blocks = {b.name: b for b in self.fn.blocks}
        latch = None
        for b in self.region.blocks:
            for ins in b.instructions:
                if ins.opcode == "store" and list(ins.operands)[1].name == iv:
                    v = list(ins.operands)[0]
                    if v.value_kind.name == "instruction" and self.named[v.name].opcode == "add":
                        latch = b
        if latch is None:
            raise self.fail(f"no latch storing %{iv} + 1 inside the region")
        term = str(list(latch.instructions)[-1]).strip()
        m = re.fullmatch(r"br label %(\S+)", term)
        if m is None:
            raise self.fail(f"the latch's terminator '{term}' does not branch back to the loop's condition")
        cond = blocks[m.group(1).strip('"')]
        m = re.fullmatch(r"br i1 %\S+, label %(\S+), label %\S+", str(list(cond.instructions)[-1]).strip())
        if m is None:
            raise self.fail("the loop's condition block does not end in a conditional branch into the body")
        return blocks[m.group(1).strip('"')], list(latch.instructions)[0]

    def var_type(self, name: str) -> str:
        m = re.search(r"= alloca ([^,]+)", str(self.named[name]))
        if m is None:
            raise self.fail(f"%{name} is not an alloca of @{self.fn.name}")
        return m.group(1).strip()


def _wide(copier: Copier, t: str, value: str, signed: bool) -> str:
    """``value`` of integer type ``t`` as an i64 operand."""
    if t == "i64":
        return value
    if re.fullmatch(r"-?\d+", value):
        return value
    name = f"%{copier.prefix}w{len(copier.lines)}"
    copier.lines.append(f"  {name} = {'sext' if signed else 'zext'} {t} {value} to i64")
    return name


__all__ = ["extract_foreign", "foreign_regions"]
