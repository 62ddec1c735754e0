"""The shared program suite on the ``cuda`` back end (numba-cuda; its simulator in CI),
compared with the NumPy references the interpreter is checked against."""

from __future__ import annotations

import pytest

from programs import PROGRAMS, Program, check_program

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_program_on_cuda(program: Program) -> None:
    # ``disagrees`` programs: interp warns about the last-instance rule; cuda stays silent.
    check_program(program, "cuda")


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS if p.name in ("saxpy_1d", "barrier_rotate_malloc")], ids=str
)
def test_second_seed_and_relaunch(program: Program) -> None:
    """Kernels compiled by the first launch are reused with other data."""
    check_program(program, "cuda", seed=0)
    check_program(program, "cuda", seed=1)
