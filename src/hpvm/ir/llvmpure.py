"""LLVM instructions and intrinsics whose result is a function of their operands alone: no
memory read, no side effect. Two analyses of LLVM leaves need the list and must agree on
it: which values are the same for every instance of a group (the work-item loops,
``backends/llvm_native/wiuniform.py``) and which values the host determines before a run,
so that a loop exiting on them runs the same iterations every time (``llvmbounded.py``)."""

from __future__ import annotations

import re

#: The pure instructions: a result computed from the operands only.
PURE = frozenset(
    "add sub mul udiv sdiv urem srem shl lshr ashr and or xor fadd fsub fmul fdiv frem fneg icmp fcmp "
    "trunc zext sext fptrunc fpext fptoui fptosi uitofp sitofp ptrtoint inttoptr bitcast addrspacecast "
    "getelementptr select extractelement insertelement shufflevector extractvalue insertvalue freeze".split()
)
#: Intrinsics without side effects or memory access: a result computed from the operands only.
PURE_INTRINSICS = re.compile(
    r"llvm\.(smax|smin|umax|umin|abs|fmuladd|fma|fabs|sqrt|minnum|maxnum|minimum|maximum|copysign|floor|"
    r"ceil|trunc|round|rint|nearbyint|ctpop|ctlz|cttz|fshl|fshr|bswap|bitreverse|[su](add|sub|mul)\.with\."
    r"overflow|[su](add|sub)\.sat)\."
)

__all__ = ["PURE", "PURE_INTRINSICS"]
