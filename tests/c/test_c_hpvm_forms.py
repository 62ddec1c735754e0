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


LOCAL_ARRAY = r"""#include "hpvm.h"
#include <stdio.h>
#include <stdlib.h>
typedef struct __attribute__((__packed__)) { float *a; size_t bytes_a; float *b; size_t bytes_b; } RootIn;
void sums(float *a, size_t bytes_a, float *b, size_t bytes_b) {
  __hpvm__attributes(1, a, 1, b);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  float part[4];  /* (filled and read at indices clang cannot resolve: it stays an array) */
  int n = (int)(bytes_a / bytes_b);
  for (int t = 0; t < n; t++) part[t] = a[n * i + t] * (float)(t + 1);
  float sum = 0.0f;
  for (int t = n - 1; t >= 0; t--) sum += part[(t * 3) % n];
  b[i] = sum;
  __hpvm__return(1, bytes_b);
}
void root(float *a, size_t bytes_a, float *b, size_t bytes_b) {
  __hpvm__attributes(1, a, 1, b);
  void *n = __hpvm__createNodeND(1, sums, bytes_b / sizeof(float));
  for (int p = 0; p < 4; p++) __hpvm__bindIn(n, p, p, 0);
}
int main(void) {
  float a[12], b[3];
  for (int k = 0; k < 12; k++) a[k] = (float)k;
  RootIn *args = malloc(sizeof(RootIn));
  args->a = a; args->bytes_a = sizeof a; args->b = b; args->bytes_b = sizeof b;
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  llvm_hpvm_track_mem(b, sizeof b);
  __hpvm__wait(__hpvm__launch(0, root, args));
  llvm_hpvm_request_mem(b, sizeof b);
  __hpvm__cleanup();
  printf("%g %g %g\n", b[0], b[1], b[2]);
  return 0;
}
"""


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_leaf_with_a_local_array_returns_after_its_lifetime_ends(write_c, target, capfd):
    """clang ends a local array's lifetime (``llvm.lifetime.end``) after the leaf's last
    statement, between ``__hpvm__return`` and the ``ret``; GenHPVM refused that as "not
    followed by the function's return" (parboil's cutcp keeps its points in such an array:
    ``programs/cutcp``)."""
    assert c.compile(write_c(LOCAL_ARRAY)).run(target=target) == 0
    # (0*1 + 1*2 + 2*3 + 3*4, then the next four, then the last four)
    assert capfd.readouterr().out.split() == ["20", "60", "100"]
