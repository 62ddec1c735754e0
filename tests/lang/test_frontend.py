"""Conformance of the Python frontend: decorators, annotations, tracing and builder calls.

Each error test checks the exact error class and that the message names the culprit: the
function, the parameter or port, and the file:line, found through marker comments
(``# @name``) in this file rather than written down.
"""

import numpy as np
import pytest

import hpvm
from hpvm.ir import Const, ParamExpr, Shape
from markers import SourceMarkers, fails

# ---------------------------------------------------------------------------------------
# Helpers


MARKS = SourceMarkers(__file__)
FILE = MARKS.file
line_of = MARKS.line_of
at = MARKS.at


@hpvm.leaf
def scale(x: hpvm.f32) -> hpvm.f32:
    return x * 2


@hpvm.leaf(ins=("a",), outs=("b",))
def copy_row(a: hpvm.f32[:, :], b: hpvm.f32[:, :], row: hpvm.i64) -> None:
    for j in range(a.shape[1]):
        b[row, j] = a[row, j]


# ---------------------------------------------------------------------------------------
# Annotations


def test_annotation_spellings_on_a_leaf():
    @hpvm.leaf(ins=("a", "b", "c"))
    def spelled(
        a: hpvm.f32[:, :],
        b: hpvm.Array[hpvm.f32, 2],
        c: "hpvm.f64[:]",
        n: int,
        x: float,
        y: np.float32,
        z: "i32",  # noqa: F821 — the printed form of a type, as a string
        flag: bool,
        p: hpvm.u8[...],
        q: "hpvm.u8[...]",
        r: "u8[*]",  # noqa: F722 — a pointer without its size, as the text form prints it
    ) -> tuple[hpvm.f32, int]:
        return a[0, 0] + b[0, 0] + y, n

    assert [str(p.type) for p in spelled.params] == [
        "f32[:, :]",
        "f32[:, :]",
        "f64[:]",
        "i64",
        "f64",
        "f32",
        "i32",
        "bool",
        "u8[*]",
        "u8[*]",
        "u8[*]",
    ]
    assert [str(t) for t in spelled.out_types] == ["f32", "i64"]


@pytest.mark.parametrize(
    "annotation, outputs",
    [(None, []), (hpvm.f32, ["f32"]), (tuple[hpvm.f32, hpvm.i64], ["f32", "i64"]), (tuple[()], [])],
    ids=["none", "one", "tuple", "empty-tuple"],
)
def test_return_annotations(annotation, outputs):
    def body(x: hpvm.f32):
        pass

    body.__annotations__["return"] = annotation
    assert [str(t) for t in hpvm.leaf(body).out_types] == outputs


def test_leaf_without_return_annotation_has_no_outputs():
    @hpvm.leaf
    def silent(x: hpvm.f32):
        pass

    assert silent.out_types == []


def test_missing_parameter_annotation():
    with fails(
        hpvm.TypeAnnotationError,
        f"leaf 'half_typed' ({at('half-typed')})",
        "parameter 'y' has no type annotation",
    ):

        @hpvm.leaf  # @half-typed
        def half_typed(x: hpvm.f32, y) -> hpvm.f32:
            return x


def test_missing_annotation_on_an_internal_function():
    with fails(
        hpvm.TypeAnnotationError,
        f"internal 'untyped' ({at('untyped')})",
        "parameter 'n' has no type annotation",
    ):

        @hpvm.internal  # @untyped
        def untyped(n):
            pass


@pytest.mark.parametrize(
    "annotation, shown",
    [
        (5, "5"),
        ("banana", "'banana'"),
        (list, "<class 'list'>"),
        (None, "<class 'NoneType'>"),
        (np.ndarray, "<class 'numpy.ndarray'>"),
        (complex, "<class 'complex'>"),
    ],
    ids=["int-literal", "unknown-string", "list", "None", "ndarray", "complex"],
)
def test_non_type_parameter_annotation(annotation, shown):
    def odd(x: hpvm.f32, y) -> None:
        pass

    odd.__annotations__["y"] = annotation
    with fails(hpvm.TypeAnnotationError, "leaf 'odd'", f"parameter 'y' has annotation {shown}"):
        hpvm.leaf(odd)


def test_non_type_return_annotation():
    with fails(
        hpvm.TypeAnnotationError, f"leaf 'returns_five' ({at('returns-five')})", "output 1 has annotation 5"
    ):

        @hpvm.leaf  # @returns-five
        def returns_five(x: hpvm.f32) -> tuple[hpvm.f32, 5]:
            return x, x


@pytest.mark.parametrize("signature", ["*rest: hpvm.f32", "**more: hpvm.f32", "*, key: hpvm.f32"])
def test_variadic_and_keyword_only_parameters(signature):
    namespace = {"hpvm": hpvm}
    exec(f"def flexible(x: hpvm.f32, {signature}) -> None:\n    pass\n", namespace)
    name = signature.split(":")[0].lstrip("*, ").strip()
    with fails(
        hpvm.TypeAnnotationError, "leaf 'flexible'", f"parameter '{name}' is *args/**kwargs/keyword-only"
    ):
        hpvm.leaf(namespace["flexible"])


# ---------------------------------------------------------------------------------------
# Hints and attributes


@pytest.mark.parametrize("hint", [None, hpvm.CPU_TARGET, hpvm.GPU_TARGET, hpvm.TENSOR_TARGET])
def test_good_hints(hint):
    @hpvm.leaf(hint=hint)
    def hinted(x: hpvm.f32) -> hpvm.f32:
        return x

    @hpvm.internal(hint=hint)
    def hinted_internal(x: hpvm.f32):
        pass

    assert hinted.hint == hint and hinted_internal.hint == hint


@pytest.mark.parametrize("decorator", [hpvm.leaf, hpvm.internal])
@pytest.mark.parametrize("hint", ["fpga", "CPU", 3])
def test_bad_hint(decorator, hint):
    with fails(hpvm.VerificationError, f"'badly_hinted' ({at('bad-hint')}): hint {hint!r} is not one of"):

        @decorator(hint=hint)  # @bad-hint
        def badly_hinted(x: hpvm.f32) -> None:
            pass


def test_ins_must_name_parameters():
    with fails(hpvm.VerificationError, f"'listed' ({at('listed')}): ins must be a tuple of parameter names"):

        @hpvm.leaf(ins=5)  # @listed
        def listed(a: hpvm.f32[:]) -> None:
            pass


def test_ins_may_be_one_string():
    @hpvm.leaf(ins="a")
    def single(a: hpvm.f32[:]) -> hpvm.f32:
        return a[0]

    assert single.ins == ("a",)


# ---------------------------------------------------------------------------------------
# Internal nodes compute nothing: each misuse is a TracingError naming the function and line


def _traced_error(builder) -> str:
    """Trace ``builder`` through verify (as a launch does) and check it fails to trace."""
    with pytest.raises(hpvm.TracingError) as info:
        hpvm.verify(builder)
    assert type(info.value) is hpvm.TracingError
    return str(info.value)


def _condition(n: hpvm.i64):
    if n > 3:  # @if-gt
        hpvm.create_node(scale)


def _equality(n: hpvm.i64):
    if n == 0:  # @if-eq
        hpvm.create_node(scale)


def _symbolic_equality(n: hpvm.i64, m: hpvm.i64):
    if n != m:  # @if-ne
        hpvm.create_node(scale)


def _subscript(a: hpvm.f32[:]):
    hpvm.create_node_1d(scale, a[0])  # @subscript


def _to_float(n: hpvm.i64):
    hpvm.create_node_1d(scale, float(n))  # @float


def _true_division(n: hpvm.i64):
    hpvm.create_node_1d(scale, n / 2)  # @true-division


def _leaf_intrinsic(n: hpvm.i64):
    hpvm.get_node()  # @intrinsic


def _python_min(n: hpvm.i64):
    hpvm.create_node_1d(scale, min(n, 4))  # @python-min


def _python_range(n: hpvm.i64):
    for _ in range(n):  # @range
        hpvm.create_node(scale)


def _array_len(a: hpvm.f32[:]):
    hpvm.create_node_1d(scale, len(a))  # @len


def _array_as_size(a: hpvm.f32[:]):
    hpvm.create_node_1d(scale, a)  # @array-size


def _undefined_name(n: hpvm.i64):
    hpvm.create_node_1d(scale, undefined_size)  # noqa: F821  # @undefined


def _returns_value(n: hpvm.i64):
    node = hpvm.create_node_1d(scale, n)
    if node is None:
        return None
    return node  # @returns


@pytest.mark.parametrize(
    "body, marker, what",
    [
        (_condition, "if-gt", "in a comparison"),
        (_equality, "if-eq", "in a comparison ('==' / '!=')"),
        (_symbolic_equality, "if-ne", "in a comparison ('==' / '!=')"),
        (_subscript, "subscript", "'a[...]' (array elements)"),
        (_to_float, "float", "as a Python float"),
        (_true_division, "true-division", "with '/' (replication sizes are integers: use '//')"),
        (_leaf_intrinsic, "intrinsic", "hpvm.get_node() is a leaf intrinsic"),
        (_python_min, "python-min", "use hpvm.size_min / hpvm.size_max"),
        (_python_range, "range", "as a Python integer"),
        (_array_len, "len", "len(a) (write a.shape[0])"),
        (_array_as_size, "array-size", "a replication size must be an integer or an expression"),
        (_undefined_name, "undefined", "NameError: name 'undefined_size' is not defined"),
        (_returns_value, "returns", "returned a value; internal nodes give outputs with hpvm.bind_out"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_internal_node_computing(body, marker, what):
    fn = hpvm.internal(body)
    message = _traced_error(fn)
    assert f"internal '{body.__name__}' ({FILE}:{body.__code__.co_firstlineno})" in message
    assert f"line {line_of(marker)}" in message or at(marker) in message, message
    assert what in message


def test_computing_reported_through_graph_access_too():
    fn = hpvm.internal(_condition)
    with fails(hpvm.TracingError, f"internal '_condition' ({FILE}:", f"line {line_of('if-gt')}"):
        _ = fn.graph


def test_computing_in_a_helper_names_the_helper_line():
    def helper(n):
        return n * 2.5  # @helper

    @hpvm.internal
    def uses_helper(n: hpvm.i64):
        hpvm.create_node_1d(scale, helper(n))

    assert f"line {line_of('helper')}" in _traced_error(uses_helper)


def test_tracing_error_of_a_nested_internal_names_it():
    inner = hpvm.internal(_condition)

    @hpvm.internal
    def outer(n: hpvm.i64):
        hpvm.bind_in(hpvm.create_node(inner), 0, 0)

    message = _traced_error(outer)
    assert "internal '_condition'" in message and f"line {line_of('if-gt')}" in message


def test_allowed_python_in_a_builder():
    @hpvm.internal
    def structured(n: hpvm.i64, x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32, hpvm.f32]:
        nodes = [hpvm.create_node_1d(scale, n // (k + 1)) for k in range(3)]  # loops are fine
        for port, node in enumerate(nodes):
            hpvm.bind_in(node, "x", "x")  # ports by name
            hpvm.bind_out(node, 0, port)

    hpvm.verify(structured)
    assert [str(node.sizes[0]) for node in structured.graph.nodes] == ["n // 1", "n // 2", "n // 3"]
    assert [b.ip for b in structured.graph.in_binds] == [1, 1, 1]


# ---------------------------------------------------------------------------------------
# Replication sizes


def test_sizes_from_shapes_and_size_min_max():
    @hpvm.internal
    def rows(a: hpvm.f32[:, :], b: hpvm.f32[:, :], cap: hpvm.i64):
        node = hpvm.create_node_2d(copy_row, a.shape[0], hpvm.size_min(a.shape[1], hpvm.size_max(cap, 1)))
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)
        hpvm.bind_in(node, 2, 2)

    hpvm.verify(rows)
    x, y = rows.graph.nodes[0].sizes
    assert x == Shape("a", 0)
    assert str(y) == "min(a.shape[1], max(cap, 1))"
    assert y.evaluate({"a": np.zeros((3, 5)), "cap": 9}) == 5


def test_size_from_a_float_input():
    @hpvm.internal
    def floaty(x: hpvm.f64):
        hpvm.create_node_1d(scale, x * 2)  # @float-size

    with fails(
        hpvm.VerificationError,
        f"node 'scale' ({at('float-size')})",
        "replication size 'x * 2' uses 'x', a f64 input",
    ) as info:
        hpvm.verify(floaty)
    assert any("has no feed" in p for p in info.value.problems)


def test_size_from_an_array_shape_out_of_range():
    @hpvm.internal
    def deep(a: hpvm.f32[:]):
        hpvm.create_node_1d(scale, a.shape[1])  # @shape-axis

    assert f"line {line_of('shape-axis')}" in _traced_error(deep)


@pytest.mark.parametrize("size", [2.5, True, "4", None])
def test_size_that_is_not_an_integer(size):
    @hpvm.internal
    def odd_size(x: hpvm.f32):
        hpvm.create_node_1d(scale, size)  # @odd-size

    message = _traced_error(odd_size)
    assert f"node 'scale' at {at('odd-size')}" in message and "replication size must be an integer" in message


def test_a_size_nested_too_deep_is_a_tracing_error():
    """Printing it (in messages, for the cpu back end) recursed past Python's limit."""

    @hpvm.internal
    def deep(x: hpvm.f32, n: hpvm.i64):
        size = n
        for _ in range(200):
            size = size + n  # @deep-size
        hpvm.bind_in(hpvm.create_node_1d(scale, size), 0, 0)

    message = _traced_error(deep)
    assert f"line {line_of('deep-size')}" in message
    assert "a replication size nests operators more than 100 deep" in message


def test_size_min_needs_a_size():
    with fails(hpvm.TracingError, "hpvm.size_min() needs at least one size"):
        hpvm.size_min()


def test_zero_instances_are_allowed():
    @hpvm.internal
    def none_at_all(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node_1d(scale, 0), 0, 0)

    hpvm.verify(none_at_all)


# ---------------------------------------------------------------------------------------
# Builder calls: dimensions, arguments, where they may be called


def test_at_most_three_dimensions():
    @hpvm.internal
    def four(x: hpvm.f32):
        hpvm.create_node_nd(4, scale, 1, 2, 3, 4)  # @four-d

    with fails(
        hpvm.VerificationError, "internal 'four'", f"node 'scale' at {at('four-d')}: 4 dimensions requested"
    ):
        hpvm.verify(four)


def test_three_dimensions_and_create_node_nd_agree_with_the_named_calls():
    @hpvm.internal
    def shapes(n: hpvm.i64, x: hpvm.f32):
        for node in [
            hpvm.create_node(scale),
            hpvm.create_node_1d(scale, n),
            hpvm.create_node_2d(scale, n, 2),
            hpvm.create_node_3d(scale, n, 2, 3),
            hpvm.create_node_nd(3, scale, n, 2, 3),
            hpvm.create_node_nd(0, scale),
        ]:
            hpvm.bind_in(node, 1, 0)

    hpvm.verify(shapes)
    assert [node.dims for node in shapes.graph.nodes] == [0, 1, 2, 3, 3, 0]
    assert shapes.graph.nodes[3].sizes == shapes.graph.nodes[4].sizes == (ParamExpr("n"), Const(2), Const(3))


def test_create_node_nd_with_the_wrong_number_of_sizes():
    @hpvm.internal
    def miscounted(x: hpvm.f32):
        hpvm.create_node_nd(2, scale, 4)  # @miscounted

    message = _traced_error(miscounted)
    assert f"node 'scale' at {at('miscounted')}: create_node_nd(2, ...) needs 2 sizes, got 1" in message


def test_create_node_of_a_plain_function():
    def plain(x):
        return x

    @hpvm.internal
    def wraps_plain(x: hpvm.f32):
        hpvm.create_node(plain)  # @plain

    message = _traced_error(wraps_plain)
    assert f"hpvm.create_node() at {at('plain')}: 'plain' is not a node function" in message


@pytest.mark.parametrize(
    "args, expected",
    [
        ((5, 0, 0), "repl must be hpvm.ONE_TO_ONE (0) or hpvm.ALL_TO_ALL (1), not 5"),
        ((hpvm.ALL_TO_ALL, "0", 0), "sp must be an int, not '0'"),
        ((hpvm.ALL_TO_ALL, 0, 1.0), "dp must be an int, not 1.0"),
    ],
    ids=["repl", "sp", "dp"],
)
def test_bad_edge_arguments(args, expected):
    @hpvm.internal
    def wired(x: hpvm.f32):
        a = hpvm.create_node(scale)
        b = hpvm.create_node(scale)
        hpvm.bind_in(a, 0, 0)
        hpvm.edge(a, b, *args)  # @wired

    message = _traced_error(wired)
    assert f"hpvm.edge() at {at('wired')}: {expected}" in message


def test_edge_to_a_port_name_that_does_not_exist():
    @hpvm.internal
    def named(x: hpvm.f32):
        a = hpvm.create_node(scale)
        b = hpvm.create_node(scale)
        hpvm.bind_in(a, "x", "x")
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, "y")  # @named-port

    with fails(
        hpvm.VerificationError,
        f"hpvm.edge() at {at('named-port')}",
        "leaf 'scale'",
        "has no input named 'y' (its inputs are x)",
    ):
        hpvm.verify(named)


def test_edge_to_something_that_is_not_a_node():
    @hpvm.internal
    def not_a_node(x: hpvm.f32):
        a = hpvm.create_node(scale)
        hpvm.edge(a, scale, hpvm.ALL_TO_ALL, 0, 0)  # @not-node

    message = _traced_error(not_a_node)
    assert (
        f"hpvm.edge() at {at('not-node')}: the destination must be a node returned by hpvm.create_node*()"
        in message
    )


@pytest.mark.parametrize(
    "call, api",
    [
        (lambda: hpvm.create_node(scale), "create_node"),
        (lambda: hpvm.create_node_1d(scale, 4), "create_node_1d"),
        (lambda: hpvm.create_node_nd(2, scale, 4, 4), "create_node_nd"),
        (lambda: hpvm.edge(None, None, hpvm.ONE_TO_ONE, 0, 0), "edge"),
        (lambda: hpvm.bind_in(None, 0, 0), "bind_in"),
        (lambda: hpvm.bind_out(None, 0, 0), "bind_out"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_builder_calls_outside_an_internal_node(call, api):
    with fails(
        hpvm.TracingError,
        f"hpvm.{api}() builds a child graph and can only be called inside an @hpvm.internal",
    ):
        call()


def test_builder_call_outside_names_the_caller_line():
    with fails(hpvm.TracingError, f"({at('outside-call')})"):
        hpvm.create_node(scale)  # @outside-call


def test_calling_an_internal_function_directly():
    @hpvm.internal  # @called
    def called(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node(scale), 0, 0)

    with fails(
        hpvm.TracingError, f"internal 'called' ({at('called')}) is a graph builder and cannot be called"
    ):
        called(1.0)


def test_calling_an_internal_function_from_a_builder():
    @hpvm.internal
    def inner(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node(scale), 0, 0)

    @hpvm.internal
    def outer(x: hpvm.f32):
        inner(x)  # @calls-inner

    message = _traced_error(outer)
    assert (
        "internal 'inner'" in message
        and "cannot be called" in message
        and f"line {line_of('calls-inner')}" in message
    )


# ---------------------------------------------------------------------------------------
# Leaf intrinsics need a running graph; leaves are plain Python otherwise


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: hpvm.get_node(), "get_node"),
        (lambda: hpvm.get_parent_node(None), "get_parent_node"),
        (lambda: hpvm.get_num_dims(None), "get_num_dims"),
        (lambda: hpvm.get_node_instance_id_x(None), "get_node_instance_id_x"),
        (lambda: hpvm.get_num_node_instances_z(None), "get_num_node_instances_z"),
        (lambda: hpvm.malloc(16), "malloc"),
        (lambda: hpvm.barrier(), "barrier"),
        (lambda: hpvm.atomic_add(np.zeros(1, np.int32), 0, 1), "atomic_add"),
        (lambda: hpvm.atomic_xor(np.zeros(1, np.int32), 0, 1), "atomic_xor"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_leaf_intrinsics_outside_a_running_graph(call, name):
    with fails(hpvm.RuntimeStateError, f"hpvm.{name}() is a leaf intrinsic", "while a graph runs"):
        call()


def test_leaf_using_an_intrinsic_called_directly():
    @hpvm.leaf
    def where_am_i(x: hpvm.f32) -> hpvm.i64:
        return hpvm.get_node_instance_id_x(hpvm.get_node())

    with fails(hpvm.RuntimeStateError, "hpvm.get_node() is a leaf intrinsic"):
        where_am_i(1.0)


def test_leaf_called_directly_runs_its_python():
    @hpvm.leaf(ins=("a",), outs=("out",))
    def saxpy(alpha: hpvm.f32, a: hpvm.f32[:], out: hpvm.f32[:]) -> tuple[hpvm.f32, hpvm.i64]:
        total = 0.0
        for i in range(a.shape[0]):
            out[i] = alpha * a[i] + out[i]
            total += out[i]
        return total, a.shape[0]

    a = np.arange(4, dtype=np.float32)
    out = np.ones(4, dtype=np.float32)
    assert saxpy(2.0, a, out) == (16.0, 4)
    np.testing.assert_array_equal(out, [1, 3, 5, 7])
    copy = np.zeros((2, 2), np.float32)
    copy_row(np.eye(2, dtype=np.float32), copy, 1)
    np.testing.assert_array_equal(copy, [[0, 0], [0, 1]])
    assert scale(np.float32(1.5)) == 3.0
