"""Whether an LLVM leaf's run is bounded: the LLVM half of ``ir/bounded.py``.

Why. The runtime runs a launch on the calling thread, saving two thread wake-ups (50–150 µs
on a loaded two-core machine), and replays it past the launch's checks, only when every
leaf's run is bounded by what the host sees before it starts (``runtime/quick.py``): its
work must be fixed by the run key (the arrays' shapes and the scalars' values), so that a
run like a short one before it is short too, and it must not wait on memory another launch
writes (it would hang the caller, where a worker waits). At first any loop was refused,
which sent nearly every field program to a worker on every launch — HPVM's and Parboil's
leaves loop over a row, a tile or four elements — at 60–100 µs a launch where a
straight-line leaf's took 2 µs.

What. The node function, read with LLVM's own parser, is bounded when

- every call is to an LLVM intrinsic (``llvm.*``: math, ``llvm.fmuladd``, debug records,
  lifetimes; ``llvm.mem*`` with a length the host determines, below), to one of C's math
  functions (``cosf``, ``sqrt``, ``powf``, …: ``_LIBM``) or to one of hpvm's queries and
  atomics (``llvm.hpvm.getNode``, instance ids and counts, ``getNumDims``,
  ``atomic.*``). A call of any other function — a helper, libc, a Python leaf's Numba body
  behind an exported leaf, inline assembly, a function pointer — is refused rather than
  followed, and so are ``llvm.hpvm.barrier`` and ``llvm.hpvm.malloc`` (group functions and
  the host's allocator), ``invoke``, ``callbr`` and ``indirectbr``; and
- every loop leaves on a test of values the host determines, and every turn of it passes
  such a test. A value is *host-determined* when it is a constant, an argument (a scalar
  of the key, or an array's address), an instance id or count, or computed from such
  values by pure instructions and intrinsics (``llvmpure.py``); a ``phi`` when its incoming
  values are, and no branch on memory chooses among different ones (below). A load, an
  atomic's result, a call's result other than a pure intrinsic's, or anything computed from
  one is *read from memory*. For each loop (each strongly connected part of the control
  flow), every edge out of it must be taken on a host-determined condition, and with the
  blocks of those tests removed, what is left must be bounded the same way (inner loops;
  a cycle left without such a test is a turn that may never test its exit).

So the control flow inside every loop, and with it every loop's iteration count, is a
function of what the run key holds: the same key, the same iterations. Branches on memory
are allowed where they choose between paths of one turn (an ``if`` in the body, as the
Python check allows one); a ``phi`` merging different values on paths such a branch
chooses among — its successors reach the ``phi``'s block through different predecessors
before the branch's immediate post-dominator, where every path from it meets again (what
follows no longer depends on the choice) — is read from memory. So a counter stepped
by 1 or 2 after a test of an element is, and a loop on it is refused, as one leaving on a
value read from memory is (``break`` on an element: the Python check refuses early exits
too).

A node function with allocas is read after LLVM's SROA has promoted its local slots
(``_promoted``): unoptimized code (``clang -O0``, GenHPVM's output before its passes) keeps
its loop counters in slots, whose loads the check would take as read from memory.

Conservative: it refuses some bounded leaves — a loop over a counter whose slot's address
escapes (SROA leaves it in memory), a loop that stops at a value read — and accepts
no loop whose iteration count depends on what the arrays hold. A loop whose host-determined
test never holds (``k != n`` stepping by 2 for an odd ``n``) runs forever on every run of its
key; its first run never ends, on a worker, and nothing later runs on the caller.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .bodies import LLVMBody
from .cache import code_digest, stored_json
from .llvmcontext import own_context, promoted_function
from .llvmpure import PURE, PURE_INTRINSICS
from .postdom import immediate_post_dominators

#: hpvm intrinsics a bounded leaf may call: queries and atomics (each a fixed amount of work).
_HPVM_QUERIES = frozenset(
    {
        "getNode",
        "getParentNode",
        "getNumDims",
        *(f"{q}.{d}" for q in ("getNodeInstanceID", "getNumNodeInstances") for d in "xyz"),
    }
)
#: C's math functions a bounded leaf may call (``cosf`` in MRI-Q's kernel, ``sqrtf`` in
#: CAVA's): a fixed amount of work, a result from the operands alone, no memory the graph
#: sees (``errno`` aside, which no leaf reads back).
_LIBM = re.compile(
    r"(sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|atanh|exp|exp2|expm1|log|log2|log10|"
    r"log1p|sqrt|cbrt|pow|hypot|fabs|floor|ceil|trunc|round|rint|nearbyint|fmin|fmax|fmod|remainder|"
    r"copysign|erf|erfc|tgamma|lgamma)f?"
)
_MEMORY_INTRINSICS = ("llvm.memcpy", "llvm.memmove", "llvm.memset")
_REFUSED_TERMINATORS = frozenset({"invoke", "callbr", "indirectbr"})
#: Instructions whose result is read from memory whatever their operands.
_READS = frozenset({"load", "atomicrmw", "cmpxchg", "va_arg", "landingpad"})


def llvm_unbounded_reason(body: LLVMBody, where: str) -> str | None:
    """Why ``body``'s node function may run unboundedly (``where`` names the leaf in the
    answer), or ``None`` when it is bounded (module docstring)."""
    found = _answers(body)["reason"]
    return None if found is None else f"{where} {found}"


def llvm_fixed_work(body: LLVMBody) -> bool:
    """Whether ``body``'s node function does the same work whatever its scalars' values: it
    is bounded and has no loop and no ``llvm.mem*`` call of a length not constant, so a run
    takes one path of straight-line code per instance (``bounded.fixed_work``)."""
    return _answers(body)["fixed"]


_LOCK = threading.Lock()
_ANSWERS: dict[tuple[str, str], dict[str, Any]] = {}  # (the module's SHA-1, the function)
_FIELDS: dict[str, type | tuple[type, ...]] = {"reason": (str, type(None)), "fixed": bool}


def _answers(body: LLVMBody) -> dict[str, Any]:
    """Both answers for ``body``, from one reading of its module: made once per process and
    kept in hpvm's cache (``llvm-bounded/``, ``cache.stored_json``) for later ones — an
    HPVM-C program's leaves each carry their whole translation unit, and parsing it for
    every leaf took 0.6 s of Cava's 2.8 s warm run."""
    key = (hashlib.sha1(body.module.encode()).hexdigest(), body.function)
    with _LOCK:
        found = _ANSWERS.get(key)
    if found is None:
        found = stored_json(
            "llvm-bounded", _code_version(), [body.function], body.module, _FIELDS, lambda: _analysed(body)
        )
        with _LOCK:
            _ANSWERS[key] = found
    return found


@functools.cache
def _code_version() -> str:
    """The code the answers come from, and the LLVM that parses the text (``cache.code_digest``)."""
    import llvmlite

    here = Path(__file__).parent
    return code_digest(
        [here / name for name in ("llvmbounded.py", "llvmcontext.py", "llvmpure.py", "postdom.py")],
        llvmlite.__version__,
    )


def _analysed(body: LLVMBody) -> dict[str, Any]:
    with own_context() as parse:
        flow = _flow(parse, body)
        if isinstance(flow, str):
            return {"reason": flow, "fixed": False}
        if not flow.lengths and not flow.cyclic():
            return {"reason": None, "fixed": True}
        varying = flow.read_from_memory()
        for name, length in flow.lengths:
            if length in varying:
                return {"reason": f"calls '{name}' with a length read from memory", "fixed": False}
        return {"reason": flow.loop_reason(set(flow.blocks), varying), "fixed": False}


def _flow(parse: Any, body: LLVMBody) -> _Flow | str:
    """The node function's flow (after SROA where it has slots), or why it is refused."""
    try:
        fn = parse(body.module).get_function(body.function)
    except (RuntimeError, NameError):
        return "has LLVM code that does not parse"
    if fn.is_declaration:
        return "has no LLVM body"
    if any(i.opcode == "alloca" for b in fn.blocks for i in b.instructions):
        fn = _promoted(parse, body)
    flow = _Flow(fn)
    if flow.refused is not None:
        return flow.refused
    if not flow.blocks:
        return "has no LLVM body"
    return flow


def _promoted(parse: Any, body: LLVMBody) -> Any:
    """``body``'s node function with its local slots promoted (``promoted_function``): a
    counter that unoptimized code keeps in an ``alloca`` is then a ``phi``, whose loop the
    check can bound; a value read from memory stays one. Where the text does not parse
    again, the function as written."""
    try:
        return promoted_function(parse, body.module, body.function)
    except (RuntimeError, NameError):
        return parse(body.module).get_function(body.function)


class _Flow:
    """A node function's control flow and instructions, as the bound check reads them
    (blocks and values are llvmlite references: equal when they are the same LLVM object)."""

    def __init__(self, fn: Any) -> None:
        self.blocks: list[Any] = []
        self.succ: dict[Any, list[Any]] = {}
        self.pred: dict[Any, list[Any]] = {}
        self.condition: dict[Any, Any] = {}  # block -> its branch's condition (none: unconditional)
        self.instructions: list[tuple[Any, str, list[Any]]] = []
        self.lengths: list[tuple[str, Any]] = []  # (intrinsic, length) of llvm.mem* calls
        self.refused: str | None = None
        self._ipdom: dict[Any, Any] | None = None  # (made when a phi needs it)
        self._before: dict[Any, set[Any]] = {}  # branch -> blocks its successors reach before it meets
        for block in fn.blocks:
            self.blocks.append(block)
            last: tuple[Any, str, list[Any]] | None = None
            for inst in block.instructions:
                opcode, operands = inst.opcode, list(inst.operands)
                if opcode in _REFUSED_TERMINATORS:
                    self.refused = f"has an '{opcode}'"
                    return
                if opcode == "call":
                    refused = self._call(operands)
                    if refused is not None:
                        self.refused = refused
                        return
                last = (inst, opcode, operands)
                self.instructions.append(last)
            targets = [] if last is None else [op for op in last[2] if op.value_kind.name == "basic_block"]
            self.succ[block] = targets
            if last is not None and last[1] in ("br", "switch") and len(targets) > 1:
                self.condition[block] = last[2][0]
        for block in self.blocks:
            self.pred.setdefault(block, [])
            for target in self.succ[block]:
                self.pred.setdefault(target, []).append(block)

    def _call(self, operands: list[Any]) -> str | None:
        """Why a ``call`` with these operands (the callee last) is not a bounded one, or
        ``None`` (an ``llvm.mem*`` call's length is kept for the value check)."""
        callee = operands[-1] if operands else None
        if callee is None or callee.value_kind.name != "function":
            return "calls through a pointer or inline assembly"
        name = callee.name
        if name.startswith("llvm.hpvm."):
            op = name[len("llvm.hpvm.") :]
            if op in _HPVM_QUERIES or op.startswith("atomic."):
                return None
            return f"calls '{name}'"
        if not name.startswith("llvm."):
            return None if _LIBM.fullmatch(name) else f"calls '{name}'"
        if name.startswith(_MEMORY_INTRINSICS) and operands[2].value_kind.name != "constant_int":
            self.lengths.append((name, operands[2]))
        return None

    def cyclic(self) -> bool:
        return any(_is_loop(part, self.succ) for part in _strong_parts(self.blocks, self.succ))

    # -- values read from memory -------------------------------------------------------

    def read_from_memory(self) -> set[Any]:
        """The values read from memory (module docstring), to a fixed point: a ``phi`` may
        become one when a branch it depends on does."""
        varying: set[Any] = set()
        joins: dict[tuple[Any, Any], list[Any]] = {}
        changed = True
        while changed:
            changed = False
            branches = [b for b, c in self.condition.items() if c in varying]
            for inst, opcode, operands in self.instructions:
                if inst not in varying and self._varies(inst, opcode, operands, varying, branches, joins):
                    varying.add(inst)
                    changed = True
        return varying

    def _varies(
        self,
        inst: Any,
        opcode: str,
        operands: list[Any],
        varying: set[Any],
        branches: list[Any],
        joins: dict[tuple[Any, Any], list[Any]],
    ) -> bool:
        if opcode in _READS:
            return True
        if opcode == "call":
            name = operands[-1].name
            if name.startswith("llvm.hpvm."):
                return name[len("llvm.hpvm.") :] not in _HPVM_QUERIES
            pure = PURE_INTRINSICS.match(name) or _LIBM.fullmatch(name)
            return not pure or any(op in varying for op in operands[:-1])
        if opcode == "phi":
            return self._phi_varies(inst, operands, varying, branches, joins)
        if opcode in PURE or opcode == "alloca":
            return any(op in varying for op in operands)
        return True  # (anything else: not known to be pure)

    def _phi_varies(
        self,
        inst: Any,
        values: list[Any],
        varying: set[Any],
        branches: list[Any],
        joins: dict[tuple[Any, Any], list[Any]],
    ) -> bool:
        if any(v in varying for v in values):
            return True
        if all(v == values[0] for v in values):
            return False
        incoming = list(zip(values, inst.incoming_blocks))
        here = inst.block
        for branch in branches:
            key = (branch, here)
            if key not in joins:
                joins[key] = self._chosen(branch, here)
            chosen = [v for v, b in incoming if b in joins[key]]
            if any(v != chosen[0] for v in chosen):
                return True
        return False

    def _chosen(self, branch: Any, join: Any) -> list[Any]:
        """The predecessors of ``join`` through which ``branch``'s choice may arrive at it:
        none when ``join`` lies past the branch's immediate post-dominator (every path from
        the branch passes it first: what happens after does not depend on the choice) or
        when at most one of its successors leads there; else those its successors reach."""
        meet = self._post_dominator(branch)
        if meet is not None and join != meet:
            if branch not in self._before:
                self._before[branch] = set().union(*(self._reached(s, {meet}) for s in self.succ[branch]))
            if join not in self._before[branch]:
                return []
        preds = self.pred.get(join, [])
        reached: set[Any] = set()
        leading = 0
        for successor in dict.fromkeys(self.succ[branch]):
            if successor == join:
                reached.add(branch)
                leading += 1
                continue
            region = self._reached(successor, {join})
            found = {p for p in preds if p in region}
            reached |= found
            leading += bool(found)
        return list(reached) if leading > 1 else []

    def _post_dominator(self, block: Any) -> Any:
        """``block``'s immediate post-dominator (the returns and other ends joined in one
        virtual exit), or ``None``: it has none, or it cannot reach an end (a loop that
        never leaves)."""
        if self._ipdom is None:
            self._ipdom = immediate_post_dominators(self.blocks, self.succ)
        return self._ipdom.get(block)

    def _reached(self, start: Any, avoid: set[Any]) -> set[Any]:
        """``start`` and the blocks reachable from it without entering ``avoid``."""
        if start in avoid:
            return set()
        seen: set[Any] = set()
        todo = [start]
        while todo:
            block = todo.pop()
            if block in seen:
                continue
            seen.add(block)
            todo.extend(s for s in self.succ[block] if s not in avoid and s not in seen)
        return seen

    # -- loops ---------------------------------------------------------------------------

    def loop_reason(self, blocks: set[Any], varying: set[Any]) -> str | None:
        """Why a loop among ``blocks`` may run a number of turns the host does not
        determine, or ``None`` (module docstring: each loop's exits, then what is left)."""
        for part in _strong_parts([b for b in self.blocks if b in blocks], self.succ, blocks):
            if not _is_loop(part, self.succ):
                continue
            tests = {b for b in part if any(s not in part for s in self.succ[b])}
            for block in sorted(tests, key=self.blocks.index):  # (the first in the text: one answer)
                condition = self.condition.get(block)
                if condition is None or condition in varying:
                    return (
                        f"has a loop that leaves on a value read from memory (block '{_label(block, self)}')"
                    )
            if not tests:
                return (
                    f"has a loop without an exit (block '{_label(min(part, key=self.blocks.index), self)}')"
                )
            inner = self.loop_reason(part - tests, varying)
            if inner is not None:
                return inner
        return None


def _label(block: Any, flow: _Flow) -> str:
    return block.name or f"#{flow.blocks.index(block)}"


def _is_loop(part: set[Any], succ: dict[Any, list[Any]]) -> bool:
    return len(part) > 1 or any(b in succ[b] for b in part)


def _strong_parts(
    blocks: Iterable[Any], succ: dict[Any, list[Any]], within: set[Any] | None = None
) -> list[set[Any]]:
    """The strongly connected parts of the blocks' control flow (edges leaving ``within``,
    where given, are left out): Tarjan's algorithm, iterative."""
    order = list(blocks)
    inside = set(order) if within is None else within
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    stack: list[Any] = []
    on_stack: set[Any] = set()
    parts: list[set[Any]] = []
    for root in order:
        if root in index:
            continue
        work: list[tuple[Any, int]] = [(root, 0)]
        while work:
            block, k = work.pop()
            if k == 0:
                index[block] = low[block] = len(index)
                stack.append(block)
                on_stack.add(block)
            targets = [s for s in succ[block] if s in inside]
            if k < len(targets):
                work.append((block, k + 1))
                nxt = targets[k]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[block] = min(low[block], index[nxt])
                continue
            if work:  # (back in the caller: carry this block's low link up)
                parent = work[-1][0]
                low[parent] = min(low[parent], low[block])
            if low[block] == index[block]:
                part: set[Any] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    part.add(top)
                    if top == block:
                        break
                parts.append(part)
    return parts


__all__ = ["llvm_unbounded_reason"]
