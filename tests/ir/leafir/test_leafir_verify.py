"""The verifier: one test per rule, each on an IR that breaks only that rule."""

from __future__ import annotations

import pytest

from hpvm.errors import VerificationError
from hpvm.ir.graph import Param
from hpvm.ir.intrinsics import INTRINSICS
from hpvm.ir.leafir import ops, rules
from hpvm.ir.leafir.verify import leaf_problems, verify_leaf
from hpvm.ir.types import node_t, parse_type

I64, F64, F32 = parse_type("i64"), parse_type("f64"), parse_type("f32")
A = ops.Var("a", parse_type("f64[:]"))
N = ops.Var("n", I64)
S = ops.Var("s", F64)


def leaf(*body: ops.Stmt, outputs: tuple = (), locals_: tuple = (("s", F64),)) -> ops.LeafIR:
    params = (Param("a", A.type), Param("n", I64))
    return ops.LeafIR("t", params, outputs, locals_, tuple(body), "t.py", 1)


def node() -> ops.Expr:
    return rules.intrinsic(INTRINSICS["get_node"], [])


GOOD = (ops.Assign(S, rules.cast(N, F64), 2), ops.Store(A, (N,), S, 3))


def test_a_good_leaf_has_no_problems() -> None:
    verify_leaf(leaf(*GOOD))


@pytest.mark.parametrize(
    "body, dims, problem",
    [
        ((ops.Assign(S, N, 2),), None, "'s' (f64) is assigned a i64"),
        ((ops.Store(A, (N,), N, 2),), None, "a store of i64 into an element of f64[:]"),
        ((ops.Store(A, (S,), S, 2),), None, "'s' is read before any statement assigns it"),
        ((ops.Assign(ops.Var("s", I64), N, 2),), None, "'s' is used as i64 but declared f64"),
        ((ops.Assign(ops.Var("q", I64), N, 2),), None, "'q' is neither a parameter nor a declared local"),
        ((ops.Break(2),), None, "'break' outside a loop"),
        ((ops.If(N, (ops.Continue(3),), (), 2),), None, "'continue' outside a loop"),
        ((ops.ExprStmt(ops.Binary("+", N, N, F32), 2),), None, "Binary typed f32, but its operands give i64"),
        ((ops.ExprStmt(ops.Binary("&", S, S, F64), 2), *GOOD), None, "'&' is not defined on f64 and f64"),
        ((ops.While(A, (), 2),), None, "a condition of type f64[:]"),
        ((ops.Return((N,), 2),), None, "return gives 1 value(s) for 0 output(s)"),
        ((ops.Assign(S, S, 0),), None, "a statement without a source line"),
        (
            (ops.Store(A, (N,), ops.Cast(ops.IntrinsicOp(INTRINSICS["barrier"], (), None), F64), 2),),
            None,
            "hpvm.barrier() must be a statement of its own",
        ),
        (
            (ops.ExprStmt(rules.intrinsic(INTRINSICS["get_node_instance_id_y"], [node()]), 2),),
            1,
            "hpvm.get_node_instance_id_y() of the leaf's own node: it is replicated in 1 dimension(s)",
        ),
        (
            (ops.ExprStmt(ops.IntrinsicOp(INTRINSICS["atomic_add"], (A, N), F64), 2),),
            None,
            "hpvm.atomic_add() takes 3 argument(s), not 2",
        ),
        (
            (ops.For(ops.Var("s", F64), N, S, rules.const(1), (), 2),),
            None,
            "range() needs integer bounds, not f64",
        ),
        (
            (ops.For(ops.Var("n", I64), N, N, rules.const(0), (), 2),),
            None,
            "range() with a step of zero",
        ),
    ],
)
def test_each_rule(body: tuple, dims: int | None, problem: str) -> None:
    problems = leaf_problems(leaf(*body), dims)
    assert problems, "the verifier accepted it"
    assert any(problem in p for p in problems), problems
    assert all(p.startswith("t.py:") and "leaf 't'" in p for p in problems)
    with pytest.raises(VerificationError):
        verify_leaf(leaf(*body), dims)


def test_a_query_of_an_existing_axis_or_of_the_parent_is_fine() -> None:
    parent = rules.intrinsic(INTRINSICS["get_parent_node"], [node()])
    nd = ops.Var("nd", node_t)
    body = (
        ops.Assign(nd, node(), 2),
        ops.ExprStmt(rules.intrinsic(INTRINSICS["get_node_instance_id_x"], [nd]), 3),
        ops.ExprStmt(rules.intrinsic(INTRINSICS["get_node_instance_id_z"], [parent]), 4),
    )
    assert leaf_problems(leaf(*body, locals_=(("nd", node_t),)), dims=1) == []
    bad = (*body, ops.ExprStmt(rules.intrinsic(INTRINSICS["get_node_instance_id_y"], [nd]), 5))
    assert len(leaf_problems(leaf(*bad, locals_=(("nd", node_t),)), dims=1)) == 1


def test_names_twice() -> None:
    problems = leaf_problems(leaf(locals_=(("s", F64), ("n", I64))))
    assert problems == ["t.py:1: leaf 't': 'n' is declared twice"]
