"""A C program that crashes prints which function it was in before it dies
(``c/runtime/crash_report.c``): in its host code, the function (a ``static`` one too); in a
leaf, that it was code compiled at run time and how to find the instance. The process then
dies of the signal, as the C program would. Each case runs in a child process."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from hpvmc_helpers import needs_clang, needs_llvm_leaves

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "crashes.c"


def _run(where: str) -> subprocess.CompletedProcess[str]:
    code = f"from hpvm import c; c.compile({str(PROGRAM)!r}).run([{where!r}], target='cpu')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_a_crash_in_host_code_names_the_function():
    done = _run("host")
    assert done.returncode == -signal.SIGSEGV, done.stderr
    assert "started" in done.stdout
    assert f"hpvm: {PROGRAM}: segmentation fault in function read_through" in done.stderr, done.stderr


def test_a_crash_in_a_leaf_says_where_to_look():
    done = _run("leaf")
    assert done.returncode == -signal.SIGSEGV, done.stderr
    assert f"hpvm: {PROGRAM}: segmentation fault at" in done.stderr, done.stderr
    assert "--target interp" in done.stderr
