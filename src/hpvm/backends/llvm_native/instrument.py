"""An LLVM leaf whose memory accesses report themselves: what ``interp``'s race detector
(``backends/interp/races.py``) records for LLVM leaves, as it records Python leaves'
accesses through its checked arrays.

Why a rewrite of the leaf's own module and not of its clone: the clone (``native.py``)
then threads the instance context into every instrumented function and turns the leaf
into coroutines when it reaches a barrier, exactly as for the plain leaf, and the
instrumented clone is one more clone (its own digest), JIT-compiled as any.

What. Each ``load``, ``store``, ``atomicrmw`` and ``cmpxchg`` in a function the module
defines, and each call of seed 000's ``llvm.hpvm.atomic.*``, gets a call before it::

    call void @__hpvm_race(i64 %instance, ptr %address, i64 %bytes, i64 %code)

``%instance`` is the instance's row-major index, from its ``llvm.hpvm.getNode()`` handle's
ids at the function's entry (which works alike for the instances run one by one and for
the coroutines of a barrier leaf), ``%bytes`` the access's size and
``%code`` its site (an index into ``Instrumented.sites``) shifted left by two over its kind
(0 read, 1 write, 2 atomic). Before each ``llvm.hpvm.barrier()`` call goes one with kind 3
(the instance reached a barrier: what follows is a new phase). Accesses whose address is a
local (an ``alloca``, directly or through ``getelementptr``\\s) or a global are left alone:
no other instance can reach them. Every other address is reported, whichever way it was
computed (through memory, a callee's parameter, a ``phi``): the recorder keeps those that
fall into the instance's array arguments (``__hpvm_race`` is an opaque external call, so
the optimizer keeps every access it reports, in order; it reports what the source does,
not what LLVM would have merged).

Not seen: ``llvm.memcpy``/``llvm.memset`` and other intrinsics that touch memory, accesses
in functions reached through a function pointer (the clone refuses those: a function
calling ``getNode`` must be called directly), and vector gathers and scatters.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ...ir.bodies import LLVMBody
from ...ir.debuginfo import DebugInfo
from ...ir.llvm_text import DEFINITION
from .access import leading_type, printed_function, split_top, type_size

RECORDER = "__hpvm_race"
READ, WRITE, ATOMIC, BARRIER = 0, 1, 2, 3
_NODE = "%__hpvm_race.node"
_FLAT = "%__hpvm_race.flat"
#: The entry of an instrumented function: the instance's row-major index from its handle.
_ENTRY = f"""  {_NODE} = call ptr @llvm.hpvm.getNode()
  %__hpvm_race.x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr {_NODE})
  %__hpvm_race.y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr {_NODE})
  %__hpvm_race.z = call i64 @llvm.hpvm.getNodeInstanceID.z(ptr {_NODE})
  %__hpvm_race.ny = call i64 @llvm.hpvm.getNumNodeInstances.y(ptr {_NODE})
  %__hpvm_race.nz = call i64 @llvm.hpvm.getNumNodeInstances.z(ptr {_NODE})
  %__hpvm_race.xy0 = mul i64 %__hpvm_race.x, %__hpvm_race.ny
  %__hpvm_race.xy = add i64 %__hpvm_race.xy0, %__hpvm_race.y
  %__hpvm_race.xyz0 = mul i64 %__hpvm_race.xy, %__hpvm_race.nz
  {_FLAT} = add i64 %__hpvm_race.xyz0, %__hpvm_race.z"""
_QUERIES = (
    "declare ptr @llvm.hpvm.getNode()",
    *(f"declare i64 @llvm.hpvm.getNodeInstanceID.{d}(ptr)" for d in "xyz"),
    *(f"declare i64 @llvm.hpvm.getNumNodeInstances.{d}(ptr)" for d in "yz"),
)
_DEFINE = re.compile(r"^define [^@]*@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)\(")
_POINTER = re.compile(r"^ptr\s+(%[-a-zA-Z$._0-9]+|%\"[^\"]*\")$")
_HPVM_ATOMIC = re.compile(
    r"call [^@]*@llvm\.hpvm\.atomic\.\w+\(ptr (?:noundef )?(%[-a-zA-Z$._0-9]+|%\"[^\"]*\")"
)
_BARRIER = re.compile(r"call [^@]*@llvm\.hpvm\.barrier\(\)")
_DBG = re.compile(r"!dbg !\d+")
_NAMES = re.compile(r"%[-a-zA-Z$._0-9]+|%\"[^\"]*\"")
_CALLED = re.compile(r"@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)\(")
_USE = re.compile(r"@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)(?![-a-zA-Z$._0-9(])")


@dataclass(frozen=True)
class Site:
    """One instrumented access: the instruction as LLVM prints it, and its source place
    from the debug metadata (``file``/``line`` ``None`` without one)."""

    instruction: str
    file: str | None
    line: int | None


@dataclass(frozen=True)
class Instrumented:
    """The instrumented module of an LLVM leaf and its sites."""

    body: LLVMBody
    sites: tuple[Site, ...]


_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str], Instrumented | None] = {}


def instrumented(body: LLVMBody) -> Instrumented | None:
    """``body`` with its accesses reported (module docstring), once per module and
    function; ``None`` when the module does not parse (the plain clone says why)."""
    key = (body.module, body.function)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    printed = printed_function(body)
    found = None if printed is None else _instrument(body.function, printed[1])
    with _LOCK:
        _CACHE[key] = found
    return found


def _access(rhs: str) -> tuple[str, int, int] | None:
    """The pointer, size and kind of a memory instruction's right-hand side, or ``None``
    when it is none or its pointer is not an SSA value (a global, a constant expression)."""
    words = rhs.split(None, 1)
    if len(words) < 2:
        return None
    op, rest = words
    flags = set()
    while True:
        head = rest.split(None, 1)
        if len(head) == 2 and head[0] in ("atomic", "volatile", "weak"):
            flags.add(head[0])
            rest = head[1]
        else:
            break
    parts = split_top(re.split(r",\s*!", rest, maxsplit=1)[0])
    if op == "load" and len(parts) >= 2:
        kind = ATOMIC if "atomic" in flags else READ
        type_, pointer = parts[0], parts[1]
    elif op == "store" and len(parts) >= 2:
        kind = ATOMIC if "atomic" in flags else WRITE
        type_, pointer = leading_type(parts[0]), parts[1]
    elif op == "atomicrmw" and len(parts) >= 2:
        kind, pointer = ATOMIC, parts[0].split(None, 1)[-1]
        type_ = leading_type(parts[1])
    elif op == "cmpxchg" and len(parts) >= 3:
        kind, pointer, type_ = ATOMIC, parts[0], leading_type(parts[1])
    else:
        return None
    m = _POINTER.match(" ".join(pointer.split()[:2]))  # (an atomic's ordering follows it)
    size = type_size(type_) or _scalar_size(type_)
    if m is None or size is None:
        return None
    return m.group(1), size, kind


def _scalar_size(type_: str) -> int | None:
    """Sizes ``type_size`` does not follow but an access has (odd vectors: their bytes)."""
    m = re.fullmatch(r"<(\d+) x (.+)>", type_.strip())
    inner = type_size(m.group(2)) if m else None
    return int(m.group(1)) * inner if m and inner else None


def _instrument(function: str, module: str) -> Instrumented:
    debug = DebugInfo(module)
    lines = module.split("\n")
    bodies: dict[str, tuple[int, int]] = {}  # function -> the span of its body lines
    outside: list[str] = []  # lines of no function: globals may take functions' addresses
    k = 0
    while k < len(lines):
        define = _DEFINE.match(lines[k])
        if define and lines[k].rstrip().endswith("{"):
            end = k + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            bodies[define.group(1)] = (k + 1, end)
            k = end
        elif lines[k].startswith("@"):
            outside.append(lines[k])
        k += 1
    # What the node function reaches by direct calls (the rest the clone drops); of those,
    # the functions used other than by direct calls stay uninstrumented: the clone threads
    # the instance context only into functions called directly.
    reached, todo = {function}, [function]
    while todo:
        first, end = bodies.get(todo.pop(), (0, 0))
        for line in lines[first:end]:
            for name in _CALLED.findall(line):
                if name in bodies and name not in reached:
                    reached.add(name)
                    todo.append(name)
    taken = {name for line in outside for name in _USE.findall(line)}
    for name in reached:
        first, end = bodies[name]
        taken.update(n for line in lines[first:end] for n in _USE.findall(line))
    out: list[str] = []
    sites: list[Site] = []
    k = 0
    while k < len(lines):
        out.append(lines[k])
        define = _DEFINE.match(lines[k])
        k += 1
        name = define.group(1) if define else None
        if name in reached and name not in taken:
            first, end = bodies[name]
            out += _function(lines[first:end], debug, sites)
            k = end
    text = "\n".join(out) + f"\ndeclare void @{RECORDER}(i64, ptr, i64, i64)\n"
    for declaration in _QUERIES:
        name = declaration[declaration.index("@") : declaration.index("(")]
        if not re.search(rf"^declare [^\n]*{re.escape(name)}\(", text, re.M):
            text += declaration + "\n"
    return Instrumented(LLVMBody(text, function), tuple(sites))


def gep_root(name: str, defs: dict[str, str]) -> str | None:
    """The value ``name`` is ``getelementptr``\\s of (itself when it is none), by the
    function's definitions ``defs`` (value -> its instruction's text): what an access's
    pointer points into — an ``alloca`` (``local``), an array argument (``checked.py``).
    ``None``: a base that is no plain ``ptr`` value, or more than 64 levels."""
    for _ in range(64):
        rhs = defs.get(name, "")
        if not rhs.startswith("getelementptr"):
            return name
        parts = split_top(rhs[len("getelementptr") :])
        base = parts[1].split() if len(parts) > 1 else []
        if len(base) != 2 or base[0] != "ptr":
            return None
        name = base[1]
    return None


def _function(body: list[str], debug: DebugInfo, sites: list[Site]) -> list[str]:
    """One function's body lines, instrumented (the ``getNode`` call first in its entry block)."""
    defs: dict[str, str] = {}
    for line in body:
        m = DEFINITION.match(line)
        if m:
            defs[m.group(1)] = m.group(2)

    def local(name: str) -> bool:
        root = gep_root(name, defs)
        return root is not None and defs.get(root, "").startswith("alloca")

    # A load whose value a ``cmpxchg`` compares against (directly or through ``phi``s) is
    # the first step of a compare-and-swap loop (how Numba and C compilers write an atomic
    # update LLVM has no ``atomicrmw`` for, a float's through a ``bitcast``): part of the
    # atomic, not a plain read.
    expected: set[str] = set()
    for rhs in defs.values():
        if rhs.startswith("cmpxchg"):
            parts = split_top(rhs)
            if len(parts) > 1 and parts[1].split()[-1].startswith("%"):
                expected.add(parts[1].split()[-1])
    todo = list(expected)
    while todo:
        rhs = defs.get(todo.pop(), "")
        sources: list[str] = []
        if rhs.startswith("phi"):
            sources = re.findall(r"\[\s*(%[-a-zA-Z$._0-9]+|%\"[^\"]*\")\s*,", rhs)
        elif rhs.startswith("bitcast"):
            sources = _NAMES.findall(rhs)[:1]
        for source in sources:
            if source not in expected:
                expected.add(source)
                todo.append(source)

    out: list[str] = []
    entry = 1 if body and re.match(r"^[-a-zA-Z$._0-9]+:", body[0]) else 0
    out += body[:entry]
    out.append(_ENTRY)
    for line in body[entry:]:
        dbg = _DBG.search(line)
        at = f", {dbg.group(0)}" if dbg else ""
        m = DEFINITION.match(line)
        rhs = m.group(2) if m else line.strip()
        found = _access(rhs)
        if found is None:
            atomic = _HPVM_ATOMIC.search(rhs)
            found = (atomic.group(1), 4, ATOMIC) if atomic else None
        if found is not None and not local(found[0]):
            pointer, size, kind = found
            if kind == READ and m is not None and m.group(1) in expected:
                kind = ATOMIC
            code = len(sites) << 2 | kind
            sites.append(_site(line, debug))
            out.append(f"  call void @{RECORDER}(i64 {_FLAT}, ptr {pointer}, i64 {size}, i64 {code}){at}")
        elif _BARRIER.search(rhs):
            out.append(f"  call void @{RECORDER}(i64 {_FLAT}, ptr null, i64 0, i64 {BARRIER}){at}")
        out.append(line)
    return out


def _site(line: str, debug: DebugInfo) -> Site:
    where = debug.where(line)
    text = re.split(r",\s*!", line.strip(), maxsplit=1)[0]
    if where is None:
        return Site(text, None, None)
    file, _, number = where.rpartition(":")
    return Site(text, file, int(number))


#: What the cpu back end's checked mode (``checked.py``) reads of an instruction, alike.
memory_access, site_of = _access, _site


# -- the recorder's callback -------------------------------------------------------------------


class Sink(Protocol):
    """Where one leaf execution's reports go (``interp``'s recorder of LLVM accesses)."""

    def enter_call(self, values: list[Any]) -> None:
        """The next call's input values (the arrays its accesses may fall into)."""

    def access(self, flat: int, address: int, size: int, code: int) -> None:
        """An access (``size`` bytes at ``address``) or a barrier (``code & 3 == BARRIER``)
        by the instance whose ``getNode`` handle is ``node``; ``code >> 2``: its site."""


_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_ACTIVE = threading.local()
_CALLBACK: Any = None
_SYMBOL_LOCK = threading.Lock()


def _report(flat: int, address: int | None, size: int, code: int) -> None:
    sink = getattr(_ACTIVE, "sink", None)
    if sink is None or getattr(_ACTIVE, "error", None) is not None:
        return
    try:
        sink.access(flat, address or 0, size, code)
    except BaseException as e:  # a ctypes callback cannot raise: the run checks after the call
        if getattr(_ACTIVE, "error", None) is None:
            _ACTIVE.error = e


def register_recorder() -> None:
    """Make ``__hpvm_race`` resolvable by every LLVM JIT in the process (once)."""
    global _CALLBACK
    with _SYMBOL_LOCK:
        if _CALLBACK is not None:
            return
        import llvmlite.binding as llvm

        callback = _CALLBACK_TYPE(_report)
        llvm.add_symbol(RECORDER, ctypes.cast(callback, ctypes.c_void_p).value)
        _CALLBACK = callback


@contextmanager
def recording(sink: Sink) -> Iterator[None]:
    """Reports of instrumented code run on this thread go to ``sink`` meanwhile. What the
    sink raised and nobody raised on (``raise_recorded``: a leaf's own error went first —
    the race an out-of-bounds read's stand-in value caused) is dropped at the end, so that
    no later call on this thread raises it: a launch without race detection after such a
    one raised the old launch's ``DataRaceError``."""
    previous = getattr(_ACTIVE, "sink", None)
    _ACTIVE.sink, _ACTIVE.error = sink, None
    try:
        yield
    finally:
        _ACTIVE.sink, _ACTIVE.error = previous, None


def raise_recorded() -> None:
    """Raise what the sink raised during the last call (the first), if anything: a
    ``DataRaceError`` stops the leaf at the call that found it."""
    error = getattr(_ACTIVE, "error", None)
    if error is not None:
        _ACTIVE.error = None
        raise error
