"""Checked mode: every array index a leaf writes is tested against its extent.

Why. Compiled code does not check bounds (that is where the speed comes from), so an
off-by-one in a leaf reads or writes other memory, or corrupts the heap and crashes the
process. The interpreter finds such mistakes, but a program too slow for it, or one whose
result differs only on ``cpu``, needs the check where it runs. Checked mode
(``hpvm.backends.cpu.configure(checked=True)``, ``HPVM_CPU_CHECKED=1``) compiles every leaf
with its indices guarded; it is off by default.

How. Numba's own ``boundscheck=True`` would not do: it wraps a negative index before it
checks it (``a[-1]`` reads the last element, where the interpreter raises), and its
``IndexError`` says neither which leaf, line nor array. So the clone's syntax tree is
rewritten instead: every integer index of a subscript rooted at a name, ``a[i]``,
``a[i, j]``, ``a[i][j]`` (and an atomic's index), becomes ``__hpvm_ix(a, axis, i, code)``,
which returns ``i`` when ``0 <= i < a.shape[axis]`` (one unsigned compare) and otherwise
raises ``IndexError(code, i, size, context)``. ``code`` names the access: the leaf, its
line and the array, recorded here when the clone is rewritten; ``context`` is the failing
instance's (the clone's ``__hpvm_ctx``: its ids and extents, then its parent's, as many
levels as the graph passes). The exception takes the channel a ``raise`` in a leaf takes (parallel
loops: ``loop_errors.py``), and ``raised.py`` turns it into an ``OutOfBoundsError`` naming
the node, leaf, line, array, index and size, and the instance in the node's path as the
interpreter writes it (``root/tiles[0, 1]/element[3, 7]``). (The
instance is the context's, so checked code never jams a leaf: a jammed clone runs several
instances under one context. ``GraphGen(jam=False)``.)

``code`` is a hash of the clone's symbol (which carries a digest of the leaf) and the
access's ordinal, not a counter: Numba's disk cache keys a function by its bytecode, which
holds constants only by position, so a code must mean the same access in every process.

Leaves with barriers run as a group function generated from their phases
(``barrier_emit.py``), not the clone's def: its syntax tree is guarded the same way
(``checked_group``), each access named by the leaf's line its generated line comes from;
inside its work-item loops an access names the loop variables' instance, and a statement
hoisted out of them (the same for every instance) names none. (Before, it was compiled with
Numba's ``boundscheck``: an error named only the graph, and a negative index wrapped.)

Not covered: a subscript whose base is not a plain name (``f(x)[i]``), an index below a
slice (``a[1:][i]``), and slices themselves (they clamp, as in NumPy).
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import SourceLocation
from ...ir import instance_context as ictx
from ...ir import pyast
from ...ir.bodies import GeneratedBody
from ...ir.graph import LeafFunction
from ...ir.leafir.pyemit import CTX_PARAM
from ...passes.clone_leaves import LeafClone
from .barrier_emit import DIMS, EXTENTS, IDS, PARENT

INDEX = "__hpvm_ix"
#: The guard that also names the instance: ``__hpvm_ixi(a, axis, i, code, context)``.
INDEX_AT = "__hpvm_ixi"
#: Versions checked code (in its generated files' header, beside CODEGEN_VERSION): bump
#: when the guards change (2: leaves' own functions no longer disk-cached in checked mode,
#: where graph code cached by 1 could name the unchecked ones' modules; 3: LLVM leaves'
#: pointers followed through phi/select/local slots, memcpy/memset, atomics, callees; 4:
#: an LLVM leaf's wrapper passes the failing instance's ids, numba_call._instance; barrier
#: leaves' group functions guarded here, not by Numba's boundscheck; 5: a Python leaf's
#: guards pass the failing instance's context, and checked code jams no leaf; 7: an LLVM
#: leaf's wrapper passes its whole context too).
CHECKED_VERSION = 7


@dataclass(frozen=True)
class Access:
    """One guarded index: where it is written and what it indexes."""

    leaf: LeafFunction  # the leaf as written (``LeafClone.user``)
    where: str  # its file and line, as messages say them
    array: str  # the name it indexes, as the leaf spells it
    axis: int


#: code -> access, for every clone rewritten in this process
ACCESSES: dict[int, Access] = {}


def check_index(a: Any, axis: int, i: Any, code: int) -> Any:
    """``i`` if it indexes ``a``'s axis ``axis``, else ``IndexError(code, i, size)``
    (the Python meaning of what compiled code calls: ``_overload_check_index``)."""
    n = a.shape[axis]
    if not 0 <= i < n:
        raise IndexError(code, int(i), n)
    return i


def check_index_at(a: Any, axis: int, i: Any, code: int, context: tuple[int, ...]) -> Any:
    """``check_index`` naming the instance: ``IndexError(code, i, size, context)``."""
    n = a.shape[axis]
    if not 0 <= i < n:
        raise IndexError(code, int(i), n, tuple(context))
    return i


_REGISTERED = False


def checked_helpers() -> dict[str, Any]:
    """The names a rewritten clone calls (the overload registered with Numba once)."""
    global _REGISTERED
    if not _REGISTERED:
        _register()
        _REGISTERED = True
    return {INDEX: check_index, INDEX_AT: check_index_at}


def _register() -> None:
    import numpy as np
    from numba.core import types
    from numba.extending import overload

    @overload(check_index, inline="always")
    def _overload_check_index(a, axis, i, code):  # type: ignore[no-untyped-def]
        if not isinstance(a, types.Array) or not isinstance(i, types.Integer):
            return lambda a, axis, i, code: i  # a tuple, an index array, ...: as written

        def impl(a, axis, i, code):  # type: ignore[no-untyped-def]
            n = a.shape[axis]
            if np.uint64(i) >= np.uint64(n):  # (a negative i is a huge unsigned one)
                raise IndexError(code, np.int64(i), n)
            return i

        return impl

    @overload(check_index_at, inline="always")
    def _overload_check_index_at(a, axis, i, code, context):  # type: ignore[no-untyped-def]
        if not isinstance(a, types.Array) or not isinstance(i, types.Integer):
            return lambda a, axis, i, code, context: i

        def impl(a, axis, i, code, context):  # type: ignore[no-untyped-def]
            n = a.shape[axis]
            if np.uint64(i) >= np.uint64(n):
                raise IndexError(code, np.int64(i), n, context)
            return i

        return impl


def checked_func(clone: LeafClone, func: ast.FunctionDef | None = None) -> ast.FunctionDef:
    """A copy of the clone's def (``func``: another def of it) with its indices guarded;
    its accesses recorded in ``ACCESSES``. Each guard names the instance the def's context
    parameter holds (a clone called once per instance: checked code jams nothing)."""
    tree = copy.deepcopy(func if func is not None else clone.func)
    guard = _Guard(clone.user, clone.symbol, lambda line: _where(clone, line))
    if any(a.arg == CTX_PARAM for a in tree.args.args):
        guard.instance = _read(CTX_PARAM)
    guard.visit(tree)
    return ast.fix_missing_locations(tree)


def checked_group(leaf: LeafFunction, symbol: str, file: str, lines: list[tuple[str, int]]) -> ast.Module:
    """The group function of a barrier leaf (``barrier_emit.GroupSource``: its source
    ``lines``, each with the leaf's line it comes from, in ``file``) with its indices
    guarded as a clone's are: the same unsigned compare and message, naming the leaf's
    line. ``symbol`` (the group function's, which carries a digest of its source) keys the
    accesses' codes."""
    tree = pyast.parse("\n".join(text for text, _ in lines) + "\n")
    _GroupGuard(leaf, symbol, lambda line: str(SourceLocation(file, lines[line - 1][1]))).visit(tree)
    return ast.fix_missing_locations(tree)


@dataclass(frozen=True)
class Failed:
    """A checked index out of bounds: where, the index, the size, and the failing instance's
    ids by level (its own first, then its parent's, as far as its context goes), or ``None``
    where the guard did not know them."""

    access: Access
    index: int
    size: int
    levels: list[list[int]] | None


def access_of(error: BaseException) -> Failed | None:
    """What a checked index that raised ``error`` was, or ``None``: not one."""
    if type(error) is not IndexError or len(error.args) not in (3, 4):
        return None
    code, index, size, *context = error.args
    access = ACCESSES.get(code) if isinstance(code, int) else None
    if access is None:
        return None
    return Failed(access, int(index), int(size), instance_levels(context[0]) if context else None)


def instance_levels(context: Sequence[Any]) -> list[list[int]]:
    """An instance context's ids by level (``ir/instance_context.py``: ``STRIDE`` values a
    level, its own first), as many per level as that node has dimensions."""
    levels = []
    for at in range(0, len(context) - ictx.STRIDE + 1, ictx.STRIDE):
        dims = int(context[at + ictx.DIMS])
        levels.append([int(v) for v in context[at + ictx.ID : at + ictx.ID + dims]])
    return levels


class _Guard(ast.NodeTransformer):
    """Guards each index; ``leaf`` and ``where`` (a line of the tree -> the place messages
    name) go into ``ACCESSES``, ``symbol`` keys the codes."""

    def __init__(self, leaf: LeafFunction, symbol: str, where: Callable[[int], str]) -> None:
        self.leaf, self.symbol, self.where = leaf, symbol, where
        self.count = 0
        #: the expression of the instance's context where the guards are (a tuple: its ids and
        #: extents, then its parent's), or None (then a guard names no instance)
        self.instance: ast.expr | None = None

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)  # inner subscripts (a[i] of a[i][j]) and the indices first
        base = _base(node.value)
        if base is None:
            return node
        name, axis = base
        if isinstance(node.slice, ast.Tuple):
            node.slice.elts = [
                self._guard(e, name, axis + k, node.lineno) for k, e in enumerate(node.slice.elts)
            ]
        else:
            node.slice = self._guard(node.slice, name, axis, node.lineno)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        fn = node.func
        atomic = isinstance(fn, ast.Name) and fn.id.startswith("__hpvm_atomic_")
        if atomic and len(node.args) >= 2 and isinstance(node.args[0], ast.Name):
            name, index = node.args[0].id, node.args[1]
            if isinstance(index, ast.Tuple):
                index.elts = [self._guard(e, name, k, node.lineno) for k, e in enumerate(index.elts)]
            else:
                node.args[1] = self._guard(index, name, 0, node.lineno)
        return node

    def _guard(self, index: ast.expr, name: str, axis: int, line: int) -> ast.expr:
        if isinstance(index, (ast.Slice, ast.Starred)) or (
            isinstance(index, ast.Constant) and not isinstance(index.value, int)
        ):
            return index  # a slice, ``...``, ``None``: NumPy's meaning
        code = self._code()
        ACCESSES[code] = Access(self.leaf, self.where(line), name, axis)
        args = [ast.Name(name, ast.Load()), ast.Constant(axis), index, ast.Constant(code)]
        if self.instance is not None:
            args.append(copy.deepcopy(self.instance))
        call = ast.Call(
            func=ast.Name(INDEX if self.instance is None else INDEX_AT, ast.Load()), args=args, keywords=[]
        )
        return ast.copy_location(call, index)

    def _code(self) -> int:
        self.count += 1
        text = f"{self.symbol}:{self.count}".encode()
        return int(hashlib.sha1(text).hexdigest()[:15], 16)


class _GroupGuard(_Guard):
    """A barrier leaf's group function: inside a work-item loop (``for __hpvm_i_w``, within
    the loops over z and y, its first statement setting ``__hpvm_i``) a guard names the
    loops' instance; a statement hoisted out of them runs once for every instance alike, and
    names none."""

    def visit_For(self, node: ast.For) -> ast.AST:
        inner = isinstance(node.target, ast.Name) and node.target.id == f"{IDS[0]}_w"
        if not inner or self.instance is not None:
            return self.generic_visit(node)
        node.iter = self.visit(node.iter)  # (its bound: before the instance's ids are set)
        node.orelse = [self.visit(statement) for statement in node.orelse]
        own = ", ".join([*IDS, *EXTENTS, DIMS])
        self.instance = _read(f"({own},) + {PARENT}")
        try:
            node.body = [self.visit(statement) for statement in node.body]
        finally:
            self.instance = None
        return node


def _read(expression: str) -> ast.expr:
    """``expression``'s syntax tree (the context, or the tuple that makes one)."""
    return ast.parse(expression, mode="eval").body


def _base(value: ast.expr) -> tuple[str, int] | None:
    """The name a subscript's value is rooted at and how many axes the subscripts between
    consumed (``a[i]`` of ``a[i][j]``: ``a``, 1); None when not a plain chain of integer
    indices on a name."""
    axis = 0
    while isinstance(value, ast.Subscript):
        elts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
        if any(
            isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value in (None, ...)) for e in elts
        ):
            return None  # below a slice or a new axis, the axes move
        axis += len(elts)
        value = value.value
    if not isinstance(value, ast.Name) or value.id.startswith("__hpvm"):
        return None  # (the context tuple, pools and other generated names are the back end's)
    return value.id, axis


def _where(clone: LeafClone, line: int) -> str:
    """The clone's ``line`` as messages name it. A clone emitted from the leaf IR carries
    the user's lines (a generated body's IR is located in its origin file); a syntax-tree
    clone of a generated body has its text's lines, which ``where`` maps."""
    user = clone.user
    if clone.ir is None and isinstance(user.body, GeneratedBody):
        return str(user.where(line))
    return str(SourceLocation(user.location.file, line))
