"""A leaf's exception survives export → import → run: the exported node function passes
Numba's status and exception info to ``__hpvm_leaf_error``, the LLVM-leaf runtime records it
in the instance context, and ``cpu`` and ``interp`` raise the ``NodeExecutionError`` the
Python program raises — the same node (and, on ``interp``, instance), the same class and
message — at ``wait`` for a plain launch, at ``pop`` for a streaming one; in parallel loops,
barrier leaves and concurrent launches; never a hang or a silent value. Hand-written leaves
calling the function badly are errors naming the leaf; the reader of Numba's exception
info never fails (a Hypothesis property).
"""

from __future__ import annotations

import ctypes
import pickle
import re
import sys
import threading
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm import llvm
from hpvm.backends.llvm_native.leaf_errors import describe
from hpvm.errors import CompileError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suites
sys.path.insert(0, str(Path(__file__).resolve().parent))
from barrier_lowering import barrier_leaf  # noqa: E402
from test_llvm_leaves_run import DECLS, _run  # noqa: E402

from markers import fails  # noqa: E402
from streaming_programs import add_one  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

TARGETS = ("interp", "cpu")


class PickyError(Exception):
    """A user's exception class (Numba pickles it by reference)."""


@hpvm.leaf(ins=("a",))
def picky(a: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if a[i] < 0:
        raise ValueError("negative input")


@hpvm.internal
def picky_root(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.internal
def picky_rows(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.internal
def picky_nested(a: hpvm.i64[:], parents: hpvm.i64):
    rows = hpvm.create_node_1d(picky_rows, parents)
    hpvm.bind_in(rows, 0, 0)


@hpvm.leaf(ins=("a",))
def fussy(a: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if a[i] == 7:
        raise PickyError("seven", 7)
    if a[i] < 0:
        raise ValueError("negative input at", i)  # a dynamic exception: i is known at run time


@hpvm.internal
def fussy_root(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(fussy, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf(ins=("a",), outs=("a",))
def synced(a: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    v = a[i]
    w = a[(i + 1) % a.shape[0]]
    hpvm.barrier()
    if v < 0:
        raise ValueError("negative input")
    a[i] = v + w


@hpvm.internal(ins=("a",), outs=("a",))
def synced_root(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(synced, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf
def checked(x: hpvm.i64) -> hpvm.i64:
    if x < 0:
        raise ValueError("negative input")
    return 2 * x


@hpvm.internal
def checked_stream(x: hpvm.i64):
    first = hpvm.create_node(add_one)
    second = hpvm.create_node(checked)
    hpvm.bind_in(first, 0, 0, stream=True)
    hpvm.edge(first, second, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(second, 0, 0, stream=True)


def _round_trip(root: Any) -> Any:
    return llvm.from_hpvm_ir(llvm.to_hpvm_ir(root), file="exported.ll")


def _error(root: Any, args: tuple, target: str) -> hpvm.NodeExecutionError:
    with pytest.raises(hpvm.NodeExecutionError) as info:
        _run(root, args, target)
    return info.value


def _essentials(error: BaseException) -> tuple[str, str]:
    """The node (with its instance on ``interp``) and ``raised Class: message`` of an error."""
    text = str(error)
    node = re.match(r"node (\S+) \(", text)
    raised = re.search(r"raised (\w+: .*?)(?: \(at |$| \(the cpu)", text)
    assert node and raised, text
    return node.group(1), raised.group(1)


@pytest.mark.parametrize("target", TARGETS)
def test_a_raise_survives_the_round_trip_as_the_same_node_execution_error(target: str) -> None:
    imported = _round_trip(picky_root)
    want = _error(picky_root, (np.array([1, -2, 3]),), target)
    got = _error(imported, (np.array([1, -2, 3]),), target)
    assert _essentials(got) == _essentials(want)
    node = "picky_root/picky[1]" if target == "interp" else "picky_root/picky"
    assert _essentials(got) == (node, "ValueError: negative input")
    assert "leaf 'picky', exported.ll:" in str(got)  # the LLVM leaf, where it is defined
    assert f"(at {__file__}:" in str(got)  # and where Numba saw the raise
    assert isinstance(got.__cause__, ValueError) and got.__cause__.args == ("negative input",)
    # The launch after it runs normally: nothing stale is left behind.
    assert _run(imported, (np.array([1, 2, 3]),), target) == ()


@pytest.mark.parametrize("target", TARGETS)
def test_a_raise_in_a_parallel_loop_two_levels_down(target: str) -> None:
    a = np.arange(20_000, dtype=np.int64)
    a[17_345] = -1  # a late instance: on cpu, a chunk another thread runs
    imported = _round_trip(picky_nested)
    got = _error(imported, (a, 3), target)
    assert _essentials(got) == _essentials(_error(picky_nested, (a, 3), target))
    assert "picky_nested/picky_rows" in str(got) and "ValueError: negative input" in str(got)


@pytest.mark.parametrize("target", TARGETS)
def test_a_users_class_and_a_dynamic_exceptions_static_parts(target: str) -> None:
    imported = _round_trip(fussy_root)
    got = _error(imported, (np.array([1, 7, 3]),), target)
    assert _essentials(got)[1] == "PickyError: ('seven', 7)"
    assert type(got.__cause__) is PickyError
    # Run-time values of a dynamic exception are not in the exported module: the class and
    # the static arguments are shown, each run-time value as <run-time value>.
    got = _error(imported, (np.array([1, 2, -3]),), target)
    assert _essentials(got)[1] == "ValueError: ('negative input at', <run-time value>)"
    want = _error(fussy_root, (np.array([1, 2, -3]),), target)
    assert _essentials(want)[1] == "ValueError: ('negative input at', 2)"
    assert _essentials(got)[0] == _essentials(want)[0]


@pytest.mark.parametrize("target", TARGETS)
def test_a_raise_in_a_barrier_leaf_names_the_first_instance_that_raised(target: str, lowering: str) -> None:
    imported = _round_trip(synced_root)
    # (the raise follows the barrier, under a branch on the instance's value: work-item loops apply)
    assert barrier_leaf(imported).barrier_lowering == lowering
    a = np.array([4, 5, -6, 7, -8])
    got = _error(imported, (a.copy(),), target)
    want = _error(synced_root, (a.copy(),), target)
    if target == "interp":
        assert (
            _essentials(got) == _essentials(want) == ("synced_root/synced[2]", "ValueError: negative input")
        )
    else:  # (the Python leaf's phase-split code names only the graph on cpu; the LLVM leaf its node)
        assert "raised ValueError: negative input" in str(want)
        assert _essentials(got) == ("synced_root/synced", "ValueError: negative input")
    b = np.array([1, 2, 3])
    _run(imported, (b,), target)  # and without a raise, the barrier leaf still runs
    np.testing.assert_array_equal(b, [3, 5, 4])


def _pop(handle: Any, seconds: float = 120.0) -> Any:
    """``pop``, or fail if it has not returned or raised within ``seconds`` (a hang)."""
    result: list[Any] = []

    def target() -> None:
        try:
            result.append(("value", hpvm.pop(handle)))
        except BaseException as e:
            result.append(("error", e))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"pop did not return within {seconds} s"
    kind, value = result[0]
    if kind == "error":
        raise value
    return value


@pytest.mark.parametrize("target", TARGETS)
def test_a_raise_while_streaming_reaches_pop(target: str) -> None:
    imported = _round_trip(checked_stream)
    errors = []
    for root in (checked_stream, imported):
        handle = hpvm.launch(root, None, stream=True, target=target)
        for x in (1, 2, -5, 3):  # add_one makes -5 into -4: the second stage raises
            hpvm.push(handle, (x,))
        assert [int(_pop(handle)[0]) for _ in range(2)] == [4, 6]
        with pytest.raises(hpvm.NodeExecutionError) as info:
            _pop(handle)
        errors.append(info.value)
        with pytest.raises(hpvm.NodeExecutionError, match="negative input"):
            hpvm.wait(handle)
    want, got = errors
    assert _essentials(got) == _essentials(want) == ("checked_stream/checked", "ValueError: negative input")


@pytest.mark.parametrize("target", TARGETS)
def test_concurrent_launches_keep_their_own_errors(target: str) -> None:
    imported = _round_trip(picky_root)
    bad, good = np.arange(3000, dtype=np.int64), np.arange(3000, dtype=np.int64)
    bad[2500] = -1
    for _ in range(3):
        for a in (bad, good):
            hpvm.track_memory(a)
        handles = [hpvm.launch(imported, (a,), target=target) for a in (bad, good, bad, good)]
        outcomes = []
        for h in reversed(handles):  # wait the good ones first
            try:
                outcomes.append(hpvm.wait(h))
            except hpvm.NodeExecutionError as e:
                outcomes.append(_essentials(e)[1])
        for a in (bad, good):
            hpvm.untrack_memory(a)
        assert outcomes == [(), "ValueError: negative input"] * 2


# -- the ABI: hand-written leaves calling __hpvm_leaf_error --------------------------------


def _leaf(body: str, extra: str = "") -> str:
    return (
        DECLS
        + "declare void @__hpvm_leaf_error(i32, ptr)\n"
        + extra
        + f"""
define {{}} @bad(ptr "in" "out" %out, i64 %bytes) {{
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %two = icmp eq i64 %i, 2
  br i1 %two, label %raise, label %done
raise:
{body}
  br label %done
done:
  ret {{}} zeroinitializer
}}

define {{}} @root(ptr %out, i64 %bytes, i64 %n) {{
entry:
  %f = call ptr @llvm.hpvm.createNode1D(ptr @bad, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %f, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %f, i32 1, i32 1, i1 false)
  ret {{}} undef
}}
"""
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "call, message",
    [
        ("call void @__hpvm_leaf_error(i32 1, ptr null)", "without exception information"),
        ("call void @__hpvm_leaf_error(i32 -1, ptr null)", "a Python exception it could not pass on"),
        ("call void @__hpvm_leaf_error(i32 0, ptr null)", "status 0"),
        ("call void @__hpvm_leaf_error(i32 1, ptr %out)", "whose information could not be read"),  # zeros
    ],
)
def test_a_hand_written_leaf_reporting_an_error_names_its_instance(
    target: str, call: str, message: str
) -> None:
    root = llvm.from_hpvm_ir(_leaf(call), file="bad.ll")
    out = np.zeros(8, dtype=np.int64)  # (at least the 40 bytes of Numba's struct, when passed as one)
    where = (
        "node root/f[2] (leaf 'bad', bad.ll:" if target == "interp" else "node root/f (leaf 'bad', bad.ll:"
    )
    with fails(hpvm.NodeExecutionError, where, message):
        _run(root, (out.view(np.uint8), 4), target)


@pytest.mark.parametrize("target", TARGETS)
def test_the_first_report_of_an_instance_wins(target: str) -> None:
    twice = (
        "  call void @__hpvm_leaf_error(i32 1, ptr null)\n  call void @__hpvm_leaf_error(i32 -3, ptr null)"
    )
    root = llvm.from_hpvm_ir(_leaf(twice))
    with fails(hpvm.NodeExecutionError, "Numba status 1"):
        _run(root, (np.zeros(4, dtype=np.int64).view(np.uint8), 4), target)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            _leaf("  call void @__hpvm_leaf_error(i64 1)").replace(
                "declare void @__hpvm_leaf_error(i32, ptr)", "declare void @__hpvm_leaf_error(i64)"
            ),
            "it declares @__hpvm_leaf_error as void (i64); the ABI's is declare void @__hpvm_leaf_error(i32, ptr)",
        ),
        (
            _leaf("  call void @__hpvm_leaf_error(i32 1, ptr null)").replace(
                "declare void @__hpvm_leaf_error(i32, ptr)",
                "define void @__hpvm_leaf_error(i32 %s, ptr %e) {\n  ret void\n}",
            ),
            "its module defines @__hpvm_leaf_error, which is hpvm's runtime function",
        ),
        (
            _leaf("  %slot = alloca ptr\n  store volatile ptr @__hpvm_leaf_error, ptr %slot"),
            "@__hpvm_leaf_error is used other than by a direct call",
        ),
    ],
    ids=["signature", "defined", "pointer"],
)
def test_a_leaf_misusing_the_error_function_is_a_compile_error_naming_it(text: str, message: str) -> None:
    root = llvm.from_hpvm_ir(text)
    with fails(CompileError, "leaf 'bad'", message):
        _run(root, (np.zeros(4, dtype=np.int64).view(np.uint8), 4), "interp")


def test_the_exported_node_function_tests_the_status_and_calls_the_error_function() -> None:
    text = llvm.to_hpvm_ir(picky_root)
    assert "declare void @__hpvm_leaf_error(i32, ptr)" in text
    picky_fn = text[text.index("define {} @picky(") :]
    picky_fn = picky_fn[: picky_fn.index("\n}\n")]
    assert re.search(r"icmp ne i32 %\S+, 0\n  br i1 %\.failed, label %\.raised, label %\.done", picky_fn)
    assert re.search(r"call void @__hpvm_leaf_error\(i32 %\S+, ptr %\.excinfo\)", picky_fn)
    assert "negative input" in text  # Numba's pickled (class, arguments, location), in the module
    # A leaf that cannot raise (Numba's adapter returns status 0 on every path) has no test.
    module = llvm_binding.parse_assembly(llvm.to_hpvm_ir(checked_stream))
    assert "@__hpvm_leaf_error(" in str(module.get_function("checked"))
    assert "@__hpvm_leaf_error(" not in str(module.get_function("add_one"))
    # PREPARE's tasks test it too (EXTRACT outlines branching tasks): the leaf's error survives.
    assert "call void @__hpvm_leaf_error(" in llvm.prepare(picky_root)


# -- the reader of Numba's exception info ----------------------------------------------------


class _Info(ctypes.Structure):
    _fields_ = [
        ("pickle", ctypes.c_void_p),
        ("size", ctypes.c_int32),
        ("values", ctypes.c_void_p),
        ("unwrap", ctypes.c_void_p),
        ("alloc", ctypes.c_int32),
    ]


def _struct(data: bytes, alloc: int, values: int, unwrap: int) -> tuple[Any, _Info]:
    """Numba's exception-info struct over ``data`` (and the buffer, to keep alive)."""
    buffer = ctypes.create_string_buffer(data, len(data))
    return buffer, _Info(ctypes.cast(buffer, ctypes.c_void_p).value, len(data), values, unwrap, alloc)


def _described(data: bytes) -> Any:
    keep, info = _struct(data, 0, 0, 0)
    return describe(1, ctypes.addressof(info))


def test_only_evidently_numbas_dynamic_exception_memory_is_freed(monkeypatch: pytest.MonkeyPatch) -> None:
    from llvmlite import ir

    from hpvm.backends.llvm_native import leaf_errors

    freed: list[int] = []
    monkeypatch.setattr(leaf_errors, "_free", freed.append)
    placeholder = ir.Constant(ir.IntType(8).as_pointer(), None)  # what Numba pickles for a run-time value
    dynamic = pickle.dumps((ValueError, ("bad", placeholder), None))
    keep, info = _struct(dynamic, 1, 0x1000, 0x2000)
    raised = describe(1, ctypes.addressof(info))
    assert raised.text == "ValueError: ('bad', <run-time value>)"
    assert freed == [0x1000, ctypes.addressof(info)]
    freed.clear()
    for data, alloc, values, unwrap in [
        (pickle.dumps((ValueError, ("bad",), None)), 1, 0x1000, 0x2000),  # no place for a value
        (dynamic, 2, 0x1000, 0x2000),  # a count that disagrees
        (dynamic, 1, 0, 0x2000),  # no values
        (dynamic, 1, 0x1000, 0),  # no unwrapping function
        (b"not a pickle", 1, 0x1000, 0x2000),
    ]:
        keep, info = _struct(data, alloc, values, unwrap)
        describe(1, ctypes.addressof(info))
    assert freed == []
    del keep


arguments = st.lists(
    st.one_of(st.text(max_size=12), st.integers(), st.floats(allow_nan=False), st.none()), max_size=3
)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([ValueError, KeyError, IndexError, RuntimeError, ZeroDivisionError, PickyError]),
    arguments,
    st.one_of(
        st.none(),
        st.tuples(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=20), st.integers(1, 10_000)),
    ),
)
def test_numbas_pickled_exceptions_read_back_as_python_writes_them(
    cls: Any, args: list[Any], loc: Any
) -> None:
    raised = _described(pickle.dumps((cls, tuple(args), loc)))
    assert raised.text == f"{cls.__name__}: {cls(*args)}"
    assert type(raised.exception) is cls and raised.exception.args == tuple(args)
    assert raised.where == ("" if loc is None else f"{loc[1]}:{loc[2]}, in {loc[0]}")


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=64))
def test_unreadable_exception_info_is_said_so_never_raised(data: bytes) -> None:
    raised = _described(data)
    assert isinstance(raised.text, str) and raised.text


@pytest.mark.parametrize("target", TARGETS)
def test_a_raise_survives_prepare_o2_extract(target: str) -> None:
    """PREPARE tests the status of the inlined body in its task (``__hpvm_leaf_error`` when
    it raised), so the outlined leaf raises the Python leaf's error too."""
    extracted = llvm.extract(llvm.optimize(llvm.prepare(picky_root), 2))
    got = _error(extracted, (np.array([1, -2, 3]),), target)
    node = "picky_root/picky[1]" if target == "interp" else "picky_root/picky"
    assert _essentials(got) == (node, "ValueError: negative input")
    assert _run(extracted, (np.array([1, 2, 3]),), target) == ()
