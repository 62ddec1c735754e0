"""The shared program suite and the examples on the ``opencl`` back end (PoCL in CI),
compared with the NumPy references the interpreter is checked against."""

import numpy as np
import pytest

import hpvm
from example_modules import load
from markers import needs_backend
from programs import PROGRAMS, Program, check_program

pytest.importorskip("pyopencl")
pytestmark = needs_backend("opencl")


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_program_on_opencl(program: Program) -> None:
    # ``disagrees`` programs: interp warns about the last-instance rule; opencl stays silent.
    check_program(program, "opencl")


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS if p.name in ("saxpy_1d", "barrier_rotate_malloc")], ids=str
)
def test_second_seed_and_relaunch(program: Program) -> None:
    """Kernels built by the first launch are reused with other data."""
    check_program(program, "opencl", seed=0)
    check_program(program, "opencl", seed=1)


EXAMPLE_RUNS = {
    "vector_add": {"n": 1001, "seed": 1},
    "sgemm": {"m": 32, "n": 48, "k": 20, "tile": 16, "alpha": 1.5, "beta": 0.5, "seed": 2},
    "stencil": {"rows": 33, "cols": 17, "steps": 4, "seed": 3},
    "histogram": {"n": 20_000, "nbins": 16, "seed": 4},
    "reduction": {"n": 1024, "block": 64, "seed": 5},
    # streaming; its host rewrites tracked inputs between pushes, declared with
    # hpvm.request_memory / hpvm.mark_host_modified, as a device back end needs
    "edge_detection": {"frames": 4, "size": 20, "in_flight": 2, "seed": 6},
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_RUNS))
def test_example_on_opencl(name: str) -> None:
    result, reference = load(name).run(**EXAMPLE_RUNS[name], target="opencl")
    if np.issubdtype(np.asarray(result).dtype, np.integer):
        np.testing.assert_array_equal(result, reference)
    else:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-5)


@hpvm.leaf(ins=("x",), outs=("y",))
def scale_strided(x: hpvm.f64[:, :], y: hpvm.f64[:, :], k: hpvm.f64):
    n = hpvm.get_node()
    i, j = hpvm.get_node_instance_id_x(n), hpvm.get_node_instance_id_y(n)
    y[i, j] = x[i, j] * k


@hpvm.internal
def r_scale_strided(x: hpvm.f64[:, :], y: hpvm.f64[:, :], k: hpvm.f64):
    node = hpvm.create_node_2d(scale_strided, x.shape[0], x.shape[1])
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_views_of_tracked_arrays_run_with_their_strides_and_offsets():
    """A strided view and an offset view of tracked arrays, then the whole arrays (another
    array layout: another program for the same kernel)."""
    base = np.arange(60.0).reshape(6, 10)
    out = np.zeros((6, 10))
    hpvm.init()
    try:
        hpvm.track_memory(base)
        hpvm.track_memory(out)
        hpvm.wait(hpvm.launch(r_scale_strided, (base[1:, ::3], out[1:, 2:6], 2.0), target="opencl"))
        views = hpvm.request_memory(out).copy()
        hpvm.wait(hpvm.launch(r_scale_strided, (base, out, 0.5), target="opencl"))
        whole = hpvm.request_memory(out).copy()
    finally:
        hpvm.cleanup()
    want = np.zeros((6, 10))
    want[1:, 2:6] = base[1:, ::3] * 2.0
    np.testing.assert_array_equal(views, want)
    np.testing.assert_array_equal(whole, base * 0.5)


@hpvm.leaf(ins=("out",), outs=("out",))
def scalars_of_each_type(
    out: hpvm.f64[:], flag: hpvm.bool_, k: hpvm.i32, b: hpvm.u8, s: hpvm.f32, m: hpvm.i64
):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if flag:
        out[i] = k * i + b + s + m
    else:
        out[i] = -1.0


@hpvm.internal
def r_scalars_of_each_type(
    out: hpvm.f64[:], flag: hpvm.bool_, k: hpvm.i32, b: hpvm.u8, s: hpvm.f32, m: hpvm.i64
):
    node = hpvm.create_node_1d(scalars_of_each_type, out.shape[0])
    for port in range(6):
        hpvm.bind_in(node, port, port)


def test_scalar_arguments_of_each_type_reach_the_kernel_at_every_launch():
    """The kernel's scalar arguments (bool, i32, u8, f32, i64) are packed by the types the
    built program gave PyOpenCL (``device.py``, ``_argument_types``): later launches with
    other values, the flag off and on again, compute with the new values."""
    out = np.zeros(8)
    runs = [(True, -3, 255, 1.5, 1 << 40), (False, 7, 0, 0.0, 0), (True, 7, 1, -0.25, -5)]
    got = []
    hpvm.init()
    try:
        hpvm.track_memory(out)
        for flag, k, b, s, m in runs:
            args = (out, flag, np.int32(k), np.uint8(b), np.float32(s), np.int64(m))
            hpvm.wait(hpvm.launch(r_scalars_of_each_type, args, target="opencl"))
            got.append(hpvm.request_memory(out).copy())
    finally:
        hpvm.cleanup()
    i = np.arange(8)
    for (flag, k, b, s, m), values in zip(runs, got):
        want = k * i + b + np.float32(s) + m if flag else np.full(8, -1.0)
        np.testing.assert_array_equal(values, want)


# -- graphs that mix devices: a cpu stage and an opencl stage -------------------------------


@pytest.fixture
def gpu_means_opencl(monkeypatch):
    import importlib

    from hpvm.backends import base

    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, ("opencl",))
    monkeypatch.setattr(importlib.import_module("hpvm.runtime.launch"), "_CHOICES", {})
    hpvm.init()
    yield
    hpvm.cleanup()


@pytest.mark.usefixtures("gpu_means_opencl")
def test_cpu_and_opencl_stages_in_one_graph():
    from mixed_programs import cpu_gpu_cpu, streamed

    x, out, total = np.arange(8.0), np.zeros(8), np.zeros(1)
    for a in (x, out, total):
        hpvm.track_memory(a)
    handle = hpvm.launch(cpu_gpu_cpu, (x, out, total, 2.0, 8))
    assert handle.backend.name == "cpu+opencl"
    s, last = hpvm.wait(handle)
    np.testing.assert_array_equal(hpvm.request_memory(out), x * 2.0 + 1.0)
    assert (s, last) == ((x * 2.0 + 1.0).sum(), 7)
    stream = hpvm.launch(streamed, None, stream=True, capacity=1)
    results = []
    for k in (1.0, 2.0, 3.0):
        hpvm.push(stream, (x, out, total, k, 8))
        results.append(hpvm.pop(stream)[0])
    hpvm.wait(stream)
    assert results == [(x * k + 1.0).sum() for k in (1.0, 2.0, 3.0)]
