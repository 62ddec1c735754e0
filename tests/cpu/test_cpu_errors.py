"""What the cpu back end reports: compile errors name the leaf, the line and the construct."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import SourceMarkers
from running import run_tracked

MARKS = SourceMarkers(__file__)


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


class Opaque:
    """A Python object Numba cannot type."""


OPAQUE = Opaque()


@hpvm.leaf(outs=("a",))
def uses_python_object(a: hpvm.f64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = OPAQUE.value  # @opaque


@hpvm.internal()
def opaque_root(a: hpvm.f64[:]):
    node = hpvm.create_node_1d(uses_python_object, a.shape[0])
    hpvm.bind_in(node, 0, 0)


def helper(handle):
    return handle


@hpvm.leaf(outs=("a",))
def passes_handle(a: hpvm.f64[:]) -> None:
    n = hpvm.get_node()
    a[0] = hpvm.get_num_dims(helper(n))  # @handle


@hpvm.internal()
def handle_root(a: hpvm.f64[:]):
    node = hpvm.create_node(passes_handle)
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf(ins=("a",))
def divides(a: hpvm.i64[:], d: hpvm.i64) -> hpvm.i64:
    if d == 0:
        raise ValueError("no divisor")  # (a division by zero itself does not raise: it gives 0)
    return a[0] // d


@hpvm.internal()
def divide_root(a: hpvm.i64[:], d: hpvm.i64):
    node = hpvm.create_node(divides)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)
    hpvm.bind_out(node, 0, 0)


def launch(root, *args):
    return run_tracked(root, args, "cpu")


def test_untypable_python_names_the_leaf_line_and_code():
    with pytest.raises(hpvm.CompileError) as info:
        launch(opaque_root, np.zeros(3))
    message = str(info.value)
    assert f"leaf 'uses_python_object' ({MARKS.at('opaque')})" in message
    assert "OPAQUE.value" in message and "target='interp'" in message
    assert "try_call" not in message  # what Numba said about the leaf, not about hpvm's helpers
    assert info.value.__cause__ is None  # the Numba traceback is not the message


def test_node_handle_used_outside_a_query():
    with pytest.raises(hpvm.CompileError) as info:
        launch(handle_root, np.zeros(3))
    message = str(info.value)
    assert "passes_handle" in message and MARKS.at("handle") in message
    assert "not known at compile time" in message


def test_the_interpreter_runs_what_the_cpu_back_end_cannot():
    a = np.full(3, -1.0)
    hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(handle_root, (a,), target="interp"))
    assert a[0] == 0  # the node is not replicated: 0 dimensions


def test_error_raised_by_compiled_code_reaches_wait():
    with pytest.raises(hpvm.NodeExecutionError, match=r"ValueError: no divisor.*target='interp'"):
        launch(divide_root, np.array([7]), 0)
    assert launch(divide_root, np.array([7]), 2) == (3,)


def test_size_dividing_by_zero_inside_a_nested_graph_is_a_launch_error():
    # (compiled code divides with NumPy's error model, where n // 0 is 0: the size is checked)
    @hpvm.leaf()
    def nothing() -> None:
        pass

    @hpvm.internal()
    def inner(n: hpvm.i64):
        hpvm.create_node_1d(nothing, 10 // (n - 2) + n % (n - 2))

    @hpvm.internal()
    def outer(n: hpvm.i64):
        node = hpvm.create_node(inner)
        hpvm.bind_in(node, 0, 0)

    with pytest.raises(hpvm.LaunchError, match=r"node 'nothing'.*10 // \(n - 2\).*divides by zero"):
        launch(outer, 2)
    assert launch(outer, 4) == ()


def test_size_dividing_by_zero_in_a_flattened_loop_is_a_launch_error():
    # A replicated internal node in a loop of its own runs its instances and its children's
    # as one parallel loop (flatten.py): the children's divisors are checked there too.
    @hpvm.leaf(outs=("out",))
    def mark(out: hpvm.f32[:]) -> None:
        out[hpvm.get_node_instance_id_x(hpvm.get_node())] = 1.0

    @hpvm.internal()
    def inner(out: hpvm.f32[:], n: hpvm.i64):
        node = hpvm.create_node_1d(mark, 8 // (n - 2))
        hpvm.bind_in(node, 0, 0)

    @hpvm.internal()
    def outer(out: hpvm.f32[:], n: hpvm.i64):
        node = hpvm.create_node_1d(inner, 3)
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)

    out = np.zeros(8, dtype=np.float32)
    with pytest.raises(hpvm.LaunchError, match=r"node 'mark'.*8 // \(n - 2\).*divides by zero"):
        launch(outer, out, 2)
    launch(outer, out, 4)
    assert out.tolist() == [1.0] * 4 + [0.0] * 4


def test_negative_size_inside_a_nested_graph_is_a_launch_error():
    @hpvm.leaf()
    def nothing() -> None:
        pass

    @hpvm.internal()
    def inner(n: hpvm.i64):
        hpvm.bind_in(hpvm.create_node_1d(nothing, n - 5), 0, 0) if False else hpvm.create_node_1d(
            nothing, n - 5
        )

    @hpvm.internal()
    def outer(n: hpvm.i64):
        node = hpvm.create_node(inner)
        hpvm.bind_in(node, 0, 0)

    with pytest.raises(hpvm.LaunchError, match=r"node 'nothing'.*negative"):
        launch(outer, 2)
