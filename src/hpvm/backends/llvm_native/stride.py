"""Which instance id moves an LLVM leaf's array accesses with unit stride: the loop order the
``cpu`` back end gives its replicated instances (``cpu/loopnest.py``).

**Unit stride** (``unit_stride_dimension``). Why. The ``cpu`` back end runs a replicated
leaf as a loop nest over its instance ids (``graphgen.py``), and LLVM vectorizes that nest
only along its innermost loop, and only well when consecutive iterations touch consecutive
elements. Python leaves are written row-major (x outermost, as NumPy indexes), which is the
default nest; HPVM-C programs follow the GPU convention instead (Parboil's stencil:
``A[(z*ny + y)*nx + x]``, id x the fastest-moving index), and with x outermost their
innermost loop strides ``nx*ny`` elements and never vectorizes (18–31× slower than
hand-written Numba). So the back end asks which id should be innermost. What. Each
``getelementptr`` whose base pointer is one of the function's pointer arguments (directly
or through other ``getelementptr``\\s) is looked at: its last index is followed back
through value-preserving operations (``add``, ``sub``, ``sext``, ``zext``, ``trunc``, ``or
disjoint``, and ``freeze``) to the id calls it reaches that way. A ``mul``, ``shl``,
division or anything else stops the walk: what it scales is not unit stride. (A
byte-addressed ``getelementptr i8`` whose index is one ``shl``/``mul`` of an element size,
as newer LLVM writes element indexing, is looked through once.) Each access that reaches
exactly one id that way votes for it; the id with strictly the most votes is the answer,
and there is none when nothing votes, on a tie, or when the function cannot be read (no
body text, ids queried in callees): then the caller keeps its default order. A function
without an answer whose values go through locals (``-O0`` code; ``llvm.extract``'s leaves,
which pass their inputs through one-slot locals) is read again after LLVM's SROA.
"""

from __future__ import annotations

import threading

from ...ir.bodies import LLVMBody
from ...ir.llvm_text import DEFINITION, parameters, split_top
from ...ir.llvm_text import VALUE_NAME as _NAME
from .access import FLAGS, ID_CALL, ID_DIMS, printed_function, promoted, strip_metadata

#: Operations through which an id keeps unit stride (``or`` only with ``disjoint``: an add).
_PASS = {"add", "sub", "sext", "zext", "trunc", "freeze"}
#: Element sizes a byte-addressed ``getelementptr i8`` may scale its index by.
_SCALES = {"1": 0, "2": 1, "4": 2, "8": 3, "16": 4}


def _operands(words: list[str]) -> list[str]:
    """An integer instruction's two operands, from its words after the opcode (flags and
    the type dropped)."""
    rest = [w for w in words[1:] if w not in FLAGS]
    return rest[1:3] if len(rest) == 3 else []


_LOCK = threading.Lock()
_STRIDE: dict[tuple[str, str], int | None] = {}


def unit_stride_dimension(body: LLVMBody) -> int | None:
    """The instance dimension (0 = x, 1 = y, 2 = z) that most of ``body``'s array accesses
    move along with unit stride, or ``None`` without a clear answer (module docstring)."""
    key = (body.module, body.function)
    with _LOCK:
        if key in _STRIDE:
            return _STRIDE[key]
    printed = printed_function(body)
    found = _analyse(printed[0] if printed else None)
    if found is None and printed is not None and " = alloca " in printed[0]:
        found = _analyse(promoted(body))
    with _LOCK:
        _STRIDE[key] = found
    return found


def _sign_extended(words: list[str], defs: dict[str, str]) -> str | None:
    """For ``ashr X, C`` with ``X = shl V, C``: ``V`` (a sign extension of V's low bits)."""
    ops = _operands(words)
    if len(ops) != 2 or not ops[0].startswith("%") or not ops[1].isdigit():
        return None
    shl = defs.get(ops[0], "").replace(",", " ").split()
    if not shl or shl[0] != "shl":
        return None
    inner = _operands(shl)
    return inner[0] if len(inner) == 2 and inner[1] == ops[1] and inner[0].startswith("%") else None


def _masked(words: list[str]) -> str | None:
    """For ``and V, 2^k - 1`` (k >= 8, a zero extension of V's low bits): ``V``."""
    ops = _operands(words)
    if len(ops) != 2 or not ops[0].startswith("%") or not ops[1].isdigit():
        return None
    mask = int(ops[1])
    return ops[0] if mask >= 255 and mask & (mask + 1) == 0 else None


def _pointer_arguments(define: str) -> set[str]:
    """The names of the ``ptr`` parameters on a ``define`` line."""
    names = set()
    for item in parameters(define):
        found = _NAME.findall(item)
        if item.startswith("ptr") and found:
            names.add(found[-1])
    return names


def _analyse(text: str | None) -> int | None:
    if text is None:
        return None
    define = next((line for line in text.splitlines() if line.startswith("define")), "")
    args = _pointer_arguments(define)
    defs: dict[str, str] = {}
    for line in text.splitlines():
        m = DEFINITION.match(line)
        if m:
            defs[m.group(1)] = strip_metadata(m.group(2))

    def base_is_argument(name: str, seen: int = 0) -> bool:
        while seen < 64:
            if name in args:
                return True
            rhs = defs.get(name, "")
            if not rhs.startswith("getelementptr"):
                return False
            parts = split_top(rhs[len("getelementptr") :])
            if len(parts) < 2:
                return False
            pointer = _NAME.findall(parts[1])
            if not pointer:
                return False
            name, seen = pointer[0], seen + 1
        return False

    def ids(name: str, depth: int = 0) -> set[int]:
        """The ids ``name`` moves with at unit stride (ids reaching it only through a
        scaling operation are not counted)."""
        if depth > 64:
            return set()
        rhs = defs.get(name)
        if rhs is None:
            return set()
        call = ID_CALL.search(rhs)
        if call is not None and rhs.split()[0] in ("call", "tail", "musttail", "notail"):
            return {ID_DIMS[call.group(1)]}
        words = rhs.replace(",", " ").split()
        op = words[0]
        if op == "or" and "disjoint" in words[1:3]:
            op = "add"
        if op in ("ashr", "and"):
            # sext(trunc(v)) as instcombine writes it: ashr (shl v, C), C; zext(trunc(v)):
            # and v, 2^k - 1. Either keeps v's stride.
            inner = _sign_extended(words, defs) if op == "ashr" else _masked(words)
            return ids(inner, depth + 1) if inner is not None else set()
        if op not in _PASS:
            return set()
        found: set[int] = set()
        for operand in _NAME.findall(rhs):
            found |= ids(operand, depth + 1)
        return found

    def scaled(name: str) -> str | None:
        """For a byte ``getelementptr``: the value an element-size ``shl``/``mul`` scales."""
        words = defs.get(name, "").replace(",", " ").split()
        if words and words[0] == "ashr":  # sext(v) * 2^k as instcombine writes it: ashr (shl v, C), C - k
            ops = _operands(words)
            shl = defs.get(ops[0], "").replace(",", " ").split() if ops else []
            inner = _operands(shl) if shl and shl[0] == "shl" else []
            if len(inner) == 2 and inner[1].isdigit() and ops[1].isdigit():
                if 0 <= int(inner[1]) - int(ops[1]) <= 4 and inner[0].startswith("%"):
                    return inner[0]
            return None
        if not words or words[0] not in ("shl", "mul"):
            return None
        ops = _operands(words)
        if len(ops) != 2 or not ops[0].startswith("%"):
            return None
        ok = ops[1] in {str(v) for v in _SCALES.values()} if words[0] == "shl" else ops[1] in _SCALES
        return ops[0] if ok else None

    votes = [0, 0, 0]
    for rhs in defs.values():
        if not rhs.startswith("getelementptr"):
            continue
        parts = split_top(rhs[len("getelementptr") :])
        if len(parts) < 3:
            continue
        source = parts[0].split()[-1] if parts[0].split() else ""
        pointer = _NAME.findall(parts[1])
        if not pointer or not base_is_argument(pointer[0]):
            continue
        index = _NAME.findall(parts[-1])
        if not index:
            continue  # a constant last index (a struct field, a fixed element)
        reach = ids(index[0])
        if not reach and source == "i8":
            inner = scaled(index[0])
            reach = ids(inner) if inner is not None else set()
        if len(reach) == 1:
            votes[reach.pop()] += 1
    best = max(votes)
    if best == 0 or votes.count(best) > 1:
        return None
    return votes.index(best)
