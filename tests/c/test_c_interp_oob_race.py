"""On ``interp`` with race detection (its default), an instance's read past an array comes
first: the read's stand-in value (0) sends the instance's store to the same element as
another instance's, a data race the detector records — but the error raised is the
leaf's own, naming the read (``llvm_native/run.py`` makes recorded races yield to it).
The read is under a test of a value read from memory (``if (perm[0] >= 0)``: whether an
instance makes it is not known before it runs), so the bounds pre-check has no fact and the
leaf runs (Parboil's spmv without its guard showed it, until
the pre-check read its global index and refused that launch before it ran; ``perm[i * s]``
alone it now reads too)."""

from __future__ import annotations

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from hpvm.backends import interp

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("hpvm_runtime")]

SCATTER = """
#include "hpvm.h"

void scatter(int *perm, size_t bytes_perm, float *dst, size_t bytes_dst, long s) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, perm, dst, 1, dst);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  if (perm[0] >= 0) dst[perm[i * s]] = 1.0f;  // @scatter
}

void root(int *perm, size_t bytes_perm, float *dst, size_t bytes_dst, long s, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, perm, dst, 1, dst);
  void *node = __hpvm__createNodeND(1, scatter, n);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(node, p, p, 0);
}
"""


def test_a_read_past_perm_is_named_not_the_race_its_stand_in_causes(write_c):
    """With and without race detection, alternately: the launch in bounds runs, the one past
    ``perm`` names the read of its first instance past the end. (The race a refused launch
    recorded and never raised was raised by the next launch on the thread — an in-bounds
    one without race detection — until a recording dropped what it kept at its end.)"""
    previous = interp.configure()
    (root,) = c.compile(write_c(SCATTER, "scatter.c")).roots
    perm = np.arange(4, dtype=np.int32)
    dst = np.zeros(8, np.float32)
    views = [perm.view(np.uint8), dst.view(np.uint8)]
    for v in views:
        hpvm.track_memory(v)
    try:
        for races in (True, False, True, False):
            interp.configure(races=races)
            dst[:] = 0
            hpvm.mark_host_modified(views[1])
            hpvm.wait(hpvm.launch(root, (*views, 1, 4), target="interp"))  # (in bounds: no race)
            hpvm.request_memory(views[1])
            np.testing.assert_array_equal(dst, [1, 1, 1, 1, 0, 0, 0, 0])
            with pytest.raises(hpvm.OutOfBoundsError) as raised:
                hpvm.wait(hpvm.launch(root, (*views, 1, 6), target="interp"))
            message = str(raised.value)
            assert f"scatter.c:{line_of(SCATTER, 'scatter')} falls outside 'perm'" in message, message
            assert message.startswith("node root/node[4] "), message  # (the first instance past perm's end)
    finally:
        interp.configure(**previous)
        for v in views:
            hpvm.untrack_memory(v)
