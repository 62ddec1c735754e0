"""``upgrade(text)``: HPVM IR as HPVM's own tools write it (LLVM 9–16 text) as LLVM 22 text.

Why: HPVM's release is built on LLVM 9, so its ``.ll`` files (its pass tests, what its
GenHPVM writes, clang 9's output for HPVM-C) spell pointers with their element type
(``i32*``, ``%struct.Root*``, ``void (i8*)*``), mark parameters with HPVM's own bare ``in`` /
``out`` / ``inout`` attributes and keep hints in named metadata (``!hpvm_hint_cpu``). LLVM 22
(llvmlite 0.50) has only opaque pointers and no parser for the old form, so the upgrade is a
rewrite of the token stream (``lltokens.py``) by these rules, in this order
(docs/llvm.md, "Upgrading HPVM's LLVM 9 text"):

1. **pointer types**: ``T*`` and ``T addrspace(n)*`` become ``ptr`` / ``ptr addrspace(n)``
   for every ``T`` (scalars, named and literal structs, arrays, vectors, function types,
   pointers); instructions that need an element type (``load``, ``getelementptr``,
   ``alloca``...) already carry it in LLVM 9 syntax. ``byval`` / ``sret`` / ``inalloca``
   without a type get the pointee's: ``%struct.S* byval`` → ``ptr byval(%struct.S)``;
2. **intrinsic manglings** of pointer types: ``.p0i8``, ``.p0f32``, ``.p1i32``,
   ``.p0s_struct.Ss``... → ``.p0`` / ``.p1`` (``llvm.lifetime.start.p0i8`` →
   ``llvm.lifetime.start.p0``; LLVM's own upgrader then drops the size argument LLVM 22
   removed);
3. **no-op casts**: a constant ``bitcast (ptr X to ptr)`` is ``X`` (so ``i8* bitcast
   (%struct.out.f (...)* @f to i8*)``, a node function passed to ``createNode``, is ``ptr
   @f``); an instruction ``%x = bitcast ptr V to ptr`` stays (it still defines ``%x``, and
   numbered values must stay numbered in order) but every use of ``%x`` in its function reads
   ``V`` instead, so that passes looking for ``V`` (GenHPVM, the importer) find it;
4. **HPVM's parameter attributes** on ``define`` / ``declare`` parameters: ``in`` →
   ``"in"``, ``out`` → ``"out"``, ``inout`` → ``"in" "out"`` (hpvm's string attributes);
5. **hints**: each function listed in ``!hpvm_hint_cpu`` / ``_gpu`` / ``_cpu_gpu`` /
   ``_cudnn`` / ``_promise`` (and the older ``_spir`` / ``_cpu_spir``) gets the function
   attribute ``"hpvm.hint"`` (``cpu``, ``gpu``, ``gpu``, ``tensor``, ``tensor``; ``gpu``,
   ``gpu``), as ``c/genhpvm.py`` maps HPVM's targets; in several lists, the first of HPVM's
   ``getPreferredTarget`` order wins. The lists go (the attribute carries the hint, and a
   list naming a node function would keep a use of it that is no call).

Everything else is kept: LLVM 22 still reads LLVM 9's attributes (it upgrades
``argmemonly``, ``nocapture``...; string attributes such as ``"no-frame-pointer-elim"`` are
kept and ignored), its debug information and ``llvm.dbg.*`` calls. The result is parsed and
verified by llvmlite; what the rules do not cover is an ``LLVMImportError`` naming the line
of the original text (the upgrade keeps every line where it was) and LLVM's complaint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..ir.llvmcontext import own_context
from .errors import LLVMImportError
from .lltokens import Token, match_back, match_forward, spell, tokenize, untokenize

#: HPVM's hint lists → hpvm's hint, in the order HPVM's getPreferredTarget reads them
#: (HPVMUtils.h); ``spir``/``cpu_spir`` are older releases' names for the OpenCL target.
HINT_LISTS = {
    "hpvm_hint_cpu": "cpu",
    "hpvm_hint_gpu": "gpu",
    "hpvm_hint_cpu_gpu": "gpu",
    "hpvm_hint_cudnn": "tensor",
    "hpvm_hint_promise": "tensor",
    "hpvm_hint_spir": "gpu",
    "hpvm_hint_cpu_spir": "gpu",
}
_SCALAR = re.compile(
    r"(?:i\d+|half|bfloat|float|double|fp128|x86_fp80|ppc_fp128|x86_mmx|x86_amx|ptr(?: addrspace\(\d+\))?)\Z"
)
_TYPED_ATTRS = frozenset({"byval", "sret", "inalloca"})
_HPVM_ATTRS = {"in": ['"in"'], "out": ['"out"'], "inout": ['"in"', '"out"']}
_MANGLED = re.compile(
    r"\.p(\d+)(?:p\d+)*(?:i\d+|f\d+|bf16|isVoid|v\d+(?:i\d+|f\d+|p\d+)|a\d+(?:i\d+|f\d+)|s_.+?s|f_.+?f)(?=\.|$)"
)
_LLVM_ERROR = re.compile(r"<string>:(\d+):(\d+): error: (.*)")


def upgrade(text: str, file: str | None = None) -> str:
    """``text`` as LLVM 22 text: unchanged if llvmlite reads it already and it has no
    typed pointer and no hint metadata to carry over, else rewritten by the rules above,
    with every line where it was. ``LLVMImportError`` (naming ``file`` and the original
    line) for what the rules do not cover. ``file``: where the text came from, for messages."""
    with own_context() as parse:  # (the module is dropped at once: only the text is kept)
        return upgraded_module(text, parse, file)[0]


def upgraded_module(text: str, parse: Callable[[str], Any], file: str | None = None) -> tuple[str, Any]:
    """``upgrade(text)`` and its llvmlite module (parsed once, by ``parse``: the importer's,
    in the importer's own context, ``ir/llvmcontext.py``), verified when the text was
    rewritten; LLVM 22 text's module is not verified yet."""
    tokens, tail = tokenize(text) if "*" in text or "!hpvm_hint_" in text else ([], "")
    if not any(t.text == "*" or t.text.startswith("!hpvm_hint_") for t in tokens):
        try:  # (LLVM 22 still reads T* as ptr, but hpvm's text readers expect ptr)
            return text, parse(text)
        except RuntimeError:
            tokens, tail = tokenize(text)
    where = _Where(file, text.splitlines())
    tokens = _pointers(tokens, where)
    _manglings(tokens)
    tokens = _constant_casts(tokens)
    headers = _headers(tokens)
    _cast_uses(tokens, headers)
    tokens = _hpvm_attributes(tokens, headers)
    tokens = _hints(tokens, _headers(tokens), where)
    out = untokenize(tokens, tail)
    return out, _check(out, where, parse)


class _Where:
    """Locations in the original text, for messages."""

    def __init__(self, file: str | None, lines: list[str]):
        self.file = file
        self.lines = lines

    def __call__(self, line: int) -> str:
        head = f"{self.file}:{line}" if self.file else f"line {line}"
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return f"{head} ({text[:160]})" if text else head

    def fail(self, line: int, what: str) -> LLVMImportError:
        return LLVMImportError(f"{self(line)}: {what}")


# -- rule 1: pointer types ----------------------------------------------------------------
def _type_start(out: list[Token], end: int, returned: bool = False) -> int | None:
    """The index where the one type ending at ``out[end]`` starts, or ``None``
    (``returned``: a function type's return type, which may be ``void``)."""
    if end < 0:
        return None
    last = out[end].text
    if _SCALAR.match(last) or last.startswith("%") or (returned and last == "void"):
        return end
    if last in ("]", "}", ">"):
        return match_back(out, end)
    if last == ")":  # a function type: its parameters, after its return type
        open_ = match_back(out, end)
        return None if open_ is None else _type_start(out, open_ - 1, returned=True)
    return None


def _pointers(tokens: list[Token], where: _Where) -> list[Token]:
    out: list[Token] = []
    for k, tok in enumerate(tokens):
        if tok.text == "*":
            space = ""
            if len(out) >= 4 and out[-4].text == "addrspace" and out[-3].text == "(" and out[-1].text == ")":
                space = f" addrspace({out[-2].text})" if out[-2].text != "0" else ""
                del out[-4:]
            start = _type_start(out, len(out) - 1)
            if start is None:
                seen = out[-1].text if out else "the start of the text"
                raise where.fail(
                    tok.line,
                    f"'*' after {seen!r}, which is not a type: not a pointer type of LLVM 9–16 text "
                    "the upgrade knows (docs/llvm.md, 'Upgrading HPVM's LLVM 9 text')",
                )
            pointee = out[start:]
            del out[start:]
            out.append(Token("ptr" + space, pointee[0].ws, pointee[0].line, spell(pointee)))
            continue
        if tok.text in _TYPED_ATTRS and (k + 1 >= len(tokens) or tokens[k + 1].text != "("):
            pointee = _param_pointee(out)
            if pointee is not None:
                out.append(Token(f"{tok.text}({pointee})", tok.ws, tok.line))
                continue
        out.append(tok)
    return out


def _param_pointee(out: list[Token]) -> str | None:
    """The pointee of the pointer parameter being written (``byval`` needs it)."""
    for t in reversed(out):
        if t.text in (",", "("):
            return None
        if t.pointee is not None:
            return t.pointee
    return None


# -- rule 2: intrinsic manglings ------------------------------------------------------------
def _manglings(tokens: list[Token]) -> None:
    for t in tokens:
        if t.text.startswith("@llvm."):
            t.text = _MANGLED.sub(lambda m: f".p{m.group(1)}", t.text)


# -- rule 3: no-op casts ----------------------------------------------------------------
def _constant_casts(tokens: list[Token]) -> list[Token]:
    """``bitcast (ptr X to ptr)`` → ``X``, innermost first."""
    for k in reversed(range(len(tokens) - 1)):
        if tokens[k].text != "bitcast" or tokens[k + 1].text != "(":
            continue
        close = match_forward(tokens, k + 1)
        if close is None or close - (k + 1) < 5:
            continue
        first, to, last = tokens[k + 2], tokens[close - 2], tokens[close - 1]
        if to.text == "to" and first.text.startswith("ptr") and first.text == last.text:
            value = tokens[k + 3 : close - 2]
            value[0].ws = tokens[k].ws
            tokens[k : close + 1] = value
    return tokens


def _cast_uses(tokens: list[Token], headers: list[_Header]) -> None:
    """Uses of ``%x = bitcast ptr V to ptr`` read ``V`` (the instruction stays)."""
    for h in headers:
        if h.body is None:
            continue
        start, end = h.body
        alias: dict[str, str] = {}
        defs: set[int] = set()
        for k in range(start, end - 6):
            t = tokens[k : k + 8]
            if (
                t[0].text.startswith("%") and t[1].text == "=" and t[2].text == "bitcast"
                and t[3].text.startswith("ptr") and t[3].text == t[6].text and t[5].text == "to"
                and t[4].text[:1] in "%@" and (len(t) < 8 or t[7].text == "," or "\n" in t[7].ws)
            ):  # fmt: skip
                alias[t[0].text] = t[4].text
                defs.add(k)
        if not alias:
            continue
        for name in alias:  # follow chains of casts
            seen = {name}
            while alias[name] in alias and alias[name] not in seen:
                seen.add(alias[name])
                alias[name] = alias[alias[name]]
        for k in range(start, end):
            if k not in defs and tokens[k].text in alias:
                tokens[k].text = alias[tokens[k].text]


# -- function headers -------------------------------------------------------------------
class _Header:
    """A ``define`` or ``declare``: where its name, its parameter list and its body are."""

    def __init__(self, name: int, params: tuple[int, int], body: tuple[int, int] | None):
        self.name = name
        self.params = params
        self.body = body


def _headers(tokens: list[Token]) -> list[_Header]:
    found: list[_Header] = []
    k = 0
    while k < len(tokens):
        if tokens[k].text not in ("define", "declare") or (k and tokens[k].line == tokens[k - 1].line):
            k += 1
            continue
        name = next((j for j in range(k + 1, len(tokens)) if tokens[j].text.startswith("@")), None)
        if name is None or name + 1 >= len(tokens) or tokens[name + 1].text != "(":
            k += 1
            continue
        close = match_forward(tokens, name + 1)
        if close is None:
            break
        body = None
        if tokens[k].text == "define":
            depth, j = 0, close + 1
            while j < len(tokens):
                t = tokens[j].text
                if t == "{" and depth == 0:
                    end = match_forward(tokens, j)
                    body = (j, end if end is not None else len(tokens))
                    break
                depth += (t in "([<") - (t in ")]>")
                j += 1
        found.append(_Header(name, (name + 1, close), body))
        k = body[1] if body else close + 1
    return found


# -- rule 4: in / out / inout ----------------------------------------------------------
def _hpvm_attributes(tokens: list[Token], headers: list[_Header]) -> list[Token]:
    edits: list[tuple[int, list[str]]] = []
    for h in headers:
        open_, close = h.params
        depth = 0
        for k in range(open_ + 1, close):
            t = tokens[k].text
            if t in "([{<":
                depth += 1
            elif t in ")]}>":
                depth -= 1
            elif depth == 0 and t in _HPVM_ATTRS:
                edits.append((k, _HPVM_ATTRS[t]))
    for k, texts in reversed(edits):
        old = tokens[k]
        tokens[k : k + 1] = [Token(x, old.ws if j == 0 else " ", old.line) for j, x in enumerate(texts)]
    return tokens


# -- rule 5: hint metadata --------------------------------------------------------------
def _hints(tokens: list[Token], headers: list[_Header], where: _Where) -> list[Token]:
    lists: dict[str, list[str]] = {}  # hint list → the metadata nodes it holds
    nodes: dict[str, str] = {}  # metadata node → the function it names (ptr @f)
    spans: list[tuple[int, int]] = []  # the hint lists' tokens
    for k, t in enumerate(tokens):
        if k + 3 >= len(tokens) or tokens[k + 1].text != "=" or not t.text.startswith("!"):
            continue
        if k and tokens[k - 1].line == t.line:
            continue  # (not at the start of a line: an operand)
        j = k + 2 + (tokens[k + 2].text == "distinct")
        if tokens[j].text != "!" or tokens[j + 1].text != "{":
            continue
        close = match_forward(tokens, j + 1)
        inner = tokens[j + 2 : close] if close is not None else []
        if t.text.startswith("!hpvm_hint_"):
            name = t.text[1:]
            refs = [x.text for x in inner if x.text != ","]
            if name not in HINT_LISTS and refs:
                raise where.fail(
                    t.line,
                    f"!{name} is no hint list HPVM writes (it writes {', '.join('!' + n for n in HINT_LISTS)}); "
                    "rename it or remove it",
                )
            lists[name] = refs
            spans.append((k, close if close is not None else j + 1))
        elif len(inner) == 2 and inner[0].text.startswith("ptr") and inner[1].text.startswith("@"):
            nodes[t.text] = inner[1].text
    hinted: dict[str, str] = {}
    for name in HINT_LISTS:  # (HPVM's order: the first list naming a function wins)
        for ref in lists.get(name, []):
            fn = nodes.get(ref)
            if fn is not None:
                hinted.setdefault(fn, HINT_LISTS[name])
    edits: list[tuple[int, str]] = []
    for h in headers:
        hint = hinted.get(tokens[h.name].text)
        if hint is None or h.body is None:
            continue
        k = h.params[1] + 1
        while k < len(tokens) and tokens[k].text in ("unnamed_addr", "local_unnamed_addr"):
            k += 1
        if tokens[k].text == "addrspace":
            k += 4
        ahead = tokens[k : h.body[0]]
        if any(x.text.startswith('"hpvm.hint"') for x in ahead):
            continue  # (a hint written as an attribute already: it stays)
        edits.append((k, f'"hpvm.hint"="{hint}"'))
    for k, text in reversed(edits):
        tokens.insert(k, Token(text, " ", tokens[k].line))
    for start, end in reversed(spans):  # (after the inserts: the lists follow every define)
        shift = sum(1 for k, _ in edits if k <= start)
        if end + shift + 1 < len(tokens):  # (its line stays, empty)
            tokens[end + shift + 1].ws = tokens[start + shift].ws + tokens[end + shift + 1].ws
        tokens[start + shift : end + shift + 1] = []
    return tokens


# -- the result -------------------------------------------------------------------------
def _check(text: str, where: _Where, parse: Callable[[str], Any]) -> Any:
    """The module of ``text``, parsed (by ``parse``) and verified, else the error at the
    original line."""
    try:
        module = parse(text)
    except RuntimeError as e:
        m = _LLVM_ERROR.search(str(e))
        if m is None:
            raise LLVMImportError(
                f"{where.file or 'the text'}: not valid LLVM IR: {str(e).strip()}"
            ) from None
        raise where.fail(
            int(m.group(1)),
            f"not valid LLVM IR for LLVM 22, even after the upgrade of LLVM 9–16 forms: {m.group(3)} "
            "(docs/llvm.md, 'Upgrading HPVM's LLVM 9 text', lists what the upgrade rewrites)",
        ) from None
    try:
        module.verify()
    except RuntimeError as e:
        message = str(e).strip()
        line = _verifier_line(message, text)
        what = f"the upgraded module does not verify: {' '.join(message.split())}"
        if line is None:
            raise LLVMImportError(f"{where.file or 'the text'}: {what}") from None
        raise where.fail(line, what) from None
    return module


def _verifier_line(message: str, text: str) -> int | None:
    """The line holding the instruction LLVM's verifier quotes (its result's name, or its
    text), if it can be found."""
    quoted = [ln.strip() for ln in message.splitlines()[1:] if ln.startswith("  ")]
    lines = text.splitlines()
    for q in quoted:
        m = re.match(r"(%[-\w.$]+) = ", q)
        for k, ln in enumerate(lines):
            s = ln.strip()
            if (m and s.startswith(m.group(0))) or (not m and s and s.split(",")[0] == q.split(",")[0]):
                return k + 1
    return None


__all__ = ["HINT_LISTS", "upgrade", "upgraded_module"]
