"""Extracted programs run: the shared suite, prepared, optimized by LLVM at -O2 and
extracted, runs on the cpu back end (LLVM leaves, backends/llvm_native) with the results
the interpreter gives the original."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from hpvm import llvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from programs import PROGRAMS, assert_matches, run_program  # noqa: E402


@pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")  # last_instance_differs says so, on both runs
@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_extracted_after_o2_runs_on_cpu_like_the_original_on_interp(program) -> None:
    root = llvm.extract(llvm.optimize(llvm.prepare(program.root), 2))
    extracted = dataclasses.replace(program, root=root)
    assert_matches(extracted, run_program(extracted, "cpu"), run_program(program, "interp"))
