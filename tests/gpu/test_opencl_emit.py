"""The OpenCL back end as an emitter over the leaf IR (issue 25): it reads no Python, fills
``np.ones`` arrays, evaluates an updated element's index once, and reports a construct
outside the leaf IR as its own located ``CompileError``."""

import importlib.util
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import SourceLocation
from markers import SourceMarkers, fails, needs_backend

pytest.importorskip("pyopencl")
from hpvm.backends.opencl.standalone import run_leaf  # noqa: E402
from hpvm.backends.opencl.translate import emit_leaf, render_program, translate_leaf  # noqa: E402

pytestmark = needs_backend("opencl")
HERE = SourceMarkers(__file__)
OPENCL = Path(hpvm.__file__).parent / "backends" / "opencl"


def test_no_module_of_the_back_end_reads_python_syntax() -> None:
    reads = re.compile(r"import ast|ast\.parse|ast\.walk|isinstance\([^)]*ast\.|NodeVisitor|NodeTransformer")
    found = [
        f"{p.name}:{k}"
        for p in sorted(OPENCL.glob("*.py"))
        for k, line in enumerate(p.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []
    assert all(len(p.read_text().splitlines()) <= 800 for p in OPENCL.glob("*.py"))


@hpvm.leaf(outs=("out",))
def ones_and_empty(out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    w = np.ones((2, 3), np.int64)
    e = np.empty(2, np.int64)
    e[0] = i
    w[1, 2] += e[0]
    out[i] = w[0, 0] + w[1, 1] + w[1, 2]


def test_np_ones_fills_a_private_array_with_ones() -> None:
    out = np.zeros(4, np.int64)
    run_leaf(ones_and_empty, (out,), (4,))
    assert out.tolist() == [3 + i for i in range(4)]


@hpvm.leaf(outs=("a", "count"))
def counted(a: hpvm.i32[:], count: hpvm.i32[:]):
    a[hpvm.atomic_add(count, 0, 1)] += 1


def test_an_updated_elements_index_is_evaluated_once() -> None:
    a, count = np.zeros(8, np.int32), np.zeros(1, np.int32)
    run_leaf(counted, (a, count), (8,))
    assert count[0] == 8 and a.tolist() == [1] * 8


@hpvm.leaf(ins=("x",), outs=("out",))
def swaps(x: hpvm.i64[:], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a, b = x[i], 1.5
    for k in range(3):
        a, b = b, a + k
    out[i] = a * 10 + b


def test_a_swap_assigns_values_computed_before_any_assignment() -> None:
    x = np.arange(4, dtype=np.int64)
    out = np.zeros(4)
    run_leaf(swaps, (x, out), (4,))
    assert out.tolist() == [_swaps(int(v)) for v in x]


def _swaps(v: int) -> float:
    a, b = v, 1.5
    for k in range(3):
        a, b = b, a + k
    return a * 10 + b


@hpvm.leaf(ins=("x",), outs=("out",))
def rounds_integers(x: hpvm.i32[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = np.floor(x[i]) + np.ceil(x[i]) * 10 + np.trunc(x[i]) * 100 + np.rint(x[i]) * 1000


def test_numpys_rounding_of_an_integer_is_the_integer() -> None:
    """NumPy 2 has integer loops for these (the leaf IR types them as Numba does: integers);
    found by the random-IR property test below (``floor(long)`` is ambiguous in OpenCL C)."""
    x = np.array([-3, 0, 7, 2**31 - 1], np.int32)
    out = np.zeros(4, np.int64)
    run_leaf(rounds_integers, (x, out), (4,))
    assert out.tolist() == [int(v) * 1111 for v in x]


@hpvm.leaf(outs=("out",))
def sized_at_run_time(out: hpvm.f32[:], n: hpvm.i64):
    t = np.zeros(n, np.float32)  # @runtime
    out[0] = t[0]


@hpvm.leaf(outs=("out",))
def zeros_in_an_expression(out: hpvm.f64[:]):
    out[0] = np.zeros(3)[1]  # @expr


@hpvm.leaf(outs=("out",))
def raises(out: hpvm.f64[:]):
    raise ValueError("no")  # @raise


@hpvm.leaf(ins=("a", "b"), outs=("out",))
def reassigns_an_array_parameter(a: hpvm.f64[:], b: hpvm.f64[:], out: hpvm.f64[:]):
    a = b  # @array-param
    out[0] = a[0]


@pytest.mark.parametrize(
    "leaf, marker, words",
    [
        (sized_at_run_time, "runtime", "np.zeros() with a shape not known when the kernel is compiled"),
        (zeros_in_an_expression, "expr", "np.zeros() other than assigned to a name"),
        (raises, "raise", "a 'Raise' statement is not supported"),
        (reassigns_an_array_parameter, "array-param", "assigning an array to the array parameter 'a'"),
    ],
    ids=["runtime-shape", "expression", "raise", "array-parameter"],
)
def test_what_the_emitter_refuses_is_a_located_compile_error(leaf, marker: str, words: str) -> None:
    with fails(hpvm.CompileError, f"leaf '{leaf.name}'", HERE.at(marker), words, "target='cpu'"):
        translate_leaf(leaf)


def _module(name: str, path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TESTS = Path(__file__).parent.parent
LEAFIR_TEXT = _module("leafir_text_for_opencl", TESTS / "ir" / "leafir" / "test_leafir_text.py")
KERNEL_TEXT = _module("kernel_text_for_opencl", TESTS / "gpu" / "test_opencl_kernel_text.py")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_leaf_ir_emits_valid_opencl_c_or_a_located_compile_error(
    data: st.DataObject, tmp_path_factory
) -> None:
    """Random well-typed leaf IR (the text tests' generator): the emitter gives OpenCL C that
    clang accepts, or a ``CompileError`` naming the leaf and a line — never another error."""
    command = KERNEL_TEXT.clang()
    if command is None:
        pytest.skip("needs ziglang and pocl-binary-distribution (clang and the OpenCL headers)")
    ir = LEAFIR_TEXT._Gen(data).leaf()
    leaf = SimpleNamespace(
        name=ir.name,
        params=ir.params,
        out_types=ir.outputs,
        location=SourceLocation(ir.file, ir.line),
        where=lambda line: SourceLocation(ir.file, line),
    )
    try:
        translated = emit_leaf(leaf, ir)
    except hpvm.CompileError as e:
        assert re.search(r"leaf 'gen' \(gen\.py:\d+\): ", str(e)), str(e)
        return
    path = tmp_path_factory.mktemp("cl") / "gen.cl"
    path.write_text(render_program([translated])[0])
    done = subprocess.run([*command, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, f"{path.read_text()}\n{done.stderr[-3000:]}"
