"""Leaf arithmetic on the ``cuda`` back end is Numba's (docs/semantics.md §7) — on numba-cuda's
simulator too, where leaves run as Python: no NumPy scalar rules, no NumPy warnings."""

from __future__ import annotations

import warnings

import pytest

from programs import BY_NAME, check_program

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["divisions_by_zero", "scalar_divisions_by_zero", "i32_products_widen"])
def test_division_by_zero_and_overflow_do_not_warn(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from NumPy would fail the launch
        check_program(BY_NAME[name], "cuda")
