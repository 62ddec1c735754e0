"""A replication size written in C divides as C does (``/`` truncates: ``-3 / 2 == -1``);
hpvm's sizes divide as Python does (floored), and the two meet in the import of ``sdiv``. A
size whose value would differ is refused at launch with both values, rather than run with
Python's (``ir/expr.py``, "Division"); sizes whose operands stay >= 0, the usual kind, and
clamped ones run as C means them."""

from __future__ import annotations

import pytest
from hpvmc_helpers import needs_clang

import hpvm
from hpvm import c
from markers import fails

pytestmark = needs_clang

SOURCE = """#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  long *hits; size_t bytes_hits; long n;
} RootIn;

void hit(long *hits, size_t bytes_hits) {
  __hpvm__attributes(1, hits, 1, hits);
  void *self = __hpvm__getNode();
  hits[__hpvm__getNodeInstanceID_x(self)] += 1;
}

void root(long *hits, size_t bytes_hits, long n) {
  void *node = __hpvm__createNodeND(1, hit, SIZE);  // @size
  __hpvm__bindIn(node, 0, 0, 0);
  __hpvm__bindIn(node, 1, 1, 0);
}

int main(int argc, char **argv) {
  long n = atol(argv[1]), hits[16] = {0};
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){hits, sizeof(hits), n};
  llvm_hpvm_track_mem(hits, sizeof(hits));
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(hits, sizeof(hits));
  long total = 0;
  for (int i = 0; i < 16; i++) total += hits[i];
  llvm_hpvm_untrack_mem(hits);
  __hpvm__cleanup();
  printf("%ld instances\\n", total);
  return 0;
}
"""


def _run(write_c, size: str, n: int, capfd) -> str:  # type: ignore[no-untyped-def]
    program = c.compile(write_c(SOURCE.replace("SIZE", size)))
    assert program.run([str(n)], target="cpu") == 0
    return capfd.readouterr().out.strip()


def test_a_size_that_divides_a_negative_number_differently_is_refused(write_c, capfd) -> None:  # type: ignore[no-untyped-def]
    """C means (0 - 3) / 2 + 5 = 4 instances; Python's floor would give 3."""
    with fails(hpvm.LaunchError, "'(n + -3) // 2 + 5'", "is 3 in Python but 4 in HPVM-C and LLVM"):
        _run(write_c, "(n - 3) / 2 + 5", 0, capfd)


@pytest.mark.parametrize(
    ("size", "n", "count"),
    [("(n - 3) / 2 + 5", 7, 7), ("n / 4 + 1", 5, 2), ("(n + 6) % 4", 5, 3)],
)
def test_sizes_that_mean_the_same_run_as_c_means_them(write_c, capfd, size: str, n: int, count: int) -> None:  # type: ignore[no-untyped-def]
    assert _run(write_c, size, n, capfd) == f"{count} instances"
