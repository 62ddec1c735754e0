"""A GPU launch repeated with arguments of the same shapes and sizes reuses what the previous
one computed — grids, levels, launch groups — and uploads no instance table again; other
sizes get their own, and every run computes what ``interp`` does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hpvm
from programs import BY_NAME

pytestmark = pytest.mark.gpu


def launch(root: Any, args: tuple[Any, ...]) -> Any:
    handle = hpvm.launch(root, args, target="cuda")
    hpvm.wait(handle)
    return handle


@pytest.fixture
def runtime():  # type: ignore[no-untyped-def]
    hpvm.init()
    yield
    hpvm.cleanup()


# Sizes no other test launches these programs with: their first launch here is the first.
FRESH = {
    "saxpy_1d": lambda: (np.ones(41, np.float32), np.ones(41, np.float32), np.float32(2)),
    "two_level_parent_queries": lambda: (np.ones(30), np.zeros(30), 22),
    "three_level_grandparent_queries": lambda: (np.zeros((3, 1, 2, 3, 2), np.int64),),
}


@pytest.mark.usefixtures("runtime")
@pytest.mark.parametrize("name", sorted(FRESH))
def test_a_repeated_launch_uploads_no_instance_table(name: str) -> None:
    args = FRESH[name]()
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    first = launch(BY_NAME[name].root, args)
    second = launch(BY_NAME[name].root, args)
    assert first.transfers.internal_to_device > 0  # the tables, the first time
    assert second.transfers.internal_to_device == 0


@pytest.mark.usefixtures("runtime")
def test_other_sizes_get_their_own_grids_and_tables() -> None:
    program = BY_NAME["two_level_parent_queries"]  # n // 4 blocks of 4
    for n in (30, 17, 30, 8):
        x, out = np.arange(32, dtype=np.float64), np.zeros(32)
        hpvm.track_memory(x)
        hpvm.track_memory(out)
        launch(program.root, (x, out, n))
        want = np.zeros(32)
        program.reference(x.copy(), want, n)
        np.testing.assert_allclose(hpvm.request_memory(out), want, rtol=1e-12)
        hpvm.untrack_memory(x)
        hpvm.untrack_memory(out)
