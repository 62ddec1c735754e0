"""The bounds pre-check on every back end (``backends/bounds.py``): replication sizes that
would make every instance index past an array are an ``OutOfBoundsError`` naming the node,
the array, the size and the line, before the node runs — on ``cpu``, ``opencl``, ``cuda``
(numba-cuda's simulator), ``dask``; ``interp`` checks every index itself and reports the
first instance past the end its own way. Nothing is written past the arrays: each array is
the front of a larger buffer whose guard elements after it must keep their value (before
the check, ``opencl`` reported success after writing past its device buffer, and a
``dask`` chunk crashed its worker)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from dask_clusters import dask_client  # noqa: F401  (a fixture: the dask target's cluster)
from hpvm.backends.bounds import bound_accesses, check
from hpvm.ir.analysis import feed_table
from markers import SourceMarkers, fails, needs_backend

MARKS = SourceMarkers(__file__)
GUARD = 3  # elements (rows, for 2-D arrays) after each array
SENTINEL = -7.0

CHECKED = ["cpu", "opencl", "cuda", "dask"]  # back ends that check before the node runs
TARGETS = [pytest.param(t, marks=needs_backend(t)) for t in [*CHECKED, "interp"]]


@pytest.fixture
def target(request):
    """Runs the test with hpvm initialised for the target (a Dask cluster for ``dask``)."""
    name = request.param
    hpvm.cleanup()
    if name == "dask":
        hpvm.init(dask=request.getfixturevalue("dask_client"))
    else:
        hpvm.init()
    yield name
    hpvm.cleanup()


def run(root, args, target: str):
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    try:
        return hpvm.wait(hpvm.launch(root, args, target=target))
    finally:
        for a in arrays:
            hpvm.request_memory(a)
            hpvm.untrack_memory(a)


def guarded(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` copied to the front of a buffer with ``GUARD`` more elements (rows) of
    ``SENTINEL``: (the array, the buffer)."""
    buffer = np.full((values.shape[0] + GUARD, *values.shape[1:]), SENTINEL, values.dtype)
    buffer[: values.shape[0]] = values
    return buffer[: values.shape[0]], buffer


def guards_kept(*buffers: np.ndarray) -> bool:
    return all((b[-GUARD:] == SENTINEL).all() for b in buffers)


# -- one leaf, one level ---------------------------------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def shift(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i + 1] * 2.0  # @shift


@hpvm.internal
def shifted(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(shift, n)  # @node
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_in_bounds_sizes_run(target):
    (a, abuf), (b, bbuf) = guarded(np.arange(9, dtype=np.float32)), guarded(np.zeros(8, np.float32))
    run(shifted, (a, b, 8), target)  # a[i + 1] up to a[8], b[i] up to b[7]: the last of each
    np.testing.assert_array_equal(b, np.arange(1, 9, dtype=np.float32) * 2)
    assert guards_kept(abuf, bbuf)
    run(shifted, (a, b, 0), target)  # no instances: nothing indexes anything


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_a_size_past_the_end_is_refused_and_nothing_is_written_past_the_array(target):
    (a, abuf), (b, bbuf) = guarded(np.arange(9, dtype=np.float32)), guarded(np.zeros(8, np.float32))
    if target in CHECKED:
        with fails(
            hpvm.OutOfBoundsError,
            f"node 'shift' ({MARKS.at('node')}): replication size n is 9",
            "every instance of leaf 'shift' indexes 'b' (input of 'shifted', 8 long on axis 0) "
            f"with its instance id x ({MARKS.at('shift')})",
            "the last instances would index past its end",
        ):
            run(shifted, (a, b, 9), target)
        assert (b == 0).all()  # refused before any instance ran
    else:  # interp: the first index past an end, when the instance evaluates it (a[i + 1])
        with fails(
            hpvm.OutOfBoundsError,
            f"node shifted/shift[8] (leaf 'shift', {MARKS.at('shift')})",
            "index 9 is out of bounds for axis 0 of array 'a' with size 9",
        ):
            run(shifted, (a, b, 9), target)
    assert guards_kept(abuf, bbuf)


@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_the_offset_counts(target):
    """``a[i + 1]`` with as many instances as ``a`` has elements: the last reads one past."""
    (a, abuf), (b, bbuf) = guarded(np.arange(8, dtype=np.float32)), guarded(np.zeros(8, np.float32))
    fragment = (
        "indexes 'a' (input of 'shifted', 8 long on axis 0) with its instance id x + 1"
        if target in CHECKED
        else "index 8 is out of bounds for axis 0 of array 'a' with size 8"
    )
    with fails(hpvm.OutOfBoundsError, fragment):
        run(shifted, (a, b, 8), target)
    assert guards_kept(abuf, bbuf)


# -- two dimensions, one level down, under a replicated internal node -------------------------


@hpvm.leaf(outs=("m",))
def mark(m: hpvm.f32[:, :]) -> None:
    node = hpvm.get_node()
    m[hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)] = 1.0  # @mark


@hpvm.internal
def per_tile(m: hpvm.f32[:, :], rows: hpvm.i64, cols: hpvm.i64):
    cells = hpvm.create_node_2d(mark, rows, cols)  # @cells
    hpvm.bind_in(cells, 0, 0)


@hpvm.internal
def tiled(m: hpvm.f32[:, :], rows: hpvm.i64, cols: hpvm.i64):
    tiles = hpvm.create_node_1d(per_tile, 2)  # every tile marks the whole matrix
    for port in range(3):
        hpvm.bind_in(tiles, port, port)


@pytest.fixture
def tiles_may_race():
    """Every tile of ``tiled`` marks the whole matrix, with the same values: a data race
    ``interp`` reports (docs/backends/interp.md), here on purpose — the bounds check must see
    the grids of several parent instances — so its detector is off for these tests."""
    from hpvm.backends.interp import configure

    previous = configure(races=False)
    yield
    configure(races=previous["races"])


@pytest.mark.usefixtures("tiles_may_race")
@pytest.mark.parametrize("target", TARGETS, indirect=True)
def test_each_axis_one_level_down(target):
    m, buf = guarded(np.zeros((3, 4), np.float32))
    run(tiled, (m, 3, 4), target)
    assert (m == 1).all() and guards_kept(buf)
    m[:] = 0
    for rows, cols, fragment, interp in [
        (4, 4, "replication size rows is 4", "index 3 is out of bounds for axis 0"),
        (3, 5, "replication size cols is 5", "index 4 is out of bounds for axis 1"),
    ]:
        axis = 0 if rows == 4 else 1
        long = 3 if rows == 4 else 4
        expected = (
            [
                f"node 'mark' ({MARKS.at('cells')}): {fragment}",
                f"indexes 'm' (input of 'per_tile', {long} long on axis {axis}) with its instance id "
                f"{'xy'[axis]} ({MARKS.at('mark')})",
            ]
            if target in CHECKED
            else [f"(leaf 'mark', {MARKS.at('mark')})", interp]
        )
        with fails(hpvm.OutOfBoundsError, *expected):
            run(tiled, (m, rows, cols), target)
        if target in CHECKED:
            assert (m == 0).all()
        assert guards_kept(buf)


# -- dask: a node split across the workers -------------------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",), layouts={"a": "block", "b": "block"})
def doubled(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * 2.0  # @doubled


@hpvm.internal
def blocks(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(doubled, n)  # @blocks
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@pytest.mark.parametrize("target", [pytest.param("dask", marks=needs_backend("dask"))], indirect=True)
def test_dask_refuses_a_split_node_on_the_host_before_sending_anything(target):
    """Its declared layouts split the node across the workers, each chunk running the leaf
    with offset ids on a piece of each array, which the workers' ``cpu`` back end cannot
    check: a chunk past the end wrote past the array (with 100,000 instances for 16
    elements, a segmentation fault of the whole process)."""
    (a, abuf), (b, bbuf) = guarded(np.arange(16, dtype=np.float32)), guarded(np.zeros(16, np.float32))
    for array in (a, b):
        hpvm.track_memory(array)
    try:
        handle = hpvm.launch(blocks, (a, b, 16), target="dask")
        hpvm.wait(handle)
        assert "split by its declared layouts" in "\n".join(handle.notes)
        np.testing.assert_array_equal(hpvm.request_memory(b), np.arange(16) * 2.0)
        b[:] = 0
        handle = hpvm.launch(blocks, (a, b, 64), target="dask")
        with fails(
            hpvm.OutOfBoundsError,
            f"node 'doubled' ({MARKS.at('blocks')}): replication size n is 64",
            f"indexes 'b' (input of 'blocks', 16 long on axis 0) with its instance id x ({MARKS.at('doubled')})",
        ):
            hpvm.wait(handle)
        assert handle.transfers.to_device == 0 and not handle.notes  # nothing sent, nothing split
    finally:
        for array in (a, b):
            hpvm.untrack_memory(array)
    assert (b == 0).all() and guards_kept(abuf, bbuf)


# -- the property: refused iff the last instance's index is past the end ------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def probe(a: hpvm.f32[:], b: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    k = i + 2
    b[i - 1 + 1] = a[k] + a[k - 3 + 1]


@hpvm.internal
def probed(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(probe, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def _refused(n: int, na: int, nb: int) -> bool:
    """Whether the last instance indexes past an end: ``b[n - 1]``, ``a[n - 1 + 2]``."""
    return n > 0 and (n - 1 >= nb or n + 1 >= na)


@pytest.mark.parametrize("target", [pytest.param(t, marks=needs_backend(t)) for t in CHECKED], indirect=True)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 12), na=st.integers(0, 14), nb=st.integers(0, 14))
def test_refused_iff_the_last_index_is_past_the_end(target, n, na, nb):
    (a, abuf), (b, bbuf) = guarded(np.arange(na, dtype=np.float32)), guarded(np.zeros(nb, np.float32))
    if _refused(n, na, nb):
        with pytest.raises(hpvm.OutOfBoundsError, match=f"replication size n is {n}"):
            run(probed, (a, b, n), target)
        assert (b == 0).all()
    else:  # in bounds: every instance's reads and write land inside the arrays
        run(probed, (a, b, n), target)
        want = np.zeros(nb, np.float32)
        want[:n] = a[2 : n + 2] + a[:n]
        np.testing.assert_array_equal(b, want)
    assert guards_kept(abuf, bbuf)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(0, 2**40),
    offsets=st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    extent=st.integers(0, 2**40),
)
def test_the_check_refuses_iff_the_largest_offset_reaches_the_extent(n, offsets, extent):
    """The analysis keeps the largest offset of ``a[i + c]`` per array (through a variable
    for the first), and the check compares the last instance's index with the extent."""
    terms = " + ".join(
        f"a[{_plus('i', c)}]" if k else f"a[{_plus('j', c - 1)}]" for k, c in enumerate(offsets)
    )
    source = (
        "def reads(a: hpvm.f64[:], out: hpvm.f64[:]) -> None:\n"
        "    i = hpvm.get_node_instance_id_x(hpvm.get_node())\n"
        "    j = 1 + i\n"
        f"    out[0] = {terms}\n"
    )
    leaf = _leaf(source, "reads")

    @hpvm.internal
    def graph(a: hpvm.f64[:], out: hpvm.f64[:], n: hpvm.i64):
        node = hpvm.create_node_1d(leaf, n)
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)

    node = graph.graph.nodes[0]
    bounds = bound_accesses(node, graph, feed_table(graph.graph)[id(node)])
    assert [(access.array, access.offset) for access, _ in bounds] == [("a", max(offsets))]
    shapes = [(extent,), (1,), ()]  # (a, out and n as check sees them: f64 arrays' shapes)
    past = n > 0 and n - 1 + max(offsets) >= extent
    if past:
        with pytest.raises(hpvm.OutOfBoundsError, match=f"replication size n is {n}, .* {extent} long"):
            check(node, graph, bounds, (n,), shapes, lambda shape: (shape, 8))
    else:
        check(node, graph, bounds, (n,), shapes, lambda shape: (shape, 8))


_SERIAL = iter(range(10**9))


def _plus(name: str, offset: int) -> str:
    return f"{name} + {offset}" if offset >= 0 else f"{name} - {-offset}"


def _leaf(source: str, name: str):
    """A leaf from source text (its own file name, so its lines can be read back)."""
    import linecache

    filename = f"<bounds-property-{next(_SERIAL)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"hpvm": hpvm}
    exec(compile(source, filename, "exec"), namespace)
    return hpvm.leaf(ins=("a",), outs=("out",))(namespace[name])
