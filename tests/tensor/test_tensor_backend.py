"""The ``tensor`` back end: differential against interp, streaming, plans, and error paths."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hpvm
from hpvm.backends import available_backends, get_backend

torch = pytest.importorskip("torch", reason="the tensor back end needs PyTorch (pip install 'hpvm[tensor]')")

from tensor_programs import (  # noqa: E402 — after the importorskip
    T1,
    T4,
    everything,
    everything_inputs,
    lenet_inputs,
    lenet_like,
    run,
    unprepared_plan,
)

TOL = dict(rtol=1e-4, atol=1e-5)


def test_tensor_is_registered() -> None:
    assert "tensor" in available_backends()
    assert get_backend("tensor").name == "tensor"


def test_without_torch_the_backend_is_unavailable_with_the_install_hint() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import hpvm\nfrom hpvm.backends import get_backend\n"
        "try:\n    get_backend('tensor')\nexcept hpvm.BackendUnavailableError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hpvm[tensor]'" in out.stdout


@pytest.mark.parametrize("batch", [1, 3])
def test_lenet_like_matches_interp_and_the_hint_selects_tensor(batch: int) -> None:
    args = lenet_inputs(batch=batch)
    (expected,) = run(lenet_like, args, "interp")
    (got,) = run(lenet_like, args, None)  # the TENSOR_TARGET hints select the tensor back end
    assert type(got) is np.ndarray and got.dtype == np.float32 and got.shape == (batch, 10)
    np.testing.assert_allclose(got, expected, **TOL)


def test_every_operation_hierarchical_graph_matches_interp() -> None:
    args = everything_inputs()
    (expected,) = run(everything, args, "interp")
    (got,) = run(everything, args, "tensor")
    np.testing.assert_allclose(got, expected, **TOL)


def test_inputs_are_not_modified_and_read_only_inputs_work() -> None:
    args = lenet_inputs()
    copies = [a.copy() for a in args]
    (expected,) = run(lenet_like, args, "interp")
    for a in args:
        a.flags.writeable = False
    (got,) = run(lenet_like, args, "tensor")
    np.testing.assert_allclose(got, expected, **TOL)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


def test_streaming_matches_interp_item_by_item() -> None:
    items = [lenet_inputs(seed=s) for s in range(4)]
    expected = [run(lenet_like, a, "interp")[0] for a in items]
    hpvm.init()
    try:
        for a in items:
            for arr in a:
                hpvm.track_memory(arr)
        h = hpvm.launch(lenet_like, None, stream=True, target="tensor")
        for a in items:
            hpvm.push(h, a)
        got = [hpvm.pop(h)[0] for _ in items]
        hpvm.wait(h)
    finally:
        hpvm.cleanup()
    for g, e in zip(got, expected):
        assert type(g) is np.ndarray
        np.testing.assert_allclose(g, e, **TOL)


def test_run_stage_keeps_values_as_torch_tensors_between_nodes() -> None:
    backend = get_backend("tensor")
    args = lenet_inputs()
    nodes = lenet_like.graph.nodes
    first, outputs = backend.run_stage(lenet_like, args, nodes[:3], {})
    assert outputs == {}
    assert all(isinstance(v[0], torch.Tensor) for v in first.values())
    rest, outputs = backend.run_stage(lenet_like, args, nodes[3:], first)
    assert set(outputs) == {0} and type(outputs[0]) is np.ndarray
    (expected,) = run(lenet_like, args, "interp")
    np.testing.assert_allclose(outputs[0], expected, **TOL)


def test_plan_is_generated_once_per_root_and_readable() -> None:
    backend = get_backend("tensor")
    plan = backend.plan(lenet_like)
    assert backend.plan(lenet_like) is plan
    assert "def graph(" in plan.source and "_convolution(" in unprepared_plan(lenet_like).source
    assert plan.graph.prepared == [("convolution", "add", "relu", "pool_max"), ("mul", "add", "tanh")]
    assert [s.name for _, s in plan.steps()] == [
        "convolution", "add", "relu", "pool_max", "mul", "add", "tanh", "softmax"
    ]  # fmt: skip


def test_each_intermediate_tensor_is_freed_after_its_last_use() -> None:
    # As eager PyTorch does: holding every activation until the graph returns cost 1.6x on
    # MobileNet (allocator and page-fault traffic).
    import ast

    prepared = get_backend("tensor").plan(lenet_like).source  # two prepared layers, softmax
    for source, calls in ((unprepared_plan(lenet_like).source, 8), (prepared, 3)):
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        assigned = [
            t.id for st in body if isinstance(st, ast.Assign) for t in st.targets if isinstance(t, ast.Name)
        ]
        deleted = [t.id for st in body if isinstance(st, ast.Delete) for t in st.targets]
        returned = {n.id for n in ast.walk(body[-1]) if isinstance(n, ast.Name)}
        assert len(assigned) == calls and sorted(deleted) == sorted(set(assigned) - returned)
        for st in (st for st in body if isinstance(st, ast.Delete)):  # right after the last use
            i = body.index(st)
            used_later = {n.id for later in body[i + 1 :] for n in ast.walk(later) if isinstance(n, ast.Name)}
            assert not used_later & {t.id for t in st.targets}
            assert {n.id for n in ast.walk(body[i - 1]) if isinstance(n, ast.Name)} & {
                t.id for t in st.targets
            }


# -- errors -----------------------------------------------------------------------------


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def python_leaf(x: T4) -> T4:
    y = x * 2.0  # float64, as Numba types it
    return y.astype(np.float32)


@hpvm.internal()
def python_root(x: T4):
    n = hpvm.create_node(python_leaf)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


def test_non_tensor_leaf_is_a_compile_error_naming_leaf_and_fix() -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(hpvm.CompileError) as info:
        run(python_root, (x,), "tensor")
    message = str(info.value)
    assert "leaf 'python_leaf'" in message and "test_tensor_backend.py:" in message
    assert "operand 'x * 2.0'" in message
    assert "drop hint=hpvm.TENSOR_TARGET" in message and "target='interp'" in message
    (got,) = run(python_root, (x,), "interp")  # the same graph runs on interp
    np.testing.assert_array_equal(got, x * 2)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def loop_leaf(x: T4) -> T4:
    for _ in range(2):
        x = hpvm.tensor.relu(x)
    return x


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def nested_leaf(x: T4) -> T4:
    return hpvm.tensor.relu(hpvm.tensor.tanh(x))


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def numpy_leaf(x: T4) -> T4:
    return np.maximum(x, 0)


@pytest.mark.parametrize(
    "leaf, reason",
    [
        (loop_leaf, r"a 'for' statement"),
        (nested_leaf, r"a call nested in another call's arguments"),
        (numpy_leaf, r"calls np.maximum\(\), which is not an hpvm.tensor operation"),
    ],
)
def test_leaves_outside_the_tensor_form_are_compile_errors(leaf, reason: str) -> None:  # type: ignore[no-untyped-def]
    @hpvm.internal()
    def root(x: T4):
        n = hpvm.create_node(leaf)
        hpvm.bind_in(n, 0, 0)
        hpvm.bind_out(n, 0, 0)

    with pytest.raises(
        hpvm.CompileError, match=rf"leaf '{leaf.name}' \(.*:\d+\) is not a tensor leaf: {reason}"
    ):
        run(root, (np.ones((1, 1, 2, 2), np.float32),), "tensor")


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def relu_leaf(x: T4) -> T4:
    return hpvm.tensor.relu(x)


@hpvm.internal()
def replicated_root(x: T4, n: hpvm.i64):
    r = hpvm.create_node_1d(relu_leaf, n)
    hpvm.bind_in(r, 0, 0)
    hpvm.bind_out(r, 0, 0)


def test_replicated_tensor_node_is_a_compile_error() -> None:
    with pytest.raises(hpvm.CompileError, match=r"node 'relu_leaf' .* is replicated in 1 dimension\(s\)"):
        run(replicated_root, (np.ones((1, 1, 2, 2), np.float32), np.int64(2)), "tensor")


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x", "b"))
def bad_bias(x: T4, b: T1) -> T4:
    y = hpvm.tensor.relu(x)
    return hpvm.tensor.add(y, b)


@hpvm.internal()
def bad_bias_root(x: T4, b: T1):
    n = hpvm.create_node(bad_bias)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)
    hpvm.bind_out(n, 0, 0)


def test_shape_error_names_node_leaf_and_line_before_anything_runs() -> None:
    x, b = np.ones((1, 3, 2, 2), np.float32), np.ones(5, np.float32)
    with pytest.raises(hpvm.TensorShapeError) as info:
        run(bad_bias_root, (x, b), "tensor")
    message = str(info.value)
    line = bad_bias.source_line + 2  # the return
    assert f"node bad_bias_root/bad_bias (leaf 'bad_bias', {__file__}:{line})" in message
    assert "hpvm.tensor.add: bias 'b' has shape (5,)" in message
    # the same shapes pass once they are right, and the first bad signature is not cached
    (got,) = run(bad_bias_root, (x, np.ones(3, np.float32)), "tensor")
    np.testing.assert_array_equal(got, x + 1)
    with pytest.raises(hpvm.TensorShapeError):
        run(bad_bias_root, (x, b), "tensor")


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("x",))
def wrong_rank(x: T4) -> hpvm.f32[:, :]:
    return hpvm.tensor.relu(x)


@hpvm.internal()
def wrong_rank_root(x: T4):
    n = hpvm.create_node(wrong_rank)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


def test_output_annotation_that_does_not_match_the_result() -> None:
    with pytest.raises(
        hpvm.TensorShapeError,
        match=r"output 0 is declared f32\[:, :\] but the leaf returns a float32 tensor of shape \(1, 1, 2, 2\)",
    ):
        run(wrong_rank_root, (np.ones((1, 1, 2, 2), np.float32),), "tensor")


# -- graphs that mix devices: a cpu leaf feeding tensor leaves ---------------------------


@hpvm.leaf(ins=("x",), outs=("y",))
def cpu_scale(x: hpvm.f32[:, :], y: hpvm.f32[:, :], k: hpvm.f32) -> hpvm.f32[:, :]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[0, i] = x[0, i] * k
    return y


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("y", "w"))
def tensor_fc(y: hpvm.f32[:, :], w: hpvm.f32[:, :]) -> hpvm.f32[:, :]:
    return hpvm.tensor.mul(y, w)


@hpvm.leaf(hint=hpvm.TENSOR_TARGET, ins=("z",))
def tensor_tanh(z: hpvm.f32[:, :]) -> hpvm.f32[:, :]:
    return hpvm.tensor.tanh(z)


@hpvm.internal()
def mixed(x: hpvm.f32[:, :], y: hpvm.f32[:, :], k: hpvm.f32, w: hpvm.f32[:, :], n: hpvm.i64):
    s = hpvm.create_node_1d(cpu_scale, n)
    hpvm.bind_in(s, 0, 0)
    hpvm.bind_in(s, 1, 1)
    hpvm.bind_in(s, 2, 2)
    f = hpvm.create_node(tensor_fc)
    hpvm.edge(s, f, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(f, 3, 1)
    t = hpvm.create_node(tensor_tanh)
    hpvm.edge(f, t, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(t, 0, 0)


def test_graph_mixing_cpu_and_tensor_leaves_runs_each_on_its_back_end() -> None:
    pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    (expected,) = run(mixed, (x, np.zeros((1, 6), np.float32), np.float32(2.0), w, np.int64(6)), "interp")
    np.testing.assert_allclose(expected, np.tanh((x * 2) @ w), rtol=1e-5)
    args = (x, np.zeros((1, 6), np.float32), np.float32(2.0), w, np.int64(6))
    hpvm.init()
    try:
        for a in args:
            if isinstance(a, np.ndarray):
                hpvm.track_memory(a)
        handle = hpvm.launch(mixed, args)
        assert "tensor" in handle.backend.name and "cpu" in handle.backend.name
        (got,) = hpvm.wait(handle)
    finally:
        hpvm.cleanup()
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, expected, **TOL)


@hpvm.internal()
def cpu_node_with_tensor_leaves(
    x: hpvm.f32[:, :], y: hpvm.f32[:, :], k: hpvm.f32, w: hpvm.f32[:, :], n: hpvm.i64
):
    """The graph above as one (unhinted: CPU) internal node under the root."""
    inner = hpvm.create_node(mixed)
    for i in range(5):
        hpvm.bind_in(inner, i, i)
    hpvm.bind_out(inner, 0, 0)


def test_tensor_leaves_inside_a_cpu_node_run_on_tensor(monkeypatch) -> None:
    pytest.importorskip("numba")
    tensor = get_backend("tensor")
    ran = []
    original = tensor.run_stage

    def spy(root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        ran.extend(n.name for n in nodes)
        return original(root, args, nodes, upstream, ctx)

    monkeypatch.setattr(tensor, "run_stage", spy)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    args = (x, np.zeros((1, 6), np.float32), np.float32(2.0), w, np.int64(6))
    hpvm.init()
    try:
        for a in args:
            if isinstance(a, np.ndarray):
                hpvm.track_memory(a)
        handle = hpvm.launch(cpu_node_with_tensor_leaves, args)
        assert handle.backend.name == "cpu+tensor"
        (got,) = hpvm.wait(handle)
    finally:
        hpvm.cleanup()
    assert ran == ["tensor_fc", "tensor_tanh"]  # the tensor leaves, inside the CPU node, ran on tensor
    np.testing.assert_allclose(got, np.tanh((x * 2) @ w), **TOL)


def test_wait_runs_a_queued_launch_on_the_calling_thread(monkeypatch) -> None:
    """The generated code returns to Python between layers (Ctrl-C stops it there), so
    ``wait`` runs a launch no worker has started on the host's own thread: there its torch
    calls share the host's OpenMP team instead of starting a second one."""
    import threading

    from hpvm.runtime.api import default_runtime
    from hpvm.runtime.workers import Slot

    args = lenet_inputs()
    (expected,) = run(lenet_like, args, "interp")
    hpvm.init()
    try:
        for a in args:
            hpvm.track_memory(a)
        queued: list[Slot] = []
        monkeypatch.setattr(
            default_runtime().workers, "submit", lambda job: queued.append(Slot(job)) or queued[-1]
        )
        handle = hpvm.launch(lenet_like, args, target="tensor")  # queued, and no worker takes it
        assert queued and handle.job is not None
        ran_on: list[threading.Thread] = []
        job = handle.job
        handle.job = lambda *how: ran_on.append(threading.current_thread()) or job(*how)
        late = threading.Timer(10.0, lambda: handle.claim() and handle.job())  # (a late worker)
        late.start()
        try:
            (got,) = hpvm.wait(handle)
        finally:
            late.cancel()
    finally:
        hpvm.cleanup()
    assert ran_on == [threading.main_thread()]
    np.testing.assert_allclose(got, expected, **TOL)
