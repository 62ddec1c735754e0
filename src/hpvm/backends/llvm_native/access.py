"""What an LLVM leaf's array accesses say about its instance ids: which bytes every
instance certainly touches (bounds).

It reads the leaf's own LLVM (the node function as the front end gave it, before the
clone replaces its queries: the ids enter there as calls to
``llvm.hpvm.getNodeInstanceID.{x,y,z}``), as LLVM prints it.

**Unit stride** (loop order) is ``stride.py``'s, which reads the leaf the same way.

**Every instance's bytes** (``every_instance_accesses``). Why. Compiled code checks no
bounds, and neither does the interpreter inside LLVM code, so ``b[i] = a[i] * 2`` run
with more instances than ``b`` has elements writes past it. When every instance certainly
loads or stores ``p[k*id + c]``, the sizes and the arrays alone say, before anything runs,
whether the last instance would (``backends/bounds.py`` turns these facts into the
``OutOfBoundsError``). What. A ``load`` or ``store`` in a block every call runs to its
end — the *entry block*, and each block on every path from it to one that ends the call
(``ret``, ``unreachable``, ``resume``: a call that does not return is followed by
``unreachable`` and ends the block there), such as the block after a loop (``dst[y] = s``
after summing a row) or where the two paths of an ``if`` meet again, but not one after
``if (...) abort();`` (at first, the entry block alone) — whose address is a pointer argument plus a byte
offset that is exactly ``stride*id + c`` for one of the node's own instance ids (the id
call's handle is ``llvm.hpvm.getNode()``'s, not a parent's), ``stride`` > 0: the offset is
followed back through ``getelementptr`` chains (scalar, array and vector element types;
constant or linear indices) and integer arithmetic with constants (``add``, ``sub``,
``mul``, ``shl``, ``or disjoint``, ``sext``, ``zext``, ``trunc``, ``freeze``, ``ashr`` and
``lshr`` of values every id keeps a multiple of the divisor — instcombine's
``ashr (shl v, 32), 30`` for ``a[i]`` with ``int i`` — and ``and v, 2^k - 1``). Integer widths are
followed exactly: each fact holds for ids up to a ``limit`` below which no operation
wraps or is cut off (``int i = id`` truncates to 32 bits: the fact holds for ids below
2^31), and is not used past it.

**Several ids** (``affine_accesses``). The same walk keeps an offset that is an affine form
of several ids — the node's own and its ancestors' (the id call's handle is
``getParentNode`` of a handle, once or more: its level) — as ``AffineBytes``: ``c +
sum(k*id)`` over ``affine.py``'s terms, with the conditions under which it is exact (a
largest id per id, and forms of several ids that must stay inside an integer width, which
only the launch's sizes decide), the accesses on one argument with the same strides joined.
A node's instance count (``llvm.hpvm.getNumNodeInstances``) times the id along the same
dimension of the node above it is the *global id* less the own id (``global_id``;
``affine.GLOBAL``): ``ix = gx * gridx + lx``, the CUDA convention's ``blockIdx.x *
blockDim.x + threadIdx.x`` that HPVM's GPU-convention leaves (Rodinia's, Parboil's) index
with, becomes one term, whose extent at launch is the two levels' product. A form that
keeps the global id beside one of the ids it is made of (the product alone, or ``ix +
gx``) gives no fact: their ranges are not independent.
An id's form times integer arguments of the leaf (``i * cols``, ``(i + 1) * cols``, the
row-major index of every 2-D leaf with a run-time width; ``(z * ny + y) * nx`` in 3-D) keeps
them as *scaled* terms (``affine.py``), whose range the launch's values of the arguments
decide; a product of two ids, or of more than ``affine.DEGREE`` arguments, is not followed.
Single own-id facts with a stride > 0 stay ``ByteAccess`` facts (their limit says it all); one
whose first byte is below the pointer (``a[x - 1]``) is an ``AffineBytes`` too, for its
start. Anything else — an index read from memory, a product of two ids, a struct field, a
``phi`` — gives no fact, and such accesses are not checked.

**Guarded accesses** (``blocks.guarded_blocks``, ``clips``). A block every call meeting its
conditions runs to its end — the conditions every path to it took (``br i1 %c``'s side),
every path from the entry to an end that keeps to those sides passing through it — makes
its accesses for exactly the instances meeting them. A condition that is a comparison of
two affine forms with one id (or none) between them is a *clip* (``affine.Clip``), the
same in every iteration of any loop (it reads ids and arguments only); the fact carries
its clips, and ``affine.clipped`` turns them into the ids' narrowed ranges at launch. A
block under any other condition (a value read from memory, ``!=``, several ids) gives no
fact, nor one whose clips read an id its access's global id is made of.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass

from ...ir.bodies import LLVMBody
from ...ir.cache import stored_json
from ...ir.debuginfo import DebugInfo
from ...ir.llvm_text import DEFINITION, parameters, split_top
from ...ir.llvm_text import VALUE_NAME as _NAME
from ...ir.llvm_text import arguments as _arguments
from ...ir.llvmcontext import own_context, promoted_function
from .affine import ALONE, EQ, GLOBAL, LE, Affine, Clip, Guard, Scaled, Term, merged_guards
from .blocks import certain_blocks, guarded_blocks
from .stored import code_version

ID_DIMS = {"x": 0, "y": 1, "z": 2}
ID_CALL = re.compile(r"@llvm\.hpvm\.getNodeInstanceID\.([xyz])\(")
_COUNT_CALL = re.compile(r"@llvm\.hpvm\.getNumNodeInstances\.([xyz])\(")
FLAGS = {"nsw", "nuw", "exact", "disjoint", "inbounds", "nneg", "samesign", "inrange"}

_LOCK = threading.Lock()
_PRINTED: dict[tuple[str, str], tuple[str, str] | None] = {}
_BYTES: dict[tuple[str, str], tuple[tuple[ByteAccess, ...], tuple[AffineBytes, ...]]] = {}


def promoted(body: LLVMBody) -> str | None:
    """The node function after LLVM's SROA: its locals' values as SSA values, so that a
    pointer or index kept in a local (``llvm.extract``'s leaves pass their inputs through
    one-slot locals, as ``-O0`` code does, ``optnone`` set aside: ``promoted_function``) is
    followed like one passed directly."""
    try:
        with own_context() as parse:
            return str(promoted_function(parse, body.module, body.function))
    except (RuntimeError, NameError):
        return None


def printed_function(body: LLVMBody) -> tuple[str, str] | None:
    """The node function's text and its module's, as LLVM prints them (one form, and
    metadata numbered alike in both), or ``None`` when the module does not parse or lacks
    the function (the clone reports that). Parsed once per module text and function, and
    kept in hpvm's cache for later processes (``llvm-printed/``, ``ir.cache.stored_json``:
    an HPVM-C leaf's module is its whole translation unit; 0.25 s of Cava's warm run)."""
    key = (body.module, body.function)
    with _LOCK:
        if key in _PRINTED:
            return _PRINTED[key]
    printed = stored_json(
        "llvm-printed",
        code_version(),
        [body.function],
        body.module,
        {"function": (str, type(None)), "module": (str, type(None))},
        lambda: _printed(body),
    )
    found = None if printed["function"] is None else (printed["function"], printed["module"])
    with _LOCK:
        _PRINTED[key] = found
    return found


def _printed(body: LLVMBody) -> dict[str, str | None]:
    import llvmlite.binding as llvm

    try:
        module = llvm.parse_assembly(body.module)
        fn = module.get_function(body.function)
        if not fn.is_declaration:
            return {"function": str(fn), "module": str(module)}
    except (RuntimeError, NameError):
        pass
    return {"function": None, "module": None}


def strip_metadata(rhs: str) -> str:
    """An instruction's right-hand side without metadata attachments."""
    return re.split(r",\s*!", rhs, maxsplit=1)[0].strip()


# -- the bytes every instance touches (bounds) -------------------------------------------

#: Ids are non-negative int64 values: a fact starts out holding for every one of them.
_ID_LIMIT = 2**63 - 1
#: What an ``icmp``'s predicate says on its false side.
_NEGATED = {"slt": "sge", "sge": "slt", "sle": "sgt", "sgt": "sle", "ne": "eq", "eq": "ne", "ult": "uge",
            "uge": "ult", "ule": "ugt", "ugt": "ule"}  # fmt: skip
#: The most values that are one of two (``arms``) an address may be made of (2^n facts).
_CHOICES = 2
#: ``llvm.smin`` and its kin: (kind, bits, first operand, second operand).
_MINMAX = re.compile(
    r"@llvm\.([su](?:min|max))\.i(\d+)\(i\d+(?: [a-z]+)* (%[-a-zA-Z$._0-9]+|-?\d+), i\d+(?: [a-z]+)* (%[-a-zA-Z$._0-9]+|-?\d+)\)"
)
#: Byte sizes of the scalar types a ``getelementptr`` steps over or an access moves.
_SIZES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i128": 16, "half": 2, "bfloat": 2, "float": 4,
          "double": 8, "fp128": 16, "ptr": 8}  # fmt: skip
_GEPFLAGS = {"inbounds", "nuw", "nusw"}
_HANDLE_ARG = re.compile(r"\(ptr(?: [a-z_]+)* (%[-a-zA-Z$._0-9]+|%\"[^\"]*\")\)")
_PARENT_CALL = re.compile(
    r"\bcall (?:[a-z_]+ )*ptr @llvm\.hpvm\.getParentNode\(ptr(?: [a-z_]+)* (%[-a-zA-Z$._0-9]+)\)"
)
_NODE_CALL = re.compile(r"\bcall (?:[a-z_]+ )*ptr @llvm\.hpvm\.getNode\(\)")
_INTEGER = re.compile(r"-?\d+\Z")
_WIDTH = re.compile(r"i(\d+)\Z")


@dataclass(frozen=True)
class ByteAccess:
    """Every instance loads or stores bytes ``stride*id + first`` to ``stride*id + last`` of
    LLVM argument ``argument`` (a pointer), ``id`` its own instance id ``dim`` (0, 1, 2:
    x, y, z) — for ids up to ``limit``. ``where``: ``file:line`` from the debug metadata."""

    argument: int
    dim: int
    stride: int
    first: int
    last: int
    limit: int
    where: str | None


@dataclass(frozen=True)
class AffineBytes:
    """Every instance loads or stores bytes ``c + sum(k * id)`` (``terms``: ``(level, dim,
    k)``, ``affine.py``), ``c`` from ``first`` to ``last``, of LLVM argument ``argument``,
    wherever the ids keep within ``limits`` and the forms of ``guards`` in their ranges.
    ``where_first`` / ``where_last``: ``file:line`` of the access reaching the lowest /
    highest byte."""

    argument: int
    terms: tuple[Term, ...]
    first: int
    last: int
    limits: tuple[Term, ...]
    guards: tuple[Guard, ...]
    where_first: str | None
    where_last: str | None
    scaled: tuple[Scaled, ...] = ()  #: ids times an integer argument (``affine.py``)
    #: the guard the accesses are under: made only by the instances meeting every clip
    clips: tuple[Clip, ...] = ()


def _signed(bits: int) -> tuple[int, int]:
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def type_size(text: str) -> int | None:
    """The bytes one value of LLVM type ``text`` occupies in memory (also its stride in a
    ``getelementptr``), or ``None`` for a type this analysis does not follow (a struct, an
    odd-sized vector, an address space)."""
    text = text.strip()
    if text in _SIZES:
        return _SIZES[text]
    m = re.fullmatch(r"\[(\d+) x (.+)\]|<(\d+) x (.+)>", text)
    if m is None:
        return None
    count = int(m.group(1) or m.group(3))
    inner = type_size(m.group(2) or m.group(4))
    if inner is None:
        return None
    size = count * inner
    if m.group(3) and size & (size - 1):  # a vector's stride is its size rounded up: not followed
        return None
    return size


def leading_type(text: str) -> str:
    """The type at the start of an operand (``float %v``, ``<4 x i32> %v``, ``[2 x i8] c"ab"``)."""
    text = text.strip()
    if text[:1] in "[<{":
        close = {"[": "]", "<": ">", "{": "}"}[text[0]]
        depth = 0
        for k, ch in enumerate(text):
            depth += ch == text[0]
            depth -= ch == close
            if depth == 0:
                return text[: k + 1]
    return text.split(" ", 1)[0]


def every_instance_accesses(body: LLVMBody) -> tuple[ByteAccess, ...]:
    """The loads and stores of ``body``'s node function that every instance makes at
    ``stride*id + c`` bytes from a pointer argument (module docstring), the farthest per
    argument, id, stride and limit; none when the function cannot be read."""
    return _facts(body)[0]


def affine_accesses(body: LLVMBody) -> tuple[AffineBytes, ...]:
    """The certain blocks' loads and stores (``blocks.certain_blocks``) at an affine form of several ids (the node's own
    and its ancestors') bytes from a pointer argument, or of one id that steps down or
    starts below the argument (module docstring); one per argument and terms."""
    return _facts(body)[1]


def _facts(body: LLVMBody) -> tuple[tuple[ByteAccess, ...], tuple[AffineBytes, ...]]:
    key = (body.module, body.function)
    with _LOCK:
        if key in _BYTES:
            return _BYTES[key]
    printed = printed_function(body)
    found = _byte_accesses(*printed) if printed is not None else ((), ())
    with _LOCK:
        _BYTES[key] = found
    return found


def _byte_accesses(function: str, module: str) -> tuple[tuple[ByteAccess, ...], tuple[AffineBytes, ...]]:
    lines = function.splitlines()
    define = next((line for line in lines if line.startswith("define")), "")
    if not define:
        return (), ()
    arguments = {name: k for k, name in enumerate(_arguments(define)) if name}
    #: the integer arguments (a row's width, a step): their values are known at launch
    integers = {
        name: k
        for k, (name, item) in enumerate(zip(_arguments(define), parameters(define)))
        if name and _WIDTH.match(item.split(" ", 1)[0])
    }
    defs: dict[str, str] = {}
    for line in lines:
        m = DEFINITION.match(line)
        if m:
            defs[m.group(1)] = strip_metadata(m.group(2))
    memo: dict[str, Affine | None] = {}

    def operand(text: str, depth: int) -> Affine | None:
        text = text.strip()
        if _INTEGER.match(text):
            return Affine(c=int(text))
        return value(text, depth + 1) if text.startswith("%") else None

    def value(name: str, depth: int = 0) -> Affine | None:
        """``name`` as an affine form of instance ids, if it is one."""
        if name not in memo:
            memo[name] = None if depth > 64 else _value(name, depth)
        return memo[name]

    def level(handle: str, depth: int = 0) -> int | None:
        """How many levels up from the leaf's node the handle ``handle`` is."""
        rhs = defs.get(handle, "")
        if _NODE_CALL.search(rhs):
            return 0
        m = _PARENT_CALL.search(rhs)
        inner = level(m.group(1), depth + 1) if m is not None and depth < 16 else None
        return inner + 1 if inner is not None else None

    def count(text: str, depth: int = 0) -> tuple[int, int] | None:
        """(level, dim) of the instance count ``text`` is (``getNumNodeInstances``, widened
        or cut: its cut is exact where the global id it scales is, ``global_id``)."""
        text = text.strip()
        rhs = defs.get(text, "") if text.startswith("%") and depth < 8 else ""
        words = rhs.replace(",", " ").split()
        if "call" in words[:3]:
            call = _COUNT_CALL.search(rhs)
            handle = _HANDLE_ARG.search(rhs[call.end() - 1 :]) if call else None
            up = level(handle.group(1)) if call is not None and handle is not None else None
            return (up, ID_DIMS[call.group(1)]) if call is not None and up is not None else None
        rest = [w for w in words[1:] if w not in FLAGS]
        if words and words[0] in ("sext", "zext", "trunc") and len(rest) == 4:
            return count(rest[1], depth + 1)
        return None

    def global_id(a: str, b: str, depth: int) -> Affine | None:
        """``a * b`` where one is a node's instance count along a dimension and the other
        ``k`` times the id along it of the node above: the global id less the own id
        (``affine.GLOBAL``; adding the own id leaves the global id alone), or ``None``."""
        for scaled, counted in ((a, b), (b, a)):
            found = count(counted)
            other = operand(scaled, depth) if found is not None else None
            if other is None or other.c or len(other.terms) != 1 or other.scaled:
                continue
            (lv, d, k), (count_level, count_dim) = other.terms[0], found
            if lv == count_level + 1 and d == count_dim:
                terms = tuple(sorted(((count_level, GLOBAL + d, k), (count_level, d, -k))))
                return Affine(terms, 0, other.limits, other.guards)
        return None

    chosen: dict[str, str] = {}  # a value that is one of two (``arms``): the one taken now

    def _value(name: str, depth: int) -> Affine | None:
        if name in chosen:
            return operand(chosen[name], depth)
        rhs = defs.get(name)
        if rhs is None:
            return Affine.argument(integers[name]) if name in integers else None
        words = rhs.replace(",", " ").split()
        if "call" in words[:3]:
            call = ID_CALL.search(rhs)
            handle = _HANDLE_ARG.search(rhs[call.end() - 1 :]) if call else None
            up = level(handle.group(1)) if call is not None and handle is not None else None
            return Affine.id(up, ID_DIMS[call.group(1)]) if call is not None and up is not None else None
        op = words[0]
        rest = [w for w in words[1:] if w not in FLAGS]
        if op in ("sext", "zext", "trunc", "freeze"):
            if op == "freeze":
                return operand(rest[1], depth) if len(rest) == 2 else None
            if len(rest) != 4 or rest[2] != "to" or not _WIDTH.match(rest[3]):
                return None
            inner = operand(rest[1], depth)
            if inner is None:
                return None
            if op == "zext":
                return inner.within(0, _ID_LIMIT)
            if op == "trunc":
                return inner.within(*_signed(int(rest[3][1:])))
            return inner
        if len(rest) != 3 or not _WIDTH.match(rest[0]):
            return None
        bits = int(rest[0][1:])
        if op == "mul" and (scaled := global_id(rest[1], rest[2], depth)) is not None:
            return scaled.within(*_signed(bits))
        a, b = operand(rest[1], depth), operand(rest[2], depth)
        if a is None or b is None:
            return None
        if op == "or" and "disjoint" in words[1:3]:
            op = "add"
        result: Affine | None
        if op == "add":
            result = a.plus(b)
        elif op == "sub":
            result = a.plus(b.times(-1))
        elif op == "mul" and (a.constant or b.constant):
            result = a.times(b.c).plus(b.conditions()) if b.constant else b.times(a.c).plus(a.conditions())
        elif op == "mul":  # (an id's form times integer arguments: a row's width)
            result = a.times_form(b)
        elif op == "shl" and b.constant and 0 <= b.c < bits:
            result = a.times(2**b.c).plus(b.conditions())
        elif op in ("ashr", "lshr") and b.constant and 0 <= b.c < bits:
            # A shift of a value every id keeps a multiple of 2^C: an exact division (instcombine
            # writes sext(trunc(v)) * 4 as ashr (shl v, 32), 30, and adds constants in between).
            kept = a if op == "ashr" else a.within(0, 2 ** (bits - 1) - 1)  # (lshr: as unsigned)
            result = kept.divided(2**b.c) if kept is not None else None
        elif op == "xor" and b.constant and b.c == -1:  # ~v: -v - 1 (clang's size - 1 - t)
            result = a.times(-1).plus(Affine(c=-1)).plus(b.conditions())
        elif op == "and" and b.constant and b.c > 0 and b.c & (b.c + 1) == 0:
            result = a.within(0, b.c)  # zext(trunc(v)) as instcombine writes it: and v, 2^k - 1
        else:
            return None
        return result.within(*_signed(bits)) if result is not None else None

    def address(name: str, depth: int = 0) -> tuple[int, Affine] | None:
        """(the pointer argument, the byte offset from it) of a pointer value."""
        if name in arguments:
            return arguments[name], Affine()
        rhs = defs.get(name, "")
        if depth > 64 or not rhs.startswith("getelementptr"):
            return None
        parts = split_top(rhs[len("getelementptr") :])
        head = [w for w in parts[0].split() if w not in _GEPFLAGS] if parts else []
        if len(parts) < 3 or not parts[1].startswith("ptr %") or not head:
            return None
        base = address(parts[1].split()[-1], depth + 1)
        if base is None:
            return None
        argument, offset = base
        current = " ".join(head)
        for position, index in enumerate(parts[2:]):
            if position:  # later indices step into the element type
                m = re.fullmatch(r"\[\d+ x (.+)\]|<\d+ x (.+)>", current)
                if m is None:
                    return None
                current = m.group(1) or m.group(2)
            size = type_size(current)
            words = index.split()
            step = operand(words[-1], depth) if len(words) == 2 and _WIDTH.match(words[0]) else None
            if size is None or step is None:
                return None
            step = step.within(*_signed(int(words[0][1:])))
            if step is None:
                return None
            offset = offset.plus(step.times(size))
        found = offset.within(*_signed(64))
        return (argument, found) if found is not None else None

    def clips(condition: str, side: bool, depth: int = 0) -> tuple[list[Clip], Affine] | None:
        """What ``condition`` being ``side`` says of the ids: clips (``affine.Clip``), and
        the conditions under which the compared forms are the values LLVM compares; ``None``
        where it is not such a statement (a value read from memory, ``!=``, ...)."""
        words = [w for w in defs.get(condition, "").replace(",", " ").split() if w not in FLAGS]
        if depth > 16 or not words:
            return None
        both: list[tuple[str, bool]] | None = None
        if words[0] in ("and", "or") and len(words) == 4 and words[1] == "i1":
            both = [(words[2], side), (words[3], side)] if side == (words[0] == "and") else None
        elif words[0] == "select" and len(words) == 7 and words[1::2] == ["i1", "i1", "i1"]:
            # LLVM's logical and / or: select %a, %b, false / select %a, true, %b
            if words[6] == "false" and side:
                both = [(words[2], True), (words[4], True)]
            elif words[4] == "true" and not side:
                both = [(words[2], False), (words[6], False)]
        elif words[0] == "xor" and len(words) == 4 and words[1] == "i1" and words[3] == "true":
            return clips(words[2], not side, depth + 1)
        if both is not None:
            made = [clips(c, s, depth + 1) for c, s in both]
            if made[0] is None or made[1] is None:
                return None
            return made[0][0] + made[1][0], made[0][1].plus(made[1][1])
        if words[0] != "icmp" or len(words) != 5 or not _WIDTH.match(words[2]):
            return None
        return compared(
            words[3], words[4], words[1] if side else _NEGATED.get(words[1], ""), int(words[2][1:])
        )

    def compared(left: str, right: str, truth: str, bits: int) -> tuple[list[Clip], Affine] | None:
        """``clips`` of ``left truth right`` (an ``icmp`` predicate that holds) in ``bits``."""
        a, b = operand(left, 0), operand(right, 0)
        if a is None or b is None or not truth:
            return None
        if truth[0] == "u":  # (unsigned: as signed where both stay non-negative)
            a, b = a.within(0, 2 ** (bits - 1) - 1), b.within(0, 2 ** (bits - 1) - 1)
            if a is None or b is None:
                return None
            truth = "s" + truth[1:]
        # the statement as d <= 0 or d == 0, d an affine form
        d = a.plus(b.times(-1))
        relation = {"slt": LE, "sle": LE, "sgt": LE, "sge": LE, "eq": EQ}.get(truth)
        if relation is None:
            return None
        if truth == "slt":
            d = d.plus(Affine(c=1))
        elif truth == "sgt":
            d = d.times(-1).plus(Affine(c=1))
        elif truth == "sge":
            d = d.times(-1)
        if len(d.terms) > 1 or any(level != ALONE for level, *_ in d.scaled):
            return None
        alone = tuple(d.scaled)
        clip: Clip = (*d.terms[0], d.c, alone, relation) if d.terms else (ALONE, 0, 0, d.c, alone, relation)
        return [clip], d.conditions()

    def arms(name: str) -> list[tuple[str, tuple[list[Clip], Affine] | None]] | None:
        """A value that is one of two others by a test of them or of the ids — ``select``,
        ``llvm.smin``/``smax``/``umin``/``umax`` (a clamped neighbour, ``i + 1 < rows ? i + 1
        : rows - 1``) —: each value it may be, with the clips under which it is (``None``
        where the test is not read); ``None`` for any other value."""
        rhs = defs.get(name, "")
        words = [
            w for w in rhs.replace(",", " ").replace("(", " ").replace(")", " ").split() if w not in FLAGS
        ]
        if len(words) == 7 and words[0] == "select" and words[1] == "i1" and _WIDTH.match(words[3]):
            return [(words[4], clips(words[2], True)), (words[6], clips(words[2], False))]
        found = _MINMAX.search(rhs)
        if found is None or "call" not in words[:3]:
            return None
        kind, bits = found.group(1), int(found.group(2))
        a, b = found.group(3), found.group(4)
        sign = kind[0]
        low = kind[1:] == "min"  # min: a where a <= b; max: a where a >= b
        first = compared(a, b, f"{sign}{'le' if low else 'ge'}", bits)
        second = compared(a, b, f"{sign}{'gt' if low else 'lt'}", bits)
        return [(a, first), (b, second)]

    def choices(name: str, seen: set[str], depth: int = 0) -> list[str]:
        """The values ``name`` is computed from that are one of two (``arms``), the first
        met on each path."""
        if name in seen or depth > 64 or name not in defs:
            return []
        seen.add(name)
        if arms(name) is not None:
            return [name]
        return [c for used in _NAME.findall(defs[name]) for c in choices(used, seen, depth + 1)]

    def addresses(pointer: str) -> list[tuple[list[tuple[list[Clip], Affine]], tuple[int, Affine]]]:
        """``address`` of ``pointer``, or where it is made from values that are one of two
        (at most ``_CHOICES`` of them), its address for each combination of their arms, with
        the clips under which that combination is taken."""
        found = address(pointer)
        if found is not None:
            return [([], found)]
        points = choices(pointer, set())
        if not points or len(points) > _CHOICES:
            return []
        options = [arms(point) or [] for point in points]
        out = []
        saved = dict(memo)
        for combination in itertools.product(*options):
            if any(why is None for _, why in combination):
                out = []
                break
            chosen.clear()
            chosen.update({point: value for point, (value, _) in zip(points, combination, strict=True)})
            memo.clear()
            found = address(pointer)
            if found is None:
                out = []
                break
            out.append(([why for _, why in combination], found))  # type: ignore[misc]
        chosen.clear()
        memo.clear()
        memo.update(saved)
        return out

    debug: DebugInfo | None = None
    farthest: dict[tuple[int, int, int, int], ByteAccess] = {}
    spans: dict[tuple[int, tuple[Term, ...], tuple[Scaled, ...], tuple[Clip, ...]], AffineBytes] = {}
    certain = [(line, frozenset()) for line in certain_blocks(lines)]
    guarded = [(line, conditions) for body, conditions in guarded_blocks(lines) for line in body]
    for line, conditions in (*certain, *guarded):
        m = DEFINITION.match(line)
        rhs = strip_metadata(m.group(2) if m else line)
        words = rhs.split()
        if not words or words[0] not in ("load", "store"):
            continue
        operands = split_top(" ".join(w for w in words[1:] if w not in ("atomic", "volatile")))
        pointer = _NAME.findall(operands[1]) if len(operands) > 1 and operands[1].startswith("ptr %") else []
        if not pointer:
            continue
        size = type_size(leading_type(operands[0]))
        if size is None:
            continue
        made = [clips(c, side) for c, side in sorted(conditions)]
        if any(one is None for one in made):
            continue
        for taken, found in addresses(pointer[0]):
            argument, offset = found
            parts = [*made, *taken]
            reached = tuple(sorted({clip for one in parts for clip in one[0]}))  # type: ignore[index]
            for one in parts:
                offset = offset.plus(one[1])  # type: ignore[index]
            ids = (*_ids(offset), *((lv, d, k) for lv, d, k, *_ in reached if lv != ALONE))
            if not _ids(offset) or _entangled(ids):
                continue
            if debug is None:
                debug = DebugInfo(module)
            where = debug.place(line)
            simple = _simple(offset) if not reached else None
            if simple is not None:
                dim, stride, limit = simple
                fact = ByteAccess(argument, dim, stride, offset.c, offset.c + size - 1, limit, where)
                key = (argument, dim, stride, limit)
                if key not in farthest or fact.last > farthest[key].last:
                    farthest[key] = fact
                if offset.c >= 0:
                    continue  # (a negative first byte: the instance with id 0 reads before the array)
            at = (argument, offset.terms, offset.scaled, reached)
            spans[at] = _joined(spans.get(at), argument, offset, size, where, reached)
    return tuple(farthest.values()), tuple(spans.values())


def _ids(offset: Affine) -> tuple[tuple[int, int, int], ...]:
    """Every id's ``(level, dim, k)`` in ``offset``: its terms, then its scaled terms that
    have an id (their argument left out: which ids a form has, not its value)."""
    return (*offset.terms, *((level, dim, k) for level, dim, k, _ in offset.scaled if level != ALONE))


def _entangled(terms: tuple[Term, ...]) -> bool:
    """Whether a global id shares its form with one of the ids it is made of (``global_id``'s
    product alone, or with the parent's id: their ranges are not independent, and a span
    taken as if they were would say more bytes than the instances touch)."""
    made_of = {(lv + up, d - GLOBAL) for lv, d, _ in terms if d >= GLOBAL for up in (0, 1)}
    return any((lv, d) in made_of for lv, d, _ in terms if d < GLOBAL)


def _simple(offset: Affine) -> tuple[int, int, int] | None:
    """(dim, stride, limit) of ``stride*id + c`` in one own id, ``stride`` > 0, with no other
    condition than a limit on that id: what ``ByteAccess`` says."""
    if len(offset.terms) != 1 or offset.guards or len(offset.limits) > 1 or offset.scaled:
        return None
    level, dim, k = offset.terms[0]
    if level or dim >= GLOBAL or k <= 0 or any(lim[:2] != (0, dim) for lim in offset.limits):
        return None
    return dim, k, offset.limits[0][2] if offset.limits else _ID_LIMIT


def _joined(
    was: AffineBytes | None,
    argument: int,
    offset: Affine,
    size: int,
    where: str | None,
    reached: tuple[Clip, ...],
) -> AffineBytes:
    """An access of ``size`` bytes at ``offset`` joined to the fact on the same argument
    and terms: the lowest first byte, the highest last, the conditions of both."""
    first, last = offset.c, offset.c + size - 1
    guards = tuple(offset.guards)
    if was is None:
        return AffineBytes(
            argument,
            offset.terms,
            first,
            last,
            offset.limits,
            merged_guards(guards),
            where,
            where,
            offset.scaled,
            reached,
        )
    limits = {(lv, d): lim for lv, d, lim in was.limits}
    for lv, d, lim in offset.limits:
        limits[(lv, d)] = min(lim, limits.get((lv, d), lim))
    return AffineBytes(
        was.argument,
        was.terms,
        min(first, was.first),
        max(last, was.last),
        tuple((lv, d, lim) for (lv, d), lim in sorted(limits.items())),
        merged_guards((*was.guards, *guards)),
        where if first < was.first else was.where_first,
        where if last > was.last else was.where_last,
        was.scaled,
        was.clips,
    )
