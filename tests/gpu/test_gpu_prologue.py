"""The kernel prologue (``backends/gpu/prologue.py``): one description, rendered for numba-cuda
(Python) and OpenCL (C), with the same fast paths in both — the *direct* form (the instance
ids are the global ids: no division, no bounds test) and the *exact* form (no bounds test).
The OpenCL C is only generated here (no device needed); the cuda kernels run on the
simulator."""

from __future__ import annotations

import pytest

from hpvm.backends import get_backend
from hpvm.backends.cuda.kernelgen import kernel_source
from hpvm.backends.gpu.prologue import Form, launch_form, local_shape
from hpvm.backends.gpu.spec import Geometry
from hpvm.backends.opencl.kernelgen import Layout, generate, generic_layout
from programs import BY_NAME, check_program

pytestmark = pytest.mark.gpu


def _specs(program_name: str) -> list:
    program = BY_NAME[program_name]
    check_program(program, "cuda")
    return list(get_backend("cuda").plan(program.root)._kernels.values())


def _prologue_c(spec, form: Form) -> str:  # type: ignore[no-untyped-def]
    """The OpenCL kernel's text before the context array is filled."""
    source = generate(spec, Layout(generic_layout(spec).arrays, form)).source
    kernel = source[source.index("__kernel void") :]
    return kernel[: kernel.index("long hpvm__ctx[")]


def _prologue_python(spec, form: Form) -> str:  # type: ignore[no-untyped-def]
    source = kernel_source(spec, [f"__leaf{c}" for c in range(len(spec.calls))], form)
    return source[: source.index("__ctx = ")]


def test_a_root_grid_runs_direct_on_cuda() -> None:
    (kernel,) = _specs("grid_3d")
    assert Form(direct=True) in kernel.forms  # the simulator ran the direct kernel


def test_a_leaf_under_a_replicated_parent_runs_grouped_on_cuda() -> None:
    (kernel,) = _specs("two_level_parent_queries")
    assert kernel.forms and not any(form.direct for form in kernel.forms)


@pytest.mark.parametrize("render", [_prologue_c, _prologue_python])
def test_both_languages_get_the_fast_paths(render) -> None:  # type: ignore[no-untyped-def]
    (kernel,) = _specs("grid_3d")  # a 3-D grid: unravelling its ids takes divisions
    grouped, exact, direct = (render(kernel.spec, f) for f in (Form(), Form(exact=True), Form(direct=True)))
    division = " / " if render is _prologue_c else " // "
    assert "return" in grouped and division in grouped
    assert "return" not in exact and division in exact
    assert "return" not in direct and division not in direct
    assert "get_global_id(2)" in direct or "cuda.grid(3)" in direct


def test_the_direct_form_needs_one_parent_instance_and_a_dividing_block() -> None:
    (kernel,) = _specs("saxpy_1d")
    spec = kernel.spec
    one_parent = Geometry(groups=8, group_size=128, bpp=8)  # the plan's 1-D geometry for 1000
    assert launch_form(spec, one_parent, (1000, 1, 1), 128, (1024,)) == (Form(direct=True), (125,))
    # a prime extent has no block of 32 or more threads dividing it: grouped, with a bounds test
    assert launch_form(spec, one_parent, (997, 1, 1), 128, (1024,)) == (Form(), ())
    # several parent instances: grouped, and exact when every block is full
    parents = Geometry(groups=16, group_size=128, bpp=8)
    assert launch_form(spec, parents, (1024, 1, 1), 128, (1024,)) == (Form(exact=True), ())
    # too many blocks along a dimension for the device: grouped
    assert launch_form(spec, one_parent, (1000, 1, 1), 128, (1024,), (4,)) == (Form(), ())


def test_direct_blocks_run_along_the_last_dimension() -> None:
    assert local_shape((64, 64, 64), 128, (64, 1024, 1024)) == (1, 2, 64)
    assert local_shape((1024, 1024), 128, (1024, 1024)) == (1, 128)
    assert local_shape((997,), 128, (1024,)) == (1,)


def test_direct_blocks_divide_the_grid_within_the_device_limits() -> None:
    assert local_shape((30, 126, 126), 256, (4096, 4096, 4096)) == (1, 2, 126)
    assert local_shape((30, 126, 126), 256, (1024, 1024, 64)) == (1, 1, 63)  # a GPU's z limit
    assert local_shape((1 << 22,), 256, (4096,)) == (256,)
    assert local_shape((8, 4), 256, (64, 64)) == (8, 4)
