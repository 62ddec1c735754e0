"""HPVM-C as HPVM writes it, beyond our own examples. A node function declared ``static`` (internal linkage in LLVM) runs like any other: the
LLVM-leaf clone used to let LLVM's dead-code pass drop it, and LLVM then aborted the whole
process on the freed function (an assertion in ``llvm::cast``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "static_leaf.c"


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_static_leaf_runs(target, capfd):
    assert c.compile(PROGRAM).run(target=target) == 0
    assert capfd.readouterr().out.split() == ["2", "14"]


BUILTINS = Path(__file__).parent / "programs" / "hpvm_builtins.c"


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_hpvms_extra_builtins_run(target, capfd):
    """HPVM's own hpvm.h declares float math (``__hpvm__sqrt``, ``rsqrt``, ``floor``,
    ``sin``, ``cos``), the atomics ``cmpxchg``, ``umin``, ``umax`` and the tuner's
    ``__hpvm__node_id``; main compares each result with libm and plain C."""
    assert c.compile(BUILTINS).run(target=target) == 0
    assert capfd.readouterr().out.strip() == "builtins: 0 wrong"


ZERO = Path(__file__).parent / "programs" / "zero_instances.c"


@pytest.mark.parametrize(
    ("target", "where"), [("cpu", "zero_instances.c:16): has no instances"), ("interp", "(all_to_all, ")]
)
def test_a_run_time_error_names_the_c_line(target, where):
    """Nodes, edges and binds carry the line of their ``__hpvm__createNodeND`` /
    ``__hpvm__edge`` / ``__hpvm__bind*`` call in the C file (``<unknown>:0`` before)."""
    from hpvm.errors import LaunchError

    with pytest.raises(LaunchError) as info:
        c.compile(ZERO).run(target=target)
    message = str(info.value)
    assert where in message and "<unknown>" not in message
    assert "zero_instances.c:16" in message or "zero_instances.c:20" in message


def test_the_runtimes_errors_speak_c():
    """A host call the runtime refuses names the C API the program called, not hpvm's Python
    names (``__hpvm__push``, ``__hpvm__launch(1, ...)``; not ``hpvm.push``, ``stream=True``)."""
    from hpvm.errors import StreamError

    with pytest.raises(StreamError) as info:
        c.compile(Path(__file__).parent / "programs" / "push_not_streaming.c").run()
    message = str(info.value)
    assert (
        "push_not_streaming.c: while main ran: __hpvm__push(): the launch of 'root' is not streaming"
        in message
    )
    assert "launch it with __hpvm__launch(1, ...)" in message and "hpvm.push" not in message


def test_errors_name_the_file_wherever_clang_ran(tmp_path, monkeypatch):
    """Clang records a file outside its working folder relative to a common parent
    (``DIFile(filename: "src/prog.c", directory: "/tmp/...")``): the error still names the
    file where it is (it named ``src/prog.c``, a path that points nowhere from here)."""
    source = tmp_path / "src" / "prog.c"
    source.parent.mkdir()
    source.write_text(
        """#include "hpvm.h"
void inner(float *a, size_t n) { a[0] = 1; }
void leaf(float *a, size_t n) {
  void *self = __hpvm__getNode();
  void *x = __hpvm__createNodeND(0, inner);
  a[__hpvm__getNodeInstanceID_x(self)] = 0;
}
void root(float *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
"""
    )
    elsewhere = tmp_path / "work" / "here"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    with pytest.raises(c.HPVMCError) as info:
        c.compile(source)
    assert str(info.value).startswith(f"{source}:5: __hpvm__createNodeND in leaf"), str(info.value)
