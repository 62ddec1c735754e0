"""The shared differential program suite: one list of HPVM programs every back end runs.

Each ``Program`` is a root node function, a function making its argument tuple from a
seeded ``numpy.random.Generator``, and a NumPy reference computing the expected root outputs
and array contents. ``check_program(program, target)`` runs a program on a back end and
compares it with the reference (exactly for integers, within ``rtol``/``atol`` for floats);
``run_program`` and ``expected`` are the two halves.

The suite covers every construct of seed 000 / DESIGN.md: replication in 0–3 dimensions;
two- and three-level hierarchies querying parents and grandparents; one-to-one and
all-to-all edges carrying scalars and arrays; input and output binds (by index and by
name, reordered); several root outputs; the last-instance rule for replicated outputs;
the eight atomics on int32/int64 and add/sub/min/max on float32/float64 under contention;
barriers inside uniform loops over a ``malloc``'d buffer; one ``malloc`` buffer per parent
instance; replication sizes from expressions; and nodes with zero instances.

Leaf code stays inside the Numba subset (scalars, arrays, loops, branches) so that compiled
back ends can run the same programs.

Fields a back end must honour:

* ``disagrees`` — the instances of a replicated node legitimately send different values to
  an output bind; ``interp`` warns (``hpvm.HPVMWarning``; pyproject turns it into an error,
  so wrap the run in ``pytest.warns``), other back ends may stay silent.
* ``unordered`` — arrays whose contents depend on the order instances ran in (the old
  values returned by atomics); they are not compared.
* ``tags`` — ``"malloc-escapes"``: a ``malloc`` buffer is read after its parent instance
  finished (through a one-to-one edge out of the parent); a back end whose ``malloc`` is
  GPU shared memory may skip such programs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import hpvm


@dataclass(frozen=True)
class Program:
    name: str
    root: Any
    make_args: Callable[[np.random.Generator], tuple[Any, ...]]
    reference: Callable[..., tuple[Any, ...]]  # reference(*args) -> outputs; updates array args in place
    disagrees: bool = False
    unordered: frozenset[str] = frozenset()
    rtol: float = 1e-6
    atol: float = 0.0
    tags: frozenset[str] = field(default_factory=frozenset)

    def __str__(self) -> str:
        return self.name


def _copy(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _array_params(program: Program, args: tuple[Any, ...]) -> dict[str, np.ndarray]:
    return {p.name: a for p, a in zip(program.root.params, args) if isinstance(a, np.ndarray)}


def run_program(
    program: Program, target: str | None, seed: int = 0
) -> tuple[tuple[Any, ...], dict[str, np.ndarray]]:
    """Init, track, launch on ``target``, wait, request memory; return (outputs, arrays by
    root parameter name). The arrays are untracked again afterwards; the runtime stays up."""
    args = program.make_args(np.random.default_rng(seed))
    arrays = _array_params(program, args)
    hpvm.init()
    for a in arrays.values():
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(program.root, args, target=target)
        outputs = hpvm.wait(handle)
        for a in arrays.values():
            hpvm.request_memory(a)
    finally:
        for a in arrays.values():
            hpvm.untrack_memory(a)
    return outputs, arrays


def expected(program: Program, seed: int = 0) -> tuple[tuple[Any, ...], dict[str, np.ndarray]]:
    """The reference's (outputs, arrays by root parameter name) for the same arguments."""
    args = _copy(program.make_args(np.random.default_rng(seed)))
    outputs = tuple(program.reference(*args))
    return outputs, _array_params(program, args)


def assert_matches(program: Program, got: tuple[Any, Any], want: tuple[Any, Any]) -> None:
    """Compare (outputs, arrays): exactly for integers, with the program's tolerance for floats."""
    (outs, arrays), (ref_outs, ref_arrays) = got, want
    assert len(outs) == len(ref_outs), f"{program}: {len(outs)} outputs, expected {len(ref_outs)}"
    for i, (value, ref) in enumerate(zip(outs, ref_outs)):
        _compare(program, f"output {i}", value, ref)
    for name, ref in ref_arrays.items():
        if name not in program.unordered:
            _compare(program, f"array '{name}'", arrays[name], ref)


def _compare(program: Program, what: str, value: Any, ref: Any) -> None:
    value, ref = np.asarray(value), np.asarray(ref)
    assert value.shape == ref.shape, f"{program}: {what} has shape {value.shape}, expected {ref.shape}"
    if ref.dtype.kind == "f" or value.dtype.kind == "f":
        np.testing.assert_allclose(
            value, ref, rtol=program.rtol, atol=program.atol, err_msg=f"{program}: {what}"
        )
    else:
        np.testing.assert_array_equal(value, ref, err_msg=f"{program}: {what}")


def check_program(program: Program, target: str | None, seed: int = 0) -> None:
    assert_matches(program, run_program(program, target, seed), expected(program, seed))


def check_against_interp(program: Program, target: str) -> None:
    """``program`` on ``target`` gives the reference's results and the interpreter's (the
    oracle), its warnings ignored: the differential test of every back end."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = expected(program)
        oracle = run_program(program, "interp")
        got = run_program(program, target)
    assert_matches(program, got, want)
    assert_matches(program, got, oracle)


# =======================================================================================
# Replication in 0, 1, 2 and 3 dimensions; several scalar root outputs


@hpvm.leaf
def p_arith(a: hpvm.i64, b: hpvm.f64) -> tuple[hpvm.i64, hpvm.f64, hpvm.i64]:
    node = hpvm.get_node()
    d = hpvm.get_num_dims(node)
    return a * 3 + d, b * 0.5 + a, a - 7


@hpvm.internal
def r_scalar_0d(a: hpvm.i64, b: hpvm.f64):
    k = hpvm.create_node(p_arith)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)
    hpvm.bind_out(k, 0, 0)
    hpvm.bind_out(k, 1, 1)
    hpvm.bind_out(k, 2, 2)


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def p_saxpy(x: hpvm.f32[:], y: hpvm.f32[:], a: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = a * x[i] + y[i]


@hpvm.internal
def r_saxpy_1d(x: hpvm.f32[:], y: hpvm.f32[:], a: hpvm.f32):
    k = hpvm.create_node_1d(p_saxpy, x.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def _saxpy(x: np.ndarray, y: np.ndarray, a: np.float32) -> tuple[()]:
    y[:] = a * x + y
    return ()


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def p_matadd(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    nx = hpvm.get_num_node_instances_x(node)
    ny = hpvm.get_num_node_instances_y(node)
    c[i, j] = a[i, j] + 2 * b[i, j] + nx + 10 * ny + 1000 * hpvm.get_num_dims(node)


@hpvm.internal
def r_matadd_2d(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    k = hpvm.create_node_2d(p_matadd, a.shape[0], a.shape[1])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def _matadd(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[()]:
    c[:] = a + 2 * b + a.shape[0] + 10 * a.shape[1] + 2000
    return ()


@hpvm.leaf(outs=("out",))
def p_grid3(out: hpvm.i32[:, :, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    k = hpvm.get_node_instance_id_z(node)
    ny = hpvm.get_num_node_instances_y(node)
    nz = hpvm.get_num_node_instances_z(node)
    out[i, j, k] = ((i * ny + j) * nz + k) * 8 + hpvm.get_num_dims(node)


@hpvm.internal
def r_grid_3d(out: hpvm.i32[:, :, :]):
    k = hpvm.create_node_3d(p_grid3, out.shape[0], out.shape[1], out.shape[2])
    hpvm.bind_in(k, 0, 0)


def _grid3(out: np.ndarray) -> tuple[()]:
    out[:] = (np.arange(out.size).reshape(out.shape) * 8 + 3).astype(np.int32)
    return ()


# =======================================================================================
# Hierarchies: two and three levels, queries of the parent and the grandparent


@hpvm.leaf(ins=("x",), outs=("out",))
def p_block_elem(x: hpvm.f64[:], out: hpvm.f64[:]):
    node = hpvm.get_node()
    parent = hpvm.get_parent_node(node)
    t = hpvm.get_node_instance_id_x(node)
    b = hpvm.get_node_instance_id_x(parent)
    bs = hpvm.get_num_node_instances_x(node)
    nb = hpvm.get_num_node_instances_x(parent)
    g = b * bs + t
    out[g] = x[g] * 2.0 + nb + 100.0 * hpvm.get_num_dims(parent) + 1000.0 * hpvm.get_num_dims(node)


@hpvm.internal
def p_block(x: hpvm.f64[:], out: hpvm.f64[:]):
    k = hpvm.create_node_1d(p_block_elem, 4)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.internal
def r_two_level(x: hpvm.f64[:], out: hpvm.f64[:], n: hpvm.i64):
    blocks = hpvm.create_node_1d(p_block, n // 4)  # n = 30: 7 blocks, the last 2 elements untouched
    hpvm.bind_in(blocks, "x", "x")
    hpvm.bind_in(blocks, "out", "out")


def _two_level(x: np.ndarray, out: np.ndarray, n: int) -> tuple[()]:
    m = (n // 4) * 4
    out[:m] = x[:m] * 2.0 + n // 4 + 100.0 + 1000.0
    return ()


@hpvm.leaf(outs=("out",))
def p_cell(out: hpvm.i64[:, :, :, :, :]):
    n = hpvm.get_node()
    p = hpvm.get_parent_node(n)
    g = hpvm.get_parent_node(p)
    r = hpvm.get_parent_node(g)
    x = hpvm.get_node_instance_id_x(n)
    y = hpvm.get_node_instance_id_y(n)
    b = hpvm.get_node_instance_id_x(p)
    gi = hpvm.get_node_instance_id_x(g)
    gj = hpvm.get_node_instance_id_y(g)
    flat = (
        ((gi * hpvm.get_num_node_instances_y(g) + gj) * hpvm.get_num_node_instances_x(p) + b)
        * hpvm.get_num_node_instances_x(n)
        + x
    ) * hpvm.get_num_node_instances_y(n) + y
    dims = hpvm.get_num_dims(n) * 1000 + hpvm.get_num_dims(p) * 100 + hpvm.get_num_dims(g) * 10
    out[gi, gj, b, x, y] = flat * 10000 + dims + hpvm.get_num_dims(r)


@hpvm.internal
def p_cell_block(out: hpvm.i64[:, :, :, :, :]):
    k = hpvm.create_node_2d(p_cell, out.shape[3], out.shape[4])
    hpvm.bind_in(k, 0, 0)


@hpvm.internal
def p_cell_grid(out: hpvm.i64[:, :, :, :, :]):
    k = hpvm.create_node_1d(p_cell_block, out.shape[2])
    hpvm.bind_in(k, 0, 0)


@hpvm.internal
def r_three_level(out: hpvm.i64[:, :, :, :, :]):
    k = hpvm.create_node_2d(p_cell_grid, out.shape[0], out.shape[1])
    hpvm.bind_in(k, 0, 0)


def _three_level(out: np.ndarray) -> tuple[()]:
    out[:] = np.arange(out.size).reshape(out.shape) * 10000 + 2000 + 100 + 20 + 0
    return ()


# =======================================================================================
# Edges: one-to-one and all-to-all, carrying scalars and arrays


@hpvm.leaf
def p_o2o_src(k: hpvm.f64) -> tuple[hpvm.f64, hpvm.i64]:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    return (i * hpvm.get_num_node_instances_y(node) + j) * k, i * j


@hpvm.leaf(outs=("out",))
def p_o2o_dst(v: hpvm.f64, w: hpvm.i64, out: hpvm.f64[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    out[i, j] = v + 0.5 * w + i - j


@hpvm.internal
def r_one_to_one_scalars(out: hpvm.f64[:, :], k: hpvm.f64):
    src = hpvm.create_node_2d(p_o2o_src, out.shape[0], out.shape[1])
    dst = hpvm.create_node_2d(p_o2o_dst, out.shape[0], out.shape[1])
    hpvm.bind_in(src, "k", "k")
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 0, "v")
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 1, "w")
    hpvm.bind_in(dst, "out", "out")


def _one_to_one_scalars(out: np.ndarray, k: float) -> tuple[()]:
    i, j = np.indices(out.shape)
    out[:] = (i * out.shape[1] + j) * k + 0.5 * i * j + i - j
    return ()


@hpvm.leaf(ins=("m",))
def p_row_of(m: hpvm.f64[:, :]) -> tuple[hpvm.f64[:], hpvm.i64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    return m[i], i


@hpvm.leaf(ins=("row",), outs=("out",))
def p_row_sum(row: hpvm.f64[:], i: hpvm.i64, out: hpvm.f64[:]):
    s = 0.0
    for k in range(row.shape[0]):
        s += row[k]
    out[i] = s * (i + 1)


@hpvm.internal
def r_one_to_one_arrays(m: hpvm.f64[:, :], out: hpvm.f64[:]):
    src = hpvm.create_node_1d(p_row_of, m.shape[0])
    dst = hpvm.create_node_1d(p_row_sum, m.shape[0])
    hpvm.bind_in(src, 0, 0)
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(dst, 1, 2)


def _one_to_one_arrays(m: np.ndarray, out: np.ndarray) -> tuple[()]:
    out[:] = m.sum(axis=1) * np.arange(1, m.shape[0] + 1)
    return ()


@hpvm.leaf(ins=("x",), outs=("tmp",))
def p_a2a_fill(x: hpvm.i64[:], tmp: hpvm.i64[:]) -> hpvm.i64:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    tmp[i] = x[i] * 3
    return hpvm.get_num_node_instances_x(node)  # the same in every instance


@hpvm.leaf(ins=("tmp",), outs=("out",))
def p_a2a_use(count: hpvm.i64, tmp: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = tmp[(i + 1) % count] + count  # a neighbour's value: needs all of p_a2a_fill done


@hpvm.internal
def r_all_to_all_scalar(x: hpvm.i64[:], tmp: hpvm.i64[:], out: hpvm.i64[:]):
    fill = hpvm.create_node_1d(p_a2a_fill, x.shape[0])
    use = hpvm.create_node_1d(p_a2a_use, x.shape[0])
    hpvm.bind_in(fill, 0, 0)
    hpvm.bind_in(fill, 1, 1)
    hpvm.edge(fill, use, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(use, 1, 1)
    hpvm.bind_in(use, 2, 2)


def _all_to_all_scalar(x: np.ndarray, tmp: np.ndarray, out: np.ndarray) -> tuple[()]:
    tmp[:] = x * 3
    out[:] = np.roll(tmp, -1) + x.shape[0]
    return ()


@hpvm.leaf(outs=("buf",))
def p_a2a_fill_buf(buf: hpvm.f64[:], s: hpvm.f64) -> hpvm.f64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[i] = i * s
    return buf  # every instance sends the same array (the same memory): they agree


@hpvm.leaf(ins=("arr",), outs=("out",))
def p_a2a_use_buf(arr: hpvm.f64[:], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = arr[out.shape[0] - 1 - i] + arr[0]


@hpvm.internal
def r_all_to_all_array(buf: hpvm.f64[:], out: hpvm.f64[:], s: hpvm.f64):
    fill = hpvm.create_node_1d(p_a2a_fill_buf, buf.shape[0])
    use = hpvm.create_node_1d(p_a2a_use_buf, out.shape[0])
    hpvm.bind_in(fill, 0, 0)
    hpvm.bind_in(fill, 2, 1)
    hpvm.edge(fill, use, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(use, 1, 1)


def _all_to_all_array(buf: np.ndarray, out: np.ndarray, s: float) -> tuple[()]:
    buf[:] = np.arange(buf.shape[0]) * s
    out[:] = buf[::-1] + buf[0]
    return ()


# =======================================================================================
# Binds through two levels (by name and index, outputs reordered); the last-instance rule


@hpvm.leaf(ins=("a",))
def p_stats(a: hpvm.f64[:], scale: hpvm.f64) -> tuple[hpvm.f64, hpvm.f64]:
    s = 0.0
    m = a[0]
    for k in range(a.shape[0]):
        s += a[k]
        if a[k] > m:
            m = a[k]
    return s * scale, m


@hpvm.internal(ins=("a",))
def p_stats_mid(a: hpvm.f64[:], scale: hpvm.f64):
    k = hpvm.create_node(p_stats)
    hpvm.bind_in(k, a, "a")  # a traced input symbol names the parent's port
    hpvm.bind_in(k, "scale", 1)
    hpvm.bind_out(k, 0, 1)  # swapped: the middle node's outputs are (max, scaled sum)
    hpvm.bind_out(k, 1, 0)


@hpvm.internal(ins=("a",))
def r_binds(scale: hpvm.f64, a: hpvm.f64[:]):
    mid = hpvm.create_node(p_stats_mid)
    hpvm.bind_in(mid, 1, 0)
    hpvm.bind_in(mid, 0, 1)
    hpvm.bind_out(mid, 1, 0)  # swapped back: (scaled sum, max)
    hpvm.bind_out(mid, 0, 1)


def _binds(scale: float, a: np.ndarray) -> tuple[float, float]:
    return float(a.sum() * scale), float(a.max())


@hpvm.leaf
def p_same_everywhere(n: hpvm.i64, k: hpvm.i64) -> tuple[hpvm.i64, hpvm.i64]:
    return 2 * k, hpvm.get_num_node_instances_x(hpvm.get_node()) + 0 * n


@hpvm.internal
def r_last_instance_same(n: hpvm.i64, k: hpvm.i64):
    rep = hpvm.create_node_1d(p_same_everywhere, n)
    hpvm.bind_in(rep, 0, 0)
    hpvm.bind_in(rep, 1, 1)
    hpvm.bind_out(rep, 0, 0)
    hpvm.bind_out(rep, 1, 1)


@hpvm.leaf
def p_my_id() -> hpvm.i64:
    node = hpvm.get_node()
    return hpvm.get_node_instance_id_x(node) * 100 + hpvm.get_node_instance_id_y(node)


@hpvm.internal
def r_last_instance_differs(nx: hpvm.i64, ny: hpvm.i64):
    # Instances return different values: the output is the last dynamic instance's, the
    # last iteration of the row-major loop nest, (nx - 1, ny - 1). interp warns about it.
    rep = hpvm.create_node_2d(p_my_id, nx, ny)
    hpvm.bind_out(rep, 0, 0)


# =======================================================================================
# Atomics under contention: every instance hits the same elements


def _build_atomics(vals: Any, hit_leaf: Any, check_leaf: Any) -> None:
    """The atomics graph, for either integer width (the leaves differ only in port types)."""
    hit = hpvm.create_node_1d(hit_leaf, vals.shape[0])
    for port in range(4):
        hpvm.bind_in(hit, port, port)
    chk = hpvm.create_node(check_leaf)
    hpvm.edge(hit, chk, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(chk, 0, 1)
    hpvm.bind_in(chk, 3, 2)
    hpvm.bind_in(chk, 4, 3)


@hpvm.leaf(ins=("vals", "masks", "acc", "olds"), outs=("acc", "olds"))
def p_atomics_int(acc: hpvm.i64[:], vals: hpvm.i64[:], masks: hpvm.i64[:], olds: hpvm.i64[:]) -> hpvm.i64:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    n = hpvm.get_num_node_instances_x(node)
    v = vals[i]
    hpvm.atomic_add(acc, 0, v)
    hpvm.atomic_sub(acc, 1, v)
    hpvm.atomic_min(acc, 2, v)
    hpvm.atomic_max(acc, 3, v)
    olds[i] = hpvm.atomic_xchg(acc, 4, v)
    hpvm.atomic_and(acc, 5, masks[i])
    hpvm.atomic_or(acc, 6, ~masks[i])
    hpvm.atomic_xor(acc, 7, v)
    olds[n + i] = hpvm.atomic_add(acc, 8, 1)
    return n


@hpvm.leaf(ins=("acc", "olds"), outs=("acc", "check"))
def p_atomics_int_check(n: hpvm.i64, acc: hpvm.i64[:], olds: hpvm.i64[:], check: hpvm.i64[:]):
    # Order-independent facts about the old values the atomics returned: the exchanges form
    # a chain from the initial value to the final one, and the counter's olds are a
    # permutation of init .. init + n - 1.
    s = 0
    t = 0
    for k in range(n):
        s += olds[k]
        t += olds[n + k]
    check[0] = s + acc[4]
    check[1] = t
    acc[4] = -1  # which instance exchanged last depends on the order; forget it


@hpvm.internal
def r_atomics_i64(
    acc: hpvm.i64[:], vals: hpvm.i64[:], masks: hpvm.i64[:], olds: hpvm.i64[:], check: hpvm.i64[:]
):
    _build_atomics(vals, p_atomics_int, p_atomics_int_check)


@hpvm.leaf(ins=("vals", "masks", "acc", "olds"), outs=("acc", "olds"))
def p_atomics_i32(acc: hpvm.i32[:], vals: hpvm.i32[:], masks: hpvm.i32[:], olds: hpvm.i32[:]) -> hpvm.i64:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    n = hpvm.get_num_node_instances_x(node)
    v = vals[i]
    hpvm.atomic_add(acc, 0, v)
    hpvm.atomic_sub(acc, 1, v)
    hpvm.atomic_min(acc, 2, v)
    hpvm.atomic_max(acc, 3, v)
    olds[i] = hpvm.atomic_xchg(acc, 4, v)
    hpvm.atomic_and(acc, 5, masks[i])
    hpvm.atomic_or(acc, 6, ~masks[i])
    hpvm.atomic_xor(acc, 7, v)
    olds[n + i] = hpvm.atomic_add(acc, 8, 1)
    return n


@hpvm.leaf(ins=("acc", "olds"), outs=("acc", "check"))
def p_atomics_i32_check(n: hpvm.i64, acc: hpvm.i32[:], olds: hpvm.i32[:], check: hpvm.i32[:]):
    s = 0
    t = 0
    for k in range(n):
        s += olds[k]
        t += olds[n + k]
    check[0] = s + acc[4]
    check[1] = t
    acc[4] = -1


@hpvm.internal
def r_atomics_i32(
    acc: hpvm.i32[:], vals: hpvm.i32[:], masks: hpvm.i32[:], olds: hpvm.i32[:], check: hpvm.i32[:]
):
    _build_atomics(vals, p_atomics_i32, p_atomics_i32_check)


def _atomic_int_args(dtype: Any, high: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        n = 64
        acc = np.array([5, -5, high, -high, 3, -1, 0, 0, 10], dtype=dtype)
        vals = rng.integers(-high, high, n).astype(dtype)
        bits = rng.integers(0, 8 * np.dtype(dtype).itemsize - 2, n)
        masks = (~(np.int64(1) << bits)).astype(dtype)  # and clears one bit each, or sets it
        return acc, vals, masks, np.zeros(2 * n, dtype), np.zeros(2, dtype)

    return make


def _atomics_int(
    acc: np.ndarray, vals: np.ndarray, masks: np.ndarray, olds: np.ndarray, check: np.ndarray
) -> tuple[()]:
    n, t = vals.shape[0], acc.dtype.type
    init4, init8 = acc[4], acc[8]
    acc[0] += vals.sum(dtype=acc.dtype)
    acc[1] -= vals.sum(dtype=acc.dtype)
    acc[2] = min(acc[2], vals.min())
    acc[3] = max(acc[3], vals.max())
    acc[4] = -1
    acc[5] &= np.bitwise_and.reduce(masks)
    acc[6] |= np.bitwise_or.reduce(~masks)
    acc[7] ^= np.bitwise_xor.reduce(vals)
    acc[8] += n
    check[0] = t(init4 + vals.sum(dtype=acc.dtype))
    check[1] = t(n * init8 + n * (n - 1) // 2)
    return ()


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def p_atomics_f32(acc: hpvm.f32[:], vals: hpvm.f32[:]):
    v = vals[hpvm.get_node_instance_id_x(hpvm.get_node())]
    hpvm.atomic_add(acc, 0, v)
    hpvm.atomic_sub(acc, 1, v)
    hpvm.atomic_min(acc, 2, v)
    hpvm.atomic_max(acc, 3, v)


@hpvm.internal
def r_atomics_f32(acc: hpvm.f32[:], vals: hpvm.f32[:]):
    hit = hpvm.create_node_1d(p_atomics_f32, vals.shape[0])
    hpvm.bind_in(hit, 0, 0)
    hpvm.bind_in(hit, 1, 1)


@hpvm.leaf(ins=("acc", "vals"), outs=("acc",))
def p_atomics_f64(acc: hpvm.f64[:], vals: hpvm.f64[:]):
    v = vals[hpvm.get_node_instance_id_x(hpvm.get_node())]
    hpvm.atomic_add(acc, 0, v)
    hpvm.atomic_sub(acc, 1, v)
    hpvm.atomic_min(acc, 2, v)
    hpvm.atomic_max(acc, 3, v)


@hpvm.internal
def r_atomics_f64(acc: hpvm.f64[:], vals: hpvm.f64[:]):
    hit = hpvm.create_node_1d(p_atomics_f64, vals.shape[0])
    hpvm.bind_in(hit, 0, 0)
    hpvm.bind_in(hit, 1, 1)


def _atomic_float_args(dtype: Any) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        acc = np.array([1.5, -2.5, 0.25, -0.25], dtype=dtype)
        return acc, rng.uniform(-10, 10, 96).astype(dtype)

    return make


def _atomics_float(acc: np.ndarray, vals: np.ndarray) -> tuple[()]:
    total = vals.astype(np.float64).sum()
    acc[0] = acc[0] + total
    acc[1] = acc[1] - total
    acc[2] = min(acc[2], vals.min())
    acc[3] = max(acc[3], vals.max())
    return ()


# =======================================================================================
# Barriers and malloc: one buffer per parent instance (the allocation-node pattern)


@hpvm.leaf
def p_alloc(bs: hpvm.i64) -> hpvm.i64[:]:
    buf = hpvm.malloc((bs + 1) * 8).view(np.int64)
    return buf


@hpvm.leaf(ins=("buf", "x"), outs=("buf", "out", "counts"))
def p_rotate(buf: hpvm.i64[:], x: hpvm.i64[:], out: hpvm.i64[:], counts: hpvm.i64[:], bs: hpvm.i64):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    base = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node)) * bs
    if lid == 0:
        buf[bs] = 0
    buf[lid] = x[base + lid]
    hpvm.barrier()
    hpvm.atomic_add(buf, bs, 1)
    for _ in range(3):  # a uniform loop: every instance reaches the same barriers
        hpvm.barrier()
        v = buf[(lid + 1) % bs]
        hpvm.barrier()
        buf[lid] = v
    hpvm.barrier()
    out[base + lid] = buf[lid]
    counts[base + lid] = buf[bs]


@hpvm.internal
def p_rotate_block(x: hpvm.i64[:], out: hpvm.i64[:], counts: hpvm.i64[:], bs: hpvm.i64):
    alloc = hpvm.create_node(p_alloc)
    work = hpvm.create_node_1d(p_rotate, bs)
    hpvm.bind_in(alloc, "bs", "bs")
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, "buf")
    hpvm.bind_in(work, "x", "x")
    hpvm.bind_in(work, "out", "out")
    hpvm.bind_in(work, "counts", "counts")
    hpvm.bind_in(work, "bs", "bs")


@hpvm.internal
def r_barrier_rotate(x: hpvm.i64[:], out: hpvm.i64[:], counts: hpvm.i64[:], nb: hpvm.i64, bs: hpvm.i64):
    blocks = hpvm.create_node_1d(p_rotate_block, nb)
    for port in (0, 1, 2):
        hpvm.bind_in(blocks, port, port)
    hpvm.bind_in(blocks, 4, 3)


def _barrier_rotate(x: np.ndarray, out: np.ndarray, counts: np.ndarray, nb: int, bs: int) -> tuple[()]:
    out[:] = np.roll(x.reshape(nb, bs), -3, axis=1).reshape(-1)
    counts[:] = bs
    return ()


@hpvm.leaf
def p_alloc2(bs: hpvm.i64) -> tuple[hpvm.i64[:], hpvm.i64[:]]:
    buf = hpvm.malloc((bs + 1) * 8).view(np.int64)
    for k in range(bs + 1):
        buf[k] = 0
    return buf, buf


@hpvm.leaf(ins=("buf",), outs=("buf",))
def p_stamp(buf: hpvm.i64[:]):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    blk = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
    hpvm.atomic_add(buf, 0, 1)
    buf[1 + lid] = blk * 100 + lid


@hpvm.internal
def p_stamp_block(bs: hpvm.i64):
    alloc = hpvm.create_node(p_alloc2)
    work = hpvm.create_node_1d(p_stamp, bs)
    hpvm.bind_in(alloc, 0, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_out(alloc, 1, 0)  # the block's buffer leaves the block


@hpvm.leaf(ins=("buf",), outs=("out",))
def p_read_buf(buf: hpvm.i64[:], out: hpvm.i64[:]):
    blk = hpvm.get_node_instance_id_x(hpvm.get_node())
    w = buf.shape[0]
    for k in range(w):
        out[blk * w + k] = buf[k]


@hpvm.internal
def r_malloc_per_parent(out: hpvm.i64[:], nb: hpvm.i64, bs: hpvm.i64):
    # Block b's buffer reaches reader b over a one-to-one edge: a buffer shared by the
    # blocks would show the last block's stamps (and counter) everywhere.
    blocks = hpvm.create_node_1d(p_stamp_block, nb)
    reader = hpvm.create_node_1d(p_read_buf, nb)
    hpvm.bind_in(blocks, 2, 0)
    hpvm.edge(blocks, reader, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(reader, 0, 1)


def _malloc_per_parent(out: np.ndarray, nb: int, bs: int) -> tuple[()]:
    rows = out.reshape(nb, bs + 1)
    rows[:, 0] = bs
    rows[:, 1:] = np.arange(nb)[:, None] * 100 + np.arange(bs)[None, :]
    return ()


# =======================================================================================
# Replication sizes from expressions; nodes with zero instances


@hpvm.leaf(ins=("a",), outs=("out",))
def p_first_part(a: hpvm.f32[:], out: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = a[i] + 1.0


@hpvm.leaf(outs=("out",))
def p_second_part(out: hpvm.f32[:], offset: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[offset + i] = 2.0 * i


@hpvm.leaf(outs=("out",))
def p_last_cell(out: hpvm.f32[:]):
    node = hpvm.get_node()
    out[out.shape[0] - 1] = 7.0 + hpvm.get_num_node_instances_x(node) + hpvm.get_num_node_instances_y(node)


@hpvm.internal
def r_size_expressions(a: hpvm.f32[:], out: hpvm.f32[:], n: hpvm.i64):
    first = hpvm.create_node_1d(p_first_part, hpvm.size_min(n, a.shape[0]))
    second = hpvm.create_node_1d(p_second_part, n // 4)
    last = hpvm.create_node_2d(p_last_cell, hpvm.size_max(n // 100, 1), a.shape[0] - a.shape[0] + 1)
    hpvm.bind_in(first, 0, 0)
    hpvm.bind_in(first, 1, 1)
    hpvm.bind_in(second, 1, 0)
    hpvm.bind_in(second, 2, 1)  # n is also the offset: out = a's part, then n // 4, then 1
    hpvm.bind_in(last, 1, 0)


def _size_args(rng: np.random.Generator) -> tuple[Any, ...]:
    n = 13  # min(13, 16) = 13 instances, then 13 // 4 = 3, then max(0, 1) x 1 = 1
    a = rng.standard_normal(16).astype(np.float32)
    return a, np.zeros(n + n // 4 + 1, np.float32), n


def _size_expressions(a: np.ndarray, out: np.ndarray, n: int) -> tuple[()]:
    m = min(n, a.shape[0])
    out[:m] = a[:m] + 1.0
    out[n : n + n // 4] = 2.0 * np.arange(n // 4)
    out[-1] = 9.0
    return ()


@hpvm.leaf(outs=("out",))
def p_never(out: hpvm.i64[:]) -> hpvm.i64:
    out[0] = 999
    return 1


@hpvm.leaf(outs=("out",))
def p_never_either(v: hpvm.i64, out: hpvm.i64[:]):
    out[1] = 999 + v


@hpvm.leaf(ins=("a",), outs=("out",))
def p_plus_one(a: hpvm.i64[:], out: hpvm.i64[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = a[i] + 1
    return hpvm.get_num_node_instances_x(hpvm.get_node())


@hpvm.internal
def p_never_inside(out: hpvm.i64[:]):
    k = hpvm.create_node_1d(p_never, 4)
    hpvm.bind_in(k, 0, 0)


@hpvm.internal
def r_zero_instances(a: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):
    z1 = hpvm.create_node_1d(p_never, n - n)
    z2 = hpvm.create_node_2d(p_never, n, 0)
    z3 = hpvm.create_node_1d(p_never_either, 0)
    z4 = hpvm.create_node_1d(p_never_inside, n // 1000)
    work = hpvm.create_node_1d(p_plus_one, n)
    hpvm.bind_in(z1, 1, 0)
    hpvm.bind_in(z2, 1, 0)
    hpvm.edge(z1, z3, hpvm.ONE_TO_ONE, 0, 0)  # between two empty grids
    hpvm.bind_in(z3, 1, 1)
    hpvm.bind_in(z4, 1, 0)
    hpvm.bind_in(work, 0, 0)
    hpvm.bind_in(work, 1, 1)
    hpvm.bind_out(work, 0, 0)


def _zero_instances(a: np.ndarray, out: np.ndarray, n: int) -> tuple[int]:
    out[:n] = a[:n] + 1
    return (n,)


# =======================================================================================


def _ints(rng: np.random.Generator, shape: Any, dtype: Any = np.int64) -> np.ndarray:
    return rng.integers(-1000, 1000, shape).astype(dtype)


PROGRAMS: list[Program] = [
    Program(
        "scalar_0d_outputs",
        r_scalar_0d,
        lambda rng: (int(rng.integers(-100, 100)), float(rng.uniform(-5, 5))),
        lambda a, b: (a * 3, b * 0.5 + a, a - 7),
    ),
    Program(
        "saxpy_1d",
        r_saxpy_1d,
        lambda rng: (
            rng.standard_normal(37).astype(np.float32),
            rng.standard_normal(37).astype(np.float32),
            np.float32(1.75),
        ),
        _saxpy,
        rtol=1e-6,
        atol=1e-6,
    ),
    Program(
        "matadd_2d",
        r_matadd_2d,
        lambda rng: (_ints(rng, (5, 7)), _ints(rng, (5, 7)), np.zeros((5, 7), np.int64)),
        _matadd,
    ),
    Program("grid_3d", r_grid_3d, lambda rng: (np.zeros((3, 4, 5), np.int32),), _grid3),
    Program(
        "two_level_parent_queries",
        r_two_level,
        lambda rng: (rng.standard_normal(30), np.zeros(30), 30),
        _two_level,
        rtol=1e-12,
    ),
    Program(
        "three_level_grandparent_queries",
        r_three_level,
        lambda rng: (np.zeros((2, 3, 2, 3, 2), np.int64),),
        _three_level,
    ),
    Program(
        "one_to_one_scalars_2d",
        r_one_to_one_scalars,
        lambda rng: (np.zeros((4, 6)), float(rng.uniform(0.5, 2.0))),
        _one_to_one_scalars,
        rtol=1e-12,
    ),
    Program(
        "one_to_one_arrays",
        r_one_to_one_arrays,
        lambda rng: (rng.standard_normal((6, 9)), np.zeros(6)),
        _one_to_one_arrays,
        rtol=1e-10,
        atol=1e-12,
    ),
    Program(
        "all_to_all_scalar",
        r_all_to_all_scalar,
        lambda rng: (_ints(rng, 11), np.zeros(11, np.int64), np.zeros(11, np.int64)),
        _all_to_all_scalar,
    ),
    Program(
        "all_to_all_array",
        r_all_to_all_array,
        lambda rng: (np.zeros(10), np.zeros(10), float(rng.uniform(1, 2))),
        _all_to_all_array,
        rtol=1e-12,
    ),
    Program(
        "binds_two_levels",
        r_binds,
        lambda rng: (float(rng.uniform(0.5, 2)), rng.standard_normal(25)),
        _binds,
        rtol=1e-10,
        atol=1e-12,
    ),
    Program(
        "last_instance_same",
        r_last_instance_same,
        lambda rng: (9, int(rng.integers(-50, 50))),
        lambda n, k: (2 * k, n),
    ),
    Program(
        "last_instance_differs",
        r_last_instance_differs,
        lambda rng: (4, 3),
        lambda nx, ny: ((nx - 1) * 100 + ny - 1,),
        disagrees=True,
    ),
    Program(
        "atomics_int32",
        r_atomics_i32,
        _atomic_int_args(np.int32, 1000),
        _atomics_int,
        unordered=frozenset({"olds"}),
    ),
    Program(
        "atomics_int64",
        r_atomics_i64,
        _atomic_int_args(np.int64, 2**40),
        _atomics_int,
        unordered=frozenset({"olds"}),
    ),
    Program(
        "atomics_float32", r_atomics_f32, _atomic_float_args(np.float32), _atomics_float, rtol=1e-5, atol=1e-4
    ),
    Program(
        "atomics_float64",
        r_atomics_f64,
        _atomic_float_args(np.float64),
        _atomics_float,
        rtol=1e-12,
        atol=1e-10,
    ),
    Program(
        "barrier_rotate_malloc",
        r_barrier_rotate,
        lambda rng: (_ints(rng, 24), np.zeros(24, np.int64), np.zeros(24, np.int64), 3, 8),
        _barrier_rotate,
    ),
    Program(
        "malloc_per_parent_instance",
        r_malloc_per_parent,
        lambda rng: (np.full(4 * 6, -7, np.int64), 4, 5),
        _malloc_per_parent,
        tags=frozenset({"malloc-escapes"}),
    ),
    Program("size_expressions", r_size_expressions, _size_args, _size_expressions, rtol=1e-6),
    Program(
        "zero_instances",
        r_zero_instances,
        lambda rng: (_ints(rng, 6), np.full(6, -1, np.int64), 6),
        _zero_instances,
    ),
]

# =======================================================================================
# Narrow types: one arithmetic on every back end (Numba's typing, docs/semantics.md §7).
# Each result differs under NumPy's scalar rules (weak Python scalars, no widening of
# integer arithmetic), so a back end computing that way fails; integers compare exactly.


@hpvm.leaf(ins=("y",))
def p_f32_sums(y: hpvm.f32[:], n: hpvm.i64) -> tuple[hpvm.f64, hpvm.f64]:
    s = 0.0  # float64: each float32 element is added in float64
    t = 0.0
    for i in range(n):
        s += y[i]
        t += i * y[i]  # a range variable (int64) times float32 is float64
    return s, t


@hpvm.internal(ins=("y",))
def r_f32_sums(y: hpvm.f32[:], n: hpvm.i64):
    k = hpvm.create_node(p_f32_sums)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)
    hpvm.bind_out(k, 0, 0)
    hpvm.bind_out(k, 1, 1)


def _f32_sums_args(rng: np.random.Generator) -> tuple[Any, ...]:
    y = rng.integers(0, 2**20, 64).astype(np.float32)
    y[0] = 2**24  # float32 sums would round every later element away
    return y, 64


def _f32_sums(y: np.ndarray, n: int) -> tuple[float, float]:
    exact = y.astype(np.float64)  # integers below 2**53: float64 sums are exact
    return float(exact.sum()), float((np.arange(n) * exact).sum())


@hpvm.leaf(ins=("a", "b"), outs=("wide", "wrapped"))
def p_i32_products(a: hpvm.i32[:], b: hpvm.i32[:], wide: hpvm.i64[:], wrapped: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    p = a[i] * b[i]  # int64: Numba widens int32 arithmetic
    wide[i] = p + 1
    wrapped[i] = p  # stored into int32: the low 32 bits


@hpvm.internal(ins=("a", "b"), outs=("wide", "wrapped"))
def r_i32_products(a: hpvm.i32[:], b: hpvm.i32[:], wide: hpvm.i64[:], wrapped: hpvm.i32[:]):
    k = hpvm.create_node_1d(p_i32_products, a.shape[0])
    for port in range(4):
        hpvm.bind_in(k, port, port)


def _i32_products_args(rng: np.random.Generator) -> tuple[Any, ...]:
    a = rng.integers(-(2**31), 2**31, 40).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, 40).astype(np.int32)
    a[0], b[0] = 100_000, 100_000
    return a, b, np.zeros(40, np.int64), np.zeros(40, np.int32)


def _i32_products(a: np.ndarray, b: np.ndarray, wide: np.ndarray, wrapped: np.ndarray) -> tuple[()]:
    product = a.astype(np.int64) * b
    wide[:] = product + 1
    wrapped[:] = product.astype(np.int32)
    return ()


@hpvm.leaf(ins=("a", "b"), outs=("total", "diff", "mean"))
def p_u8_arith(a: hpvm.u8[:], b: hpvm.u8[:], total: hpvm.u16[:], diff: hpvm.i16[:], mean: hpvm.u8[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    total[i] = a[i] + b[i]  # uint8 + uint8 is uint64: up to 510
    diff[i] = a[i] - b[i]  # wraps in 64 bits; the low 16 are the signed difference
    mean[i] = (a[i] + b[i]) // 2  # no overflow before the division


@hpvm.internal(ins=("a", "b"), outs=("total", "diff", "mean"))
def r_u8_arith(a: hpvm.u8[:], b: hpvm.u8[:], total: hpvm.u16[:], diff: hpvm.i16[:], mean: hpvm.u8[:]):
    k = hpvm.create_node_1d(p_u8_arith, a.shape[0])
    for port in range(5):
        hpvm.bind_in(k, port, port)


def _u8_args(rng: np.random.Generator) -> tuple[Any, ...]:
    a, b = rng.integers(0, 256, (2, 50)).astype(np.uint8)
    a[0], b[0] = 255, 255
    return a, b, np.zeros(50, np.uint16), np.zeros(50, np.int16), np.zeros(50, np.uint8)


def _u8_arith(a, b, total, diff, mean) -> tuple[()]:  # type: ignore[no-untyped-def]
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    total[:] = wide_a + wide_b
    diff[:] = (wide_a - wide_b).astype(np.int16)
    mean[:] = (wide_a + wide_b) // 2
    return ()


@hpvm.leaf(ins=("a", "b", "x", "y"), outs=("q", "r", "t", "fq", "fr", "ft"))
def p_divisions(
    a: hpvm.i32[:],
    b: hpvm.i32[:],
    x: hpvm.f64[:],
    y: hpvm.f64[:],
    q: hpvm.i64[:],
    r: hpvm.i64[:],
    t: hpvm.f64[:],
    fq: hpvm.f64[:],
    fr: hpvm.f64[:],
    ft: hpvm.f64[:],
):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    q[i] = a[i] // b[i]  # floors; 0 for a zero divisor
    r[i] = a[i] % b[i]  # the divisor's sign; 0 for a zero divisor
    t[i] = a[i] / b[i]  # float64: inf, -inf or nan for a zero divisor
    fq[i] = x[i] // y[i]
    fr[i] = x[i] % y[i]
    ft[i] = x[i] / y[i]


@hpvm.internal(ins=("a", "b", "x", "y"), outs=("q", "r", "t", "fq", "fr", "ft"))
def r_divisions(
    a: hpvm.i32[:],
    b: hpvm.i32[:],
    x: hpvm.f64[:],
    y: hpvm.f64[:],
    q: hpvm.i64[:],
    r: hpvm.i64[:],
    t: hpvm.f64[:],
    fq: hpvm.f64[:],
    fr: hpvm.f64[:],
    ft: hpvm.f64[:],
):
    k = hpvm.create_node_1d(p_divisions, a.shape[0])
    for port in range(10):
        hpvm.bind_in(k, port, port)


def _division_args(rng: np.random.Generator) -> tuple[Any, ...]:
    a = rng.integers(-50, 50, 30).astype(np.int32)
    b = rng.integers(-4, 5, 30).astype(np.int32)  # zeros among them
    a[:3], b[:3] = [7, -7, 0], [0, 0, 0]
    x, y = a.astype(np.float64) * 0.5, b.astype(np.float64)
    return (a, b, x, y, *(np.zeros(30, np.int64) for _ in range(2)), *(np.zeros(30) for _ in range(4)))


def _divisions(a, b, x, y, q, r, t, fq, fr, ft) -> tuple[()]:  # type: ignore[no-untyped-def]
    with np.errstate(all="ignore"):  # NumPy's results: what every back end gives
        q[:] = np.floor_divide(a.astype(np.int64), b)
        r[:] = np.remainder(a.astype(np.int64), b)
        t[:] = a.astype(np.float64) / b
        fq[:], fr[:], ft[:] = np.floor_divide(x, y), np.remainder(x, y), x / y
    return ()


@hpvm.leaf
def p_scalar_divisions(x: hpvm.f64, k: hpvm.i64) -> tuple[hpvm.f64, hpvm.f64, hpvm.i64, hpvm.i64, hpvm.f64]:
    return 1.0 / x, -1.0 / x, 7 // k, -7 % k, (k - k) / k  # one instance: no parallel loop


@hpvm.internal
def r_scalar_divisions(x: hpvm.f64, k: hpvm.i64):
    n = hpvm.create_node(p_scalar_divisions)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)
    for port in range(5):
        hpvm.bind_out(n, port, port)


@hpvm.leaf(ins=("x",), outs=("y",))
def p_f32_literals(x: hpvm.f32[:], y: hpvm.f32[:], steps: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    v = x[i]
    for _ in range(steps):
        v = v * 1.0001 + 0.001  # float32 times a float literal is float64: v is float64
    y[i] = v


@hpvm.internal(ins=("x",), outs=("y",))
def r_f32_literals(x: hpvm.f32[:], y: hpvm.f32[:], steps: hpvm.i64):
    k = hpvm.create_node_1d(p_f32_literals, x.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def _f32_literals(x: np.ndarray, y: np.ndarray, steps: int) -> tuple[()]:
    v = x.astype(np.float64)
    for _ in range(steps):
        v = v * 1.0001 + 0.001
    y[:] = v  # (computed in float32, the results are about 1e-5 off)
    return ()


@hpvm.leaf(ins=("y",), outs=("out",))
def p_shape_times_f32(y: hpvm.f32[:], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = y.shape[0] * y[i] + i * y[0] + 1  # int64 times float32 is float64


@hpvm.internal(ins=("y",), outs=("out",))
def r_shape_times_f32(y: hpvm.f32[:], out: hpvm.f64[:]):
    k = hpvm.create_node_1d(p_shape_times_f32, y.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def _shape_times_f32(y: np.ndarray, out: np.ndarray) -> tuple[()]:
    exact = y.astype(np.float64)  # products and sums of integers below 2**53: exact
    out[:] = len(y) * exact + np.arange(len(y)) * exact[0] + 1
    return ()


@hpvm.leaf(ins=("a", "u"), outs=("votes", "mixed", "low"))
def p_mixed_ints(a: hpvm.i64[:], u: hpvm.u64[:], votes: hpvm.i64[:], mixed: hpvm.i64[:], low: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    votes[i] = (a[i] > 0) + (a[i] > 10) + (a[i] > 100)  # bools add as integers
    mixed[i] = u[i] + a[i]  # uint64 + int64 is int64 (wrapping), not float64
    low[i] = min(u[i], a[i])  # min of uint64 and int64 is float64


@hpvm.internal(ins=("a", "u"), outs=("votes", "mixed", "low"))
def r_mixed_ints(a: hpvm.i64[:], u: hpvm.u64[:], votes: hpvm.i64[:], mixed: hpvm.i64[:], low: hpvm.f64[:]):
    k = hpvm.create_node_1d(p_mixed_ints, a.shape[0])
    for port in range(5):
        hpvm.bind_in(k, port, port)


def _mixed_ints_args(rng: np.random.Generator) -> tuple[Any, ...]:
    a = rng.integers(-200, 200, 32)
    u = rng.integers(0, 2**64, 32, dtype=np.uint64)
    u[0] = 2**64 - 1
    return a, u, np.zeros(32, np.int64), np.zeros(32, np.int64), np.zeros(32)


def _mixed_ints(a, u, votes, mixed, low) -> tuple[()]:  # type: ignore[no-untyped-def]
    votes[:] = (a > 0).astype(np.int64) + (a > 10) + (a > 100)
    mixed[:] = u.view(np.int64) + a  # wraps
    low[:] = np.minimum(u.astype(np.float64), a.astype(np.float64))
    return ()


PROGRAMS += [
    Program("f32_sums_in_f64", r_f32_sums, _f32_sums_args, _f32_sums, rtol=0.0),
    Program("i32_products_widen", r_i32_products, _i32_products_args, _i32_products),
    Program("u8_arithmetic_widens", r_u8_arith, _u8_args, _u8_arith),
    Program("divisions_by_zero", r_divisions, _division_args, _divisions, rtol=0.0),
    Program(
        "scalar_divisions_by_zero",
        r_scalar_divisions,
        lambda rng: (0.0, 0),
        lambda x, k: (np.inf, -np.inf, 0, 0, np.nan),
        rtol=0.0,
    ),
    Program(
        "f32_with_float_literals",
        r_f32_literals,
        lambda rng: (rng.uniform(0.5, 2.0, 16).astype(np.float32), np.zeros(16, np.float32), 2000),
        _f32_literals,
        rtol=1e-6,
    ),
    Program(
        "shape_times_f32",
        r_shape_times_f32,
        lambda rng: ((rng.integers(2**22, 2**24, 12)).astype(np.float32), np.zeros(12)),
        _shape_times_f32,
        rtol=0.0,
    ),
    Program("mixed_int_kinds", r_mixed_ints, _mixed_ints_args, _mixed_ints, rtol=0.0),
]


# Fan-out: one output feeding several edges (HPVM's ResNet programs' residual connections;
# docs/semantics.md §5): a scalar to two inputs of one node, and an array to two nodes.


@hpvm.leaf(ins=("x",), outs=("y",))
def p_fan_scale(x: hpvm.f64[:], y: hpvm.f64[:], k: hpvm.f64) -> tuple[hpvm.f64[:], hpvm.f64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = k * x[i]
    return y, k + 1.0


@hpvm.leaf(ins=("y", "z"), outs=("z",))
def p_fan_residual(y: hpvm.f64[:], z: hpvm.f64[:], a: hpvm.f64, b: hpvm.f64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    z[i] = z[i] + a * b * y[i]


@hpvm.leaf(ins=("y", "w"), outs=("w",))
def p_fan_square(y: hpvm.f64[:], w: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    w[i] = y[i] * y[i]


@hpvm.internal(ins=("x", "z", "w"), outs=("y", "z", "w"))
def r_fan_out(x: hpvm.f64[:], y: hpvm.f64[:], z: hpvm.f64[:], w: hpvm.f64[:], k: hpvm.f64):
    s = hpvm.create_node_1d(p_fan_scale, x.shape[0])
    r = hpvm.create_node_1d(p_fan_residual, x.shape[0])
    q = hpvm.create_node_1d(p_fan_square, x.shape[0])
    hpvm.bind_in(s, 0, 0)
    hpvm.bind_in(s, 1, 1)
    hpvm.bind_in(s, 4, 2)
    hpvm.edge(s, r, hpvm.ONE_TO_ONE, 0, 0)  # the array, to two nodes
    hpvm.edge(s, q, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(r, 2, 1)
    hpvm.edge(s, r, hpvm.ALL_TO_ALL, 1, 2)  # the scalar, to two inputs of one node
    hpvm.edge(s, r, hpvm.ALL_TO_ALL, 1, 3)
    hpvm.bind_in(q, 3, 1)


def _fan_out(x, y, z, w, k) -> tuple[()]:  # type: ignore[no-untyped-def]
    y[:] = k * x
    z[:] = z + (k + 1.0) ** 2 * y
    w[:] = y * y
    return ()


PROGRAMS.append(
    Program(
        "fan_out",
        r_fan_out,
        lambda rng: (rng.uniform(-1, 1, 16), np.zeros(16), rng.uniform(-1, 1, 16), np.zeros(16), 1.5),
        _fan_out,
    )
)

BY_NAME = {p.name: p for p in PROGRAMS}
assert len(BY_NAME) == len(PROGRAMS), "program names must be unique"
