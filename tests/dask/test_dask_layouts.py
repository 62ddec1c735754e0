"""Declared layouts drive how ``dask`` splits a leaf (backends/dask/declared.py).

Every result is compared with ``interp``'s (or NumPy's); the notes say how the node ran;
the bytes moved show that a chunk gets, and sends back, only the elements it owns.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import hbir
from hpvm.hbir.codegen import LOG_CAPACITY, LOG_VALUES
from markers import needs_backend

pytestmark = needs_backend("dask")

G = 4  # instances along x in the leaves below


def _run(root, args, target):
    arrays = list({id(a): a for a in args if isinstance(a, np.ndarray)}.values())
    for a in arrays:
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(root, args, target=target)
        outputs = hpvm.wait(handle)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)
    return outputs, handle


# -- leaves that keep to their layouts -----------------------------------------------------


@hpvm.leaf(ins=("x", "y"), outs=("y",), layouts={"x": "strided", "y": "strided"})
def strided_scale(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    for k in range(i, y.shape[0], g):
        y[k] = a * x[k] + y[k] + k


@hpvm.internal
def strided_root(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    k = hpvm.create_node_1d(strided_scale, 4)
    for port in range(3):
        hpvm.bind_in(k, port, port)


@hpvm.leaf(ins=("x", "t"), outs=("y",), layouts={"x": "chunked(3)", "y": "chunked(3)", "t": "replicated"})
def chunked_lookup(x: hpvm.i64[:], y: hpvm.i64[:], t: hpvm.i64[:]) -> hpvm.i64:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    n = y.shape[0]
    for start in range(i * 3, n, g * 3):
        for k in range(start, min(start + 3, n)):
            y[k] = t[x[k] % t.shape[0]] * 10 + i
    return i


@hpvm.internal
def chunked_root(x: hpvm.i64[:], y: hpvm.i64[:], t: hpvm.i64[:]):
    k = hpvm.create_node_1d(chunked_lookup, 4)
    for port in range(3):
        hpvm.bind_in(k, port, port)
    hpvm.bind_out(k, 0, 0)


@hpvm.leaf(ins=("m",), outs=("out",), layouts={"m": "block", "out": "block"})
def block_rows(m: hpvm.f32[:, :], out: hpvm.f32[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    rows = (m.shape[0] + hpvm.get_num_node_instances_x(node) - 1) // hpvm.get_num_node_instances_x(node)
    for r in range(i * rows, min((i + 1) * rows, m.shape[0])):
        out[r, j] = m[r, j] * 2 + j


@hpvm.internal
def block_root(m: hpvm.f32[:, :], out: hpvm.f32[:, :]):
    k = hpvm.create_node_2d(block_rows, 3, m.shape[1])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_strided_layout_splits_and_moves_only_owned_elements(dask_runtime):
    x, y = np.arange(23.0), np.ones(23)
    want = y.copy()
    _run(strided_root, (x.copy(), want, 0.5), "interp")
    _, handle = _run(strided_root, (x, y, 0.5), "dask")
    np.testing.assert_array_equal(y, want)
    assert "split by its declared layouts ('x' strided, 'y' strided) into 2 chunk(s)" in handle.notes[0]
    assert "[0, 2), [2, 4)" in handle.notes[0]
    # each element goes out once per array it is in, and only y's come back
    assert handle.transfers.to_device == x.nbytes + y.nbytes
    assert handle.transfers.to_host == y.nbytes


def test_chunked_layout_with_a_replicated_table_and_last_instance_output(dask_runtime):
    x = np.arange(31, dtype=np.int64) * 7
    t = np.arange(5, dtype=np.int64) + 100
    y, want = np.zeros(31, np.int64), np.zeros(31, np.int64)
    (last,), handle = _run(chunked_root, (x, y, t), "dask")
    with pytest.warns(hpvm.HPVMWarning, match="disagree"):  # (the interpreter checks the rule)
        (want_last,), _ = _run(chunked_root, (x.copy(), want, t.copy()), "interp")
    np.testing.assert_array_equal(y, want)
    assert last == want_last == 3
    assert "chunked(3)" in handle.notes[0] and "split by its declared layouts" in handle.notes[0]
    assert handle.transfers.to_host == y.nbytes


def test_block_layout_on_a_2d_grid(dask_runtime):
    m = np.arange(7 * 5, dtype=np.float32).reshape(7, 5)
    out, want = np.zeros_like(m), np.zeros_like(m)
    _run(block_root, (m.copy(), want), "interp")
    _, handle = _run(block_root, (m, out), "dask")
    np.testing.assert_array_equal(out, want)
    assert "into 2 chunk(s) of instances x in [0, 1), [1, 3)" in handle.notes[0], handle.notes


# -- leaves that break their layouts: never silent, they run whole -----------------------------


@hpvm.leaf(ins=("x",), outs=("y",), layouts={"x": "block", "y": "block"})
def writes_next_block(x: hpvm.i64[:], y: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    b = (y.shape[0] + g - 1) // g
    dst = ((i + 1) % g) * b
    for k in range(b):
        if dst + k < y.shape[0] and i * b + k < x.shape[0]:
            y[dst + k] = x[i * b + k] + 1


@hpvm.leaf(ins=("x",), outs=("y",), layouts={"x": "block", "y": "block"})
def reads_neighbour_block(x: hpvm.i64[:], y: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    b = (y.shape[0] + g - 1) // g
    for k in range(i * b, min((i + 1) * b, y.shape[0])):
        y[k] = x[k] + x[(k + b) % x.shape[0]]


@hpvm.leaf(ins=("x",), outs=("y",), layouts={"x": "block", "y": "block"})
def copies_unowned(x: hpvm.i64[:], y: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i == 0:
        y[y.shape[0] - 1] = y[y.shape[0] - 2]  # both owned by the last instance
    y[i] = x[i]


def _root_of(leaf):
    @hpvm.internal
    def root(x: hpvm.i64[:], y: hpvm.i64[:]):
        k = hpvm.create_node_1d(leaf, G)
        hpvm.bind_in(k, 0, 0)
        hpvm.bind_in(k, 1, 1)

    return root


@pytest.mark.parametrize(
    "leaf, fragment",
    [
        (writes_next_block, "wrote element (8,) of 'y' of leaf 'writes_next_block', which they do not own"),
        (reads_neighbour_block, "read elements they do not own (what they wrote to 'y' of leaf"),
        (copies_unowned, "wrote element (15,) of 'y' of leaf 'copies_unowned'"),
    ],
    ids=lambda v: getattr(v, "name", "fragment"),
)
def test_touching_other_chunks_elements_runs_whole_with_the_right_result(dask_runtime, leaf, fragment):
    root = _root_of(leaf)
    x = np.arange(16, dtype=np.int64) * 3
    y, want = np.arange(16, dtype=np.int64), np.arange(16, dtype=np.int64)
    _run(root, (x.copy(), want), "interp")
    _, handle = _run(root, (x, y), "dask")
    np.testing.assert_array_equal(y, want)
    text = "\n".join(handle.notes)
    assert "ran whole on one worker" in text and fragment in text, text
    assert "drop the layouts" in text
    y[:] = np.arange(16)
    _, again = _run(root, (x, y), "dask")  # remembered: straight to one worker
    np.testing.assert_array_equal(y, want)
    assert len(again.notes) == 1 and "ran whole on one worker" in again.notes[0]


@hpvm.leaf(ins=("x",), outs=("y",), layouts={"x": "block", "y": "replicated"})
def writes_replicated(x: hpvm.i64[:], y: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = x[i]


def test_a_written_array_not_partitioned_along_x_keeps_the_node_whole(dask_runtime):
    root = _root_of(writes_replicated)
    x, y = np.arange(8, dtype=np.int64), np.zeros(8, dtype=np.int64)
    _, handle = _run(root, (x, y), "dask")
    np.testing.assert_array_equal(y[:G], x[:G])
    assert "its declared layouts cannot split it: 'y' is written" in handle.notes[0], handle.notes
    assert "declare block, chunked or strided" in handle.notes[0]


# -- HBIR programs carry layouts --------------------------------------------------------------

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "hbir") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "hbir"))
_spec = importlib.util.spec_from_file_location(
    "_hbir_cases_layouts", HERE.parent / "hbir" / "test_hbir_run.py"
)
assert _spec is not None and _spec.loader is not None
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)


def test_hbir_matmul_splits_by_its_layouts(dask_runtime):
    root = hbir.load(_cases.EXAMPLES / "matmul.hbir").to_hpvm()
    rng = np.random.default_rng(1)
    a, b = rng.random((12, 12), dtype=np.float32), rng.random((12, 12), dtype=np.float32)
    c = np.zeros((12, 12), np.float32)
    _, handle = _run(root, (a, b, c), "dask")
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert "split by its declared layouts ('A' block, 'C' block)" in handle.notes[0], handle.notes
    assert handle.transfers.to_host == c.nbytes  # each chunk's rows of C, nothing else


def test_hbir_window_sum_reads_a_halo_and_runs_whole(dask_runtime):
    root = hbir.load(_cases.EXAMPLES / "window_sum.hbir").to_hpvm()
    a = (np.arange(256, dtype=np.int32) * 7) % 17
    s = np.zeros(256, np.int32)
    _, handle = _run(root, (a, s), "dask")
    padded = np.concatenate([[0], a, [0]])
    np.testing.assert_array_equal(s, padded[:-2] + padded[1:-1] + padded[2:])
    assert "read elements they do not own" in handle.notes[0], handle.notes


# -- a replicated internal node splits by its layouts, whole instances at a time ----------------


@hpvm.leaf(ins=("m",), outs=("out",))
def cell(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    node = hpvm.get_node()
    j = hpvm.get_node_instance_id_x(node)
    parent = hpvm.get_parent_node(node)
    i = hpvm.get_node_instance_id_x(parent)
    rows = hpvm.get_num_node_instances_x(parent)
    out[i, j] = m[i, j] * 3.0 + i
    hpvm.barrier()  # spans the cells of one row: a row is never cut
    if j == 0:
        acc = 0.0
        for k in range(out.shape[1]):
            acc += out[i, k]
        out[i, 0] = acc + rows


@hpvm.internal(layouts={"m": "block", "out": "block"})
def row_of_cells(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    k = hpvm.create_node_1d(cell, m.shape[1])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.internal
def rows_root(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    k = hpvm.create_node_1d(row_of_cells, m.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_an_internal_node_splits_by_its_layouts_whole_instances_at_a_time(dask_runtime):
    m = np.arange(9 * 6, dtype=np.float64).reshape(9, 6) / 7
    out, want = np.zeros_like(m), np.zeros_like(m)
    _run(rows_root, (m.copy(), want), "interp")
    _, handle = _run(rows_root, (m, out), "dask")
    np.testing.assert_allclose(out, want, rtol=1e-12)
    assert "node 'row_of_cells' of 'rows_root' split by its declared layouts" in handle.notes[0], handle.notes
    assert "[0, 4), [4, 9)" in handle.notes[0]
    assert handle.transfers.to_host == out.nbytes


def test_hbir_nested_groups_split_by_their_layouts(dask_runtime):
    root = hbir.load(_cases.EXAMPLES / "nested.hbir").to_hpvm()
    r, s = np.zeros((4, 4), np.int32), np.zeros((4, 4), np.int32)
    want_r, want_s = np.zeros((4, 4), np.int32), np.zeros((4, 4), np.int32)
    _run(root, (r, s), "dask")
    _run(root, (want_r, want_s), "interp")
    np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(s, want_s)
    _, handle = _run(root, (r, s), "dask")
    assert "split by its declared layouts ('R' block, 'S' block)" in handle.notes[0], handle.notes


@hpvm.leaf(ins=("m",), outs=("out",))
def cell_writing_next_row(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    node = hpvm.get_node()
    j = hpvm.get_node_instance_id_x(node)
    parent = hpvm.get_parent_node(node)
    i = hpvm.get_node_instance_id_x(parent)
    rows = hpvm.get_num_node_instances_x(parent)
    out[(i + 1) % rows, j] = m[i, j] + 1.0


@hpvm.internal(layouts={"m": "block", "out": "block"})
def row_writing_next(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    k = hpvm.create_node_1d(cell_writing_next_row, m.shape[1])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.internal
def rows_writing_next_root(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    k = hpvm.create_node_1d(row_writing_next, m.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_an_internal_node_breaking_its_layouts_runs_whole(dask_runtime):
    m = np.arange(6 * 4, dtype=np.float64).reshape(6, 4)
    out, want = np.zeros_like(m), np.zeros_like(m)
    _run(rows_writing_next_root, (m.copy(), want), "interp")
    _, handle = _run(rows_writing_next_root, (m, out), "dask")
    np.testing.assert_array_equal(out, want)
    assert "ran whole on one worker" in handle.notes[-1], handle.notes
    assert "wrote element (3, 0) of 'out' of internal node 'row_writing_next'" in handle.notes[-1]


def test_hbir_vadd_group_splits_by_its_row_major_tile_layout(dask_runtime):
    """A vector over a 4×4 group carries ``chunked(8), axes(0, 0)``: x and y deal it to the
    tiles together, so a range of x ids owns whole rows of tiles and their chunks."""
    root = hbir.load(_cases.EXAMPLES / "vadd_group.hbir").to_hpvm()
    rng = np.random.default_rng(2)
    a, b = rng.integers(-100, 100, 1000).astype(np.int32), rng.integers(-100, 100, 1000).astype(np.int32)
    c, flag = np.zeros(1000, np.int32), np.zeros(1, np.int32)
    assert [p.name for p in root.params] == ["A", "B", "C", "g_done_flag", "hbir_log", "hbir_nlog"]
    log = np.zeros((16, LOG_CAPACITY, LOG_VALUES + 1), np.float64)  # the printf log of 16 tiles
    _, handle = _run(root, (a, b, c, flag, log, np.zeros(16, np.int64)), "dask")
    np.testing.assert_array_equal(c, a + b)
    assert flag[0] == 1
    assert any("split by its declared layouts" in note for note in handle.notes), handle.notes
