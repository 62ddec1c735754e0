"""``compile`` on the GPU back ends builds the kernels a run launches, for the arguments'
types, without running them — so ``hpvm run --timings`` reports compiling as compiling and
the run that follows builds nothing; and the kernel's own threads-per-block limit is
checked where a parent instance must fit in one block."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import hpvm
from hpvm.backends.base import RunContext
from hpvm.backends.cuda import device as cuda_device
from hpvm.backends.cuda.backend import CUDABackend
from hpvm.backends.gpu.spec import Geometry, KernelSpec
from markers import fails
from programs import PROGRAMS, Program

pytestmark = pytest.mark.gpu


class Builds:
    """Counts what the cuda device builds: kernels (``compile``) and generated variants."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.kernels = self.variants = 0
        compile_, source = cuda_device.CUDADevice.compile, cuda_device.kernel_source

        def counted_compile(device: Any, spec: KernelSpec) -> Any:
            self.kernels += 1
            return compile_(device, spec)

        def counted_source(*args: Any) -> str:
            self.variants += 1
            return source(*args)

        monkeypatch.setattr(cuda_device.CUDADevice, "compile", counted_compile)
        monkeypatch.setattr(cuda_device, "kernel_source", counted_source)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_compile_builds_what_the_run_launches(program: Program, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = Builds(monkeypatch)
    backend = CUDABackend()  # a back end of its own: nothing built before
    args = program.make_args(np.random.default_rng(0))
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    backend.compile(program.root, args)
    for a, b in zip(args, before):  # nothing ran, nothing was written back
        np.testing.assert_array_equal(a, b)
    compiled = (builds.kernels, builds.variants)
    backend.run(program.root, args, RunContext())
    assert (builds.kernels, builds.variants) == compiled
    assert compiled[0] > 0 or program.name == "zero_instances"


@hpvm.leaf
def count_of(n: hpvm.i64) -> hpvm.i64:
    return n * 2


@hpvm.leaf(ins=("a",), outs=("a",))
def fill(a: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = i


@hpvm.internal(ins=("a",), outs=("a",))
def fill_some(a: hpvm.i64[:], m: hpvm.i64):
    k = hpvm.create_node_1d(fill, m)
    hpvm.bind_in(k, 0, 0)


@hpvm.internal
def r_computed_size(a: hpvm.i64[:], n: hpvm.i64):
    c = hpvm.create_node_1d(count_of, 2)
    f = hpvm.create_node(fill_some)
    hpvm.bind_in(c, 1, 0)
    hpvm.bind_in(f, 0, 0)
    hpvm.edge(c, f, hpvm.ALL_TO_ALL, 0, 1)  # fill_some's grid comes from a kernel's result


def test_compile_stops_where_a_size_comes_from_a_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = Builds(monkeypatch)
    backend = CUDABackend()
    a = np.zeros(8, np.int64)
    backend.compile(r_computed_size, (a, 3))
    assert builds.kernels == 1 and not a.any()  # count_of only: its result is not known
    backend.run(r_computed_size, (a, 3), RunContext())
    assert builds.kernels == 2
    np.testing.assert_array_equal(a, [0, 1, 2, 3, 4, 5, 0, 0])


# -- the compiled kernel's own limit of threads per block


@hpvm.leaf(ins=("a",), outs=("a",))
def rotate(a: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = hpvm.get_num_node_instances_x(hpvm.get_node())
    a[i] = i
    hpvm.barrier()
    v = a[(i + 1) % n]
    hpvm.barrier()
    a[i] = v


@hpvm.internal
def r_rotate(a: hpvm.i64[:]):
    k = hpvm.create_node_1d(rotate, a.shape[0])
    hpvm.bind_in(k, 0, 0)


def test_a_barrier_leaf_wider_than_its_compiled_kernel_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 threads per block is within the device's 1024, but a kernel using many registers
    allows fewer: numba-cuda's ``max_threads_per_block`` of the compiled kernel (faked here)."""
    monkeypatch.setattr(cuda_device.CUDADevice, "prepare", lambda self, *args: 64)
    hpvm.init()
    try:
        a = np.zeros(100, np.int64)
        hpvm.track_memory(a)
        with fails(
            hpvm.DeviceLimitError,
            "node 'rotate'",
            "all 100 instances",
            "its compiled kernel allows at most 64 threads per block",
            "the device allows 1024",
        ):
            hpvm.wait(hpvm.launch(r_rotate, (a,), target="cuda"))
    finally:
        hpvm.cleanup()


def test_on_a_gpu_the_limit_is_the_compiled_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The non-simulator path: the kernel is compiled for the launch's argument types and its
    ``max_threads_per_block`` is the limit (numba-cuda stood in for by a stub)."""
    compiled_for: list[tuple[Any, ...]] = []

    class Dispatcher:
        def compile(self, types: tuple[Any, ...]) -> Any:
            compiled_for.append(types)
            return SimpleNamespace(max_threads_per_block=96)

    kernel = SimpleNamespace(dispatcher=lambda form: Dispatcher())
    device = CUDABackend().gpu
    monkeypatch.setattr(device, "simulator", False)
    spec = KernelSpec("k_rotate", 1, 1, (), (), barrier=True)
    table, data = np.zeros((1, 2), np.int64), np.zeros(100, np.float32)
    limit = device.prepare(kernel, spec, Geometry(1, 100, 1), table, (100, 1, 1), [data])
    assert limit == 96
    (types,) = compiled_for
    assert [str(t) for t in types] == ["array(int64, 2d, C)", *["int64"] * 4, "array(float32, 1d, C)"]
