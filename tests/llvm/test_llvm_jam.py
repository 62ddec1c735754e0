"""Jammed LLVM leaves (``backends/llvm_native/wijam.py``): on ``cpu``, an LLVM leaf with a
loop its neighbouring instances share runs ``width`` of them per call in lockstep.

The leaves here are written as HPVM's pass tests and C front end write node functions: a
2-D matrix product whose k loop every instance runs alike, with a branch inside it that
depends on the instance (a divergent stretch in the shared loop), the output column read
from the instance id x (the GPU convention) or y (C order), and one in LLVM 9's typed
pointers. cpu gives what interp gives, exactly, for any extents and depth (a property
test), the generated loop nest calls the jammed wrapper along the unit-stride axis, and
leaves that cannot be jammed say why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.backends import get_backend
from hpvm.backends.cpu import jam
from hpvm.backends.llvm_native import wijam
from hpvm.backends.llvm_native.native import native_leaf
from hpvm.backends.llvm_native.wijam import jam_module, jam_symbol
from hpvm.ir.graph import LeafFunction, functions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_llvm_leaves_run import DECLS, _run  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


@pytest.fixture(autouse=True)
def jam_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about jamming: on, even where ``HPVM_CPU_JAM=0`` turned it off."""
    monkeypatch.setattr(jam.JAM, "enabled", True)


def matmul_text(gpu: bool, extra: str = "", guard: bool = False) -> str:
    """``c[row][col] = sum_p a[row][p] * b[p][col]`` over i64 (row-major, ``n`` columns, ``k``
    deep), 777 taken off a partial sum above 5000 in columns divisible by 3; ``gpu``: the
    column is instance id x (the fastest index), else id y. ``extra``: lines in the loop;
    ``guard``: the whole body under ``if (col < n && row < rows)`` (HPVM's and CUDA's bounds
    check, for a grid larger than the matrix), ``rows`` being ``c``'s bytes / 8 / n."""
    col, row = ("%ix", "%iy") if gpu else ("%iy", "%ix")
    start = "br label %head"
    if guard:
        start = f"""%inc = icmp slt i64 {col}, %n
  br i1 %inc, label %rowtest, label %done
rowtest:
  %cells = lshr i64 %cb, 3
  %rows = udiv i64 %cells, %n
  %inr = icmp slt i64 {row}, %rows
  br i1 %inr, label %head, label %done"""
    return f"""
define {{}} @mm(ptr "in" %a, i64 %ab, ptr "in" %b, i64 %bb, ptr "in" "out" %c, i64 %cb, i64 %n, i64 %k) {{
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %ix = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %iy = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %node)
  %rem = urem i64 {col}, 3
  %third = icmp eq i64 %rem, 0
  {start}
head:
  %p = phi i64 [ 0, %{"rowtest" if guard else "entry"} ], [ %p1, %latch ]
  %acc = phi i64 [ 0, %{"rowtest" if guard else "entry"} ], [ %acc2, %latch ]
  %more = icmp slt i64 %p, %k
  br i1 %more, label %body, label %exit
body:
  %ar = mul i64 {row}, %k
  %ai = add i64 %ar, %p
  %ap = getelementptr i64, ptr %a, i64 %ai
  %av = load i64, ptr %ap, align 8
  %br = mul i64 %p, %n
  %bi = add i64 %br, {col}
  %bp = getelementptr i64, ptr %b, i64 %bi
  %bv = load i64, ptr %bp, align 8
  %m = mul i64 %av, %bv
  %acc1 = add i64 %acc, %m{extra}
  %big = icmp sgt i64 %acc1, 5000
  %both = and i1 %big, %third
  br i1 %both, label %adjust, label %latch
adjust:
  %acc3 = sub i64 %acc1, 777
  br label %latch
latch:
  %acc2 = phi i64 [ %acc1, %body ], [ %acc3, %adjust ]
  %p1 = add i64 %p, 1
  br label %head
exit:
  %cr = mul i64 {row}, %n
  %ci = add i64 %cr, {col}
  %cp = getelementptr i64, ptr %c, i64 %ci
  store i64 %acc, ptr %cp, align 8
  {"br label %done" if guard else "ret {} zeroinitializer"}
{"done:" + chr(10) + "  ret {} zeroinitializer" if guard else ""}
}}

define {{}} @root(ptr %a, i64 %ab, ptr %b, i64 %bb, ptr %c, i64 %cb, i64 %n, i64 %k, i64 %nx, i64 %ny) {{
entry:
  %g = call ptr @llvm.hpvm.createNode2D(ptr @mm, i64 %nx, i64 %ny)
{"".join(f"  call void @llvm.hpvm.bind.input(ptr %g, i32 {p}, i32 {p}, i1 false){chr(10)}" for p in range(8))}  ret {{}} undef
}}
"""


def _model(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    rows, depth = a.shape
    n = b.shape[1]
    c = np.zeros((rows, n), np.int64)
    for col in range(n):
        acc = np.zeros(rows, np.int64)
        for p in range(depth):
            acc = acc + a[:, p] * b[p, col]
            if col % 3 == 0:
                acc = np.where(acc > 5000, acc - 777, acc)
        c[:, col] = acc
    return c


def _matmul(  # type: ignore[no-untyped-def]
    root, gpu: bool, rows: int, n: int, depth: int, target: str, seed: int = 0, pad: tuple[int, int] = (0, 0)
) -> np.ndarray:
    """Run ``root`` on random matrices; ``pad``: instances past the columns and rows (a
    guarded leaf's grid rounded up)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-30, 30, (rows, depth), dtype=np.int64)
    b = rng.integers(-30, 30, (depth, n), dtype=np.int64)
    c = np.full((rows, n), -1, np.int64)
    nx, ny = (n + pad[0], rows + pad[1]) if gpu else (rows + pad[1], n + pad[0])
    _run(root, (*(m.reshape(-1).view(np.uint8) for m in (a, b, c)), n, depth, nx, ny), target)
    return c, _model(a, b)  # type: ignore[return-value]


def _leaf(root) -> LeafFunction:  # type: ignore[no-untyped-def]
    return next(f for f in functions(root) if isinstance(f, LeafFunction))


def _generated(root) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(get_backend("cpu").prepare(root).gen.sources)


GPU_ROOT = llvm.from_hpvm_ir(DECLS + matmul_text(True))
C_ROOT = llvm.from_hpvm_ir(DECLS + matmul_text(False))
ROOTS = {
    (gpu, guard): llvm.from_hpvm_ir(DECLS + matmul_text(gpu, guard=guard)) if guard else root
    for gpu, root in ((True, GPU_ROOT), (False, C_ROOT))
    for guard in (False, True)
}


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu-convention", "c-order"])
def test_a_matmul_leaf_runs_jammed_along_its_unit_stride_axis_as_interp_does(gpu: bool) -> None:
    root = GPU_ROOT if gpu else C_ROOT
    got, want = _matmul(root, gpu, 7, 37, 9, "cpu")  # 37 columns: 2 blocks of 16 and 5 more
    np.testing.assert_array_equal(got, want)
    ref, _ = _matmul(root, gpu, 7, 37, 9, "interp")
    np.testing.assert_array_equal(ref, want)
    axis = 0 if gpu else 1
    assert f"_jam{axis}w{jam.LLVM_WIDTH}(" in _generated(root)


@pytest.mark.parametrize(
    ("columns", "width"), [(12, jam.MAX_WIDTH), (8, jam.MAX_WIDTH), (32, jam.LLVM_WIDTH)]
)
def test_a_constant_extent_under_16_lanes_is_jammed_8_at_a_time(columns: int, width: int) -> None:
    """The node's extent along the jammed axis a constant: 16 lanes where it has 16 (or
    more), else 8, which a group of 8 or 12 still fills (with the plain clone on the rest),
    and the interpreter's result either way."""
    text = (DECLS + matmul_text(True)).replace(
        "createNode2D(ptr @mm, i64 %nx, i64 %ny)", f"createNode2D(ptr @mm, i64 {columns}, i64 5)"
    )
    root = llvm.from_hpvm_ir(text)
    got, want = _matmul(root, True, 5, columns, 9, "cpu")
    np.testing.assert_array_equal(got, want)
    ref, _ = _matmul(root, True, 5, columns, 9, "interp")
    np.testing.assert_array_equal(ref, want)
    generated = _generated(root)
    assert f"_jam0w{width}(" in generated
    assert f"_jam0w{jam.LLVM_WIDTH + jam.MAX_WIDTH - width}(" not in generated  # (not the other)


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu-convention", "c-order"])
def test_a_guarded_matmul_leaf_runs_jammed_where_whole_blocks_pass_its_guard(gpu: bool) -> None:
    # The grid overshoots the matrix by 11 columns and 2 rows (rounded up, as CUDA grids
    # are): the block straddling the last column runs lane by lane, the rest jammed with
    # the guard known to hold; instances past the matrix write nothing.
    root = ROOTS[gpu, True]
    got, want = _matmul(root, gpu, 7, 37, 9, "cpu", pad=(11, 2))
    np.testing.assert_array_equal(got, want)
    ref, _ = _matmul(root, gpu, 7, 37, 9, "interp", pad=(11, 2))
    np.testing.assert_array_equal(ref, want)
    text, why = jam_module(native_leaf(_leaf(root)), 0 if gpu else 1, 8)
    assert why == "" and text is not None
    assert f"_jam{0 if gpu else 1}w{jam.LLVM_WIDTH}(" in _generated(root)


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gpu=st.booleans(),
    guard=st.booleans(),
    rows=st.integers(1, 6),
    n=st.integers(1, 40),
    depth=st.integers(0, 6),
    seed=st.integers(0, 3),
    pad=st.tuples(st.integers(0, 9), st.integers(0, 2)),
)
def test_jammed_llvm_leaves_match_the_model_for_any_extents(
    gpu: bool, guard: bool, rows: int, n: int, depth: int, seed: int, pad: tuple[int, int]
) -> None:
    got, want = _matmul(ROOTS[gpu, guard], gpu, rows, n, depth, "cpu", seed, pad if guard else (0, 0))
    np.testing.assert_array_equal(got, want)


def test_jamming_off_runs_the_plain_clone_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jam.JAM, "enabled", False)
    root = llvm.from_hpvm_ir(DECLS + matmul_text(True).replace("@mm", "@mm_plain"))
    got, want = _matmul(root, True, 5, 19, 4, "cpu")
    np.testing.assert_array_equal(got, want)
    assert "_jam0w" not in _generated(root)


def test_the_jammed_module_defines_only_its_entry() -> None:
    native = native_leaf(_leaf(GPU_ROOT))
    text, why = jam_module(native, 0, 8)
    assert why == "" and text is not None
    symbol = jam_symbol(native.digest, 0, 8)
    defined = [line for line in text.splitlines() if line.startswith("define")]
    assert len(defined) == 1 and f"@{symbol}(" in defined[0]  # (the rest inlined or internal)


TYPED = """
%struct.out.scale = type <{}>

define dso_local %struct.out.scale @scale(float* in %in, i64 %bin, float* out %out, i64 %bout, i64 %n, i64 %reps) {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %pin = getelementptr inbounds float, float* %in, i64 %x
  %v = load float, float* %pin, align 4
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi float [ %v, %entry ], [ %acc1, %loop ]
  %acc1 = fmul float %acc, 1.500000e+00
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i1, %reps
  br i1 %more, label %loop, label %done
done:
  %pout = getelementptr inbounds float, float* %out, i64 %x
  store float %acc1, float* %pout, align 4
  ret %struct.out.scale undef
}

define dso_local %struct.out.scale @root(float* %in, i64 %bin, float* %out, i64 %bout, i64 %n, i64 %reps) {
entry:
  %g = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.scale (float*, i64, float*, i64, i64, i64)* @scale to i8*), i64 %n)
  call void @llvm.hpvm.bind.input(i8* %g, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %g, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %g, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %g, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %g, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %g, i32 5, i32 5, i1 false)
  ret %struct.out.scale undef
}

declare i8* @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*)
declare i8* @llvm.hpvm.createNode1D(i8*, i64)
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1)
"""


def test_an_llvm9_leaf_with_a_shared_loop_runs_jammed_to_the_bit() -> None:
    # float, in LLVM 9's typed pointers: each instance multiplies its value `reps` times
    # (at least once: a do-while), its own rounding order kept in every lane.
    root = llvm.from_hpvm_ir(TYPED)
    src = np.random.default_rng(4).standard_normal(45).astype(np.float32)
    out = np.zeros(45, np.float32)
    _run(root, (src.view(np.uint8), out.view(np.uint8), 45, 5), "cpu")
    want = src.copy()
    for _ in range(5):
        want = want * np.float32(1.5)
    np.testing.assert_array_equal(out, want)
    assert f"_jam0w{jam.LLVM_WIDTH}(" in _generated(root)


VADD = """
define {} @vadd(ptr "in" %a, i64 %ab, ptr "in" "out" %c, i64 %cb) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %ap = getelementptr i64, ptr %a, i64 %x
  %av = load i64, ptr %ap
  %cp = getelementptr i64, ptr %c, i64 %x
  store i64 %av, ptr %cp
  ret {} zeroinitializer
}

define {} @root(ptr %a, i64 %ab, ptr %c, i64 %cb, i64 %n) {
entry:
  %g = call ptr @llvm.hpvm.createNode1D(ptr @vadd, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %g, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %g, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %g, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %g, i32 3, i32 3, i1 false)
  ret {} undef
}
"""

RAISING = """
  %bad = icmp slt i64 %acc1, -100000
  br i1 %bad, label %raise, label %fine
raise:
  call void @__hpvm_leaf_error(i32 1, ptr null)
  ret {} zeroinitializer
fine:"""

BARRIER = """
  call void @llvm.hpvm.barrier()"""

STORE_FIRST = """
  %cp0 = getelementptr i64, ptr %c, i64 0
  store i64 5, ptr %cp0
  %inc = icmp slt i64 %ix, %n"""

ATOMIC = """
  %old = call i32 @llvm.hpvm.atomic.add(ptr %cp0, i32 1)"""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (VADD, "no loop its neighbouring instances share"),
        (
            matmul_text(True, RAISING).replace("[ %acc1, %body ]", "[ %acc1, %fine ]")
            + "declare void @__hpvm_leaf_error(i32, ptr)\n",
            "it may raise",
        ),
        (matmul_text(True, BARRIER), "it reaches a barrier or malloc"),
        (
            matmul_text(True, ATOMIC).replace(
                "%rem = urem", "%cp0 = getelementptr i64, ptr %c, i64 0\n  %rem = urem"
            ),
            "it uses atomics",
        ),
        (  # (a guard reached after a store: probing it first would store twice)
            matmul_text(True, guard=True).replace("  %inc = icmp slt i64 %ix, %n", STORE_FIRST),
            "no loop its neighbouring instances share",
        ),
    ],
    ids=["no-loop", "raises", "barrier", "atomics", "guard-after-a-store"],
)
def test_leaves_not_jammed_and_why(text: str, reason: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + text)
    made, why = jam_module(native_leaf(_leaf(root)), 0, 8)
    assert made is None and why == reason
    assert "_jam0w" not in _generated(root)


MATVEC = Path(__file__).parent / "hpvm9" / "matvec_guarded.ll"  # (GenHPVM's LLVM 9 text)


@pytest.mark.parametrize(("n", "m", "grid"), [(37, 5, 40), (64, 9, 64), (3, 4, 8), (29, 0, 32)])
def test_a_genhpvm_guarded_kernel_runs_jammed_as_interp_does(n: int, m: int, grid: int) -> None:
    # A^T v over a grid rounded up past n, the body under `if (x < n)`: blocks wholly inside
    # run jammed, the one straddling n lane by lane, and nothing is written past y[n - 1].
    root = llvm.from_hpvm_ir(MATVEC.read_text(), file=str(MATVEC))
    rng = np.random.default_rng(n + m)
    a = rng.standard_normal((m, n)).astype(np.float32)
    v = rng.standard_normal(m).astype(np.float32)
    results = {}
    for target in ("cpu", "interp"):
        y = np.full(n + 1, np.nan, np.float32)  # (one element past n: must stay untouched)
        _run(root, (a.reshape(-1).view(np.uint8), v.view(np.uint8), y[:n].view(np.uint8), n, m, grid), target)
        results[target] = y
    np.testing.assert_array_equal(results["cpu"], results["interp"])
    assert np.isnan(results["cpu"][n])
    want = np.zeros(n, np.float32)
    for k in range(m):  # each element's sum in its own order, as the leaf takes it
        want = (want + a[k] * v[k]).astype(np.float32)
    np.testing.assert_array_equal(results["cpu"][:n], want)
    text, why = jam_module(native_leaf(_leaf(root)), 0, 8)
    assert why == "" and text is not None
    assert f"_jam0w{jam.LLVM_WIDTH}(" in _generated(root)


def _fresh_answers(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """A new process's state: nothing built in memory, ``cache`` as hpvm's cache."""
    monkeypatch.setenv("HPVM_CACHE_DIR", str(cache))
    monkeypatch.setattr(wijam, "_MODULES", {})


@pytest.mark.parametrize("gpu", [True, False], ids=["jammed", "refused"])
def test_a_jam_answer_is_stored_and_a_later_process_reads_it_without_building(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gpu: bool
) -> None:
    """Whether to jam is decided when the graph's code is generated, also when Numba's cache
    then serves that code: the answer (module or reason) is kept in hpvm's cache."""
    root = GPU_ROOT if gpu else llvm.from_hpvm_ir(DECLS + matmul_text(True, BARRIER))
    native = native_leaf(_leaf(root))
    _fresh_answers(monkeypatch, tmp_path)
    first = jam_module(native, 0, 8)
    assert first[1] == ("" if gpu else "it reaches a barrier or malloc") and (first[0] is not None) == gpu
    assert len(list((tmp_path / "llvm-jam").glob("*.json"))) == 1
    _fresh_answers(monkeypatch, tmp_path)

    def no_build(*args: object) -> None:
        raise AssertionError("built again although stored")

    monkeypatch.setattr(wijam, "_build", no_build)
    assert jam_module(native, 0, 8) == first


def test_a_damaged_stored_answer_is_built_again_and_replaced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    native = native_leaf(_leaf(GPU_ROOT))
    _fresh_answers(monkeypatch, tmp_path)
    want = jam_module(native, 0, 8)
    (stored,) = (tmp_path / "llvm-jam").glob("*.json")
    for damage in ("", "{not json", '{"text": 3}', "[]"):
        stored.write_text(damage)
        _fresh_answers(monkeypatch, tmp_path)
        assert jam_module(native, 0, 8) == want
        assert json.loads(stored.read_text()) == {"text": want[0], "why": want[1]}
    assert [p.name for p in (tmp_path / "llvm-jam").iterdir()] == [stored.name]  # (no temporary left)


def test_another_axis_width_or_leaf_is_another_stored_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fresh_answers(monkeypatch, tmp_path)
    gpu, c_order = (
        native_leaf(_leaf(GPU_ROOT)),
        native_leaf(_leaf(llvm.from_hpvm_ir(DECLS + matmul_text(False)))),
    )
    answers = {
        (n.digest, a, w): jam_module(n, a, w) for n in (gpu, c_order) for a, w in ((0, 8), (1, 8), (0, 4))
    }
    assert len(list((tmp_path / "llvm-jam").glob("*.json"))) == len(answers) == 6
    assert answers[(gpu.digest, 0, 8)][1] == "" and answers[(c_order.digest, 1, 8)][1] == ""
    assert answers[(gpu.digest, 0, 8)][0] != answers[(gpu.digest, 0, 4)][0]


def test_only_the_jammed_leaf_knows_its_queries_non_negative() -> None:
    """``native.nonnegative_queries`` marks the six instance queries' loads ``!range`` [0,
    2^63) — in the text the jam is built from, not in the clone every other path runs (the
    block reduction's work-item loops ran 1.4–1.9 → 3.0–3.2 ms with them marked)."""
    from hpvm.backends.llvm_native.native import QUERY_OFFSETS, nonnegative_queries
    from hpvm.backends.llvm_native.wiloops import NONNEGATIVE, NONNEGATIVE_MD

    native = native_leaf(_leaf(GPU_ROOT))
    assert "!range" not in native.text
    marked = nonnegative_queries(native.text)
    assert marked.count(f"align 8, !range !{NONNEGATIVE_MD}\n") == len(QUERY_OFFSETS) == 6
    assert marked.count(NONNEGATIVE) == 1
    jammed, why = jam_module(native, 0, jam.LLVM_WIDTH)
    assert jammed is not None, why
