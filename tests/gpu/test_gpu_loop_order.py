"""GPU back ends: a direct launch maps the instance axis the leaves index arrays along with
unit stride to the fastest hardware dimension (CUDA's x, OpenCL's dimension 0) and makes
its blocks longest along it (``gpu/prologue.device_axes``, ``local_shape``). The programs
of ``tests/gpu_convention.py`` give the interpreter's results exactly on opencl (PoCL) and
cuda (the simulator in CI); a wrong mapping between the kernel's ids and the launch shape
would skip or repeat instances."""

from __future__ import annotations

import importlib.util

import pytest

from gpu_convention import CASES, Case, blur2_root, same_as_interp, stencil3_root, y_fastest_root
from hpvm.backends import available_backends, get_backend
from hpvm.backends.gpu.prologue import Form, device_axes, local_shape
from hpvm.backends.opencl.kernelgen import Layout, generate, generic_layout

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

needs_opencl = pytest.mark.skipif(
    importlib.util.find_spec("pyopencl") is None or "opencl" not in available_backends(),
    reason="the opencl back end is not available",
)


def spec_of(root, target: str):
    """The one kernel spec of ``root``'s plan on ``target``, after a run of its case."""
    case = next(c for c in CASES if c.root is root)
    same_as_interp(case.root, case.args(), target, case.disagrees)
    (kernel,) = get_backend(target).plan(root)._kernels.values()
    return kernel.spec


def test_local_shape_runs_blocks_along_the_fastest_axis_first():
    assert local_shape((64, 64, 64), 128, (1024, 1024, 64)) == (1, 2, 64)  # default: the last
    assert local_shape((64, 64, 64), 128, (1024, 1024, 64), (0, 1, 2)) == (64, 2, 1)
    assert local_shape((126, 30), 256, (1024, 1024), (0, 1)) == (126, 2)


@needs_opencl
@pytest.mark.parametrize(
    ("root", "axes"), [(blur2_root, (0, 1)), (stencil3_root, (0, 1, 2)), (y_fastest_root, (1, 2, 0))]
)
def test_device_axes_put_the_unit_stride_axis_first(root, axes):
    assert device_axes(spec_of(root, "opencl")) == axes


@needs_opencl
def test_the_opencl_direct_kernel_reads_x_from_dimension_0():
    spec = spec_of(blur2_root, "opencl")
    text = generate(spec, Layout(generic_layout(spec).arrays, Form(direct=True))).source
    assert "hpvm__i0 = get_global_id(0)" in text.replace("long ", "").replace("(long)", "")
    assert "hpvm__i1 = get_global_id(1)" in text.replace("long ", "").replace("(long)", "")


@needs_opencl
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_convention_programs_on_opencl(case: Case) -> None:
    same_as_interp(case.root, case.args(), "opencl", case.disagrees)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_convention_programs_on_cuda(case: Case) -> None:
    same_as_interp(case.root, case.args(), "cuda", case.disagrees)
