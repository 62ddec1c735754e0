"""An LLVM leaf whose accesses to its array arguments are checked: the ``cpu`` back end's
checked mode (``cpu/checked.py`` for Python leaves) for LLVM and HPVM-C leaves.

Why. LLVM code checks no bounds as it runs; the pre-check of sizes against arrays
(``affine.py``) sees only accesses affine in the instance ids (and the leaf's integer
arguments) in blocks every call runs, and an HPVM-C leaf indexing
``(chan * rows + row) * cols + col`` inside its loops wrote past
its array and crashed the process (glibc: "double free or corruption").

What. A rewrite of the leaf's own module, as ``instrument.py``'s (the clone then threads
the instance context into what it adds, and the checked clone is one more clone, with its
own digest). Callees the node function passes an array's pointer to are inlined first
(``checked_inline.py``). In the node function, each ``load``, ``store``, ``atomicrmw``,
``cmpxchg`` and seed 000 ``llvm.hpvm.atomic.*`` call whose pointer points into a sized
array argument (``(ptr, i64 bytes)`` ports: seed 000's ABI) — through ``getelementptr``\\s,
``phi``\\s and ``select``\\s whose every source roots in that one argument, and local slots
(``checked_roots.py``) — gets, before it, its byte offset from the argument compared with
the argument's byte size::

    %o = sub (ptrtoint %p), (ptrtoint %a)   ; bad: o < 0, or o > size - n, or n > size
    call void @__hpvm_oob(i1 %bad, ptr @__hpvm_oob.info.N, i64 %o, i64 %size)
    %q = select i1 %bad, ptr @__hpvm_oob.scratch, ptr %p   ; the access then uses %q

``llvm.memcpy``/``memmove``/``memset`` get the same compare for each array operand over
their length ``n``, and a failing call's length becomes 0 (it copies nothing).

``__hpvm_oob`` records the failure through the leaf error channel (``leaf_errors.py``:
``__hpvm_leaf_error_at``, into the context's slots, whoever called the clone raises), with
a static exception of Numba's layout whose pickle is ``IndexError(code)``; ``code`` names
the access — the array's port, the ``.c`` line from the ``!dbg`` location (the LLVM
instruction's text without one; ``DebugInfo.place`` for inlined code) — in ``ACCESSES``;
the run-time byte offset and the array's size go into two more slots, and the message
says them (``access_problem``). The access itself goes to a scratch buffer: the instance
runs on (no branch splits the leaf's blocks) but writes nothing outside its arrays, and the
caller raises once it returns (its checked wrapper passes the instance's ids:
``numba_call._instance``). Leaves with barriers are rewritten the same way
before their barrier lowering.

A pointer-only port (``u8[*]``) is checked against the ``i64`` port right after it when
that port's name says bytes (``bytes_out``: HPVM-C's pair, as every HPVM-C program
writes it) — the size the program declares, not the tracked memory's.

What cannot be checked is said once per leaf (an ``HPVMWarning`` naming each access and
its ``.c`` line): a pointer with sources in several arrays (or an array and the
instance's own memory), loaded from memory other than a followed slot, returned by a call
(``malloc``), made from an integer; an array's pointer stored to memory or passed to a
callee that was not inlined (recursive, external); pointer-only ports without a bytes
port; accesses larger than the scratch buffer. The instance's own memory (``alloca``\\s)
and the module's globals are not checked, nor said.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from ...errors import HPVMWarning, IllegalWriteError, NodeExecutionError, OutOfBoundsError
from ...ir.bodies import LLVMBody, llvm_abi_types
from ...ir.cache import stored_json
from ...ir.debuginfo import DebugInfo
from ...ir.graph import LeafFunction
from ...ir.llvm_text import DEFINITION
from ...ir.types import ArrayType
from .access import _arguments, printed_function, split_top
from .checked_inline import function_lines, inline_array_callees
from .checked_roots import LOCAL, UNKNOWN, Roots, pointer_operands
from .instrument import ATOMIC, memory_access, site_of
from .leaf_errors import CHECK_FAILED, CHECK_FAILED_DECLARATION
from .stored import code_version

_HELPER = "__hpvm_oob"
_SCRATCH = "@__hpvm_oob.scratch"
SCRATCH_BYTES = 256  # (larger accesses stay unchecked: no scalar or vector of a leaf is)
_NAME = r"%[-a-zA-Z$._0-9]+|%\"[^\"]*\""
_HPVM_ATOMIC = re.compile(rf"\bcall [^@]*@llvm\.hpvm\.atomic\.\w+\(ptr (?:noundef )?({_NAME})")
_MEMORY = re.compile(r"\bcall [^@]*@llvm\.(memcpy|memmove|memset)(\.inline)?\.[\w.]*\((.*)\)")
_CALLED = re.compile(r"\b(?:call|invoke) [^@]*@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)\(")
#: Calls that take a pointer without touching its memory, or whose accesses are checked above.
_HARMLESS = ("llvm.lifetime.", "llvm.dbg.", "llvm.assume", "llvm.prefetch", "llvm.hpvm.", "llvm.invariant.")


@dataclass(frozen=True)
class Access:
    """One checked access: the leaf's module, the array's port and where the access is."""

    module: str  # the leaf's LLVM module text and node function: which leaves hold it
    function: str
    array: str
    where: str  # ``file:line`` from its ``!dbg``, or the LLVM instruction
    what: str  # "a read of 4 bytes", "llvm.memcpy's write"
    #: a write into an array the leaf's outs do not declare (it fails wherever it lands)
    undeclared: bool = False
    #: ``llvm.memcpy``'s and its kind's: a run-time length from the offset, not a fixed size
    ranged: bool = False


#: code -> access, for every module checked in this process
ACCESSES: dict[int, Access] = {}


def failed_access(exception: BaseException | None) -> Access | None:
    """The checked access that failed, if a checked leaf's recorded exception is one's
    (the static ``IndexError(code)`` its failing access records)."""
    if type(exception) is not IndexError or len(exception.args) != 1:
        return None
    code = exception.args[0]
    return ACCESSES.get(code) if isinstance(code, int) else None


def outside(access: Access) -> str:
    """What a failed access did, as messages say it."""
    if access.undeclared:
        return (
            f"{access.what} at {access.where} writes '{access.array}', which the leaf's outs do not "
            "declare; declare it an output (HPVM-C: in __hpvm__attributes' outputs; LLVM: the "
            'parameter\'s "out" attribute) — a back end copies back only the outputs'
        )
    return f"{access.what} at {access.where} falls outside '{access.array}'"


def access_problem(
    access: Access, offset: int, size: int, mode: str = ""
) -> tuple[type[NodeExecutionError], str]:
    """What a failed checked access raises, and what its message says: the byte ``offset``
    it had from its array's start and the array's ``size`` in bytes, as the failing
    instance recorded them (``mode``: how it names the run, as ``checked mode``): an
    ``IllegalWriteError`` for a write the leaf does not declare, an ``OutOfBoundsError``
    for an access outside its array."""
    if access.undeclared:
        return IllegalWriteError, outside(access)
    where = f"{'from' if access.ranged else 'at'} byte offset {offset} of its {size} bytes"
    return OutOfBoundsError, f"{outside(access)}: {where}" + (f" ({mode})" if mode else "")


_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str, tuple[str, ...]], tuple[LLVMBody, list[str]]] = {}
_WARNED: set[tuple[str, str, tuple[str, ...]]] = set()


def checked_body(leaf: LeafFunction, warn: bool = True, body: LLVMBody | None = None) -> LLVMBody:
    """``leaf``'s body (or ``body``, a rewrite of it with the same ports: the interpreter's
    instrumented module) with its array accesses checked (the module docstring), once per
    module, function and ports; the body itself when nothing can be checked or the module
    does not parse (the plain clone then says why). ``warn``: say (once per module) which
    accesses cannot be checked — checked mode does; the interpreter, which checks what it
    can of an LLVM leaf on the side, does not."""
    body = body if body is not None else leaf.body
    assert isinstance(body, LLVMBody)
    ports = tuple(f"{p.name}:{p.type}" for p in leaf.params)
    key = (body.module, body.function, ports)
    with _LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = _stored_check(leaf, body, ports)
        with _LOCK:
            _CACHE[key] = found
    checked, unchecked = found
    if warn and unchecked:
        with _LOCK:
            first = key not in _WARNED
            _WARNED.add(key)
        if first:
            _warn(leaf, unchecked)
    return checked


def _stored_check(leaf: LeafFunction, body: LLVMBody, ports: tuple[str, ...]) -> tuple[LLVMBody, list[str]]:
    """``_check`` from hpvm's cache (``llvm-checked/``, ``ir.cache.stored_json``), else made
    and stored there (``stored.py``): a later process in checked mode skips reading and
    rewriting the module — an HPVM-C leaf's module is its whole translation unit, 0.3 s of
    Cava's warm run in checked mode."""

    def build() -> dict[str, Any]:
        checked, unchecked, accesses = _check(leaf, body)
        return {
            "module": None if checked is body else checked.module,
            "unchecked": unchecked,
            "accesses": [[code, *_stored_fields(a)] for code, a in accesses.items()],
        }

    found = stored_json(
        "llvm-checked",
        code_version(),
        [body.function, ports, sorted(leaf.outs)],
        body.module,
        {"module": (str, type(None)), "unchecked": list, "accesses": list},
        build,
    )
    # A stored module's checks raise the codes its first process made: name them here too,
    # or a later process's failing access would surface as a bare ``IndexError(code)``.
    try:
        accesses = {
            int(code): Access(body.module, body.function, str(array), str(where), str(what), bool(u), bool(r))
            for code, array, where, what, u, r in found["accesses"]
        }
    except (TypeError, ValueError):  # (a damaged file: built again, which names its checks)
        found, accesses = build(), {}
    with _LOCK:
        for code, access in accesses.items():
            ACCESSES.setdefault(code, access)
    module = found["module"]
    return (body if module is None else LLVMBody(module, body.function)), list(found["unchecked"])


def _stored_fields(access: Access) -> list[Any]:
    """What ``llvm-checked/`` keeps of an access (its module and function are the key's)."""
    return [access.array, access.where, access.what, access.undeclared, access.ranged]


def _check(leaf: LeafFunction, body: LLVMBody) -> tuple[LLVMBody, list[str], dict[int, Access]]:
    """The checked body, the accesses it cannot check, and those it checks by code."""
    printed = printed_function(body)
    if printed is None:
        return body, [], {}
    module = printed[1]
    lines = module.split("\n")
    span = function_lines(lines, body.function)
    if span is None:
        return body, [], {}
    names = _arguments(lines[span[0]])
    arrays = _sized_arrays(leaf, names)
    if arrays:  # (callees that take an array's pointer: their accesses become the node function's)
        module = inline_array_callees(module, body.function, set(arrays))
        lines = module.split("\n")
        span = function_lines(lines, body.function)
        assert span is not None
    start, end = span
    ports = {name: p.name for name, p in zip(_pointer_arguments(leaf, names), leaf.params) if name}
    seed = hashlib.sha1(f"{body.function}\n{body.module}".encode()).hexdigest()
    rewrite = _Rewrite(
        body, arrays, ports, DebugInfo(module), seed, lines[start + 1 : end], frozenset(leaf.outs)
    )
    guarded = [line for old in lines[start + 1 : end] for line in rewrite.line(old)]
    if not rewrite.infos:
        return body, rewrite.unchecked, {}
    text = "\n".join([*lines[: start + 1], *guarded, *lines[end:]])
    text += "\n" + "\n".join(rewrite.infos) + "\n" + _helper(text)
    return LLVMBody(text, body.function), rewrite.unchecked, rewrite.accesses


def _pointer_arguments(leaf: LeafFunction, names: list[str]) -> list[str]:
    """Per port, the name of its pointer argument (``""`` for a port without one)."""
    out, at = [], 0
    for p in leaf.params:
        slots = llvm_abi_types(p.type)
        out.append(names[at] if slots and slots[0] == "ptr" and at < len(names) else "")
        at += len(slots)
    return out


def _warn(leaf: LeafFunction, unchecked: list[str]) -> None:
    """Say once per leaf which of its accesses checked mode cannot check (they run as
    unchecked code does)."""
    shown = "; ".join(unchecked[:6]) + (f"; and {len(unchecked) - 6} more" if len(unchecked) > 6 else "")
    warnings.warn(
        f"leaf '{leaf.name}' ({leaf.location}): checked mode cannot check {len(unchecked)} of its "
        f'memory accesses, which run unchecked: {shown} (docs/backends/cpu.md, "Checked mode")',
        HPVMWarning,
        stacklevel=3,
    )


def _sized_arrays(leaf: LeafFunction, names: list[str]) -> dict[str, tuple[str, str]]:
    """Pointer argument -> (its port's name, its byte-size argument): sized array ports,
    and pointer-only ones followed by an ``i64`` port named for bytes (HPVM-C's ``(float
    *out, size_t bytes_out)`` pair, kept apart when the leaf uses the size as a value:
    returns it, computes with it)."""
    arrays: dict[str, tuple[str, str]] = {}
    at = 0
    params = leaf.params
    for k, p in enumerate(params):
        slots = llvm_abi_types(p.type)
        if isinstance(p.type, ArrayType) and at + 1 < len(names) and names[at] and names[at + 1]:
            following = params[k + 1] if k + 1 < len(params) else None
            paired = (
                following is not None
                and not isinstance(following.type, ArrayType)
                and llvm_abi_types(following.type) == ["i64"]
                and "bytes" in following.name.lower()
            )
            if p.type.sized or paired:
                arrays[names[at]] = (p.name, names[at + 1])
        at += len(slots)
    return arrays if at == len(names) else {}


class _Rewrite:
    """The node function's lines, each access to an array argument preceded by its check;
    ``unchecked``: the accesses that could not be (what they are, where, why)."""

    def __init__(
        self,
        body: LLVMBody,
        arrays: dict[str, tuple[str, str]],
        ports: dict[str, str],
        debug: DebugInfo,
        seed: str,
        lines: list[str],
        outs: frozenset[str] = frozenset(),
    ):
        self.body, self.arrays, self.ports, self.debug, self.seed = body, arrays, ports, debug, seed
        self.outs = outs  # (the ports the leaf declares it writes)
        self.roots = Roots(lines)
        self.infos: list[str] = []
        self.unchecked: list[str] = []
        #: code -> the access it names, for each check made (also put in ``ACCESSES``)
        self.accesses: dict[int, Access] = {}

    def line(self, line: str) -> list[str]:
        m = DEFINITION.match(line)
        rhs = m.group(2) if m else line.strip()
        found = memory_access(rhs)
        if found is not None:
            pointer, size, kind = found
            write = rhs.startswith("store") or kind == ATOMIC
            what = f"{'an atomic update' if kind == ATOMIC else 'a write' if write else 'a read'} of {size} bytes"
            if rhs.startswith("store"):
                self._escape(line, rhs)
            return self._access(line, rhs, pointer, size, what, write)
        atomic = _HPVM_ATOMIC.search(rhs)
        if atomic is not None:
            return self._access(line, rhs, atomic.group(1), 4, "an atomic update of 4 bytes", True)
        memory = _MEMORY.search(rhs)
        if memory is not None:
            return self._memory(line, memory)
        called = _CALLED.search(rhs)
        if called is not None and not called.group(1).startswith(_HARMLESS):
            for pointer in pointer_operands(rhs):
                arrays = self._ports(self.roots.of(pointer))
                if arrays:
                    self._skip(line, f"the pointer into {arrays} passed to @{called.group(1)}, not inlined")
        return [line]

    def _access(self, line: str, rhs: str, pointer: str, size: int, what: str, write: bool) -> list[str]:
        roots = self.roots.of(pointer)
        if roots <= {LOCAL}:
            return [line]  # (the instance's own memory, or the module's: not an array port)
        base = next(iter(roots)) if len(roots) == 1 else None
        if base not in self.arrays:
            self._skip(line, f"{what} {self._why(roots)}")
            return [line]
        if size > SCRATCH_BYTES:
            self._skip(line, f"{what}, larger than the checks' scratch buffer")
            return [line]
        assert base is not None
        n, checks = self._compare(line, pointer, base, str(size), what, write)
        return [*checks, _redirect(line, rhs, pointer, f"%__hpvm_g{n}.q")]

    def _memory(self, line: str, memory: re.Match[str]) -> list[str]:
        """``llvm.memcpy``/``memmove``/``memset``: each array operand's ``[offset, offset +
        length)`` checked; a failing call copies nothing (its length becomes 0)."""
        name, args = memory.group(1), split_top(memory.group(3))
        if len(args) < 3 or len(args[2].split()) != 2:
            self._skip(line, f"a call of llvm.{name} the check does not read")
            return [line]
        type_, length = args[2].split()
        operands = [(args[0], "write")] + ([(args[1], "read")] if name != "memset" else [])
        out: list[str] = []
        bad: list[str] = []
        for operand, role in operands:
            pointer = operand.split()[-1]
            roots = self.roots.of(pointer)
            what = f"llvm.{name}'s {role}"
            if roots <= {LOCAL}:
                continue
            base = next(iter(roots)) if len(roots) == 1 else None
            if base not in self.arrays:
                self._skip(line, f"{what} {self._why(roots)}")
                continue
            assert base is not None
            wide = length
            if type_ != "i64":
                wide = f"%__hpvm_g{len(self.infos)}.n"
                out.append(f"  {wide} = zext {type_} {length} to i64")
            n, checks = self._compare(line, pointer, base, wide, what, role == "write", ranged=True)
            out += checks[:-1]  # (no scratch pointer: the length is what changes)
            bad.append(f"%__hpvm_g{n}.bad")
        if not bad:
            return [line]
        g = f"%__hpvm_g{len(self.infos) - 1}"
        for k, flag in enumerate(bad[1:]):
            out.append(f"  {g}.any{k} = or i1 {bad[0] if k == 0 else f'{g}.any{k - 1}'}, {flag}")
        flag = bad[0] if len(bad) == 1 else f"{g}.any{len(bad) - 2}"
        out.append(f"  {g}.len = select i1 {flag}, {type_} 0, {type_} {length}")
        args[2] = f"{type_} {g}.len"
        head = line[: line.index(memory.group(0))]
        tail = line[line.index(memory.group(0)) + len(memory.group(0)) :]
        call = memory.group(0)[: memory.start(3) - memory.start(0)] + ", ".join(args) + ")"
        return [*out, head + call + tail]

    def _compare(
        self, line: str, pointer: str, base: str, length: str, what: str, write: bool, ranged: bool = False
    ) -> tuple[int, list[str]]:
        """The check of ``[pointer, pointer + length)`` against ``base``'s array: its ordinal
        and its lines (``%__hpvm_g<n>.bad`` the failure, ``.q`` the pointer to use, last). A
        ``write`` into an array the leaf's outs do not declare always fails."""
        port, bytes_arg = self.arrays[base]
        undeclared = write and port not in self.outs
        n = len(self.infos)
        g = f"%__hpvm_g{n}"
        where = self.debug.place(line) or f"the LLVM instruction '{site_of(line, self.debug).instruction}'"
        code = int(hashlib.sha1(f"{self.seed}:{n}".encode()).hexdigest()[:15], 16)
        access = Access(self.body.module, self.body.function, port, where, what, undeclared, ranged)
        self.accesses[code] = access
        with _LOCK:
            ACCESSES[code] = access
        self.infos.append(_info(n, code))
        dbg = re.search(r"!dbg !\d+", line)
        at = f", {dbg.group(0)}" if dbg else ""
        # bad: o < 0, or length > size, or o > size - length (no sum that could wrap)
        return n, [
            f"  {g}.p = ptrtoint ptr {pointer} to i64",
            f"  {g}.a = ptrtoint ptr {base} to i64",
            f"  {g}.o = sub i64 {g}.p, {g}.a",
            f"  {g}.r = sub i64 {bytes_arg}, {length}",
            f"  {g}.lo = icmp slt i64 {g}.o, 0",
            f"  {g}.hi = icmp sgt i64 {g}.o, {g}.r",
            f"  {g}.big = icmp ugt i64 {length}, {bytes_arg}",
            f"  {g}.out = or i1 {g}.lo, {g}.hi",
            f"  {g}.bad = or i1 {g}.out, {'true' if undeclared else f'{g}.big'}",
            f"  call void @{_HELPER}(i1 {g}.bad, ptr @__hpvm_oob.info.{n}, i64 {g}.o, i64 {bytes_arg}){at}",
            f"  {g}.q = select i1 {g}.bad, ptr {_SCRATCH}, ptr {pointer}",
        ]

    def _escape(self, line: str, rhs: str) -> None:
        """A store of an array's pointer into memory other than a followed local slot:
        accesses through what is loaded back elsewhere are not checked."""
        parts = split_top(re.split(r",\s*!", rhs[len("store") :], maxsplit=1)[0])
        value = [w for w in parts[0].split() if w not in ("volatile", "atomic")] if parts else []
        if len(parts) < 2 or value[:1] != ["ptr"]:
            return
        arrays = self._ports(self.roots.of(value[-1]))
        if arrays and self.roots.slot(parts[1].split()[-1]) is None:
            self._skip(line, f"the pointer into {arrays} stored to memory")

    def _ports(self, roots: frozenset[str]) -> str:
        """The ports among ``roots``, as a message names them (empty: none)."""
        names = sorted(self.ports[r] for r in roots if r in self.ports)
        return " or ".join(f"'{n}'" for n in names)

    def _why(self, roots: frozenset[str]) -> str:
        if UNKNOWN in roots:
            return "through a pointer not computed from one array port (loaded from memory, a call's result)"
        ports = self._ports(roots)
        if len(roots) > 1:
            mine = ["the instance's own memory"] if LOCAL in roots else []
            return f"through a pointer into one of {', '.join([ports, *mine]) if ports else 'several values'}"
        return f"of {ports or 'a pointer argument'}, whose size the leaf does not have (no bytes port)"

    def _skip(self, line: str, what: str) -> None:
        where = self.debug.place(line) or f"'{site_of(line, self.debug).instruction}'"
        self.unchecked.append(f"{what} at {where}")


def _redirect(line: str, rhs: str, pointer: str, to: str) -> str:
    """``line`` with its access's pointer operand replaced by ``to`` (a ``store``'s and a
    ``load``'s is its last ``ptr`` operand, an atomic's its first)."""
    operand = re.compile(r"ptr (noundef )?" + re.escape(pointer) + r"(?![-a-zA-Z$._0-9\"])")
    cut = re.search(r",\s*!", line)
    head, tail = (line[: cut.start()], line[cut.start() :]) if cut else (line, "")
    hits = list(operand.finditer(head))
    hit = hits[-1] if rhs.startswith(("load", "store")) else hits[0]
    return head[: hit.start()] + f"ptr {to}" + head[hit.end() :] + tail


def _info(n: int, code: int) -> str:
    """The static exception of access ``n``: Numba's exception-info struct over the pickle
    of ``(IndexError, (code,), None)`` (what ``leaf_errors.describe`` reads)."""
    data = pickle.dumps((IndexError, (code,), None), protocol=4)
    escaped = "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in data)
    return (
        f'@__hpvm_oob.pickle.{n} = internal constant [{len(data)} x i8] c"{escaped}"\n'
        f"@__hpvm_oob.info.{n} = internal constant {{ ptr, i32, ptr, ptr, i32 }} "
        f"{{ ptr @__hpvm_oob.pickle.{n}, i32 {len(data)}, ptr null, ptr null, i32 0 }}"
    )


def _helper(text: str) -> str:
    """``__hpvm_oob`` (records a failed check), the scratch buffer, the error call's declaration."""
    declare = (
        "" if re.search(rf"^declare [^\n]*@{CHECK_FAILED}\(", text, re.M) else CHECK_FAILED_DECLARATION + "\n"
    )
    return (
        f"{_SCRATCH} = internal global [{SCRATCH_BYTES} x i8] zeroinitializer, align 64\n"
        f"define internal void @{_HELPER}(i1 %bad, ptr %info, i64 %o, i64 %n) alwaysinline {{\n"
        "  br i1 %bad, label %fail, label %ok\n"
        "fail:\n"
        f"  call void @{CHECK_FAILED}(i64 %o, i64 %n, i32 1, ptr %info)\n"
        "  ret void\n"
        "ok:\n"
        "  ret void\n"
        "}\n" + declare
    )
