"""Whether a leaf's run is bounded by what the host can see before it starts.

The runtime runs a launch on the calling thread, instead of a worker, only when it cannot
wait on anything and cannot run long (``runtime/quick.py``); a stream fuses its stages on
the host, or runs a stage's items two at a time, only when no item can spin
(``runtime/streaming.py``, ``runtime/replicas.py``). Both are properties of the leaves'
code, checked here once per leaf from its syntax tree (and cached on it):

- no ``while`` loop (``unbounded_reason``): a leaf that spins on a flag another launch
  writes would hang the caller that runs it, where on a worker it waits until that launch
  runs; and a ``while`` on a scalar need not end for every value (Collatz's steps), which
  a fused stream, running each new item's value on the host, cannot know beforehand.
  ``keyed_reason``, the quick launches' verdict, accepts a ``while`` whose test reads no
  array contents (no element, no local assigned from one, no atomic's result): on
  scalars, shapes, ids and the locals computed from them (a tree reduction's ``while
  stride > 0: ... stride //= 2``) it turns as many times on every run with the same of
  those values — which a launch's run key holds (``quick.work_params``: a scalar of a leaf
  with a loop is work) — as a ``for`` over them does; one that never ends does so on its
  key's first run, which a worker runs, and is never timed as short;
- no early exit (``break``, ``return``) inside a ``for`` or ``while`` loop: a loop that
  stops when it sees a value may run to its end next time;
- no ``for`` loop whose bounds depend on array contents (an element read, directly or
  through local variables assigned from one, or an array iterated over whose elements
  bound an inner loop): the runtime predicts a run's duration from its arrays' shapes and
  dtypes and its scalars' values, not from what the arrays hold;
- no call of one of the user's own functions (a helper's loops are not looked at: refused
  rather than followed), and a Python body or an LLVM one (a generated body is not read).
  An LLVM body (HPVM-C leaves) is read by ``llvmbounded.py``: every loop leaves on a test
  of values the host determines (no load, atomic or call result among what the test is
  computed from), and calls of LLVM intrinsics and hpvm's queries and atomics only — the
  same for both verdicts.

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
_KEYED_KEY = "_keyed_reason"
_FIXED_KEY = "_fixed_work"
#: NumPy functions whose work (or result's size) is set by a size argument.
_SIZED = frozenset(
    {"zeros", "empty", "ones", "full", "arange", "linspace", "logspace", "geomspace", "repeat", "tile", "eye",
     "identity", "tri", "resize", "broadcast_to"}
)  # fmt: skip
_SHAPE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "dtype"})


def unbounded_reason(leaf: LeafFunction) -> str | None:
    """Why ``leaf``'s run time is not bounded by its scalars and shapes (``None``: it is):
    no ``while`` loop at all, so that every run ends (module docstring). Checked once per
    leaf and cached on it."""
    return _cached(leaf, _CACHE_KEY, whiles=False)


def keyed_reason(leaf: LeafFunction) -> str | None:
    """Why ``leaf``'s run time is not set by a launch's run key — its scalars' values and
    its arrays' shapes (``None``: it is): ``unbounded_reason``'s rules but for a ``while``
    whose test reads no array contents (module docstring). Cached on the leaf."""
    return _cached(leaf, _KEYED_KEY, whiles=True)


def _cached(leaf: LeafFunction, key: str, whiles: bool) -> str | None:
    cached = leaf.__dict__.get(key, False)
    if cached is False:
        cached = leaf.__dict__[key] = _reason(leaf, whiles)
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


def _reason(leaf: LeafFunction, whiles: bool) -> str | None:
    """The first rule ``leaf`` breaks (module docstring); ``whiles``: a ``while`` on what is
    not array contents passes (``keyed_reason``)."""
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
            if _exits_early(node):
                return f"{where}{node.lineno}) leaves a while loop early (break or return)"
            if not whiles:
                return f"{where}{node.lineno}) has a while loop"
            if _reads(node.test, arrays, contents):
                return f"{where}{node.lineno}) has a while loop whose test depends on array contents"
            continue
        if isinstance(node, (ast.For, ast.comprehension)):
            loop = node if isinstance(node, ast.For) else None
            line = getattr(node, "lineno", getattr(node.iter, "lineno", 0))
            if loop is not None and _exits_early(loop):
                return f"{where}{line}) leaves a for loop early (break or return)"
            if not (isinstance(node.iter, ast.Name) and node.iter.id in arrays) and _reads(
                node.iter, arrays, contents
            ):
                return f"{where}{line}) has a for loop whose bounds depend on array contents"
        if isinstance(node, ast.Call) and user_function(node.func, env) is not None:
            return f"{where}{node.lineno}) calls a function of its own ({ast.unparse(node.func)})"
    return None


def _exits_early(loop: ast.For | ast.While) -> bool:
    """Whether a ``break`` or ``return`` sits anywhere in ``loop``'s body (an inner loop's
    ``break`` too: conservative, never an unbounded loop accepted)."""
    return any(isinstance(n, (ast.Break, ast.Return)) for b in loop.body for n in ast.walk(b))


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
