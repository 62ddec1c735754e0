"""``widen.py``: a sign-extended chain of ``nsw`` 32-bit arithmetic computed in 64 bits.
Generated chains compute the same value before and after (JIT-compiled, on inputs where no
32-bit step overflows); a chain with a step that may wrap stays as it is; and the HPVM-C
stencil's leaf indexes in 64 bits once compiled (issue 24: no 32-bit index arithmetic left
to sign-extend in the vectorized loop)."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import llvmlite.binding as llvm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import c
from hpvm.c.widen import widen

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "c"


#: The end of each function: ``%e`` as an address's index (what ``widen`` widens), returned.
_ADDRESS = "\n  %p = getelementptr i8, ptr null, i64 %e\n  %r = ptrtoint ptr %p to i64\n  ret i64 %r\n}\n"


@st.composite
def chains(draw):
    """A function of three ``i32`` arguments: nsw adds, subs and muls of the arguments, the
    steps before and small constants, the last step sign-extended as an address's index."""
    values = ["%a", "%b", "%c"]
    lines = []
    for k in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["add", "sub", "mul"]))
        x, y = (draw(st.sampled_from(values) | st.integers(-3, 3).map(str)) for _ in range(2))
        lines.append(f"  %v{k} = {op} nsw i32 {x}, {y}")
        values.append(f"%v{k}")
    lines.append(f"  %e = sext i32 {values[-1]} to i64")
    return "define i64 @f(i32 %a, i32 %b, i32 %c) {\nentry:\n" + "\n".join(lines) + _ADDRESS


def _jit(text: str):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(text)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
    return engine, fn(engine.get_function_address("f"))


def _exact(text: str, args: tuple[int, int, int]) -> int | None:
    """What the chain computes with unbounded integers, or None if a step leaves 32 bits."""
    env = dict(zip(("%a", "%b", "%c"), args))
    for line in text.splitlines():
        m = re.match(r"  (%v\d+) = (add|sub|mul) nsw i32 (\S+), (\S+)$", line)
        if m:
            x, y = (env[v] if v.startswith("%") else int(v) for v in m.group(3, 4))
            env[m.group(1)] = {"add": x + y, "sub": x - y, "mul": x * y}[m.group(2)]
            if not -(2**31) <= env[m.group(1)] < 2**31:
                return None
    return env[max(env, key=lambda k: int(k[2:]) if k.startswith("%v") else -1)]


@settings(max_examples=40, deadline=None)
@given(chains(), st.tuples(*[st.integers(-1000, 1000)] * 3))
def test_a_widened_chain_computes_what_the_32_bit_one_did(text, args):
    wide = widen(text)
    assert "sext i32 %v" not in wide  # (the extension of the chain is gone: its twin is used)
    want = _exact(text, args)
    if want is None:
        return  # (a step overflows: the 32-bit result is poison, nothing to compare)
    keep = [_jit(text), _jit(wide)]
    assert keep[0][1](*args) == want
    assert keep[1][1](*args) == want


def test_a_step_that_may_wrap_is_not_widened():
    text = (
        "define i64 @f(i32 %a, i32 %b, i32 %c) {\nentry:\n  %m = mul nsw i32 %b, %c\n"
        "  %s = add i32 %a, %m\n  %e = sext i32 %s to i64" + _ADDRESS
    )
    assert widen(text) == text
    assert "w64" in widen(text.replace("add i32", "add nsw i32"))  # (the same with nsw is)
    keep = _jit(widen(text))
    assert keep[1](2**31 - 1, 1, 1) == -(2**31)  # (wraps, as the add without nsw says)


@pytest.mark.skipif(c.unavailable_reason() is not None, reason="zig's clang is not installed")
def test_the_stencil_leaf_indexes_in_64_bits():
    root = c.compile(EXAMPLES / "stencil.c").roots[0]
    (node,) = root.graph.nodes
    text = node.function.body.module
    start = text.index("define {} @stencil_point(")
    body = text[start : text.index("\n}\n", start)]
    assert re.search(r"= (add|sub|mul|shl) (nuw )?nsw i32 ", body) is None, body
    assert "getelementptr" in body and "i64 %w64." in body


def test_only_addresses_and_functions_without_loops_are_widened():
    chain = "  %s = add nsw i32 %a, %b\n  %e = sext i32 %s to i64\n"
    returned = "define i64 @f(i32 %a, i32 %b) {\nentry:\n" + chain + "  ret i64 %e\n}\n"
    assert widen(returned) == returned  # (a value, not an address: createNode's sizes stay)
    looped = (
        "define i64 @f(i32 %a, i32 %b) {\nentry:\n  br label %loop\nloop:\n" + chain
        + "  %p = getelementptr i8, ptr null, i64 %e\n  %c = icmp eq ptr %p, null\n"
        "  br i1 %c, label %loop, label %done\ndone:\n  ret i64 0\n}\n"
    )  # fmt: skip
    assert widen(looped) == looped
    assert "w64" in widen(looped.replace("label %loop, label", "label %done, label"))
