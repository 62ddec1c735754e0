"""The builder's types are Numba's: random compound expressions over parameters of every
scalar type (and arrays of some), each assigned to a variable of its own, typed by the leaf
IR and by Numba's type inference (typing only, no code generation), must agree."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hpvm.errors import SourceLocation
from hpvm.ir.graph import LeafFunction, Param
from hpvm.ir.leafir import LeafIRUnsupported, build
from hpvm.ir.types import SCALAR_TYPES, ArrayType

numba = pytest.importorskip("numba")
from numba.core import compiler, registry  # noqa: E402
from numba.core.typed_passes import type_inference_stage  # noqa: E402

SCALARS = list(SCALAR_TYPES.values())
PARAMS = [Param(f"p_{t.name}", t) for t in SCALARS]
ARRAYS = [Param(f"a_{t.name}", ArrayType(t, 1)) for t in SCALARS if t.name in ("u8", "i32", "f32", "f64")]

ATOMS = st.sampled_from(
    [p.name for p in PARAMS]
    + ["3", "0", "2.5", "True", "(-4)"]
    + [f"{a.name}[1]" for a in ARRAYS]
    + ["a_f32.shape[0]", "len(a_u8)", "a_i32.size"]
)
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]


#: What a condition, the first operand of ``and``/``or`` and the operand of ``~`` may be:
#: a value read from a parameter. Numba folds constant subexpressions into literals, and
#: types some of them apart: it prunes a branch on a constant condition (``x if 3 else y``
#: is ``x``'s type), and ``~`` of a literal bool (``~(not 3)``) is an int. The leaf IR does
#: not fold constants (it knows ``~True`` alone); leaves rarely compute on constants only.
TRUTHS = st.sampled_from([p.name for p in PARAMS] + [f"{a.name}[0]" for a in ARRAYS])


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(children, children)
    truth = st.one_of(TRUTHS, children.filter(lambda e: "p_" in e or "a_" in e))  # (reads a value)
    # Operands of and/or hold no and/or: Numba types the value of a nested one differently
    # at times (``(p_i8 or p_bool) and p_bool`` is bool there, int8 by its own rule for
    # ``p_i8 and p_bool``); the truth of such a value, what conditions read, is the same.
    flat_truth = truth.filter(lambda e: " and " not in e and " or " not in e)
    flat = children.filter(lambda e: " and " not in e and " or " not in e)
    return st.one_of(
        st.builds(lambda op, ab: f"({ab[0]} {op} {ab[1]})", st.sampled_from(BINARY), two),
        st.builds(lambda op, a: f"({op}{a})", st.sampled_from(["-", "not "]), children),
        st.builds(lambda a: f"(~{a})", truth),
        st.builds(
            lambda op, ab, c: f"({ab[0]} {op} {ab[1]} < {c})",
            st.sampled_from(["<", "==", ">="]),
            two,
            children,
        ),
        st.builds(lambda op, a, b: f"({a} {op} {b})", st.sampled_from(["and", "or"]), flat_truth, flat),
        # (An if's condition holds no and/or: ``x if (p_bool or 3) else y`` lets Numba prune
        # the branch where the condition is the literal 3 — the constant folding above.)
        st.builds(lambda ab, c: f"({ab[0]} if {c} else {ab[1]})", two, flat_truth),
        st.builds(
            lambda f, ab: f"{f}({ab[0]}, {ab[1]})",
            st.sampled_from(["min", "max", "math.atan2", "math.hypot"]),
            two,
        ),
        st.builds(
            lambda f, a: f"{f}({a})",
            st.sampled_from(
                [
                    "abs",
                    "int",
                    "float",
                    "np.float32",
                    "np.int16",
                    "np.uint32",
                    "math.sqrt",
                    "math.floor",
                    "math.isnan",
                    "np.sin",
                ]
            ),
            children,
        ),
    )


EXPRESSIONS = st.recursive(ATOMS, _compound, max_leaves=6)


def _leaf(expressions: list[str]) -> tuple[LeafFunction, str]:
    params = PARAMS + ARRAYS
    body = "".join(f"    r{k} = {e}\n" for k, e in enumerate(expressions))
    source = f"def gen({', '.join(p.name for p in params)}):\n{body}"
    namespace = {"np": np, "math": math}
    exec(compile(source, "<gen>", "exec"), namespace)
    fn = LeafFunction(namespace["gen"], "gen", params, [], location=SourceLocation("<gen>", 1), source=source)
    return fn, source


def _numba_types(fn: LeafFunction, count: int) -> dict[str, str] | None:
    args = tuple(
        numba.types.Array(numba.from_dtype(p.type.dtype), 1, "C")
        if isinstance(p.type, ArrayType)
        else numba.from_dtype(p.type.dtype)
        for p in fn.params
    )
    target = registry.cpu_target
    target.typing_context.refresh()
    target.target_context.refresh()
    try:
        typed = type_inference_stage(
            target.typing_context, target.target_context, compiler.run_frontend(fn.pyfunc), args, None
        )
    except numba.core.errors.TypingError:
        return None
    return {f"r{k}": str(numba.types.unliteral(typed.typemap[f"r{k}"])) for k in range(count)}


@settings(
    max_examples=int(os.environ.get("HPVM_LEAFIR_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(EXPRESSIONS, min_size=1, max_size=4))
def test_expression_types_are_numbas(expressions: list[str]) -> None:
    fn, source = _leaf(expressions)
    try:
        ir = build(fn)
    except LeafIRUnsupported:
        assume(False)  # (the rules refuse an operand type: '&' on floats...)
        return
    ours = {name: t.dtype.name for name, t in ir.locals}
    theirs = _numba_types(fn, len(expressions))
    assert theirs is not None, f"Numba refuses what the leaf IR types:\n{source}"
    assert ours == theirs, source
