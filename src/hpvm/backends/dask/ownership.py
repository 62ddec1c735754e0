"""Which elements each chunk of a replicated leaf owns, where the leaf's indexing proves it.

Why. Splitting a node's instances over workers is only correct when the result of each
instance depends on, and lands in, elements no other chunk touches. The Dask back end
splits a replicated leaf along its outermost dimension x and hands each chunk *row slices*
of the arrays (``a[lo:hi]``), running the chunk as a node of ``hi - lo`` instances. That is
the same computation exactly when the leaf uses its instance id x for nothing but the first
index of its array parameters: then instance ``lo + k`` of the original node and instance
``k`` of the chunk read and write the same elements, each chunk owns rows ``[lo, hi)`` of
every array, and only those rows come back.

What ``slicing_problem`` accepts (anything else keeps the node on one worker, and the
returned reason says why): a Python leaf whose source can be read, whose every subscript of
an array parameter has, on its first axis, the instance id x (``hpvm.get_node_instance_id_x``
of ``hpvm.get_node()``, directly or through a variable assigned once); whose array
parameters are used only so subscripted or as ``a.shape[k]`` with a constant ``k >= 1``
(the first extent changes in a chunk), and never reassigned; whose id x appears nowhere
else (``out[i] = i`` would compute from it); and which does not call the intrinsics whose
meaning spans the whole grid: ``get_num_node_instances_x``, ``barrier`` and ``malloc``
(one buffer per parent instance: here all instances share it). Sound by construction:
false negatives only.

Offsets. The first index may also be the id x plus a constant ``c >= 0`` (``k = id + 1``,
then ``a[k + 1]``: offset 2), as stencils index. Instance ``lo + k`` still matches chunk
instance ``k`` on the slice ``a[lo : hi + cmax]``; ``Ownership.rows`` gives each array's
lowest and highest offset, so a chunk gets the rows past its own that it reads (a halo).
An array the leaf writes must be indexed at one offset ``c`` only: the chunk then owns
rows ``[lo + c, hi + c)`` of it, and no other chunk reads them. A negative offset would be
a negative index into the slice (which wraps), so it is refused.

Broadcast. A read-only array whose subscripts never involve the instance id x (``b[k, j]``
in a matrix product, a lookup table) reads the same elements in every chunk: it is sent
whole to each (``Ownership.broadcast``). An array indexed both ways, or written without
the id, is refused.

Atomics. An array parameter used *only* as the target of commutative atomics — ``add`` /
``sub``, ``min``, ``max``, ``and``, ``or``, ``xor``, one family per array, each call a
statement of its own (its returned old value unused) — is not owned by rows: every chunk
may update any element. ``analyse`` reports it with its family (``COMBINE``); each chunk
then updates a private copy starting at the family's identity (zeros for add/sub/xor; the
array's own values for min/max/and/or, which are idempotent) and the host combines the
copies exactly (integers) or within rounding (floats: the sums are regrouped). ``xchg``,
an atomic whose old value is used, or an atomic array also read or written by subscript
keep the node on one worker.
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from dataclasses import dataclass, field

from ...ir import pyast
from ...ir.graph import LeafFunction
from ...ir.leafir import LeafIRUnsupported, leaf_ir
from ...ir.leafir.analyses import ownership
from ...ir.types import ArrayType

_ID_X = "get_node_instance_id_x"
_GET_NODE = "get_node"
_SPANNING = {"get_num_node_instances_x", "barrier", "malloc"}
#: Commutative atomics and the family whose per-chunk results combine into the same array.
COMBINE = {"add": "add", "sub": "add", "min": "min", "max": "max", "and": "and", "or": "or", "xor": "xor"}


@dataclass
class Ownership:
    """What ``analyse`` found: ``problem`` (why the node cannot be split), or the array
    parameters updated only by commutative atomics, by name, with their ``COMBINE`` family."""

    problem: str | None = None
    combined: dict[str, str] = field(default_factory=dict)
    #: array parameter -> (lowest, highest) offset from the instance id x of the rows it
    #: indexes; a written array has one offset (the row it owns), read-only ones may read a
    #: halo of later rows
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: read-only arrays indexed without the instance id x: every chunk gets them whole
    broadcast: set[str] = field(default_factory=set)


def _called(node: ast.AST) -> str | None:
    """The name of the function a call calls (``hpvm.f(...)`` or ``f(...)``)."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _aliased_intrinsic(leaf: LeafFunction, func: ast.AST) -> str | None:
    """Why not, when the leaf calls an hpvm function under another name
    (``from hpvm import get_num_node_instances_x as count``): the analysis reads names."""
    scope = getattr(getattr(leaf.body, "pyfunc", None), "__globals__", {})
    for sub in ast.walk(func):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            target = scope.get(sub.func.id)
            module = getattr(target, "__module__", None) or ""
            real = getattr(target, "__name__", sub.func.id)
            if module.split(".")[0] == "hpvm" and real != sub.func.id:
                return f"leaf '{leaf.name}' calls hpvm's {real} as '{sub.func.id}'"
    return None


def slicing_problem(leaf: LeafFunction) -> str | None:
    """``None`` when the leaf's chunks can run apart (module doc), else why not."""
    return analyse(leaf).problem


def analyse(leaf: LeafFunction) -> Ownership:
    """How the leaf's chunks own their arrays (module doc), read off the leaf IR's cached
    ownership analysis; a leaf outside the IR's dialect is not owned (it stays on one worker)."""
    if leaf.body_kind != "python":
        return Ownership(
            problem=f"leaf '{leaf.name}' has a {leaf.body_kind} body (only Python bodies are analysed)"
        )
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported as refused:
        return Ownership(
            problem=f"leaf '{leaf.name}' is not analysed: {refused.construct} is outside the leaf IR"
        )
    return ownership(ir, frozenset(leaf.outs))


def analyse_ast(leaf: LeafFunction) -> Ownership:
    """How the leaf's chunks own their arrays (module doc)."""
    found = _analyse(leaf)
    return found if isinstance(found, Ownership) else Ownership(problem=found)


def _analyse(leaf: LeafFunction) -> str | Ownership:
    if leaf.body_kind != "python":
        return f"leaf '{leaf.name}' has a {leaf.body_kind} body (only Python bodies are analysed)"
    try:
        tree = pyast.parse(textwrap.dedent(leaf.source))
    except (OSError, SyntaxError, TypeError):
        return f"the source of leaf '{leaf.name}' cannot be read"
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return f"the source of leaf '{leaf.name}' has no function definition"
    aliased = _aliased_intrinsic(leaf, func)
    if aliased is not None:
        return aliased
    names = [a.arg for a in func.args.args[: len(leaf.params)]]
    arrays = {n for n, p in zip(names, leaf.params) if isinstance(p.type, ArrayType)}
    stores = Counter(n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    for name in sorted(arrays):
        if stores[name]:
            return f"leaf '{leaf.name}' assigns its array parameter '{name}'"
    node_vars = {
        s.targets[0].id
        for s in func.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and stores[s.targets[0].id] == 1
        and _called(s.value) == _GET_NODE
    }

    def own_id_call(expr: ast.AST) -> bool:
        if _called(expr) != _ID_X or len(expr.args) != 1:  # type: ignore[attr-defined]
            return False
        arg = expr.args[0]  # type: ignore[attr-defined]
        return _called(arg) == _GET_NODE or (isinstance(arg, ast.Name) and arg.id in node_vars)

    id_vars: dict[str, int] = {}  # variables holding the instance id x plus a constant
    allowed: set[int] = set()  # ids of the AST nodes whose use of an id / array is accounted for

    def id_offset(expr: ast.AST) -> int | None:
        """``c`` when ``expr`` is the instance id x plus the integer constant ``c``."""
        if own_id_call(expr):
            return 0
        if isinstance(expr, ast.Name):
            return id_vars.get(expr.id)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            right = expr.right
            if isinstance(right, ast.Constant) and type(right.value) is int:
                base = id_offset(expr.left)
                if base is not None:
                    return base + right.value if isinstance(expr.op, ast.Add) else base - right.value
            left = expr.left
            if isinstance(expr.op, ast.Add) and isinstance(left, ast.Constant) and type(left.value) is int:
                base = id_offset(right)
                return None if base is None else base + left.value
        return None

    def mark(expr: ast.AST) -> None:
        for n in ast.walk(expr):
            if (isinstance(n, ast.Name) and n.id in id_vars) or own_id_call(n):
                allowed.add(id(n))

    for s in func.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            target = s.targets[0].id
            offset = id_offset(s.value)
            if stores[target] == 1 and offset is not None:
                mark(s.value)
                id_vars[target] = offset

    offsets: dict[str, set[int]] = {}
    plain: set[str] = set()  # arrays indexed without the instance id somewhere
    combined: dict[str, str] = {}
    statements = {id(n.value) for n in ast.walk(func) if isinstance(n, ast.Expr)}
    for sub in ast.walk(func):
        name = _called(sub)
        if name is None or not name.startswith("atomic_"):
            continue
        op = name[len("atomic_") :]
        family = COMBINE.get(op)
        line = leaf.location.line + sub.lineno - 1
        if family is None:
            return f"leaf '{leaf.name}' calls {name} (line {line}), which does not combine across chunks"
        if id(sub) not in statements:
            return f"leaf '{leaf.name}' uses the old value {name} returns (line {line}), which depends on other chunks"
        target = sub.args[0] if sub.args else None  # type: ignore[attr-defined]
        if not isinstance(target, ast.Name) or target.id not in arrays:
            return f"leaf '{leaf.name}' calls {name} (line {line}) on something other than an array parameter"
        if combined.setdefault(target.id, family) != family:
            return f"leaf '{leaf.name}' mixes atomics of different kinds on '{target.id}'"
        allowed.add(id(target))
    for sub in ast.walk(func):
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id in combined:
            return (
                f"leaf '{leaf.name}' indexes '{sub.value.id}' (line {leaf.location.line + sub.lineno - 1}), "
                "which it also updates with atomics"
            )
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id in arrays:
            index = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            offset = id_offset(index[0]) if index else None
            if offset is None and not any(
                (isinstance(n, ast.Name) and n.id in id_vars) or own_id_call(n) for n in ast.walk(sub.slice)
            ):
                plain.add(sub.value.id)  # an element every chunk reads alike (if never written)
                allowed.add(id(sub.value))
                continue
            if offset is None:
                return (
                    f"leaf '{leaf.name}' indexes '{sub.value.id}' at line {leaf.location.line + sub.lineno - 1} "
                    "with something other than its instance id x (plus a constant) on the first axis"
                )
            if offset < 0:
                return (
                    f"leaf '{leaf.name}' indexes '{sub.value.id}' at line {leaf.location.line + sub.lineno - 1} "
                    "before the row of its own instance (a negative offset from the instance id x)"
                )
            offsets.setdefault(sub.value.id, set()).add(offset)
            allowed.add(id(sub.value))
            mark(index[0])
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.value, ast.Attribute)
            and sub.value.attr == "shape"
            and isinstance(sub.value.value, ast.Name)
            and sub.value.value.id in arrays
            and isinstance(sub.slice, ast.Constant)
            and type(sub.slice.value) is int
            and sub.slice.value >= 1
        ):
            allowed.add(id(sub.value.value))
    for sub in ast.walk(func):
        name = _called(sub)
        if name in _SPANNING:
            return f"leaf '{leaf.name}' calls {name}, whose meaning spans all instances of the node"
        if name == _ID_X and id(sub) not in allowed:
            return f"leaf '{leaf.name}' uses its instance id x other than as the first index of an array"
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and id(sub) not in allowed:
            if sub.id in arrays:
                return f"leaf '{leaf.name}' uses its array '{sub.id}' other than indexed by its instance id x"
            if sub.id in id_vars:
                return f"leaf '{leaf.name}' uses its instance id x ('{sub.id}') other than as the first index of an array"
    written = set(leaf.outs) | {
        n.value.id
        for n in ast.walk(func)
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for name in sorted(written & set(offsets)):
        if len(offsets[name]) > 1:
            return (
                f"leaf '{leaf.name}' reads or writes '{name}', which it writes, at several rows "
                f"around its instance ({', '.join(f'x + {c}' for c in sorted(offsets[name]))})"
            )
    for name in sorted(plain):
        if name in written:
            return f"leaf '{leaf.name}' writes '{name}' at elements that do not follow its instance id x"
        if name in offsets:
            return (
                f"leaf '{leaf.name}' indexes '{name}' both by its instance id x and without it "
                "(a chunk holds only its rows)"
            )
    return Ownership(
        combined=combined,
        rows={name: (min(c), max(c)) for name, c in offsets.items()},
        broadcast=plain,
    )
