"""Jammed instances (``backends/cpu/jam.py``): a Python leaf with a loop its neighbouring
instances share runs ``width`` instances per call, in lockstep.

Three kinds of test. The transformation itself, property-based: random integer leaves
(uniform and varying assignments, loops with uniform and varying bounds, ``if`` on uniform
and varying conditions, ``break``, stores to the own element) whose jammed clone, run once
as Python, leaves every array as the plain clone run once per lane does. The leaves it
refuses, each with its reason. And whole programs on ``cpu`` in the GPU convention (2-D and
3-D, grids that are not a multiple of the width), exactly as the interpreter, with the
generated loop nest calling the jammed clone; a float matmul is bit for bit what the plain
clones give.
"""

from __future__ import annotations

import itertools
import linecache

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st

import hpvm
from gpu_convention import same_as_interp
from hpvm.backends import get_backend
from hpvm.backends.cpu import jam
from hpvm.backends.cpu.jam import jam_leaf, jam_problem, jam_width
from hpvm.ir import instance_context as ictx
from hpvm.ir.graph import LeafFunction
from hpvm.passes.clone_leaves import LeafClone, clone_leaf

_COUNTER = itertools.count()


@pytest.fixture(autouse=True)
def jam_on(monkeypatch):
    """These tests are about jamming: on, even where ``HPVM_CPU_JAM=0`` turned it off."""
    monkeypatch.setattr(jam.JAM, "enabled", True)


IDS = """\
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
"""
PARAMS = "src: hpvm.i64[:, :], dst: hpvm.i64[:, :], n: hpvm.i64"


def leaf_from(source: str) -> LeafFunction:
    """A leaf made from ``source`` (its ``def``), readable back as from a file."""
    filename = f"<jam {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"hpvm": hpvm, "np": np}
    exec(compile(source, filename, "exec"), namespace)
    name = source.split("def ", 1)[1].split("(", 1)[0]
    return hpvm.leaf(ins=("src", "dst"), outs=("dst",))(namespace[name])


def python_of(clone: LeafClone):
    """The clone's def, run as Python (no Numba): what its text says, lane by lane."""
    namespace = dict(clone.namespace())
    exec(clone.source(), namespace)
    return namespace[clone.symbol]


def ctx(x: int, y: int, nx: int, ny: int) -> tuple[int, ...]:
    row = [0] * ictx.STRIDE
    row[ictx.ID], row[ictx.ID + 1], row[ictx.EXTENT], row[ictx.EXTENT + 1] = x, y, nx, ny
    row[ictx.EXTENT + 2], row[ictx.DIMS] = 1, 2
    return tuple(row)


# ---------------------------------------------------------------------------------------
# Random leaves: integer statements over x (varying), y and the loop variables (uniform
# unless under a varying bound)


def _exprs(names: list[str]) -> st.SearchStrategy[str]:
    leaves = st.sampled_from([*names, "x", "y", "n", "1", "3", "src[y, x]", "src[y, (x + 1) % 20]"])
    return st.recursive(
        leaves,
        lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*", "^", "&"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        max_leaves=4,
    )


@st.composite
def _block(draw, depth: int, names: list[str], indent: int, loops: int) -> list[str]:
    pad = "    " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["assign", "store", "for", "if", "break"] if depth else ["assign", "store"])
        )
        if kind == "assign":
            var = draw(st.sampled_from(["a", "b", "c"]))
            lines.append(f"{pad}{var} = {draw(_exprs(names))}")
        elif kind == "store":
            op = draw(st.sampled_from(["=", "+="]))
            lines.append(f"{pad}dst[y, x] {op} {draw(_exprs(names))}")
        elif kind == "for":
            k = f"k{loops}"
            bound = draw(st.sampled_from(["n", "3", "y % 4 + 1", "x % 4", "(x + y) % 3"]))
            lines.append(f"{pad}for {k} in range({bound}):")
            lines += draw(_block(depth - 1, [*names, k], indent + 1, loops + 1))
        elif kind == "if":
            test = draw(st.sampled_from(["y % 2 == 0", "x % 3 == 1", "a > b", "n > 2", "x > y"]))
            lines.append(f"{pad}if {test}:")
            lines += draw(_block(depth - 1, names, indent + 1, loops))
            lines.append(f"{pad}else:")
            lines += draw(_block(depth - 1, names, indent + 1, loops))
        elif loops:  # break, under a condition, in the innermost loop
            test = draw(st.sampled_from(["y % 3 == 0", "x % 2 == 0", "a > 5"]))
            lines.append(f"{pad}if {test}:")
            lines.append(f"{pad}    break")
    return lines or [f"{pad}pass"]


@st.composite
def random_leaf(draw) -> str:
    head = "    a = x\n    b = y\n    c = 0\n"
    body = draw(_block(2, ["a", "b", "c"], 1, 0))
    return f"def k({PARAMS}):\n{IDS}{head}" + "\n".join(body) + "\n"


#: A leaf whose second loop is written per lane (its variable varies: the first loop's)
#: and updates a variable the analysis finds uniform: each lane's copy must have its own.
SHARED_IN_A_LANES_COPY = (
    f"def k({PARAMS}):\n{IDS}"
    "    a = x\n    b = y\n    c = 0\n"
    "    for k0 in range(x % 4):\n        a = a\n"
    "    for k0 in range(n):\n        dst[y, x] = c\n        c = (b + c)\n"
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=random_leaf(), width=st.sampled_from([4, 8]), y=st.integers(0, 3))
@example(source=SHARED_IN_A_LANES_COPY, width=4, y=1)
def test_a_jammed_clone_runs_its_lanes_as_the_plain_clone_does(source, width, y):
    clone = clone_leaf(leaf_from(source))
    assert clone.ir is not None
    nx, ny = 2 * width + 3, 4
    src = np.arange(ny * 20, dtype=np.int64).reshape(ny, 20) * 7 - 50
    want = np.zeros((ny, 20), np.int64)
    got = want.copy()
    plain = python_of(clone)
    jammed = python_of(clone.reemitted(jam_leaf(clone.ir, 0, width), "jam"))
    guarded = jam.guarded(clone.ir, 0)  # (its clone says whether it ran its lanes)
    with np.errstate(over="ignore"):  # (NumPy's int64 scalars wrap alike in both runs)
        try:  # (each instance writes its own element and reads src: any order is the same)
            for x in range(2 * width):  # two blocks of lanes
                plain(src, want, 3, ctx(x, y, nx, ny))
        except OverflowError:  # past int64 (``a = a * a`` in two loops): Python's ints cannot
            reject()  # be stored, where compiled code wraps around — not the jam's question
        for x0 in (0, width):
            ran = jammed(src, got, 3, ctx(x0, y, nx, ny))
            if guarded and not ran:  # some lane's guard failed: it wrote nothing; the loop
                for x in range(x0, x0 + width):  # nest runs the block's instances plain
                    plain(src, got, 3, ctx(x, y, nx, ny))
            assert guarded or ran is None
    np.testing.assert_array_equal(got, want)


def test_the_jammed_clone_shares_what_its_lanes_share():
    leaf = leaf_from(
        f"def k({PARAMS}):\n{IDS}"
        "    acc = 0\n"
        "    for k in range(n):\n"
        "        row = src[y, k]\n"
        "        acc += row * src[k, x]\n"
        "    dst[y, x] = acc\n"
    )
    clone = clone_leaf(leaf)
    assert jam_problem(clone.ir, 0) is None
    text = clone.reemitted(jam_leaf(clone.ir, 0, 4), "jam").source()
    assert text.count("for k in range(n)") == 1  # one loop for the four lanes
    assert text.count("src[y, k]") == 1  # the same for every lane: once
    assert text.count("= src[k, ") == 0 and text.count("* src[k, ") == 4  # per lane
    assert "__hpvm_ctx[0] + 3" in text
    # jammed along y instead, the row is per lane and the column shared
    across = clone.reemitted(jam_leaf(clone.ir, 1, 4), "jam").source()
    assert across.count("src[k, x]") == 4 and across.count("src[y, k]") == 0


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("    dst[y, x] = x\n", "no loop"),
        ("    for k in range(x):\n        dst[y, x] += k\n", "no loop"),  # (its bound varies)
        # a shared loop whose per-lane work is a loop of each lane's own: nothing to vectorize
        ("    for k in range(n):\n        for j in range(x):\n            dst[y, x] += j * k\n", "no loop"),
        ("    for k in range(n):\n        hpvm.atomic_add(dst, y, x, k)\n", "hpvm.atomic_add"),
        (
            "    t = np.zeros(4, np.int64)\n    for k in range(n):\n        dst[y, x] += t[k % 4]\n",
            "local array",
        ),
        ("    for k in range(n):\n        dst[y, x] += k\n        if k > x:\n            return\n", "return"),
        (
            "    for k in range(n):\n        if k > 9:\n            raise ValueError('k')\n        dst[y, x] += k\n",
            "raise",
        ),
        (
            "    for k in range(n):\n" + "".join(f"        dst[y, x] += k * {i}\n" for i in range(70)),
            "too long",
        ),
    ],
)
def test_leaves_not_jammed_and_why(body, reason):
    clone = clone_leaf(leaf_from(f"def k({PARAMS}):\n{IDS}{body}"))
    assert reason in jam_problem(clone.ir, 0)


def test_a_leafs_outputs_are_dropped_from_its_jammed_clone():
    """Only the last instance's outputs are ever used where a leaf with outputs is jammed
    (it runs plain, after the loop): the lanes' copies return nothing."""

    def k(src: hpvm.i64[:, :], n: hpvm.i64) -> hpvm.i64:
        node = hpvm.get_node()
        x = hpvm.get_node_instance_id_x(node)
        acc = 0
        for i in range(n):
            acc += src[i, x]
        return acc

    clone = clone_leaf(hpvm.leaf(ins=("src",))(k))
    assert jam_problem(clone.ir, 0) is None
    jammed = jam_leaf(clone.ir, 0, 4)
    assert jammed.outputs == () and "return" not in clone.reemitted(jammed, "jam").source()


def test_widths_follow_the_body_length():
    def leaf(stores: int) -> LeafClone:
        lines = "".join(f"        dst[y, x] += src[y, k] * {i}\n" for i in range(stores))
        return clone_leaf(leaf_from(f"def k({PARAMS}):\n{IDS}    for k in range(n):\n{lines}"))

    assert jam_width(leaf(1).ir, 0) == jam.MAX_WIDTH == 8
    assert jam_width(leaf(20).ir, 0) == 4  # (8 copies of 20 statements is too many)
    assert "too long" in jam_problem(leaf(40).ir, 0)


# ---------------------------------------------------------------------------------------
# Whole programs on cpu


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def matmul_point(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    acc = 0
    for k in range(a.shape[1]):
        acc += a[y, k] * b[k, x]
        if acc > 5000 and x % 3 == 0:  # (a varying branch inside the shared loop)
            acc -= 777
    c[y, x] = acc


@hpvm.internal()
def matmul_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    node = hpvm.create_node_2d(matmul_point, c.shape[1], c.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.leaf(ins=("src",), outs=("dst",))
def smooth3(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :], steps: hpvm.i64):
    """A 3-D point that walks down its column in z, with a varying trip count inside."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
    total = 0
    s = 0
    while s < steps:
        for d in range(x % 3):
            total += src[z, y, x] * (d + 1)
        if z + s < src.shape[0]:
            total += src[z + s, y, x]
        else:
            break
        s += 1
    dst[z, y, x] = total


@hpvm.internal()
def smooth3_root(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :], steps: hpvm.i64):
    node = hpvm.create_node_3d(smooth3, dst.shape[2], dst.shape[1], dst.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


def _ints(shape, seed):
    return np.random.default_rng(seed).integers(-20, 20, size=shape, dtype=np.int64)


def _generated(root) -> str:
    return "\n".join(get_backend("cpu").prepare(root).gen.sources)


@pytest.mark.usefixtures("hpvm_runtime")
def test_a_2d_matmul_runs_jammed_as_interp_does():
    a, b = _ints((7, 9), 1), _ints((9, 37), 2)  # 37 = 2 blocks of 16 and 5 more
    same_as_interp(matmul_root, (a, b, np.zeros((7, 37), np.int64)), "cpu")
    assert "_jam0" in _generated(matmul_root)


@hpvm.internal()
def narrow_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    node = hpvm.create_node_2d(matmul_point, 5, 7)  # (5 instances along x: never a block of 16)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@pytest.mark.usefixtures("hpvm_runtime")
def test_a_constant_extent_below_the_width_is_not_jammed():
    a, b = _ints((7, 9), 1), _ints((9, 5), 2)
    same_as_interp(narrow_root, (a, b, np.zeros((7, 5), np.int64)), "cpu")
    assert "_jam0" not in _generated(narrow_root)


@pytest.mark.usefixtures("hpvm_runtime")
def test_a_3d_leaf_with_a_while_loop_runs_jammed_as_interp_does():
    src = _ints((5, 3, 21), 3)
    same_as_interp(smooth3_root, (src, np.zeros_like(src), 4), "cpu")
    assert "_jam0" in _generated(smooth3_root)


@hpvm.leaf(ins=("p", "w"), outs=("out",))
def pairs(p: hpvm.i64[:], w: hpvm.i64[:], out: hpvm.i64[:, :]):
    """An n-body shaped 1-D point: every instance walks all the others (``p[j]`` the same
    for every lane, ``p[i]`` its own)."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    acc = 0
    closer = 0
    for j in range(p.shape[0]):
        d = p[j] - p[i]
        acc += abs(d) * w[j]
        if d > 0:
            closer += 1
    out[0, i] = acc
    out[1, i] = closer


@hpvm.internal()
def pairs_root(p: hpvm.i64[:], w: hpvm.i64[:], out: hpvm.i64[:, :]):
    node = hpvm.create_node_1d(pairs, p.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@pytest.mark.usefixtures("hpvm_runtime")
def test_a_1d_parallel_loop_runs_jammed_in_each_chunk_as_interp_does():
    p, w = _ints(53, 6), _ints(53, 7)  # (each thread's chunk: whole blocks, then the rest)
    same_as_interp(pairs_root, (p, w, np.zeros((2, 53), np.int64)), "cpu")
    source = _generated(pairs_root)
    assert "_jam0" in source and "_jb in range(" in source


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def fmatmul_point(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    acc = np.float32(0.0)
    for k in range(a.shape[1]):
        acc += a[y, k] * b[k, x]
    c[y, x] = acc


@hpvm.internal()
def fmatmul_root(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    node = hpvm.create_node_2d(fmatmul_point, c.shape[1], c.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_a_float_matmul_jammed_is_bit_for_bit_the_plain_one(hpvm_runtime, monkeypatch):
    rng = np.random.default_rng(5)
    a, b = rng.random((33, 50), dtype=np.float32), rng.random((50, 45), dtype=np.float32)
    jammed = np.zeros((33, 45), np.float32)
    for v in (a, b, jammed):
        hpvm.track_memory(v)
    hpvm.wait(hpvm.launch(fmatmul_root, (a, b, jammed)))
    assert "_jam0" in _generated(fmatmul_root)
    want = np.zeros_like(jammed)
    for i in range(33):  # each element's sum in its own order, as the leaf takes it
        for j in range(45):
            acc = np.float32(0.0)
            for k in range(50):
                acc = np.float32(acc + np.float32(a[i, k] * b[k, j]))
            want[i, j] = acc
    np.testing.assert_array_equal(jammed, want)


def test_the_switch_turns_jamming_off(monkeypatch):
    from hpvm.backends.cpu.backend import CPUBackend

    monkeypatch.setattr(jam.JAM, "enabled", False)
    assert "_jam0" not in "\n".join(CPUBackend().prepare(matmul_root).gen.sources)


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def skewed_point(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :], off: hpvm.i64):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    acc = 0
    for k in range(a.shape[1]):
        acc += a[y, k] * b[k, x + off]
    c[y, x] = acc


@hpvm.internal()
def skewed_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :], off: hpvm.i64):
    node = hpvm.create_node_2d(skewed_point, c.shape[1], c.shape[0])
    for port in range(4):
        hpvm.bind_in(node, port, port)


@pytest.mark.usefixtures("hpvm_runtime")
def test_checked_mode_runs_a_jammable_leaf_plain_and_names_the_lane(checked):
    """Instance x = 15 would be the last lane of the second block of 8. Checked mode jams no
    leaf (its guards name the instance of the clone's context, one per call): the read past
    the end names that instance, and the unchecked graph of the same leaf is jammed."""
    a, b = _ints((3, 4), 1), _ints((4, 16), 2)
    c = np.zeros((3, 16), np.int64)
    for v in (a, b, c):
        hpvm.track_memory(v)
    with pytest.raises(
        hpvm.OutOfBoundsError,
        match=r"node skewed_root/skewed_point\[15, [012]\] \(leaf 'skewed_point'.*index 16 is out of "
        r"bounds for axis 1 of 'b' with size 16",
    ) as raised:
        hpvm.wait(hpvm.launch(skewed_root, (a, b, c, 1)))
    assert "which instance" not in str(raised.value)
    checked_gen = get_backend("cpu").prepare(skewed_root).gen
    assert not any("_jam" in symbol for symbol in checked_gen.variants)
    hpvm.wait(hpvm.launch(skewed_root, (a, b, c, 0)))
    np.testing.assert_array_equal(c, a @ b)


def test_unchecked_code_jams_the_same_leaf():
    from hpvm.backends.cpu.backend import CPUBackend

    assert any("_jam0" in symbol for symbol in CPUBackend().prepare(skewed_root).gen.variants)


# ---------------------------------------------------------------------------------------
# Guarded leaves: the whole body under a bounds check on the ids (CUDA's `if i < n`)


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def guarded_point(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    if x < c.shape[1] and y < c.shape[0]:
        acc = 0
        for k in range(a.shape[1]):
            acc += a[y, k] * b[k, x]
            if acc > 500 and x % 3 == 0:
                acc -= 77
        c[y, x] = acc


@hpvm.internal()
def guarded_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :], c: hpvm.i64[:, :], nx: hpvm.i64, ny: hpvm.i64):
    node = hpvm.create_node_2d(guarded_point, nx, ny)  # (a grid rounded up past c)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_a_guarded_leaf_is_jammed_and_says_whether_it_ran():
    clone = clone_leaf(guarded_point)
    assert jam_problem(clone.ir, 0) is None and jam.guarded(clone.ir, 0)
    text = clone.reemitted(jam_leaf(clone.ir, 0, 4), "jam").source()
    assert "return True" in text and "return False" in text
    # every lane's guard is tested before anything is written
    first_store = text.index("c[")
    assert all(text.index(f"{jam.lane_name('x', k)}") < first_store for k in range(4))
    plain = clone_leaf(matmul_point)
    assert not jam.guarded(plain.ir, 0)  # (a leaf with a shared loop of its own is not)


@pytest.mark.parametrize("x0", [0, 8, 29, 33])
def test_a_guarded_jammed_clone_runs_its_lanes_only_where_all_pass(x0):
    """Run as Python: lanes x0..x0+7 of a 37-column matrix. Where all pass the guard, it
    returns True with the plain clone's results; else False, having written nothing."""
    clone = clone_leaf(guarded_point)
    jammed = python_of(clone.reemitted(jam_leaf(clone.ir, 0, 8), "jam"))
    plain = python_of(clone)
    a, b = _ints((3, 4), 8), _ints((4, 37), 9)
    got, want = np.full((3, 37), -5, np.int64), np.full((3, 37), -5, np.int64)
    ran = jammed(a, b, got, ctx(x0, 1, 48, 3))
    assert ran == (x0 + 7 < 37)
    if ran:
        for lane in range(8):
            plain(a, b, want, ctx(x0 + lane, 1, 48, 3))
    np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("hpvm_runtime")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 40),
    depth=st.integers(0, 5),
    pad=st.tuples(st.integers(0, 12), st.integers(0, 2)),
)
def test_a_guarded_leaf_runs_jammed_as_interp_does(rows, cols, depth, pad):
    a, b = _ints((rows, depth), 10), _ints((depth, cols), 11)
    args = (a, b, np.full((rows, cols), -1, np.int64), cols + pad[0], rows + pad[1])
    same_as_interp(guarded_root, args, "cpu")
    assert "_jam0" in _generated(guarded_root)
