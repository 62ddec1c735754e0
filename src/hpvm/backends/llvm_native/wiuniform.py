"""Work-item loops, the analysis half: an LLVM function read into blocks, which of its values
and blocks are the same for every instance of a group (uniformity), and the stretches of
per-instance code between the points where control flow is shared (``wiloops.py``'s module
docstring says how, and why; ``wiloops.py`` emits the loops from what this finds)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...ir.llvmpure import PURE, PURE_INTRINSICS
from ...ir.postdom import immediate_post_dominators
from .coro import function_span

_DBG = re.compile(r", !dbg !\d+")
_TERMINATORS = frozenset({"br", "switch", "ret", "unreachable"})
BARRIER_BLOCK = "__hpvm_bar."
EXIT = ""


def llvm_local(name: str) -> str:
    """``name`` as LLVM text writes a local (``%name`` or ``%"name"``)."""
    if re.fullmatch(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*", name):
        return f"%{name}"
    return '%"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}" for c in name) + '"'


def unquote(token: str) -> str:
    if not token.startswith('"'):
        return token
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), token[1:-1])


@dataclass
class Ins:
    name: str  # the result's name ("" when none)
    opcode: str
    text: str
    operands: list[tuple[str, str]]  # (name, value kind)

    def locals(self) -> list[str]:
        """The names of the instruction and argument operands."""
        return [n for n, kind in self.operands if kind in ("instruction", "argument")]


@dataclass
class Block:
    name: str
    body: list[Ins]
    term: Ins
    succ: list[str]


@dataclass
class Function:
    blocks: list[Block]
    allocas: dict[str, Ins]  # reg2mem's and the program's, by name
    original: set[str]  # allocas the program made (before reg2mem)
    by_name: dict[str, Block] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {b.name: b for b in self.blocks}


def _instruction_lines(module_text: str, fn: str) -> list[str]:
    """``fn``'s instruction lines as the module prints them (metadata numbered module-wide,
    which printing one instruction alone does not do)."""
    lines = module_text.split("\n")
    start, end = function_span(lines, fn)
    return [
        line
        for line in lines[start + 1 : end]
        if line.startswith("  ") and not line.lstrip().startswith(("#dbg_", ";"))
    ]


def read_function(fn: Any, original: set[str], module_text: str) -> Function | str:
    blocks = []
    allocas = {}
    printed = iter(_instruction_lines(module_text, fn.name))
    for b in fn.blocks:
        ins = []
        for i in b.instructions:
            ops = [(o.name, o.value_kind.name) for o in i.operands]
            line = next(printed, "")
            if line.split(" = ")[0].strip() != (
                llvm_local(i.name) if i.name else line.split(" = ")[0].strip()
            ):
                return "its printed LLVM does not match its instructions"
            ins.append(Ins(i.name, i.opcode, _DBG.sub("", line.rstrip()), ops))
            if i.opcode == "alloca":
                allocas[i.name] = ins[-1]
            if i.opcode in ("phi", "invoke", "callbr", "landingpad", "indirectbr", "resume", "catchswitch"):
                return f"its LLVM has {i.opcode} where work-item loops do not handle it"
        term = ins.pop()
        if term.opcode not in _TERMINATORS:
            return f"its LLVM ends a block with {term.opcode}"
        succ = [n for n, kind in term.operands if kind == "basic_block"]
        if term.opcode == "br" and len(succ) == 2:
            succ.reverse()  # (llvm lists a conditional br's targets last first)
        blocks.append(Block(b.name, ins, term, succ))
    return Function(blocks, allocas, original)


def post_dominators(f: Function) -> dict[str, str] | None:
    """Each block's immediate post-dominator (``EXIT`` the virtual exit after every return:
    ``ir/postdom.py``); ``None`` when a block cannot reach a return (an endless loop)."""
    ipdom = immediate_post_dominators([b.name for b in f.blocks], {b.name: b.succ for b in f.blocks}, EXIT)
    return ipdom if len(ipdom) == len(f.blocks) else None


def ctx_offset(ins: Ins) -> int | None:
    """The byte offset of ``getelementptr i8|i64, ptr %ctx, i64 C``; ``None`` otherwise."""
    m = re.search(r"= getelementptr (?:[a-z]+ )*(i8|i64), ptr %ctx, i64 (-?\d+)(?:,\s*!.*)?$", ins.text)
    if not m:
        return None
    return int(m.group(2)) * (8 if m.group(1) == "i64" else 1)


@dataclass
class Analysis:
    uniform: set[str]  # uniform values (names)
    skeleton: set[int]  # ids of instructions run once for the group
    divergent: set[str]  # divergent blocks
    uniform_allocas: set[str]
    ids: dict[str, int]  # loads of an instance id -> axis
    immutable: set[str]  # pointers to memory no instance writes (argument slots, shared context)


def analyse(f: Function, pdom: dict[str, str], header: int, shared_ids: tuple[int, ...] = ()) -> Analysis:
    """What is the same for every instance (``wiloops.py``'s module docstring, step 1).
    ``shared_ids``: axes whose id every instance shares (a jammed call's instances differ
    along one axis only, ``wijam.py``): read from the context like its shared part."""
    ids_at = {8 * (header + k): k for k in range(3) if k not in shared_ids}
    shared_at = {8 * (header + k) for k in shared_ids}
    shared_from = 8 * (header + 3)
    id_geps: dict[str, int] = {}
    immutable = {"args"}
    for b in f.blocks:
        for i in b.body:
            if i.opcode == "getelementptr" and i.operands and i.operands[0][0] == "ctx":
                off = ctx_offset(i)
                if off is not None and off in ids_at:
                    id_geps[i.name] = ids_at[off]
                elif off is not None and (off >= shared_from or off in shared_at):
                    immutable.add(i.name)
            elif i.opcode == "getelementptr" and i.operands and i.operands[0][0] in immutable:
                if all(kind.startswith("constant") for _, kind in i.operands[1:]):
                    immutable.add(i.name)
    ids = {
        i.name: id_geps[i.operands[0][0]]
        for b in f.blocks
        for i in b.body
        if i.opcode == "load" and i.operands[0][0] in id_geps and " i64, ptr" in i.text
    }
    # reg2mem's allocas reached only by plain loads and stores through them
    users: dict[str, list[Ins]] = {a: [] for a in f.allocas}
    for b in f.blocks:
        for i in [*b.body, b.term]:
            for n in i.locals():
                if n in users:
                    users[n].append(i)
    candidates = {
        a
        for a, us in users.items()
        if a not in f.original
        and all(
            (u.opcode == "load" and u.operands[0][0] == a)
            or (u.opcode == "store" and u.operands[1][0] == a and u.operands[0][0] != a)
            for u in us
        )
    }
    _immutable_reloads(f, candidates, users, immutable)
    uni_allocas = set(candidates)
    divergent: set[str] = set()
    while True:
        uniform = {"args"}
        skeleton: set[int] = set()
        uniform_stores: dict[str, bool] = {a: True for a in uni_allocas}
        branches = []
        for b in f.blocks:
            if b.name in divergent:
                for i in b.body:
                    if i.opcode == "store" and i.operands[1][0] in uniform_stores:
                        uniform_stores[i.operands[1][0]] = False
                continue
            for i in b.body:
                ok = False
                plain = " volatile " not in i.text and " atomic " not in i.text
                if i.opcode == "alloca":
                    ok = True
                    if i.name in uni_allocas:
                        uniform.add(i.name)
                elif i.opcode == "load":
                    ok = plain and (i.operands[0][0] in immutable or i.operands[0][0] in uni_allocas)
                elif i.opcode == "store":
                    target = i.operands[1][0]
                    ok = plain and target in uni_allocas and _all_uniform(i.operands[:1], uniform)
                    if target in uniform_stores and not ok:
                        uniform_stores[target] = False
                elif i.name in immutable:
                    ok = True
                elif i.opcode in PURE and i.name not in ids:
                    ok = _all_uniform(i.operands, uniform)
                elif i.opcode == "call" and PURE_INTRINSICS.match(i.operands[-1][0]):
                    ok = _all_uniform(i.operands[:-1], uniform)
                if ok:
                    skeleton.add(id(i))
                    if i.name and i.opcode != "store":
                        uniform.add(i.name)
            if i_cond := _condition(b.term):
                if not _all_uniform([i_cond], uniform):
                    branches.append(b.name)
        for b in f.blocks:  # a branch in divergent code diverges too
            if b.name in divergent and _condition(b.term):
                branches.append(b.name)
        new_divergent = set(divergent)
        for name in branches:
            stop = pdom[name]
            todo = list(f.by_name[name].succ)
            while todo:
                n = todo.pop()
                if n == stop or n in new_divergent:
                    continue
                new_divergent.add(n)
                todo.extend(f.by_name[n].succ)
        new_allocas = {a for a in uni_allocas if uniform_stores[a]}
        if new_allocas == uni_allocas and new_divergent == divergent:
            return Analysis(uniform, skeleton, divergent, uni_allocas, ids, immutable)
        uni_allocas, divergent = new_allocas, new_divergent


def _immutable_reloads(
    f: Function, candidates: set[str], users: dict[str, list[Ins]], immutable: set[str]
) -> None:
    """Add to ``immutable`` the reloads of a ``reg2mem`` alloca stored once with a pointer
    already in it (a pointer into the shared context, kept across blocks: the parent's id
    read after a barrier), and what constant offsets from those point to, to a fixed point."""
    grew = True
    while grew:
        grew = False
        for al in candidates:
            stores = [u for u in users[al] if u.opcode == "store"]
            if len(stores) != 1 or stores[0].operands[0][0] not in immutable:
                continue
            for u in users[al]:
                if u.opcode == "load" and u.name not in immutable:
                    immutable.add(u.name)
                    grew = True
        for b in f.blocks:
            for i in b.body:
                if i.opcode == "getelementptr" and i.operands and i.operands[0][0] in immutable:
                    if i.name not in immutable and all(
                        kind.startswith("constant") for _, kind in i.operands[1:]
                    ):
                        immutable.add(i.name)
                        grew = True


def _condition(term: Ins) -> tuple[str, str] | None:
    if term.opcode == "br" and len(term.operands) == 3:
        return term.operands[0]
    if term.opcode == "switch":
        return term.operands[0]
    return None


def _all_uniform(operands: list[tuple[str, str]], uniform: set[str]) -> bool:
    return all(n in uniform for n, kind in operands if kind in ("instruction", "argument"))


@dataclass
class Stretch:
    """The divergent blocks a uniform block owns, and where they all lead."""

    blocks: list[str]
    merge: str | None  # None: they return


def structure(f: Function, a: Analysis) -> dict[str, Stretch] | str:
    """Each owner's divergent stretch; a reason when the code is not structured so."""
    unstructured = "its divergent control flow is not entered from one place and left to one place"
    for b in f.blocks:
        if re.fullmatch(re.escape(BARRIER_BLOCK) + r"\d+", b.name) and b.name in a.divergent:
            return "a barrier is under control flow that depends on the instance id"
    preds: dict[str, set[str]] = {b.name: set() for b in f.blocks}
    for b in f.blocks:
        for s in b.succ:
            preds[s].add(b.name)
    parts: dict[str, set[str]] = {}  # owner -> its divergent blocks
    seen: set[str] = set()
    for b in f.blocks:
        if b.name not in a.divergent or b.name in seen:
            continue
        part: set[str] = set()
        todo = [b.name]
        while todo:  # its connected divergent blocks
            n = todo.pop()
            if n in part:
                continue
            part.add(n)
            todo += [s for s in [*f.by_name[n].succ, *preds[n]] if s in a.divergent]
        seen |= part
        entries = {p for n in part for p in preds[n] if p not in part}
        if len(entries) != 1:
            return unstructured
        parts.setdefault(entries.pop(), set()).update(part)
    stretches = {}
    for owner, inside in parts.items():
        exits = {s for n in inside for s in f.by_name[n].succ if s not in inside}
        exits |= {s for s in f.by_name[owner].succ if s not in inside}
        if len(exits) > 1 or owner in a.divergent:
            return unstructured
        merge = next(iter(exits), None)
        stretches[owner] = Stretch([b.name for b in f.blocks if b.name in inside], merge)
    for b in f.blocks:
        cond = _condition(b.term)
        if b.name not in stretches and b.name not in a.divergent and cond is not None:
            if not _all_uniform([cond], a.uniform) and len(set(b.succ)) > 1:
                return unstructured
    return stretches


def owner(f: Function, stretches: dict[str, Stretch], block: str) -> str:
    for owner, s in stretches.items():
        if block in s.blocks:
            return owner
    return block


def divergent_term(b: Block, a: Analysis) -> bool:
    cond = _condition(b.term)
    return cond is not None and not _all_uniform([cond], a.uniform)


def fusable(f: Function, a: Analysis, stretches: dict[str, Stretch]) -> set[str]:
    """The uniform blocks whose per-instance code joins the loop of the block before them:
    not a barrier's, entered only from one uniform block that owns no divergent stretch and
    branches uniformly (so the skeleton knows, before any instance runs, that they follow),
    the first block excepted. Each such block has one predecessor, so the blocks fused after
    a head form a tree, and each way out of it is one loop."""
    preds: dict[str, list[str]] = {b.name: [] for b in f.blocks}
    for b in f.blocks:
        for t in dict.fromkeys(b.succ):
            preds[t].append(b.name)
    fused = set()
    for b in f.blocks[1:]:
        ps = preds[b.name]
        if b.name in a.divergent or re.fullmatch(re.escape(BARRIER_BLOCK) + r"\d+", b.name) or len(ps) != 1:
            continue
        p = f.by_name[ps[0]]
        if (
            p.name != b.name
            and p.name not in a.divergent
            and p.name not in stretches
            and not divergent_term(p, a)
        ):
            if p.term.opcode in ("br", "switch"):
                fused.add(b.name)
    return fused


def head(f: Function, fused: set[str], block: str) -> str:
    """The block heading the tree ``block`` is fused into (``fusable``)."""
    seen = set()
    while block in fused and block not in seen:
        seen.add(block)
        block = next(b.name for b in f.blocks if block in b.succ)
    return block
