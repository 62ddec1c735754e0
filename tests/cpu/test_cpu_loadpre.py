"""Generated graph code is compiled without LLVM's load PRE in loops (``loadpre.py``): with
``noalias`` arrays (``restrict.py``) GVN carried a stencil row's ``src[i]`` into the next
iteration as its ``src[i - 1]``, and the vectorizer then built the row from permutes of a
recurrence and ran its tail scalar (the stencil's step 1.12-1.31x Numba's)."""

from __future__ import annotations

import re
from typing import Any

import numba
import numpy as np
import pytest

from hpvm.backends.cpu import loadpre
from hpvm.backends.cpu.loadpre import without_loop_load_pre
from hpvm.backends.cpu.restrict import restrict


def _row_step(src, dst, s1, s2, lo, hi):  # type: ignore[no-untyped-def]
    """A chunk function's shape: instance ids from 0, the leaf's indices ids + 1."""
    for k0 in range(lo, hi):
        for j0 in range(s1):
            for i0 in range(s2):
                k, j, i = k0 + 1, j0 + 1, i0 + 1
                dst[k, j, i] = (
                    src[k, j, i - 1] + src[k, j, i] + src[k, j, i + 1] + src[k, j - 1, i] + src[k - 1, j, i]
                )


def _recurrences(dispatcher: Any) -> int:
    """Loop-carried float values in ``dispatcher``'s optimized IR (a recurrence's phis)."""
    ir = dispatcher.inspect_llvm(dispatcher.signatures[0])
    return len(re.findall(r"phi (?:<\d+ x )?float", ir))


def test_noalias_row_has_no_recurrence_without_load_pre() -> None:
    src = np.random.default_rng(0).random((6, 40, 40), dtype=np.float32)
    outs = {}
    made = {
        "noalias": restrict(numba.njit(forceinline=True)(_row_step)),
        "noalias, no load PRE": without_loop_load_pre(restrict(numba.njit(forceinline=True)(_row_step))),
    }
    for name, dispatcher in made.items():
        outs[name] = np.zeros_like(src)
        dispatcher(src, outs[name], 38, 38, 0, 4)
    # What the option is for: noalias alone makes the recurrence (on this LLVM) ...
    assert _recurrences(made["noalias"]) > 0
    # ... and without load PRE in loops the row is plain loads, with the same result.
    assert _recurrences(made["noalias, no load PRE"]) == 0
    np.testing.assert_array_equal(outs["noalias"], outs["noalias, no load PRE"])


def test_option_is_off_once_across_nested_compiles_and_back_on(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(loadpre, "_set", calls.append)

    inner = without_loop_load_pre(numba.njit(lambda x: x + 1))
    outer = without_loop_load_pre(numba.njit(lambda x: inner(x) * 2))
    assert outer(3) == 8  # compiles outer, and inner inside it
    assert calls == [False, True]

    failing = without_loop_load_pre(numba.njit(lambda x: x.no_such_attribute))
    with pytest.raises(numba.core.errors.TypingError):
        failing(1)
    assert calls == [False, True, False, True]  # back on after a failed compile too
    assert loadpre._depth == 0


@pytest.mark.usefixtures("hpvm_runtime")
def test_every_generated_function_compiles_without_load_pre() -> None:
    from gpu_convention import blur2_root
    from hpvm.backends import get_backend

    program = get_backend("cpu").prepare(blur2_root)
    generated = {
        name: value
        for name, value in program.entry.py_func.__globals__.items()
        if name.startswith("__hpvm_graph_") and hasattr(value, "_compiler")
    }
    assert any(name.endswith("_chunk0") for name in generated)  # the restricted chunk among them
    for name, dispatcher in generated.items():
        assert dispatcher._compiler.compile.__qualname__.startswith("without_loop_load_pre"), name
