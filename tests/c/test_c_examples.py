"""Every HPVM-C example, run end to end on hpvm's cpu back end (LLVM leaves): each main
checks its result against a C reference loop and returns nonzero on a mismatch; here the
output is checked too, and vector add against NumPy."""

from __future__ import annotations

import pytest
from hpvmc_helpers import EXAMPLES, needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.cli import main as cli

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]


@pytest.mark.parametrize(
    ("name", "argv", "printed"),
    [
        ("vector_add.c", ["1000"], "vector_add: 1000 elements, 0 wrong"),
        ("vector_add.cpp", [], "vector_add (C++): 0 wrong"),
        ("two_level.c", [], "two_level: 0 wrong, out.bytes_y=16384"),
        ("sgemm.c", ["32", "24", "20"], "sgemm 32x24x20: 0 wrong"),
        ("stencil.c", [], "stencil 12x10x8: 0 wrong"),
        ("pipeline.c", [], "frame 5: 1248 (want 1248)"),
        ("histogram.c", [], "histogram: 5000 elements counted, 0 wrong"),
        ("image_pipeline.c", [], "image_pipeline 24x32: 0 wrong, 638 edge pixels, out.bytesE=3072"),
    ],
)
def test_example_runs_and_checks_itself(name, argv, printed, capfd):
    assert c.compile(EXAMPLES / name).run(argv) == 0
    assert printed in capfd.readouterr().out


@pytest.mark.parametrize("name", ["vector_add.c", "histogram.c", "sgemm.c", "pipeline.c", "image_pipeline.c"])
def test_examples_on_the_interpreter(name, capfd):
    argv = {"vector_add.c": ["64"], "image_pipeline.c": ["7", "9"]}.get(name, [])
    assert c.compile(EXAMPLES / name).run(argv, target="interp") == 0
    out = capfd.readouterr().out
    assert ("frame 5: 1248 (want 1248)" if name == "pipeline.c" else " 0 wrong") in out


SGEMM_FILES = EXAMPLES / "sgemm_files"


def _column_major(path):
    """A matrix file of the sgemm_files example (rows, cols, then the values by column)."""
    import numpy as np

    words = path.read_text().split()
    rows, cols = int(words[0]), int(words[1])
    return np.array([float(w) for w in words[2:]], dtype=np.float64).reshape(cols, rows).T


def test_the_two_file_cxx_example(tmp_path, capfd):
    """examples/c/sgemm_files: main.cc + io.cc (C++ streams, std::vector), a header in
    include/; main checks C itself, and the C it writes matches NumPy's product."""
    import numpy as np

    program = c.compile(
        [SGEMM_FILES / "main.cc", SGEMM_FILES / "io.cc"], include_dirs=[str(SGEMM_FILES / "include")]
    )
    a, bt = SGEMM_FILES / "data" / "A.txt", SGEMM_FILES / "data" / "Bt.txt"
    assert program.run([str(a), str(bt), str(tmp_path / "C.txt")]) == 0
    out, err = capfd.readouterr()
    assert "sgemm_files 8x12x6: 0 wrong" in out and "read " in err
    start = (np.arange(8 * 12) % 7).reshape(12, 8).T  # main's initial C, column-major
    want = 0.5 * start + 1.5 * (_column_major(a) @ _column_major(bt).T)
    assert np.allclose(_column_major(tmp_path / "C.txt"), want, rtol=1e-5)
    assert program.run([str(a)]) == 2  # usage: main says so and returns 2
    assert "usage:" in capfd.readouterr().err


def test_the_two_file_example_from_the_command_line(tmp_path, capfd):
    sources = [str(SGEMM_FILES / "main.cc"), str(SGEMM_FILES / "io.cc")]
    data = [str(SGEMM_FILES / "data" / "A.txt"), str(SGEMM_FILES / "data" / "Bt.txt")]
    include = ["-I", str(SGEMM_FILES / "include")]
    assert cli(["c", "run", *sources, *include, "-D", "TILE=2", "--target", "interp", "--", *data]) == 0
    assert "sgemm_files 8x12x6: 0 wrong" in capfd.readouterr().out


def test_vector_add_against_numpy(write_c, capfd):
    source = (
        (EXAMPLES / "vector_add.c")
        .read_text()
        .replace(
            'printf("vector_add: %zu elements, %d wrong\\n", n, bad);',
            'for (size_t i = 0; i < n; i++) printf("%.1f\\n", c[i]);',
        )
    )
    assert c.compile(write_c(source)).run(["50"]) == 0
    got = [float(x) for x in capfd.readouterr().out.split()]
    i = list(range(50))
    assert got == [float(k) + 2.0 * k + 1.0 for k in i]


def test_cli_run_passes_arguments_and_exit_code(capfd):
    assert cli(["c", "run", str(EXAMPLES / "vector_add.c"), "--", "64"]) == 0
    assert "vector_add: 64 elements, 0 wrong" in capfd.readouterr().out
    assert cli(["c", "run", str(EXAMPLES / "vector_add.c"), "--target", "interp", "--", "9"]) == 0
    assert "vector_add: 9 elements, 0 wrong" in capfd.readouterr().out
    assert cli(["c", "run", str(EXAMPLES / "vector_add.c"), "-D", "UNUSED=1", "5"]) == 0
    assert "vector_add: 5 elements, 0 wrong" in capfd.readouterr().out


def test_cli_exit_code_is_mains(write_c):
    path = write_c(
        '#include "hpvm.h"\nvoid leaf(int x) { }\n'
        "void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }\n"
        "int main(void) { return 3; }\n"
    )
    assert cli(["c", "run", str(path)]) == 3
    with pytest.raises(SystemExit):
        cli(["show", "--bogus", "x"])


TWO_GRAPHS = """#include <stdio.h>
#include "hpvm.h"
typedef struct __attribute__((__packed__)) { int *a; size_t n; int k; } In;
void add_k(int *a, size_t n, int k) {
  __hpvm__attributes(1, a, 1, a);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  a[i] += k;
}
void times_k(int *a, size_t n, int k) {
  __hpvm__attributes(1, a, 1, a);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  a[i] *= k;
}
void adder(int *a, size_t n, int k) {
  void *l = __hpvm__createNodeND(1, add_k, n / sizeof(int));
  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); __hpvm__bindIn(l, 2, 2, 0);
}
void multiplier(int *a, size_t n, int k) {
  void *l = __hpvm__createNodeND(1, times_k, n / sizeof(int));
  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); __hpvm__bindIn(l, 2, 2, 0);
}
int main(void) {
  int a[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  In first = {a, sizeof a, 10}, second = {a, sizeof a, 3};
  __hpvm__wait(__hpvm__launch(0, multiplier, &second));
  __hpvm__wait(__hpvm__launch(0, adder, &first));
  llvm_hpvm_request_mem(a, sizeof a);
  for (int i = 0; i < 8; i++) printf("%d ", a[i]);
  llvm_hpvm_untrack_mem(a);
  __hpvm__cleanup();
  return 0;
}
"""


def test_a_program_launching_two_graphs(write_c, capfd):
    program = c.compile(write_c(TWO_GRAPHS))
    assert [r.name for r in program.roots] == ["multiplier", "adder"]  # launch order
    assert program.run() == 0
    assert capfd.readouterr().out.split() == [str(3 * i + 10) for i in range(8)]


def test_return_on_two_paths_and_outputs_written_back(write_c, capfd):
    source = """#include <stdio.h>
#include "hpvm.h"
typedef struct __attribute__((__packed__)) { int x; struct { int y; } out; } In;
void leaf(int x) {
  if (x > 3) {
    __hpvm__return(1, x * 2);
  } else {
    __hpvm__return(1, x + 100);
  }
}
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindOut(l, 0, 0, 0); }
int main(void) {
  In a = {5}, b = {1};
  __hpvm__init();
  __hpvm__wait(__hpvm__launch(0, root, &a));
  __hpvm__wait(__hpvm__launch(0, root, &b));
  __hpvm__cleanup();
  printf("%d %d\\n", a.out.y, b.out.y);
  return 0;
}
"""
    assert c.compile(write_c(source)).run() == 0
    assert capfd.readouterr().out == "10 101\n"


QUERIES_AND_ATOMICS = """#include <stdio.h>
#include "hpvm.h"
typedef struct __attribute__((__packed__)) { int *v; size_t n; int *old; size_t m; } In;
void leaf(int *v, size_t n, int *old, size_t m) {
  __hpvm__attributes(2, v, old, 2, v, old);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  long nx = __hpvm__getNumNodeInstances_x(self), ny = __hpvm__getNumNodeInstances_y(self);
  v[10 + y * nx + x] = (int)(100 * nx + ny);
  if (x == 0 && y == 0) {
    old[0] = __hpvm__atomic_add(&v[0], 5);
    old[1] = __hpvm__atomic_sub(&v[1], 2);
    old[2] = __hpvm__atomic_min(&v[2], -4);
    old[3] = __hpvm__atomic_max(&v[3], 40);
    old[4] = __hpvm__atomic_xchg(&v[4], 77);
    old[5] = __hpvm__atomic_and(&v[5], 6);
    old[6] = __hpvm__atomic_or(&v[6], 9);
    old[7] = __hpvm__atomic_xor(&v[7], 15);
    old[8] = __hpvm__atomic_inc(&v[8]);
    old[9] = __hpvm__atomic_dec(&v[9]);
  }
}
void root(int *v, size_t n, int *old, size_t m) {
  void *l = __hpvm__createNodeND(2, leaf, 3L, 2L);
  for (int p = 0; p < 4; p++) __hpvm__bindIn(l, p, p, 0);
}
int main(void) {
  int v[16] = {1, 2, 3, 4, 5, 12, 3, 10, 20, 30}, old[10] = {0};
  In in = {v, sizeof v, old, sizeof old};
  __hpvm__init();
  llvm_hpvm_track_mem(v, sizeof v);
  llvm_hpvm_track_mem(old, sizeof old);
  __hpvm__wait(__hpvm__launch(0, root, &in));
  llvm_hpvm_request_mem(v, sizeof v);
  llvm_hpvm_request_mem(old, sizeof old);
  for (int i = 0; i < 16; i++) printf("%d ", v[i]);
  printf("| ");
  for (int i = 0; i < 10; i++) printf("%d ", old[i]);
  llvm_hpvm_untrack_mem(v);
  llvm_hpvm_untrack_mem(old);
  __hpvm__cleanup();
  return 0;
}
"""


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_every_query_and_atomic(write_c, capfd, target):
    assert c.compile(write_c(QUERIES_AND_ATOMICS)).run(target=target) == 0
    values, old = capfd.readouterr().out.split("|")
    start = [1, 2, 3, 4, 5, 12, 3, 10, 20, 30]
    want = [6, 0, -4, 40, 77, 12 & 6, 3 | 9, 10 ^ 15, 21, 29] + [302] * 6
    assert [int(x) for x in values.split()] == want
    assert [int(x) for x in old.split()] == start
