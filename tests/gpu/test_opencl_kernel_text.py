"""The OpenCL C the ``opencl`` back end generates, checked without an OpenCL device: the kernels
of the shared program suite (planned by compiling them for ``cuda``, on the simulator: the
plan and its ``KernelSpec``s are the same for both GPU back ends) are generated and read as
text, and compiled by clang for syntax (``python -m ziglang clang`` with PoCL's OpenCL
headers, when both are installed)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import hpvm
from hpvm.backends.cuda.backend import CUDABackend
from hpvm.backends.gpu.prologue import Form
from hpvm.backends.gpu.spec import KernelSpec
from hpvm.backends.opencl.kernelgen import Layout, generate, generic_layout, layout_of
from hpvm.c import zig
from markers import fails
from programs import BY_NAME, PROGRAMS, Program

pytestmark = pytest.mark.gpu
pytest.importorskip("pyopencl")


@functools.cache
def specs(program: Program) -> list[KernelSpec]:
    backend = CUDABackend()
    backend.compile(program.root, program.make_args(np.random.default_rng(0)))
    return [k.spec for k in backend.plan(program.root)._kernels.values()]


def contiguous(spec: KernelSpec, form: Form | None = None) -> Layout:
    """Every array C-contiguous at offset 0, read-only ones ``restrict`` (nothing aliased)."""
    arrays = tuple((True, True, p.read_only) if p.kind == "array" else None for p in spec.params)
    return Layout(arrays, form or Form())


def kernel_params(source: str) -> str:
    kernel = source[source.index("__kernel void") :]
    return kernel[: kernel.index(") {")]


def test_read_only_arrays_are_const_restrict_and_written_ones_neither() -> None:
    (spec,) = specs(BY_NAME["saxpy_1d"])  # y = a * x + y
    params = kernel_params(generate(spec, contiguous(spec)).source)
    assert "const __global float* restrict p0" in params  # x
    assert "__global float* p1" in params and "const __global float* p1" not in params  # y
    assert "__global const long* restrict hpvm__table" in params


def with_read_only(spec: KernelSpec, k: int, read_only: bool) -> KernelSpec:
    params = list(spec.params)
    params[k] = dataclasses.replace(params[k], read_only=read_only)
    return dataclasses.replace(spec, params=tuple(params))


def test_the_qualifiers_follow_the_spec() -> None:
    """``KernelParam.read_only`` decides: the generator keeps no reckoning of its own."""
    (spec,) = specs(BY_NAME["saxpy_1d"])
    unmarked = with_read_only(spec, 0, False)  # x
    params = kernel_params(generate(unmarked, contiguous(unmarked)).source)
    assert "__global float* p0" in params and "const __global float* p0" not in params


def test_a_leaf_writing_an_array_marked_read_only_is_a_compile_error() -> None:
    (spec,) = specs(BY_NAME["saxpy_1d"])
    wrong = with_read_only(spec, 1, True)  # y, which the leaf writes
    with fails(hpvm.CompileError, "leaf 'p_saxpy'", "writes array 'y', which is not in its outs"):
        generate(wrong, contiguous(wrong))


def test_restrict_only_where_no_written_parameter_shares_the_buffer() -> None:
    (spec,) = specs(BY_NAME["saxpy_1d"])
    assert [(p.kind, p.read_only) for p in spec.params] == [
        ("array", True),
        ("array", False),
        ("scalar", True),
    ]
    shared, other = object(), object()
    x = SimpleNamespace(buffer=shared, c_contiguous=True, offset=0)
    y_apart = SimpleNamespace(buffer=other, c_contiguous=True, offset=0)
    y_view = SimpleNamespace(buffer=shared, c_contiguous=False, offset=8)  # a view of x's array
    apart = layout_of(spec, [x, y_apart, np.float32(2)], Form())
    aliased = layout_of(spec, [x, y_view, np.float32(2)], Form())
    assert apart.arrays[0] == (True, True, True) and apart.arrays[1] == (True, True, False)
    assert aliased.arrays[0] == (True, True, False)
    assert "restrict p" not in kernel_params(generate(spec, aliased).source)


# -- every kernel of the suite compiles as OpenCL C


@functools.cache
def clang() -> list[str] | None:
    """The syntax-only OpenCL C compile command, or None without ziglang or PoCL's headers."""
    pocl = importlib.util.find_spec("pocl_binary_distribution")
    if importlib.util.find_spec("ziglang") is None or pocl is None or pocl.origin is None:
        return None
    headers = next(Path(pocl.origin).parent.rglob("opencl-c.h"), None)
    if headers is None:
        return None
    return [
        *zig.command("clang", ["-x", "cl", "-cl-std=CL1.2"]),
        *(f"-I{headers.parent}", "-Xclang", "-finclude-default-header", "-fsyntax-only"),
        "-Werror=incompatible-pointer-types-discards-qualifiers",  # const data passed as writable
    ]


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_every_kernel_of_the_suite_is_valid_opencl_c(program: Program, tmp_path: Path) -> None:
    command = clang()
    if command is None:
        pytest.skip("needs ziglang and pocl-binary-distribution (clang and the OpenCL headers)")
    for k, spec in enumerate(specs(program)):
        for name, layout in {
            "contiguous": contiguous(spec),
            "exact": contiguous(spec, Form(exact=True)),
            "strided": generic_layout(spec),
        }.items():
            path = tmp_path / f"{spec.name}_{k}_{name}.cl"
            path.write_text(generate(spec, layout).source)
            done = subprocess.run(
                [*command, str(path)], capture_output=True, text=True, env=zig.environment()
            )
            assert done.returncode == 0, f"{path.name}:\n{done.stderr[-3000:]}"
