"""Extracted programs run: the shared suite, prepared, optimized by LLVM at -O2 and
extracted, runs on the cpu and interp back ends (LLVM leaves, backends/llvm_native) with
the results the interpreter gives the original."""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from pathlib import Path

import pytest

from hpvm import llvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from programs import PROGRAMS, assert_matches, run_program  # noqa: E402


@pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")  # last_instance_differs says so, on both runs
@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_extracted_after_o2_runs_like_the_original_on_interp(program, target: str) -> None:
    root = llvm.extract(llvm.optimize(_prepared(program.name), 2))
    extracted = dataclasses.replace(program, root=root)
    assert_matches(extracted, run_program(extracted, target), run_program(program, "interp"))


@cache
def _prepared(name: str) -> str:
    return llvm.prepare(next(p for p in PROGRAMS if p.name == name).root)
