"""The common case's chunk function of a 2-D/3-D parallel nest is compiled with ``noalias``
arrays and inlined (``restrict.py``), and is called only when its arrays are apart in
memory (``__hpvm_disjoint``); arrays that overlap take the other chunk function, so a leaf
reading an element it just wrote through another port gets the interpreter's result."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import hpvm
from gpu_convention import blur2_root, grid
from hpvm.backends import get_backend
from hpvm.backends.cpu import restrict
from hpvm.backends.cpu.restrict import disjoint, disjoint_helpers

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

_buffer = np.arange(24, dtype=np.int64)
_square = _buffer.reshape(4, 6)
CASES = {
    "two arrays": ((np.zeros(4), np.zeros(4)), True),
    "the same array twice": ((_buffer, _buffer), False),
    "overlapping slices": ((_buffer[0:5], _buffer[4:9]), False),
    "adjacent slices": ((_buffer[0:4], _buffer[4:8]), True),
    "a reversed view and its array": ((_buffer[::-1], _buffer), False),
    "the reversed view's far end": ((_buffer[::-1][:2], _buffer[:20]), True),
    "an empty slice inside": ((_buffer[3:3], _buffer), True),
    "two columns (interleaved spans: overlapping)": ((_square[:, 0], _square[:, 1]), False),
    "rows apart": ((_square[0], _square[1:]), True),
    "scalars and one array": ((3, 2.5, _buffer), True),
    "a tuple of numbers": (((1, 2, 3), _buffer, np.zeros(2)), True),
    "an array inside a tuple: not checked": (((_buffer, 1), np.zeros(2)), False),
    "nothing": ((), True),
    "third overlaps the first": ((_buffer[:2], np.zeros(3), _buffer[1:]), False),
}


@numba.njit
def _compiled(arrays):
    return disjoint(arrays)


@pytest.mark.parametrize("name", sorted(CASES))
def test_disjoint_compiled_and_in_python(name: str) -> None:
    disjoint_helpers()  # registers its typing and lowering
    arrays, expected = CASES[name]
    assert disjoint(arrays) is expected
    assert _compiled(arrays) is expected


def test_disjoint_compiles_nothing_of_its_own() -> None:
    """Each loop's tuple of arrays is a new type; the check must not cost a compilation per
    type (an ``@overload`` did: four in edge detection's cold compile)."""
    from numba.core import event

    disjoint_helpers()
    compiled: list[str] = []

    class Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            compiled.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev: event.Event) -> None:
            pass

    @numba.njit
    def caller(a, b, n):
        return disjoint((a, b, n, b[1:]))

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        assert caller(np.zeros((3, 2), np.float32), np.zeros(5, np.int16), 7) is False
    finally:
        event.unregister("numba:compile", listener)
    assert compiled == ["caller"]


def test_restrict_compiles_with_noalias_arrays() -> None:
    def add(a, b, c):
        for i in range(a.shape[0]):
            c[i] = a[i] + b[i]

    plain = numba.njit(add)
    restricted = restrict.restrict(numba.njit(forceinline=True)(add))
    args = (np.ones(8), np.ones(8), np.zeros(8))
    plain(*args)
    restricted(*args)
    assert (args[2] == 2).all()

    def array_params(dispatcher) -> str:
        ir = dispatcher.inspect_llvm(dispatcher.signatures[0])
        return next(line for line in ir.splitlines() if line.startswith("define") and "add" in line)

    assert "noalias" in array_params(restricted).split("%excinfo")[1]  # past the return arguments
    assert "noalias" not in array_params(plain).split("%excinfo")[1]


def test_2d_nests_common_chunk_is_restricted() -> None:
    gen = get_backend("cpu").prepare(blur2_root).gen
    source = "\n".join(gen.sources)
    (symbol,) = gen.restricted_symbols
    assert symbol.endswith("_chunk0") and f"def {symbol}w(" in source
    assert "__hpo0_fast = __hg0_i0_small and __hpvm_disjoint((__hn0_s0, __hn0_s1, dst, src, ))" in source


@hpvm.leaf(ins=("a", "b"), outs=("a", "b"))
def reread(a: hpvm.i64[:, :], b: hpvm.i64[:, :]):
    """Reads b[y, x], writes a[y, x], reads b[y, x] again: the same element when a is b."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    t = b[y, x]
    a[y, x] = t + 1
    b[y, x] = b[y, x] * 3 + t


@hpvm.internal()
def reread_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :]):
    n = hpvm.create_node_2d(reread, a.shape[1], a.shape[0])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


def _launch(root, args, target):
    for a in {id(a): a for a in args}.values():
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, args, target=target))
    results = [hpvm.request_memory(a).copy() for a in args]
    for a in {id(a): a for a in args}.values():
        hpvm.untrack_memory(a)
    return results


@pytest.mark.parametrize("shape", [(3, 5), (9, 40)], ids=["small", "vector-wide"])
def test_one_array_bound_to_two_ports_gives_the_interpreters_result(shape) -> None:
    start = grid(shape)
    want = _launch(reread_root, (lambda x: (x, x))(start.copy()), "interp")
    got = _launch(reread_root, (lambda x: (x, x))(start.copy()), "cpu")
    np.testing.assert_array_equal(got[0], want[0])
    assert (want[0] == (start + 1) * 3 + start).all()  # the second read saw the write
    a, b = start.copy(), start.copy()  # apart: the restricted chunk
    got = _launch(reread_root, (a, b), "cpu")
    np.testing.assert_array_equal(got[0], start + 1)
    np.testing.assert_array_equal(got[1], start * 4)


def test_chunk_functions_compile_no_python_entry() -> None:
    """Chunk functions are only called from compiled code (``__hpvm_try_call``); a CPython
    or C entry of their own would be lowered, optimized and turned into machine code for
    nothing (compiler.py's ``_jit_generated``)."""
    shape = (6, 7)
    src, dst = grid(shape), np.zeros(shape, np.int64)
    _launch(blur2_root, (src, dst), "cpu")
    program = get_backend("cpu").prepare(blur2_root)
    module = program.entry.py_func.__globals__
    # the common case's chunk, the other one, and the task calling one of them per chunk
    assert len(program.gen.chunk_symbols) == 3
    for name in program.gen.chunk_symbols:
        dispatcher = module[name]
        assert dispatcher.targetoptions["no_cpython_wrapper"] and dispatcher.targetoptions["no_cfunc_wrapper"]
        for sig in dispatcher.signatures:  # (none where the graph function came from the disk cache)
            cres = dispatcher.overloads[sig]
            assert cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name) == 0, name
