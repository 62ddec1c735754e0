"""Whether a leaf's run is bounded by what the host can see before it starts.

The runtime runs a launch on the calling thread, instead of a worker, only when it cannot
wait on anything and cannot run long (``runtime/quick.py``). Both are properties of the
leaves' code, checked here once per leaf from its syntax tree (and cached on it):

- no ``while`` loop: a leaf that spins on a flag another launch writes would hang the
  caller that runs it, where on a worker it waits until that launch runs;
- no early exit (``break``, ``return``) inside a ``for`` loop: a loop that stops when it
  sees a value may run to its end next time;
- no ``for`` loop whose bounds depend on array contents (an element read, directly or
  through local variables assigned from one, or an array iterated over whose elements
  bound an inner loop): the runtime predicts a run's duration from its arrays' shapes and
  dtypes and its scalars' values, not from what the arrays hold;
- no call of one of the user's own functions (a helper's loops are not looked at: refused
  rather than followed), and a Python body or an LLVM one (a generated body is not read).
  An LLVM body (HPVM-C leaves) is read by ``llvmbounded.py``: every loop leaves on a test
  of values the host determines (no load, atomic or call result among what the test is
  computed from), and calls of LLVM intrinsics and hpvm's queries and atomics only.

What is left runs a number of iterations fixed by the scalars, the shapes and the node's
replication, so a run with the same of those takes about as long as the last one did.

Some bounded leaves do the same work whatever their scalars' values (``fixed_work``): no
loop at all, no slice, no NumPy call that takes a size (``np.zeros(n)``), and in LLVM no
``llvm.mem*`` call of a length not constant — one pass of straight-line code per instance,
whose branches choose between paths of fixed length. A row index, a time step or a weight
passed to such a leaf then does not make a new run key (``runtime/quick.work_params``).
The check is conservative: it refuses some bounded leaves (a ``break`` that only ever
shortens a loop), never accepts an unbounded one it can see.
"""

from __future__ import annotations

import ast

from .bodies import LLVMBody
from .graph import LeafFunction
from .helpercalls import user_function
from .leafinfo import parse_leaf, visible_names
from .llvmbounded import llvm_fixed_work, llvm_unbounded_reason
from .types import ArrayType

_CACHE_KEY = "_unbounded_reason"  # (``LeafFunction._forget_facts`` drops it with the others)
_FIXED_KEY = "_fixed_work"
#: NumPy functions whose work (or result's size) is set by a size argument.
_SIZED = frozenset(
    {"zeros", "empty", "ones", "full", "arange", "linspace", "logspace", "geomspace", "repeat", "tile", "eye",
     "identity", "tri", "resize", "broadcast_to"}
)  # fmt: skip
_SHAPE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "dtype"})


def unbounded_reason(leaf: LeafFunction) -> str | None:
    """Why ``leaf``'s run time is not bounded by its scalars and shapes (``None``: it is).
    Checked once per leaf and cached on it."""
    cached = leaf.__dict__.get(_CACHE_KEY, False)
    if cached is False:
        cached = leaf.__dict__[_CACHE_KEY] = _reason(leaf)
    return cached  # type: ignore[return-value]


def fixed_work(leaf: LeafFunction) -> bool:
    """Whether ``leaf`` does the same work whatever its scalars' values (module docstring):
    bounded, with no loop, slice or sized NumPy call. Conservative; cached on the leaf."""
    cached = leaf.__dict__.get(_FIXED_KEY)
    if cached is None:
        cached = leaf.__dict__[_FIXED_KEY] = unbounded_reason(leaf) is None and _fixed(leaf)
    return cached  # type: ignore[no-any-return]


def _fixed(leaf: LeafFunction) -> bool:
    if isinstance(leaf.body, LLVMBody):
        return llvm_fixed_work(leaf.body)
    func = parse_leaf(leaf)
    if func is None:
        return False
    for node in (n for statement in func.body for n in ast.walk(statement)):  # (not `f32[:]`)
        if isinstance(node, (ast.For, ast.While, ast.comprehension, ast.Slice)):
            return False
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in _SIZED:
                return False
    return True


def _reason(leaf: LeafFunction) -> str | None:
    if isinstance(leaf.body, LLVMBody):  # loops the host bounds (``llvmbounded.py``)
        return llvm_unbounded_reason(leaf.body, f"leaf '{leaf.name}' ({leaf.location.file})")
    if leaf.body_kind != "python":
        return f"leaf '{leaf.name}' has a {leaf.body_kind} body"
    func = parse_leaf(leaf)
    if func is None:
        return f"leaf '{leaf.name}' has no readable source"
    where = f"leaf '{leaf.name}' ({leaf.location.file}:"
    env = visible_names(leaf)
    arrays = {p.name for p in leaf.params if isinstance(p.type, ArrayType)}
    contents = _content_names(func, arrays)
    for node in ast.walk(func):
        if isinstance(node, ast.While):
            return f"{where}{node.lineno}) has a while loop"
        if isinstance(node, (ast.For, ast.comprehension)):
            loop = node if isinstance(node, ast.For) else None
            line = getattr(node, "lineno", getattr(node.iter, "lineno", 0))
            if loop is not None and any(
                isinstance(n, (ast.Break, ast.Return)) for b in loop.body for n in ast.walk(b)
            ):
                return f"{where}{line}) leaves a for loop early (break or return)"
            if not (isinstance(node.iter, ast.Name) and node.iter.id in arrays) and _reads(
                node.iter, arrays, contents
            ):
                return f"{where}{line}) has a for loop whose bounds depend on array contents"
        if isinstance(node, ast.Call) and user_function(node.func, env) is not None:
            return f"{where}{node.lineno}) calls a function of its own ({ast.unparse(node.func)})"
    return None


def _reads(expr: ast.AST, arrays: set[str], contents: set[str]) -> bool:
    """Whether ``expr`` reads array contents: an element, a name holding one, or an array
    used other than for its shape (``len(a)``, ``a.shape``... are not reads)."""
    if isinstance(expr, ast.Attribute) and expr.attr in _SHAPE_ATTRIBUTES:
        return False
    if isinstance(expr, ast.Subscript):
        if isinstance(expr.value, ast.Attribute) and expr.value.attr in _SHAPE_ATTRIBUTES:
            return _reads(expr.slice, arrays, contents)
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len":
        return False
    if isinstance(expr, ast.Name):
        return expr.id in contents or expr.id in arrays
    return any(_reads(child, arrays, contents) for child in ast.iter_child_nodes(expr))


def _content_names(func: ast.FunctionDef, arrays: set[str]) -> set[str]:
    """Local names that may hold array contents: assigned (or looped over) from an
    expression that reads them, to a fixed point."""
    contents: set[str] = set()
    bindings: list[tuple[ast.AST, ast.AST]] = []  # (target, value)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            bindings += [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            bindings.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            bindings.append((node.target, node.iter))
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if _reads(value, arrays, contents):
                for name in _bound_names(target):
                    if name not in contents:
                        contents.add(name)
                        changed = True
    return contents


def _bound_names(target: ast.AST) -> list[str]:
    """The local names an assignment target binds (``x``, ``x, y``; not ``a[i]``'s names)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []
