"""Branch hints in compiled kernels (``hpvm.svm.jit_hints``): ``likely(c)`` and
``unlikely(c)`` only tell LLVM which way a branch usually goes; compiled, each is ``c``."""

from __future__ import annotations

import numba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core.errors import TypingError

from hpvm.svm.jit_hints import likely, unlikely


@numba.njit(nogil=True)
def _branches(a: int, b: int) -> tuple[bool, bool, int]:
    taken = 0
    if unlikely(a < b):
        taken += 1
    if likely(a >= b):
        taken += 2
    return likely(a < b), unlikely(a < b), taken


@settings(max_examples=50, deadline=None)
@given(st.integers(-(1 << 62), 1 << 62), st.integers(-(1 << 62), 1 << 62))
def test_a_hint_is_its_condition_whichever_way_the_branch_goes(a, b):
    assert _branches(a, b) == (a < b, a < b, 1 if a < b else 2)


def test_a_hint_on_a_value_that_is_not_a_boolean_is_a_typing_error_naming_the_hint():
    @numba.njit
    def bad(x: int) -> bool:
        return unlikely(x)

    with pytest.raises(TypingError, match="unlikely: expected a boolean condition, got int64"):
        bad(3)
