"""A root that was launched is freed once the program drops it: no cache of the runtime or
of a back end keeps it (or, through a leaf's namespace, the function that made it) alive.
The launch plans are keyed weakly by the root and hold it weakly; a clone emitted from the
leaf IR runs in NumPy's, math's and hpvm's names only, not in the leaf's (its generated
module lives as long as the process)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import hpvm
from markers import needs_backend

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def _make_root():  # type: ignore[no-untyped-def]
    """A root made inside a function: its leaf's namespace holds the function's locals."""

    @hpvm.leaf(ins=("a",), outs=("a",))
    def bump(a: hpvm.f32[:]):
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        a[i] += 1

    @hpvm.internal
    def root(a: hpvm.f32[:], n: hpvm.i64):
        node = hpvm.create_node_1d(bump, n)
        hpvm.bind_in(node, 0, 0)

    return root


@pytest.mark.parametrize(
    "target", [pytest.param(t, marks=needs_backend(t)) for t in ("interp", "cpu", "cuda", "opencl")]
)
def test_a_launched_root_is_freed_when_dropped(target: str) -> None:
    root = _make_root()
    a = np.zeros(8, np.float32)
    hpvm.track_memory(a)
    for _ in range(3):  # (the later launches take the cached plan and run paths)
        hpvm.wait(hpvm.launch(root, (a, 8), target=target))
    np.testing.assert_array_equal(hpvm.request_memory(a), np.full(8, 3, np.float32))
    hpvm.untrack_memory(a)
    alive = weakref.ref(root)
    del root
    gc.collect()
    assert alive() is None, [type(r).__name__ for r in gc.get_referrers(alive())]
