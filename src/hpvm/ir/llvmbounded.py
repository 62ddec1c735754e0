"""Whether an LLVM leaf's run is bounded: the LLVM half of ``ir/bounded.py``.

Why. The runtime runs a launch on the calling thread, saving two thread wake-ups (50–150 µs
on a loaded two-core machine), only when every leaf's run is bounded by what the host sees
before it starts (``runtime/quick.py``). HPVM-C and other LLVM leaves were always refused
("has a llvm body"), so every launch of an HPVM-C program went to a worker: the one-step
stencil of ``examples/c/stencil.c`` at 128×128×32 paid 50–70 µs of hand-off on top of a
150 µs step, where the same graph with a Python leaf ran inline.

What. The node function, read with LLVM's own parser, is bounded when

- its control-flow graph has no cycle (no loop of any kind, so every instance runs a fixed
  path of straight-line code: it cannot spin on a flag another launch writes, and its work
  does not depend on what the arrays hold), and
- every call is to an LLVM intrinsic (``llvm.*``: math, ``llvm.fmuladd``, debug records,
  lifetimes; the ``llvm.mem*`` ones only with a constant length) or to one of hpvm's
  queries and atomics (``llvm.hpvm.getNode``, instance ids and counts, ``getNumDims``,
  ``atomic.*``). A call of any other function — a helper, libc, a Python leaf's Numba body
  behind an exported leaf, inline assembly, a function pointer — is refused rather than
  followed, and so are ``llvm.hpvm.barrier`` and ``llvm.hpvm.malloc`` (group functions and
  the host's allocator: not needed by the leaves this serves), ``invoke``, ``callbr`` and
  ``indirectbr``.

Conservative, like the Python check: it refuses bounded leaves (any loop, even one over a
constant range), never accepts one that loops.
"""

from __future__ import annotations

from typing import Any

from .bodies import LLVMBody

#: hpvm intrinsics a bounded leaf may call: queries and atomics (each a fixed amount of work).
_HPVM_QUERIES = frozenset(
    {
        "getNode",
        "getParentNode",
        "getNumDims",
        *(f"{q}.{d}" for q in ("getNodeInstanceID", "getNumNodeInstances") for d in "xyz"),
    }
)
_MEMORY_INTRINSICS = ("llvm.memcpy", "llvm.memmove", "llvm.memset")
_REFUSED_TERMINATORS = frozenset({"invoke", "callbr", "indirectbr"})


def llvm_unbounded_reason(body: LLVMBody, where: str) -> str | None:
    """Why ``body``'s node function may run unboundedly (``where`` names the leaf in the
    answer), or ``None`` when it is bounded (module docstring). Parses the module each
    call: ``bounded.unbounded_reason`` caches the answer on the leaf."""
    found = _reason(body)
    return None if found is None else f"{where} {found}"


def _reason(body: LLVMBody) -> str | None:
    import llvmlite.binding as llvm

    try:
        fn = llvm.parse_assembly(body.module).get_function(body.function)
    except (RuntimeError, NameError):
        return "has LLVM code that does not parse"
    if fn.is_declaration:
        return "has no LLVM body"
    successors: dict[str, list[str]] = {}
    order: list[str] = []
    for block in fn.blocks:
        name = block.name
        if not name or name in successors:  # (a block we cannot name: do not guess)
            return "has an unnamed basic block"
        order.append(name)
        targets: list[str] = []
        for inst in block.instructions:
            opcode = inst.opcode
            if opcode in _REFUSED_TERMINATORS:
                return f"has an '{opcode}'"
            if opcode == "call":
                refused = _refused_call(list(inst.operands))
                if refused is not None:
                    return refused
            targets += [op.name for op in inst.operands if op.value_kind.name == "basic_block"]
        successors[name] = targets
    if not order:
        return "has no LLVM body"
    return "has a loop" if _has_cycle(order[0], successors) else None


def _refused_call(operands: list[Any]) -> str | None:
    """Why a ``call`` with these operands (the callee last) is not a bounded one, or ``None``."""
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
        return f"calls '{name}'"
    if name.startswith(_MEMORY_INTRINSICS) and operands[2].value_kind.name != "constant_int":
        return f"calls '{name}' with a length known only at run time"
    return None


def _has_cycle(entry: str, successors: dict[str, list[str]]) -> bool:
    """Whether the blocks reachable from ``entry`` hold a cycle (iterative DFS, three colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[tuple[str, int]] = [(entry, 0)]
    state[entry] = 1
    while stack:
        block, k = stack.pop()
        targets = successors.get(block, [])
        if k < len(targets):
            stack.append((block, k + 1))
            nxt = targets[k]
            seen = state.get(nxt, 0)
            if seen == 1:
                return True
            if seen == 0:
                state[nxt] = 1
                stack.append((nxt, 0))
        else:
            state[block] = 2
    return False
