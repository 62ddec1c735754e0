"""The interpreter runs leaves in the leaf IR's dialect from their IR (``from_ir.py``):
property test against the syntax-tree path (``arith_rewrite.py``), which every leaf took
before and leaves outside the dialect still take.

Hypothesis writes leaves over arrays of every scalar type — assignments of random
arithmetic (every operator, ``abs``, ``min``/``max``, ``int``/``float``, ``math``
functions, typed and untyped literals), stores into outputs of other element types (the
IR's casts), branches, loops accumulating into a variable of a wider type, barriers (now
and then one only instance 0 reaches), a ``raise`` whose message reads variables, a module
global and arithmetic — plus now and then an access past an array's end or a store every
instance makes to one element (a data race). Each leaf runs on the interpreter both ways;
the output arrays must be identical bit for bit (NaNs compared as NaNs) and an error
identical in class and message (its line too) and in the class of its cause.
"""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import itertools
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends.base import get_backend
from hpvm.backends.interp.from_ir import ir_function
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops
from hpvm.ir.types import SCALAR_TYPES
from running import interp_leaves_from, line_of, replicated_root, run_tracked

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

TYPES = ["i8", "u8", "i16", "i32", "u32", "i64", "u64", "f32", "f64", "bool"]
LITERALS = [
    "0",
    "1",
    "2",
    "3",
    "-3",
    "7",
    "255",
    "100000",
    "0.5",
    "-2.25",
    "1e10",
    "True",
    "np.float32(1.5)",
    "np.int32(-7)",
]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
N = 3  # instances, and the length of every array
_DIR = Path(tempfile.mkdtemp(prefix="hpvm-from-ir-"))
atexit.register(shutil.rmtree, _DIR, True)  # (the generated modules: not left in /tmp)
_SERIAL = itertools.count()


@st.composite
def expression(draw, names: list[str], depth: int = 2) -> tuple[str, bool]:
    """An expression over ``names`` and its "reads a variable" flag (operations on literals
    alone are left out: CPython folds them with Python's integers, the IR does not)."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.integers(0, 3)):
            return draw(st.sampled_from(names)), True
        return draw(st.sampled_from(LITERALS)), False
    kind = draw(st.sampled_from(["binary"] * 4 + ["unary", "call", "ifexp"]))
    a, va = draw(expression(names, depth - 1))
    if kind == "unary":
        op = draw(st.sampled_from(["-", "+", "abs", "int", "math.sqrt", "math.floor"]))
        return (f"({op}{a})" if op in "-+" else f"{op}({a})"), va
    b, vb = draw(expression(names, depth - 1))
    if not (va or vb):
        b, vb = draw(st.sampled_from(names)), True
    if kind == "call":
        return f"{draw(st.sampled_from(['min', 'max', 'math.atan2']))}({a}, {b})", True
    if kind == "ifexp":
        return f"({a} if {b} > {a} else min({a}, {a}))", True  # branches of one type
    return f"({a} {draw(st.sampled_from(BINARY))} {b})", True


@st.composite
def leaves(draw) -> tuple[str, list[str]]:
    """A leaf's source, and its output types."""
    outs = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3))
    spell = {"bool": "bool_"}
    params = [f"a{k}: hpvm.{spell.get(t, t)}[:]" for k, t in enumerate(TYPES)] + [
        f"o{k}: hpvm.{spell.get(t, t)}[:]" for k, t in enumerate(outs)
    ]
    names = [f"v{k}" for k in range(len(TYPES))]
    body = ["i = hpvm.get_node_instance_id_x(hpvm.get_node())"]
    body += [f"v{k} = a{k}[i]" for k in range(len(TYPES))]
    stored: set[int] = set()
    for j in range(draw(st.integers(1, 4))):
        form = draw(st.sampled_from(["assign", "assign", "if", "for"] * 2 + ["barrier", "raise"]))
        e, _ = draw(expression(names))
        if form == "barrier":  # now and then one that only instance 0 reaches
            body += draw(st.sampled_from([["hpvm.barrier()"]] * 3 + [["if i == 0:", "    hpvm.barrier()"]]))
        elif form == "raise":  # reading the leaf's variables, a module global, arithmetic
            other, _ = draw(expression(names, 1))
            body += [f"if {e} > {other}:", f'    raise ValueError(f"{{{e}}} over {{{other} * LIMIT}}")']
        elif form == "assign":
            body.append(f"t{j} = {e}")
            names.append(f"t{j}")
        elif form == "if":  # stores in both branches (a variable would be retyped)
            other, _ = draw(expression(names, 1))
            k = draw(st.integers(0, len(outs) - 1))
            body += [f"if {e} < {other}:", f"    o{k}[i] = {e}", "else:", f"    o{k}[i] = {other}"]
            stored.add(k)
        else:
            body += [f"t{j} = 0", "for j in range(3):", f"    t{j} += {e} + j"]
            names.append(f"t{j}")
    for k in sorted(set(range(len(outs))) - stored):
        e, _ = draw(expression(names, 1))
        body.append(f"o{k}[i] = {e}")
    mistake = draw(st.sampled_from([None] * 12 + ["t_m = a0[i + 1]", "o0[i + 1] = v5", "o0[0] = v0"]))
    if mistake is not None:  # last: the arithmetic before it runs (and is compared) first
        body.append(mistake)
    outs_text = ", ".join(f'"o{k}"' for k in range(len(outs)))
    source = (
        "import math\nimport numpy as np\nimport hpvm\n\nLIMIT = np.int16(300)\n\n\n"
        f"@hpvm.leaf(ins=({', '.join(repr(f'a{k}') for k in range(len(TYPES)))},), outs=({outs_text},))\n"
        f"def gen({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body)
    )
    return source, outs


def _inputs(draw_values: list[list[float]]) -> list[np.ndarray]:
    return [np.array(v, dtype=np.dtype(SCALAR_TYPES[t].dtype)) for t, v in zip(TYPES, draw_values)]


def _values(t: str):
    dtype = SCALAR_TYPES[t].dtype
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.one_of(
            st.sampled_from([int(info.min), int(info.max), 0, 1]), st.integers(int(info.min), int(info.max))
        )
    return st.floats(width=8 * dtype.itemsize)


def _load(source: str):
    path = _DIR / f"gen_{next(_SERIAL)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gen


def _run(leaf, root, args: list[np.ndarray], from_ir: bool):
    copies = [a.copy() for a in args]
    with interp_leaves_from(from_ir):
        try:
            run_tracked(root, (*copies, N), "interp")
            outcome = None
        except hpvm.HPVMError as e:
            outcome = (type(e).__name__, str(e), type(e.__cause__).__name__)
    return outcome, copies


def _typed_apart(ir: ops.LeafIR) -> bool:
    """Whether ``ir`` holds what the two paths type apart on purpose: a variable assigned
    values of different types (the IR converts each to the variable's one type, as Numba
    does; the syntax-tree path keeps each value's own) or ``x if c else y`` with branches of
    different types (the IR: their promotion). ``test_where_the_paths_differ_the_ir_path_is_numbas``
    checks those."""
    for stmt in ops.walk_stmts(ir.body):
        if isinstance(stmt, ops.Assign) and isinstance(stmt.value, ops.Cast):
            return True
        for top in ops.stmt_exprs(stmt):
            for e in ops.walk_expr(top):
                if isinstance(e, ops.IfExp) and not e.body.type == e.orelse.type == e.type:
                    return True
    return False


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        return bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()
    return a.tobytes() == b.tobytes()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(leaves(), st.data())
def test_the_ir_path_computes_and_reports_what_the_syntax_tree_path_does(generated, data) -> None:
    source, outs = generated
    leaf = _load(source)
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported:
        event("outside the dialect (bitwise operators on floats...)")
        assume(False)  # outside the dialect (a variable retyped between reads): both paths are one
    if _typed_apart(ir):
        event("typed apart on purpose")
        assume(False)
    assert ir_function(leaf) is not None
    values = [data.draw(st.lists(_values(t), min_size=N, max_size=N)) for t in TYPES]
    args = _inputs(values) + [np.zeros(N, SCALAR_TYPES[t].dtype) for t in outs]
    root = replicated_root(leaf, 1)
    old, old_arrays = _run(leaf, root, args, from_ir=False)
    new, new_arrays = _run(leaf, root, args, from_ir=True)
    event(old[0] if old else "ran")
    event("with a barrier" if "hpvm.barrier()" in source else "no barrier")
    event("raised ValueError" if old and old[2] == "ValueError" else "no ValueError")
    assert new == old, source
    if old is None:
        for a, b in zip(old_arrays, new_arrays):
            assert _same(a, b), (source, a, b)


def test_no_module_of_interp_or_tensor_reads_python_syntax() -> None:
    """Issue 25: no back end reads Python (the syntax-tree rewrites the interpreter runs
    leaves outside the dialect with, barriers' included, live below the back ends)."""
    reads = re.compile(r"import ast|ast\.parse|ast\.walk|isinstance\([^)]*ast\.|NodeVisitor|NodeTransformer")
    backends = Path(hpvm.__file__).parent / "backends"
    files = sorted((backends / "interp").glob("*.py"))
    files += sorted((backends / "tensor").glob("*.py"))
    found = [
        f"{p.parent.name}/{p.name}:{k}"
        for p in files
        for k, line in enumerate(p.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []


@hpvm.leaf(ins=("a",), outs=("b",))
def in_dialect(a: hpvm.f32[:], b: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * a[i] + 1


@hpvm.leaf(ins=("a",), outs=("b",))
def with_slice(a: hpvm.f32[:], b: hpvm.f32[:]):
    b[:] = a[:]


def test_which_leaves_run_from_their_ir() -> None:
    """A leaf in the dialect runs from its IR, at its own lines; one with a slice does not."""
    func = ir_function(in_dialect)
    assert func is not None and ir_function(with_slice) is None
    assert func.__code__.co_filename == in_dialect.code_file
    assert func.__code__.co_firstlineno == in_dialect.location.line + 1  # the def, below the decorator
    a = np.array([1.5, -2.0], np.float32)
    b = np.zeros(2)
    out = run_tracked(replicated_root(in_dialect, 1), (a, b, 2), "interp")
    assert out == () and b.tolist() == [3.25, 5.0]  # f32 * f32 + 1 is f64, stored as f64


LIMIT = 3
UNREAD = object()


@hpvm.leaf(ins=("a",), outs=("b",))
def raising(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if a[i] > LIMIT:
        raise ValueError(f"{a[i] * 2} over {LIMIT}")
    b[i] = a[i]


@hpvm.leaf(ins=("a",), outs=("a", "b"))
def exchange(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * 10
    hpvm.barrier()
    a[i] = b[(i + 1) % hpvm.get_num_node_instances_x(hpvm.get_node())]


@hpvm.leaf(ins=("a",), outs=("b",))
def barrier_with_slice(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i]
    hpvm.barrier()
    if i == 0:
        b[:] = b[::-1]


def test_barrier_leaves_and_raises_run_from_their_ir() -> None:
    """A barrier leaf in the dialect runs from its IR as a generator yielding each barrier's
    line; one with a slice from its syntax tree, the same way; a leaf with a ``raise`` from
    its IR, bound to the module names its exception reads and no others."""
    gen = ir_function(exchange)
    assert inspect.isgeneratorfunction(gen) and ir_function(barrier_with_slice) is None
    raises = ir_function(raising)
    assert raises is not None and "LIMIT" in raises.__globals__ and "UNREAD" not in raises.__globals__
    for from_ir in (True, False):
        a, b = np.array([1, 2, 3]), np.zeros(3, np.int64)
        with interp_leaves_from(from_ir):
            run_tracked(replicated_root(exchange, 1), (a, b, 3), "interp")
            assert a.tolist() == [20, 30, 10] and b.tolist() == [10, 20, 30]
            run_tracked(replicated_root(barrier_with_slice, 1), (a, b, 3), "interp")
            assert b.tolist() == [10, 30, 20]
            with pytest.raises(hpvm.NodeExecutionError) as info:
                run_tracked(replicated_root(raising, 1), (np.array([1, 5, 2]), b, 3), "interp")
        where = f"node root_of_raising/raising[1] (leaf 'raising', {__file__}:{line_of(raising, 'raise')})"
        assert str(info.value) == f"{where}: raised ValueError: 10 over 3"
        assert type(info.value.__cause__) is ValueError


@hpvm.leaf(ins=("y",), outs=("out",))
def retyped(y: hpvm.f32[:], c: hpvm.i64, out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    v = y[i]
    if c > 0:
        v = 0.5
    out[i] = v * y[i]


@hpvm.leaf(ins=("y",), outs=("out",))
def branches(y: hpvm.f32[:], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = (y[i] if i >= 0 else 0.5) * y[i]


@pytest.mark.parametrize("from_ir", [False, True])
def test_where_the_paths_differ_the_ir_path_is_numbas(from_ir: bool) -> None:
    """A float32 variable also assigned a float64, a float32 branch of an ``if ... else``
    with a float64 one: float64 in Numba (one type per variable; the promotion of both
    branches), so ``v * y[i]`` multiplies in float64. The IR path computes that; the
    syntax-tree path keeps each value's type (float32): docs/semantics.md §7."""
    y = np.array([0.1, 1 / 3], np.float32)
    numba_value = (y.astype(np.float64) * y.astype(np.float64)).tolist()
    python_value = (y * y).astype(np.float64).tolist()
    want = numba_value if from_ir else python_value
    backend = get_backend("interp")
    backend._functions.clear()
    previous, backend.from_ir = backend.from_ir, from_ir
    try:
        for leaf, args in ((retyped, (y, 0)), (branches, (y,))):
            out = np.zeros(2)
            run_tracked(replicated_root(leaf, 1), (*args, out, 2), "interp")
            assert out.tolist() == want, leaf.name
    finally:
        backend.from_ir = previous
        backend._functions.clear()
