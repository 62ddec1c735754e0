"""Every error the ``opencl`` back end raises: device selection, compiler messages mapped to
the user's line, device limits, missing device features, leaves that do not translate."""

import numpy as np
import pytest

import hpvm
from markers import SourceMarkers, fails, needs_backend

pytest.importorskip("pyopencl")

from hpvm.backends import get_backend  # noqa: E402
from hpvm.backends.opencl import context as clctx  # noqa: E402
from hpvm.backends.opencl import unavailable_reason  # noqa: E402
from hpvm.backends.opencl.translate import render_program, translate_leaf  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not clctx.list_devices(), reason="no OpenCL device"),
    pytest.mark.usefixtures("hpvm_runtime"),
]
HERE = SourceMarkers(__file__)


def _run(root, args):
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    return hpvm.wait(hpvm.launch(root, tuple(args), target="opencl"))


# -- choosing the device ---------------------------------------------------------------------


def test_device_by_index_pair_and_name(monkeypatch):
    first = clctx.list_devices()[0]
    for spec in ("0", f"{first.platform}:{first.index}", first.label.split(" / ")[1][:6].upper()):
        assert clctx.choose_device(spec).label == first.label
    monkeypatch.setenv(clctx.ENV_VAR, "0")
    assert clctx.choose_device().label == first.label


def test_the_default_device_is_the_first_that_can_compile(monkeypatch):
    # two CPU devices, the first with a compiler too old for this CPU (PyPI's PoCL 3.0 on Zen 5)
    import pyopencl as cl

    class Device:
        type = cl.device_type.CPU

    old, new = Device(), Device()
    devices = [clctx.DeviceInfo(0, 0, "old PoCL / cpu", old), clctx.DeviceInfo(1, 0, "new PoCL / cpu", new)]
    monkeypatch.delenv(clctx.ENV_VAR, raising=False)
    monkeypatch.setattr(clctx, "list_devices", lambda: devices)
    monkeypatch.setattr(clctx, "_smoke", lambda d, *_: "unknown target CPU 'generic'" if d is old else None)
    assert clctx.choose_device().label == "new PoCL / cpu"
    monkeypatch.setattr(clctx, "_smoke", lambda d, *_: "unknown target CPU 'generic'")
    assert clctx.choose_device().label == "old PoCL / cpu"  # none compiles: the probe then says why


def test_unknown_device_lists_the_devices_that_exist(monkeypatch):
    monkeypatch.setenv(clctx.ENV_VAR, "no-such-device")
    label = clctx.list_devices()[0].label
    with fails(
        hpvm.BackendUnavailableError, "HPVM_OPENCL_DEVICE='no-such-device' names no OpenCL device", label
    ):
        clctx.choose_device()


def test_no_device_at_all(monkeypatch):
    monkeypatch.setattr(clctx, "list_devices", lambda: [])
    with fails(hpvm.BackendUnavailableError, "no OpenCL device exists on this machine"):
        clctx.choose_device()
    assert "no OpenCL device exists" in unavailable_reason()


# -- the OpenCL compiler's errors, located ----------------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def copy_one(a: hpvm.f32[:], b: hpvm.f32[:]):
    b[0] = a[0]  # @copy


@needs_backend("opencl")
def test_compiler_errors_name_the_leaf_and_line():
    """If the OpenCL compiler rejects generated code, the error points at the user's line and
    the generated line (here the translation is broken on purpose)."""
    t = translate_leaf(copy_one)
    t.lines = [(text.replace("b[", "undeclared_name["), line) for text, line in t.lines]
    source, where = render_program([t])
    broken = next(k for k, text in enumerate(source.splitlines(), 1) if "undeclared_name" in text)

    def locate(line):
        origin = where[line - 1]
        return f"leaf '{origin[0].name}' ({origin[0].location.file}:{origin[1]})" if origin else None

    ctx = clctx.get_context()
    with fails(
        hpvm.CompileError,
        "leaf 'copy_one'",
        HERE.at("copy"),
        f"generated code at line {broken}",
        "undeclared",
    ):
        ctx.build(source, locate)


# -- leaves that do not translate surface at wait ---------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def sums_with_numpy(a: hpvm.f64[:], b: hpvm.f64[:]):
    b[0] = np.sum(a)  # @npsum


@hpvm.internal
def r_sums(a: hpvm.f64[:], b: hpvm.f64[:]):
    node = hpvm.create_node(sums_with_numpy)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@needs_backend("opencl")
def test_untranslatable_leaf_is_a_compile_error_at_wait():
    with fails(hpvm.CompileError, "leaf 'sums_with_numpy'", HERE.at("npsum"), "np.sum()", "target='cpu'"):
        _run(r_sums, (np.ones(4), np.zeros(1)))


@hpvm.leaf(outs=("out",))
def queries_the_roots_parent(out: hpvm.i64[:]):
    n = hpvm.get_node()
    out[0] = hpvm.get_num_dims(hpvm.get_parent_node(hpvm.get_parent_node(n)))  # @deep


@hpvm.internal
def r_deep(out: hpvm.i64[:]):
    node = hpvm.create_node(queries_the_roots_parent)
    hpvm.bind_in(node, 0, 0)


@needs_backend("opencl")
def test_query_above_the_root():
    with fails(hpvm.CompileError, HERE.at("deep"), "queries 2 level(s) above its node", "only 1 ancestor"):
        _run(r_deep, (np.zeros(1, np.int64),))


# -- device limits and features ---------------------------------------------------------------


@hpvm.leaf(ins=("x",), outs=("y",))
def double_it(x: hpvm.f32[:], y: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = x[i] * np.float32(2)


@hpvm.internal
def r_double(x: hpvm.f32[:], y: hpvm.f32[:]):
    node = hpvm.create_node_1d(double_it, x.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@needs_backend("opencl")
def test_work_group_larger_than_the_kernel_allows(monkeypatch):
    device = get_backend("opencl").gpu
    monkeypatch.setattr(type(device), "group_limit", lambda self, kernel: 4)
    with fails(
        hpvm.DeviceLimitError, "work-groups of 37 work-items", "at most 4", "CL_KERNEL_WORK_GROUP_SIZE"
    ):
        _run(r_double, (np.ones(37, np.float32), np.zeros(37, np.float32)))


@hpvm.leaf(ins=("x",), outs=("y",))
def in_double(x: hpvm.f64[:], y: hpvm.f64[:]):
    y[0] = x[0] * 2.0


@hpvm.internal
def r_in_double(x: hpvm.f64[:], y: hpvm.f64[:]):
    node = hpvm.create_node(in_double)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@needs_backend("opencl")
def test_float64_on_a_device_without_it(monkeypatch):
    monkeypatch.setattr(clctx.get_context(), "has_fp64", False)
    with fails(hpvm.CompileError, "leaf 'in_double'", "computes in float64", "no cl_khr_fp64"):
        _run(r_in_double, (np.ones(1), np.zeros(1)))


@hpvm.leaf(ins=("acc",), outs=("acc",))
def max64(acc: hpvm.i64[:]):
    hpvm.atomic_max(acc, 0, hpvm.get_node_instance_id_x(hpvm.get_node()))


@hpvm.internal
def r_max64(acc: hpvm.i64[:]):
    node = hpvm.create_node_1d(max64, 8)
    hpvm.bind_in(node, 0, 0)


@needs_backend("opencl")
def test_int64_atomics_on_a_device_without_them(monkeypatch):
    ctx = clctx.get_context()
    monkeypatch.setattr(ctx, "extensions", {e for e in ctx.extensions if "int64" not in e})
    with fails(
        hpvm.CompileError, "leaf 'max64'", "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"
    ):
        _run(r_max64, (np.zeros(1, np.int64),))
