"""Nested pipelines (docs/semantics.md §13, "Nested pipelines") on the GPU back ends: the
shared nested streaming programs run with ``target="opencl"`` (PoCL here) and
``target="cuda"`` (the simulator here), against what they pop on ``interp``, and an error
in a nested stage reaches ``pop`` naming its node path."""

from __future__ import annotations

import pytest

import hpvm
from hpvm.backends import available_backends
from streaming_programs import FAILING_ITEM, FAILING_NODE, NESTED, nested_failing

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


@pytest.mark.parametrize("target", [p for p in GPUS if p.values[0] == "cuda"])
def test_an_error_in_a_nested_stage_reaches_pop_naming_its_node_path(target: str) -> None:
    handle = hpvm.launch(nested_failing, None, stream=True, target=target)
    for x in range(FAILING_ITEM + 2):
        hpvm.push(handle, (x,))
    assert [int(hpvm.pop(handle)[0]) for _ in range(FAILING_ITEM)] == [x + 2 for x in range(FAILING_ITEM)]
    with pytest.raises(hpvm.HPVMError, match=FAILING_NODE):
        hpvm.pop(handle)
    with pytest.raises(hpvm.HPVMError, match=FAILING_NODE):
        hpvm.wait(handle)


@pytest.mark.parametrize("target", [p for p in GPUS if p.values[0] == "opencl"])
def test_opencl_refuses_the_raising_nested_stage_by_name(target: str) -> None:
    """OpenCL C has no exceptions: the leaf that raises is refused, named with its line."""
    with pytest.raises(
        hpvm.CompileError, match=r"leaf 'fails_on_five' \(.*streaming_programs.py:\d+\).*'Raise'"
    ):
        handle = hpvm.launch(nested_failing, None, stream=True, target=target)
        hpvm.push(handle, (0,))
        hpvm.pop(handle)
