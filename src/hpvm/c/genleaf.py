"""GenHPVM's part for leaves: ``__hpvm__return`` as the returned struct of the outputs,
and the computation intrinsics — queries, ``__hpvm__malloc``, atomics, ``barrier``, HPVM's
float math, tensor calls — as their ``llvm.hpvm.*`` intrinsic or LLVM's own instruction.

Why a class of its own: a leaf's calls are rewritten one by one, each by itself (but for
the returns, which must agree and end every path), apart from graph building.
"""

from __future__ import annotations

import re

from . import tensorcalls
from .genplace import Locator
from .module import Call, Function

RENAMED = {
    "__hpvm__getNode": "getNode",
    "__hpvm__getParentNode": "getParentNode",
    "__hpvm__malloc": "malloc",
    "__hpvm__barrier": "barrier",
    **{f"__hpvm__{q}_{a}": f"{q}.{a}" for q in ("getNodeInstanceID", "getNumNodeInstances") for a in "xyz"},
    **{
        f"__hpvm__atomic_{op}": f"atomic.{op}"
        for op in ("add", "sub", "min", "max", "xchg", "and", "or", "xor")
    },
}
# Hints HPVM's approximation tools read (``__hpvm__node_id(n)``: the node's number for the
# tuner, in HPVM's ResNet programs and what torch2hpvm writes); they change no result.
IGNORED = frozenset({"__hpvm__isNonZeroLoop", "__hpvm__order", "__hpvm__node_id"})
#: HPVM's float math builtins (hpvm/include/hpvm.h) → LLVM's own intrinsics (rsqrt: 1 / sqrt).
MATH = {
    "__hpvm__sqrt": "llvm.sqrt.f32",
    "__hpvm__rsqrt": "llvm.sqrt.f32",
    "__hpvm__floor": "llvm.floor.f32",
    "__hpvm__sin": "llvm.sin.f32",
    "__hpvm__cos": "llvm.cos.f32",
}
#: HPVM's atomics beyond seed 000's list, as LLVM's own atomic instructions (i32).
RMW = {"__hpvm__atomic_umin": "umin", "__hpvm__atomic_umax": "umax"}


class LeafCalls:
    """Rewrites a leaf's calls; ``returns`` counts the ``__hpvm__return`` calls rewritten so
    far (each gets names of its own)."""

    def __init__(self, loc: Locator):
        self.loc = loc
        self.returns = 0

    def check_count(self, fn: Function, call: Call, count: int) -> None:
        n = call.args[0].const() if call.args else None
        if n != count:
            raise self.loc.fail(call.line, fn, f"__hpvm__return({n}, ...) gives {count} value(s); the count must "
                            "match the values that follow")  # fmt: skip

    def build_struct(self, call: Call, types: list[str]) -> tuple[str, list[str]]:
        st = "{ " + ", ".join(types) + " }" if types else "{}"
        self.returns += 1  # (a function may call __hpvm__return on several paths: unique names)
        prev, lines = "poison", []
        for k, a in enumerate(call.args[1:]):
            name = f"%hpvm.ret.{self.returns}.{k}"
            lines.append(f"{call.indent}{name} = insertvalue {st} {prev}, {a.type} {a.value}, {k}")
            prev = name
        return (prev if types else "zeroinitializer"), lines

    def ret(
        self, fn: Function, raw: str, internal: bool, pending: str | None, returned: list[str] | None
    ) -> str:
        indent = raw[: len(raw) - len(raw.lstrip())]
        tail = raw.strip()[len("ret void") :]
        if internal:
            return f"{indent}ret {{}} RET{tail}"
        if returned is None:
            return f"{indent}ret {{}} RET{tail}"
        if pending is None:
            raise self.loc.fail(raw, fn, f"{self.loc.c(fn.name)} returns without __hpvm__return on this path; call "
                            "__hpvm__return(n, values...) before every return")  # fmt: skip
        st = "{ " + ", ".join(returned) + " }" if returned else "{}"
        return f"{indent}ret {st} {pending}{tail}"

    def call(self, fn: Function, call: Call, raw: str) -> list[str]:
        """The lines that replace the computation call ``call`` (its line ``raw``)."""
        name = call.callee
        if name in RENAMED:
            return [_direct(raw, call, f"llvm.hpvm.{RENAMED[name]}")]
        if name in ("__hpvm__atomic_inc", "__hpvm__atomic_dec"):
            op = "add" if name.endswith("inc") else "sub"
            ptr = call.args[0].value
            res = f"{call.result} = " if call.result else ""
            return [f"{call.indent}{res}call i32 @llvm.hpvm.atomic.{op}(ptr {ptr}, i32 1){call.dbg()}"]
        if name in IGNORED:
            if call.result and _uses(fn, call.result):  # (its void * result, if used, is null)
                return [f"{call.indent}{call.result} = getelementptr i8, ptr null, i64 0"]
            return []
        if name in MATH:
            return _math(call, MATH[name], rsqrt=name == "__hpvm__rsqrt")
        if name in RMW:
            ptr, value = call.args[0].value, call.args[1].value
            res = f"{call.result} = " if call.result else ""
            return [f"{call.indent}{res}atomicrmw {RMW[name]} ptr {ptr}, i32 {value} seq_cst{call.dbg()}"]
        if name == "__hpvm__atomic_cmpxchg":
            ptr, expected, new = (a.value for a in call.args[:3])
            pair = f"{call.result or '%hpvm.cmpxchg'}.pair"
            lines = [
                f"{call.indent}{pair} = cmpxchg ptr {ptr}, i32 {expected}, i32 {new} seq_cst seq_cst{call.dbg()}"
            ]
            if call.result:
                lines.append(f"{call.indent}{call.result} = extractvalue {{ i32, i1 }} {pair}, 0")
            return lines
        if name.startswith(tensorcalls.C_PREFIX):
            at = call.line
            return tensorcalls.rewrite_call(call, lambda m, at=at: self.loc.fail(at, fn, m))
        raise self.loc.fail(call.line, fn, f"{name} is not part of HPVM-C (hpvm.h declares the API); "
                            "check the spelling")  # fmt: skip


def _direct(raw: str, call: Call, callee: str) -> str:
    """The call ``raw`` calling ``callee`` instead, without an explicit function type: a
    call through HPVM's unprototyped C declarations (``void *__hpvm__getNode()``, so clang
    writes ``call ptr (...) @__hpvm__getNode()``) names one, which an intrinsic refuses."""
    ret = call.type.split("(", 1)[0].strip()
    return raw.replace(f"{call.type} @{call.callee}(", f"{ret} @{callee}(", 1)


def _uses(fn: Function, value: str) -> bool:
    """Whether ``value`` (``%x``) is used in ``fn``, beside the line defining it."""
    use = re.compile(re.escape(value) + r"(?![-\w.$])")
    return sum(len(use.findall(line)) for line in fn.body) > 1


def _math(call: Call, intrinsic: str, rsqrt: bool) -> list[str]:
    """``__hpvm__sqrt(x)`` and the others (``float`` → ``float``) as LLVM's intrinsic;
    ``__hpvm__rsqrt(x)`` as ``1 / sqrt(x)``."""
    x = call.args[0].value if call.args else "undef"
    if not rsqrt:
        res = f"{call.result} = " if call.result else ""
        return [f"{call.indent}{res}call float @{intrinsic}(float {x}){call.dbg()}"]
    root = f"{call.result or '%hpvm.rsqrt'}.sqrt"
    lines = [f"{call.indent}{root} = call float @{intrinsic}(float {x}){call.dbg()}"]
    if call.result:
        lines.append(f"{call.indent}{call.result} = fdiv float 1.0, {root}")
    return lines
