"""An LLVM leaf whose accesses to its array arguments are checked: the ``cpu`` back end's
checked mode (``cpu/checked.py`` for Python leaves) for LLVM and HPVM-C leaves.

Why. LLVM code checks no bounds as it runs; the pre-check of sizes against arrays
(``affine.py``) sees only accesses affine in the instance ids, and an HPVM-C leaf indexing
``(chan * rows + row) * cols + col`` with parameter strides inside its loops wrote past
its array and crashed the process (glibc: "double free or corruption").

What. A rewrite of the leaf's own module, as ``instrument.py``'s (the clone then threads
the instance context into what it adds, and the checked clone is one more clone, with its
own digest). In the node function, each ``load``, ``store``, ``atomicrmw`` and ``cmpxchg``
whose pointer is a sized array argument (``(ptr, i64 bytes)`` ports: seed 000's ABI) or
``getelementptr``\\s of one gets, before it, its byte offset from the argument compared
with the argument's byte size::

    %o = sub (ptrtoint %p), (ptrtoint %a)        ; bad: o < 0 or o + access bytes > size
    call void @__hpvm_oob(i1 %bad, ptr @__hpvm_oob.info.N)
    %q = select i1 %bad, ptr @__hpvm_oob.scratch, ptr %p   ; the access then uses %q

``__hpvm_oob`` records the failure through the leaf error channel (``leaf_errors.py``:
``__hpvm_leaf_error``, into the context's slots, whoever called the clone raises), with a
static exception of Numba's layout whose pickle is ``IndexError(code)``; ``code`` names
the access — the array's port, the ``.c`` line from the ``!dbg`` location (the LLVM
instruction's text without one) — in ``ACCESSES``. The access itself goes to a scratch
buffer: the instance runs on (no branch splits the leaf's blocks) but writes nothing
outside its arrays, and the caller raises once it returns. Leaves with barriers are
rewritten the same way before their barrier lowering.

A pointer-only port (``u8[*]``) is checked against the ``i64`` port right after it when
that port's name says bytes (``bytes_out``: HPVM-C's pair, as every HPVM-C program
writes it) — the size the program declares, not the tracked memory's. Not checked: other
pointer-only ports (the leaf does not know their size), accesses
in functions the node function calls (LLVM has usually inlined them), pointers reaching
the access other than through ``getelementptr`` (a ``phi``, memory, a call), ``memcpy``
and other intrinsics, and seed 000's ``llvm.hpvm.atomic.*`` calls.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import threading
from dataclasses import dataclass

from ...ir.bodies import LEAF_ERROR, LEAF_ERROR_DECLARATION, LLVMBody, llvm_abi_types
from ...ir.debuginfo import DebugInfo
from ...ir.graph import LeafFunction
from ...ir.llvm_text import global_name
from ...ir.types import ArrayType
from .access import _arguments, printed_function
from .instrument import ATOMIC, gep_root, memory_access, site_of

_HELPER = "__hpvm_oob"
_SCRATCH = "@__hpvm_oob.scratch"
SCRATCH_BYTES = 256  # (larger accesses stay unchecked: no scalar or vector of a leaf is)
_DEF = re.compile(r"^\s*(%[-a-zA-Z$._0-9]+|%\"[^\"]*\")\s*=\s*(.*)$")


@dataclass(frozen=True)
class Access:
    """One checked access: the leaf's module, the array's port and where the access is."""

    module: str  # the leaf's LLVM module text and node function: which leaves hold it
    function: str
    array: str
    where: str  # ``file:line`` from its ``!dbg``, or the LLVM instruction
    write: bool
    bytes: int


#: code -> access, for every module checked in this process
ACCESSES: dict[int, Access] = {}
_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str, tuple[str, ...]], LLVMBody] = {}


def checked_body(leaf: LeafFunction) -> LLVMBody:
    """``leaf``'s body with its array accesses checked (the module docstring), once per
    module, function and ports; the body itself when nothing can be checked or the module
    does not parse (the plain clone then says why)."""
    body = leaf.body
    assert isinstance(body, LLVMBody)
    ports = tuple(f"{p.name}:{p.type}" for p in leaf.params)
    key = (body.module, body.function, ports)
    with _LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = _check(leaf, body)
        with _LOCK:
            _CACHE[key] = found
    return found


def _check(leaf: LeafFunction, body: LLVMBody) -> LLVMBody:
    printed = printed_function(body)
    if printed is None:
        return body
    module = printed[1]
    lines = module.split("\n")
    define = global_name(body.function)
    start = next(
        (k for k, line in enumerate(lines) if line.startswith("define ") and f" {define}(" in line), None
    )
    if start is None:
        return body
    end = start + 1
    while end < len(lines) and lines[end] != "}":
        end += 1
    arrays = _sized_arrays(leaf, _arguments(lines[start]))
    if not arrays:
        return body
    seed = hashlib.sha1(f"{body.function}\n{body.module}".encode()).hexdigest()
    rewrite = _Rewrite(body, arrays, DebugInfo(module), seed)
    guarded = [line for old in lines[start + 1 : end] for line in rewrite.line(old)]
    if not rewrite.infos:
        return body
    text = "\n".join([*lines[: start + 1], *guarded, *lines[end:]])
    text += "\n" + "\n".join(rewrite.infos) + "\n" + _helper(text)
    return LLVMBody(text, body.function)


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
    """The node function's lines, each access to an array argument preceded by its check."""

    def __init__(self, body: LLVMBody, arrays: dict[str, tuple[str, str]], debug: DebugInfo, seed: str):
        self.body, self.arrays, self.debug, self.seed = body, arrays, debug, seed
        self.defs: dict[str, str] = {}
        self.infos: list[str] = []

    def line(self, line: str) -> list[str]:
        m = _DEF.match(line)
        if m:
            self.defs[m.group(1)] = m.group(2)
        rhs = m.group(2) if m else line.strip()
        found = memory_access(rhs)
        if found is None:
            return [line]
        pointer, size, kind = found
        base = self._base(pointer)
        if base is None or size > SCRATCH_BYTES:
            return [line]
        port, bytes_arg = self.arrays[base]
        n = len(self.infos)
        g = f"%__hpvm_g{n}"
        site = site_of(line, self.debug)
        where = f"{site.file}:{site.line}" if site.file else f"the LLVM instruction '{site.instruction}'"
        code = int(hashlib.sha1(f"{self.seed}:{n}".encode()).hexdigest()[:15], 16)
        write = rhs.startswith("store") or kind == ATOMIC
        with _LOCK:
            ACCESSES[code] = Access(self.body.module, self.body.function, port, where, write, size)
        self.infos.append(_info(n, code))
        dbg = re.search(r"!dbg !\d+", line)
        at = f", {dbg.group(0)}" if dbg else ""
        checks = [
            f"  {g}.p = ptrtoint ptr {pointer} to i64",
            f"  {g}.a = ptrtoint ptr {base} to i64",
            f"  {g}.o = sub i64 {g}.p, {g}.a",
            f"  {g}.e = add i64 {g}.o, {size}",
            f"  {g}.lo = icmp slt i64 {g}.o, 0",
            f"  {g}.hi = icmp sgt i64 {g}.e, {bytes_arg}",
            f"  {g}.bad = or i1 {g}.lo, {g}.hi",
            f"  call void @{_HELPER}(i1 {g}.bad, ptr @__hpvm_oob.info.{n}){at}",
            f"  {g}.q = select i1 {g}.bad, ptr {_SCRATCH}, ptr {pointer}",
        ]
        return [*checks, _redirect(line, rhs, pointer, f"{g}.q")]

    def _base(self, pointer: str) -> str | None:
        """The array argument ``pointer`` is ``getelementptr``\\s of, if it is."""
        root = gep_root(pointer, self.defs)
        return root if root in self.arrays else None


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
        "" if re.search(rf"^declare [^\n]*@{LEAF_ERROR}\(", text, re.M) else LEAF_ERROR_DECLARATION + "\n"
    )
    return (
        f"{_SCRATCH} = internal global [{SCRATCH_BYTES} x i8] zeroinitializer, align 64\n"
        f"define internal void @{_HELPER}(i1 %bad, ptr %info) alwaysinline {{\n"
        "  br i1 %bad, label %fail, label %ok\n"
        "fail:\n"
        f"  call void @{LEAF_ERROR}(i32 1, ptr %info)\n"
        "  ret void\n"
        "ok:\n"
        "  ret void\n"
        "}\n" + declare
    )
