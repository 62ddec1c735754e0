"""Work-item loops specialized on the group's extents, as PoCL compiles a kernel per local size.

A barrier leaf's group runner (``wiloops.py``, ``NativeLeaf.group_symbol``) takes the
group's extents at run time, so LLVM sees every work-item loop with an unknown trip count:
it vectorizes the x loop with a remainder, keeps each per-instance value in an array on
memory, and cannot fuse the loops a uniform ``for`` unrolls into. HPVM's programs nearly
always give a barrier leaf constant extents (``__hpvm__createNodeND(2, tile, TILE, TILE)``),
and the ``cpu`` back end knows them when it writes the graph code. For such a node it calls
a copy of the runner whose extents *are* those constants (``specialized_symbol``): LLVM then
turns each x loop into whole vectors, fuses the unrolled uniform loop's phases, and keeps
the per-instance arrays in a fixed stack frame. sgemm.c's tiled kernel (8×8 groups) at 256³
went from 2.2 to 1.5 ms on 2 cores (``benchmarks/c_bench.py``).

The copy is the optimized clone's runner with its three extent parameters renamed
(``%nx.given``, never read) and ``%nx``, ``%ny``, ``%nz`` defined as the constants at its
entry; interprocedural constant propagation carries them into ``__hpvm_wi.<digest>``, its
one callee. Everything else in the module is made internal, so only what the copy reaches
is compiled. The copy is compiled on its own (``jit.py``) and called by name, as the plain
runner is (``numba_call._register_group``); the caller passes the same constants it was
specialized on (``cpu/graphgen.py``'s ``group_symbol`` asks for it only for constant sizes).
"""

from __future__ import annotations

import os
import re
import threading

from .native import NativeLeaf

Extents = tuple[int, int, int]
#: Whether the cpu back end asks for specialized copies; ``HPVM_WORKITEM_SPECIALIZE=0`` (read
#: when hpvm is imported) runs every node on the plain runner, to compare or to rule it out.
SPECIALIZE = os.environ.get("HPVM_WORKITEM_SPECIALIZE", "1") != "0"


def specialized_symbol(native: NativeLeaf, extents: Extents) -> str:
    """The runner of ``native``'s work-item loops for groups of exactly ``extents`` (x, y, z)."""
    return f"{native.group_symbol}.k{'x'.join(str(e) for e in extents)}"


def specialized_text(native: NativeLeaf, extents: Extents) -> str:
    """``native``'s module with ``specialized_symbol`` defined and everything else internal."""
    assert native.barrier_lowering == "workitem", "only work-item loops are specialized"
    assert all(e >= 0 for e in extents), extents
    lines = native.text.split("\n")
    head = re.compile(r"^define\b[^\n]*" + re.escape(f"@{native.group_symbol}("))
    found = [k for k, line in enumerate(lines) if head.match(line)]
    assert len(found) == 1, f"the clone defines {native.group_symbol} once"
    k = found[0]
    line = lines[k].replace(f"@{native.group_symbol}(", f"@{specialized_symbol(native, extents)}(", 1)
    for name in ("nx", "ny", "nz"):
        line, count = re.subn(rf"%{name}(?=[,)])", f"%{name}.given", line, count=1)
        assert count == 1, f"the runner takes %{name}"
    lines[k] = line
    at = k + 1 if lines[k + 1].rstrip().endswith(":") else k  # (after the entry block's label)
    constants = [f"  %{name} = add i64 {e}, 0" for name, e in zip(("nx", "ny", "nz"), extents)]
    lines[at + 1 : at + 1] = constants
    for j, text in enumerate(lines):
        if j != k and text.startswith("define ") and not re.match(r"define (internal|private) ", text):
            lines[j] = _LINKAGE.sub("define internal ", text, count=1)
    return "\n".join(lines)


#: ``define`` and the linkage and preemption words an external definition may carry, which
#: ``internal`` replaces.
_LINKAGE = re.compile(
    r"^define (?:(?:external|linkonce_odr|linkonce|weak_odr|weak|available_externally|dso_preemptable|dso_local)\s+)*"
)


_ADDRESSES: dict[str, int] = {}
_LOCK = threading.Lock()


def specialized_group(native: NativeLeaf, extents: Extents) -> str:
    """``specialized_symbol``, compiled once and resolvable by name from Numba's code."""
    symbol = specialized_symbol(native, extents)
    with _LOCK:
        if symbol not in _ADDRESSES:
            import llvmlite.binding as llvm

            from .jit import jit_symbol

            _ADDRESSES[symbol] = address = jit_symbol(specialized_text(native, extents), symbol)
            llvm.add_symbol(symbol, address)
    return symbol


__all__ = ["SPECIALIZE", "Extents", "specialized_group", "specialized_symbol", "specialized_text"]
