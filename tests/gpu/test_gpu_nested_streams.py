"""Nested pipelines (docs/semantics.md §13, "Nested pipelines") on the GPU back ends: the
shared nested streaming programs run with ``target="opencl"`` (PoCL here) and
``target="cuda"`` (the simulator here), against what they pop on ``interp``, and a stage
that raises is refused by name."""

from __future__ import annotations

import pytest

import hpvm
from hpvm.backends import available_backends
from streaming_programs import NESTED, nested_failing

pytestmark = pytest.mark.gpu

GPUS = [
    pytest.param(
        name, marks=pytest.mark.skipif(name not in available_backends(), reason=f"no {name} back end here")
    )
    for name in ("opencl", "cuda")
]


@pytest.fixture(autouse=True)
def runtime():
    hpvm.init()
    yield
    hpvm.cleanup()


def _popped(root, items, target):
    handle = hpvm.launch(root, None, stream=True, target=target)
    for item in items:
        hpvm.push(handle, item)
    got = [tuple(int(v) for v in hpvm.pop(handle)) for _ in items]
    hpvm.wait(handle)
    return got


@pytest.mark.parametrize("target", GPUS)
@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_pipeline_pops_what_interp_pops(name: str, target: str) -> None:
    root, expect_item, _ = NESTED[name]
    items = [(x,) for x in range(20)]  # more than the default capacity of 16
    want = _popped(root, items, "interp")
    assert want == [expect_item(x) for (x,) in items]
    assert _popped(root, items, target) == want


@pytest.mark.parametrize("target", GPUS)
def test_gpu_back_ends_refuse_the_raising_nested_stage_by_name(target: str) -> None:
    """A GPU kernel cannot raise — OpenCL C has no exceptions, and numba-cuda kernels drop
    theirs outside debug mode (on a real GPU the stage stopped silently, its output unwritten):
    the leaf that raises is refused, named with its file and line, on the simulator too.
    (An error in a nested stage reaching ``pop`` is tested on ``cpu`` and ``interp``.)"""
    with pytest.raises(
        hpvm.CompileError, match=r"leaf 'fails_on_five' \(.*streaming_programs.py:\d+\).*'[Rr]aise'"
    ):
        handle = hpvm.launch(nested_failing, None, stream=True, target=target)
        hpvm.push(handle, (0,))
        hpvm.pop(handle)
