"""Barriers on the CPU: the work-item-loop transformation (PoCL's idea, on the Python AST).

A leaf that calls ``hpvm.barrier()`` synchronizes its instances within one parent instance.
A CPU thread cannot wait for instances that have not run yet, so instead of one call per
instance the back end runs all instances of the leaf (within one parent instance) in one
generated *group function*. Its body is the leaf's body cut at every barrier into
*regions*; each region becomes a loop over the instances (a "work-item loop"), so every
instance finishes region *n* before any starts region *n + 1* — exactly what the barrier
between them promises.

What crosses a barrier:

* **Uniform** values (the same for every instance: parameters, instance counts, parent
  ids, constants and what is computed from them) stay ordinary locals. Every instance
  computes the same value, so after a region's loop the local holds it for the next
  region and for the driver code between regions. A region that only assigns uniform
  locals from call-free expressions (``stride //= 2``) runs once instead of once per
  instance: it has no other effect, so once is the same as every time. A region that both
  reads and updates a uniform local starts every instance from the value it had when the
  region began, so the update is applied once, not once per instance.
* **Varying** values (derived from the instance id, an atomic, ``malloc``, an array read at
  a varying index, or assigned under varying control) that a later region reads are
  *privatized*: one slot per instance in an array indexed by the instance's flat index,
  loaded when a region starts and stored when it ends. Their types come from Numba's type
  inference on the leaf with the barriers stubbed out. A varying value that is a pure
  expression of the instance id (``lid = get_node_instance_id_x(node)``) is recomputed in
  each region instead. Only scalars are privatized; a per-instance array or other object
  that lives across a barrier is a ``CompileError``.

Barriers inside ``if``/``while``/``for`` are supported when the condition (or the loop's
iterable) is uniform: the statement runs once in the driver and its body is split
recursively (PoCL's barrier loops; ``break``/``continue`` of such a loop must be uniform
too). A barrier under a condition that depends on the instance id is a ``CompileError``
naming the leaf, the barrier's line and the condition's line: on a GPU it would be
undefined behaviour and the interpreter reports it as a ``BarrierError``.

``return`` is allowed only after the leaf's last top-level barrier; the group function
returns what the last instance returns (DESIGN.md's last-instance rule).
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir import pyast
from ...ir.leafinfo import leaf_namespace
from ...ir.pyast import walk_own as _walk_own
from ...ir.types import ArrayType, PortType, ScalarType
from ...passes.clone_leaves import BARRIER_MARKER, CTX_PARAM, LeafClone
from ...passes.uniformity import Uniformity as _Uniformity
from ...passes.uniformity import barrier_lines as _barrier_lines
from ...passes.uniformity import escaping_jump as _escaping_jump
from ...passes.uniformity import is_barrier as _is_barrier
from ...passes.uniformity import loads as _loads
from ...passes.uniformity import reads_varying as _reads_varying
from ...passes.uniformity import stores as _stores
from .narrow import MASK

# Names of the group function (the leaf's own names never start with "__hpvm").
_IDS = ("__hpvm_i", "__hpvm_j", "__hpvm_k")
_EXTENTS = ("__hpvm_s0", "__hpvm_s1", "__hpvm_s2")
_DIMS = "__hpvm_dims"
# Which of them holds each value of the leaf's own level of the context tuple.
_OWN_LEVEL = {
    **{ictx.ID + axis: name for axis, name in enumerate(_IDS)},
    **{ictx.EXTENT + axis: name for axis, name in enumerate(_EXTENTS)},
    ictx.DIMS: _DIMS,
}
_PARENT = "__hpvm_ctx_parent"
_TOTAL = "__hpvm_total"
_FLAT = "__hpvm_f"
_RET = "__hpvm_ret"
_DONE = "__hpvm_done"
_NP = "__hpvm_np"
# Builtins a run-once uniform region may call (pure, no side effects on arrays).
_PURE_BUILTINS = {"len", "min", "max", "abs", "int", "float", "bool", "round"}
# Array methods that return a view of their array, not a new array.
_VIEW_METHODS = {"view", "reshape", "transpose", "swapaxes", "squeeze"}


def group_function(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> tuple[str, str]:
    """(symbol, python source) of the group function of a barrier leaf.

    The source defines ``def <symbol>(<leaf params>, __hpvm_ctx_parent, __hpvm_s0,
    __hpvm_s1, __hpvm_s2, __hpvm_dims)`` (after an ``import numpy as __hpvm_np`` line). It
    runs every instance of the leaf within one parent instance, phase by phase, and
    returns what the last instance (flat index ``s0*s1*s2 - 1``) returns; with no instances
    it runs nothing and returns zeros / empty arrays of the declared output types. It
    compiles with ``numba.njit(nogil=True, cache=True)`` in the leaf's globals plus the
    back end's ``__hpvm_atomic_*`` / ``__hpvm_malloc`` helpers. Raises ``CompileError``
    for barriers under divergent control, misplaced returns and per-instance objects that
    cross a barrier.
    """
    return _GroupBuilder(clone, param_types, ctx_levels).build()


# ---------------------------------------------------------------------------------------
# Small AST helpers (the shared ones are in passes/uniformity.py)


def _parse(source: str) -> list[ast.stmt]:
    return pyast.parse(source).body


def _is_noop(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def _np_dtype(dtype: Any) -> str:
    return f"{_NP}.bool_" if dtype.kind == "b" else f"{_NP}.{dtype.name}"


# ---------------------------------------------------------------------------------------
# The leaf's context tuple becomes the group function's loop variables and parameters


class _SubstituteCtx(ast.NodeTransformer):
    """``__hpvm_ctx[c]`` → the instance ids, the extents, or ``__hpvm_ctx_parent[c - 7]``."""

    def __init__(self, fail: Any, parent_len: int):
        self.fail, self.parent_len = fail, parent_len

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == CTX_PARAM:
            c = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if not isinstance(c, int) or not 0 <= c < ictx.STRIDE + self.parent_len:
                raise self.fail(node.lineno, "a structure query the cpu back end cannot place")
            if c < ictx.STRIDE:
                return ast.copy_location(ast.Name(_OWN_LEVEL[c], ast.Load()), node)
            read = ast.Subscript(ast.Name(_PARENT, ast.Load()), ast.Constant(c - ictx.STRIDE), ast.Load())
            return ast.copy_location(read, node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == CTX_PARAM:
            raise self.fail(node.lineno, "the node context is used other than by a structure query")
        return node


# ---------------------------------------------------------------------------------------
# The plan: regions (work-item loops) and driver statements


@dataclass
class _Region:
    """Barrier-free statements that every instance runs before the next region starts."""

    stmts: list[ast.stmt]
    exposed: dict[str, int] = field(default_factory=dict)  # read before written -> line
    assigned: set[str] = field(default_factory=set)
    definite: set[str] = field(default_factory=set)  # assigned on every path
    final: bool = False  # the last region of the leaf: where `return` may be


@dataclass
class _Driver:
    """A uniform ``if``/``while``/``for`` holding barriers, or a ``break``/``continue`` of one."""

    stmt: ast.stmt
    body: list[_Region | _Driver]
    orelse: list[_Region | _Driver]


class _Scan:
    """Which names a region reads before writing them (its live-ins) and which it writes."""

    def __init__(self) -> None:
        self.exposed: dict[str, int] = {}
        self.assigned: set[str] = set()

    def block(self, stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        for s in stmts:
            defined = self.stmt(s, defined)
        return defined

    def _read(self, node: ast.AST, defined: set[str]) -> None:
        for n in _loads(node):
            if n.id not in defined:
                self.exposed.setdefault(n.id, n.lineno)

    def _define(self, target: ast.AST, defined: set[str]) -> set[str]:
        names = _stores(target)
        self.assigned |= names
        return defined | names

    def stmt(self, s: ast.stmt, defined: set[str]) -> set[str]:
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            if s.value is None:
                return defined
            self._read(s.value, defined)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                if isinstance(s, ast.AugAssign) and isinstance(t, ast.Name) and t.id not in defined:
                    self.exposed.setdefault(t.id, t.lineno)
                self._read(t, defined)
                defined = self._define(t, defined)
            return defined
        if isinstance(s, ast.If):
            self._read(s.test, defined)
            return self.block(s.body, set(defined)) & self.block(s.orelse, set(defined))
        if isinstance(s, (ast.For, ast.While)):
            inner = set(defined)
            if isinstance(s, ast.For):
                self._read(s.iter, defined)
                inner = self._define(s.target, inner)
            else:
                self._read(s.test, defined)
            self.block(s.body, inner)
            self.block(s.orelse, set(defined))
            return defined  # the body may not run
        # Anything else (expressions, try, with…): reads, and assignments that may not happen.
        self._read(s, defined)
        self.assigned |= _stores(s)
        return defined


# ---------------------------------------------------------------------------------------
# Types of locals, from Numba's inference on the leaf with barriers stubbed out

_STUBS: dict[str, Any] = {}


def _typing_stubs() -> dict[str, Any]:
    """No-op barrier and non-atomic stand-ins: only their types matter for inference."""
    if not _STUBS:
        import numba
        import numpy as np

        _STUBS[BARRIER_MARKER] = numba.njit(lambda: None)
        _STUBS["__hpvm_malloc"] = numba.njit(lambda n: np.zeros(n, np.uint8))
        old_value = numba.njit(lambda a, i, v: a[i])
        for op in ("add", "sub", "min", "max", "xchg", "and", "or", "xor"):
            _STUBS[f"__hpvm_atomic_{op}"] = old_value
    return _STUBS


def _numba_type(t: PortType) -> Any:
    import numba
    from numba.core import types

    if isinstance(t, ArrayType):
        return types.Array(numba.from_dtype(t.dtype), t.rank, "A")
    if isinstance(t, ScalarType):
        return numba.from_dtype(t.dtype)
    raise TypeError(f"no Numba type for port type {t}")


def _infer_types(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> dict[str, Any]:
    """Each local's Numba type (the unified type of its SSA versions ``x``, ``x.1``…)."""
    import numba
    from numba.core import types

    leaf = clone.user
    namespace = {**leaf_namespace(leaf), **_typing_stubs()}
    exec(
        pyast.compile_tree(ast.Module(body=[clone.func], type_ignores=[]), leaf.location.file, "exec"),
        namespace,
    )
    argtypes = (*(_numba_type(t) for t in param_types), types.UniTuple(types.int64, ictx.STRIDE * ctx_levels))
    dispatcher = numba.njit(nogil=True)(namespace[clone.symbol])
    try:
        dispatcher.compile(argtypes)
    except Exception as e:  # Numba's typing and lowering errors
        raise CompileError(
            f"leaf '{leaf.name}' ({leaf.location}): Numba cannot compile it for the cpu back end — "
            f"try target='interp'\n{e}"
        ) from e
    found: dict[str, list[Any]] = {}
    for name, t in dispatcher.overloads[argtypes].type_annotation.typemap.items():
        m = re.fullmatch(r"([A-Za-z_]\w*)(?:\.\d+)?", name)
        if m:
            found.setdefault(m.group(1), []).append(types.unliteral(t))
    context = dispatcher.typingctx
    unified = {}
    for name, ts in found.items():
        u = context.unify_types(*ts) if len(ts) > 1 else ts[0]
        unified[name] = u if u is not None else ts[0]
    return unified


def _is_scalar(t: Any) -> bool:
    from numba.core import types

    return isinstance(t, (types.Number, types.Boolean))


def _is_mutable(t: Any) -> bool:
    """Whether a value of type ``t`` has an identity instances could tell apart (arrays, lists)."""
    from numba.core import types

    if isinstance(t, types.BaseTuple):
        return any(_is_mutable(e) for e in t.types)
    return isinstance(t, (types.ArrayCompatible, types.List, types.Set, types.DictType, types.ListType))


# ---------------------------------------------------------------------------------------
# The builder


class _GroupBuilder:
    """One leaf's group function: analyse (uniformity, plan, live-ins, types), then emit."""

    def __init__(self, clone: LeafClone, param_types: list[PortType], ctx_levels: int):
        self.clone, self.leaf = clone, clone.user
        self.param_types, self.ctx_levels = list(param_types), ctx_levels
        func = copy.deepcopy(clone.func)
        self.params = [a.arg for a in func.args.args[:-1]]
        if len(self.params) != len(self.param_types) or func.args.args[-1].arg != CTX_PARAM:
            raise CompileError(f"leaf '{self.leaf.name}': group_function needs one port type per parameter")
        if ctx_levels < max(1, clone.levels):
            raise CompileError(
                f"leaf '{self.leaf.name}' reads {clone.levels} context levels, not {ctx_levels}"
            )
        parent_len = ictx.STRIDE * (ctx_levels - 1)
        self.body = [
            ast.fix_missing_locations(_SubstituteCtx(self._fail, parent_len).visit(s)) for s in func.body
        ]
        self.symbol = clone.symbol.replace("__hpvm_leaf_", "__hpvm_group_", 1)
        if self.symbol == clone.symbol:
            self.symbol = f"__hpvm_group_{clone.symbol}"

    # -- errors ---------------------------------------------------------------------------

    def _fail(self, line: int, what: str) -> CompileError:
        return CompileError(f"leaf '{self.leaf.name}' ({self.leaf.location.file}:{line}): {what}")

    def _line_text(self, line: int) -> str:
        try:
            lines = self.leaf.source.splitlines()
        except (OSError, TypeError):
            return ""
        index = line - self.leaf.source_line
        return lines[index].strip() if 0 <= index < len(lines) else ""

    def _divergent(self, stmt: ast.stmt, cond: ast.AST, inner_line: int, what: str, fix: str) -> CompileError:
        names = sorted({n.id for n in _loads(cond) if n.id in self.varying and not n.id.startswith("__hpvm")})
        through = f" (through {', '.join(f'`{n}`' for n in names)})" if names else ""
        return self._fail(
            inner_line,
            f"{what} is under a condition that differs between instances: line {stmt.lineno} "
            f"(`{self._line_text(stmt.lineno)}`) depends on the instance id{through}. Every instance "
            "must reach the same barriers, so the cpu back end needs barriers under uniform "
            f"conditions only (parameters, instance counts, constants) — {fix}, or run with "
            "target='interp'",
        )

    # -- analysis -------------------------------------------------------------------------

    def build(self) -> tuple[str, str]:
        self.varying = _Uniformity(set(_IDS)).run(self.body)
        self.rebound = {n for s in self.body for n in _stores(s)}  # locals, and parameters reassigned
        self.locals = set(self.params) | self.rebound
        self.plan = self._plan(self.body, in_loop=False)
        if self.plan and isinstance(self.plan[-1], _Region):
            self.plan[-1].final = True
        self.regions = list(self._regions(self.plan))
        for r in self.regions:
            self._check_returns(r)
            scan = _Scan()
            r.definite = scan.block(r.stmts, set())
            r.exposed, r.assigned = scan.exposed, scan.assigned
        self.remat = self._rematerializable()
        live_in = {n: line for r in self.regions for n, line in r.exposed.items()}
        assigned = set().union(*(r.assigned for r in self.regions))
        self.private = {
            n
            for n in self.varying & self.locals
            if n in live_in and n not in self.remat and not n.startswith("__hpvm")
        }
        crossing = {n for n in self.locals - self.varying if n in live_in and n in assigned}
        self.types = _infer_types(self.clone, self.param_types, self.ctx_levels)
        for name in sorted(self.private):
            t = self.types.get(name)
            if t is None or not _is_scalar(t):
                raise self._fail(
                    live_in[name],
                    f"local '{name}' ({t}) differs between instances and is used after a barrier; "
                    "the cpu back end keeps only scalars per instance across barriers — keep it in "
                    "an array indexed by the instance id, or run with target='interp'",
                )
        for name in sorted(crossing):
            t = self.types.get(name)
            if t is not None and _is_mutable(t) and not self._shared_ref(ast.Name(name, ast.Load()), set()):
                raise self._fail(
                    live_in[name],
                    f"local '{name}' ({t}) is created by every instance and used after a barrier; "
                    "each instance would need its own copy, which the cpu back end does not support "
                    "— allocate it outside the leaf (an allocation node) or run with target='interp'",
                )
        return self.symbol, self._emit()

    def _plan(self, stmts: list[ast.stmt], in_loop: bool) -> list[_Region | _Driver]:
        """Cut ``stmts`` at barriers; statements holding barriers become driver statements."""
        items: list[_Region | _Driver] = []
        run: list[ast.stmt] = []
        for s in stmts:
            if _is_barrier(s):
                items, run = self._flush(items, run), []
            elif not (_barrier_lines(s) or _escaping_jump(s)):
                run.append(s)
            else:
                items, run = self._flush(items, run), []
                items.append(self._driver(s, in_loop))
        return self._flush(items, run)

    @staticmethod
    def _flush(items: list[_Region | _Driver], run: list[ast.stmt]) -> list[_Region | _Driver]:
        return [*items, _Region(run)] if any(not _is_noop(s) for s in run) else items

    def _driver(self, s: ast.stmt, in_loop: bool) -> _Driver:
        if isinstance(s, (ast.Break, ast.Continue)):
            return _Driver(s, [], [])
        barriers = _barrier_lines(s)
        if not isinstance(s, (ast.If, ast.While, ast.For)):
            kind = type(s).__name__.lower()
            raise self._fail(
                barriers[0] if barriers else s.lineno,
                f"hpvm.barrier() inside a `{kind}` statement is not supported by the cpu back end "
                "(only inside `if`, `while` and `for`) — run with target='interp'",
            )
        cond = s.iter if isinstance(s, ast.For) else s.test
        if _reads_varying(cond, self.varying):
            if barriers:
                what = f"hpvm.barrier() on line {barriers[0]}"
                raise self._divergent(
                    s, cond, barriers[0], what, "move the barrier out of the branch or loop"
                )
            jump = _escaping_jump(s)
            assert jump is not None
            word = type(jump).__name__.lower()
            what = f"`{word}` on line {jump.lineno} of a loop with barriers"
            raise self._divergent(s, cond, jump.lineno, what, f"make the `{word}` condition uniform")
        loop = in_loop or isinstance(s, (ast.For, ast.While))
        return _Driver(s, self._plan(s.body, loop), self._plan(s.orelse, in_loop))

    def _regions(self, items: list[_Region | _Driver]) -> Iterator[_Region]:
        for item in items:
            if isinstance(item, _Region):
                yield item
            else:
                yield from self._regions(item.body)
                yield from self._regions(item.orelse)

    def _check_returns(self, region: _Region) -> None:
        if region.final:
            return
        for s in region.stmts:
            for n in _walk_own(s):
                if isinstance(n, ast.Return):
                    raise self._fail(
                        n.lineno,
                        f"`return` before the leaf's last hpvm.barrier() (line {max(self.clone.barrier_lines)}) "
                        "or inside a loop or `if` holding barriers; the cpu back end runs a barrier leaf "
                        "phase by phase and supports `return` only after its last top-level barrier",
                    )

    def _single_assignments(self) -> dict[str, ast.Assign]:
        """Locals bound exactly once, by a plain ``name = expr``, mapped to that statement."""
        count: dict[str, int] = {}
        simple: dict[str, ast.Assign] = {}
        for s in self.body:
            for n in _walk_own(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    count[n.id] = count.get(n.id, 0) + 1
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    simple[n.targets[0].id] = n
        return {n: a for n, a in simple.items() if count[n] == 1 and n not in self.params}

    def _rematerializable(self) -> dict[str, ast.Assign]:
        """Varying locals that are pure arithmetic on instance ids and unchanging values.

        Recomputing them where a region needs them is cheaper than an array slot per instance.
        Only definitions every instance runs (a region's own statements, not inside an ``if``
        or loop) qualify, so a recomputed ``10 // lid`` cannot raise where the original did not.
        """
        singles = self._single_assignments()
        unconditional = {id(s) for r in self.regions for s in r.stmts}
        # Operands whose value is the same wherever they are read: ids, extents, parameters
        # never reassigned, and uniform locals assigned once.
        fixed = set(_IDS) | set(_EXTENTS) | {_DIMS} | (set(self.params) - self.rebound)
        fixed |= {n for n in singles if n not in self.varying}
        remat: dict[str, ast.Assign] = {}
        allowed = (
            ast.Constant,
            ast.BinOp,
            ast.UnaryOp,
            ast.Compare,
            ast.BoolOp,
            ast.IfExp,
            ast.operator,
            ast.unaryop,
            ast.cmpop,
            ast.boolop,
            ast.expr_context,
        )
        changed = True
        while changed:
            changed = False
            for name, stmt in singles.items():
                if name in remat or name not in self.varying or id(stmt) not in unconditional:
                    continue
                ok = True
                for n in ast.walk(stmt.value):
                    if isinstance(n, ast.Name):
                        ok = ok and (n.id in fixed or n.id in remat)
                    elif isinstance(n, ast.Subscript):  # parent context reads only
                        ok = ok and isinstance(n.value, ast.Name) and n.value.id == _PARENT
                    elif not isinstance(n, allowed):
                        ok = False
                if ok:
                    remat[name] = stmt
                    changed = True
        return remat

    def _shared_ref(self, expr: ast.AST, seen: set[str]) -> bool:
        """Whether ``expr`` names memory every instance shares (a parameter, a view of one)."""
        if isinstance(expr, ast.Name):
            if expr.id not in self.rebound:
                return True  # a parameter never reassigned, or a global
            if expr.id in seen:
                return True
            values = self._assigned_values(expr.id)
            return values is not None and all(self._shared_ref(v, seen | {expr.id}) for v in values)
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            return self._shared_ref(expr.value, seen)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _VIEW_METHODS
        ):
            return self._shared_ref(expr.func.value, seen)
        return False

    def _assigned_values(self, name: str) -> list[ast.expr] | None:
        """The values ``name`` is assigned, or None if it is bound any other way."""
        values: list[ast.expr] = []
        for s in self.body:
            for n in _walk_own(s):
                if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in n.targets
                ):
                    values.append(n.value)
                elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
                    continue  # in place on an array: the reference is unchanged
                elif isinstance(n, ast.stmt) and not isinstance(n, ast.Assign) and name in _stores_shallow(n):
                    return None
        return values

    # -- emission -------------------------------------------------------------------------

    def _emit(self) -> str:
        from numba.np.numpy_support import as_dtype

        params = [*self.params, _PARENT, *_EXTENTS, _DIMS]
        returns_value = any(
            isinstance(n, ast.Return)
            and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)
            for s in self.body
            for n in _walk_own(s)
        )
        head = [
            f"{_TOTAL} = {' * '.join(_EXTENTS)}",
            f"if {_TOTAL} == 0:",
            f"    return {self._empty_result()}",
        ]
        for name in sorted(self.private):
            head.append(f"__hpvm_p_{name} = {_NP}.empty({_TOTAL}, {_np_dtype(as_dtype(self.types[name]))})")
            if name in self.params:
                head.append(f"__hpvm_p_{name}[:] = {name}")
        body = _parse("\n".join(head)) + self._emit_items(self.plan)
        if returns_value:
            body += _parse(f"return {_RET}")
        func = _parse(f"def {self.symbol}({', '.join(params)}):\n    pass")[0]
        assert isinstance(func, ast.FunctionDef)
        func.body = body
        module = ast.Module(body=[*_parse(f"import numpy as {_NP}"), func], type_ignores=[])
        return ast.unparse(ast.fix_missing_locations(module)) + "\n"

    def _empty_result(self) -> str:
        """What a grid with no instances returns: zeros of the declared output types."""
        values = []
        for t in self.leaf.out_types:
            if isinstance(t, ArrayType):
                values.append(f"{_NP}.empty(({', '.join(['0'] * t.rank)},), {_np_dtype(t.dtype)})")
            elif isinstance(t, ScalarType):
                values.append("False" if t.dtype.kind == "b" else f"{_np_dtype(t.dtype)}(0)")
            else:
                values.append("None")
        if len(values) == 1:
            return values[0]
        return f"({', '.join(values)},)" if values else ""

    def _emit_items(self, items: list[_Region | _Driver]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for item in items:
            if isinstance(item, _Region):
                out += self._emit_region(item)
            elif isinstance(item.stmt, (ast.Break, ast.Continue)):
                out.append(item.stmt)
            else:
                node = copy.copy(item.stmt)
                node.body = self._emit_items(item.body) or [ast.Pass()]
                node.orelse = self._emit_items(item.orelse)
                out.append(node)
        return out

    def _runs_once(self, region: _Region) -> bool:
        """A region that only assigns uniform locals from pure expressions: run it once."""
        for s in region.stmts:
            if _is_noop(s):
                continue
            if not isinstance(s, (ast.Assign, ast.AugAssign)):
                return False
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if not all(isinstance(t, ast.Name) and t.id not in self.varying for t in targets):
                return False
            for n in ast.walk(s.value):
                if isinstance(n, ast.Name) and n.id in self.varying:
                    return False
                if isinstance(n, ast.Call) and not (
                    isinstance(n.func, ast.Name) and n.func.id in _PURE_BUILTINS
                ):
                    return False
        return True

    def _hoistable(self, stmt: ast.stmt, region: _Region) -> bool:
        """A leading ``name = expr`` every instance computes alike, without reading memory:
        run it once before the instance loop (``shared = buffer.view(np.float32)`` per
        instance costs more than the reduction itself)."""
        if not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            return False
        name = stmt.targets[0].id
        if name in self.varying or name in self.private:
            return False
        stores = sum(
            1
            for s in region.stmts
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        )
        if stores != 1:
            return False
        for n in ast.walk(stmt.value):
            if isinstance(n, ast.Name) and (n.id in self.varying or n.id == name):
                return False
            if isinstance(n, ast.Subscript) and not (isinstance(n.value, ast.Name) and n.value.id == _PARENT):
                return False  # a memory read: other instances may write it first (the ctx tuple is immutable)
            if isinstance(n, ast.Call):
                func = n.func
                pure = isinstance(func, ast.Name) and func.id in _PURE_BUILTINS
                view = (
                    isinstance(func, ast.Attribute)
                    and func.attr in _VIEW_METHODS
                    and self._shared_ref(func.value, set())
                )
                if not (pure or view):
                    return False
        return True

    def _emit_region(self, region: _Region) -> list[ast.stmt]:
        if self._runs_once(region):
            return region.stmts
        # Top-level uniform assignments whose inputs the region has not changed before them
        # run once, before the instance loop.
        hoisted: list[ast.stmt] = []
        kept: list[ast.stmt] = []
        stored: set[str] = set()
        for stmt in region.stmts:
            reads = (
                {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
                if isinstance(stmt, ast.Assign)
                else set()
            )
            if not (reads & stored) and self._hoistable(stmt, region):
                hoisted.append(stmt)
                continue
            kept.append(stmt)
            stored |= {
                n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        if hoisted:
            region.stmts = kept
            return hoisted + self._emit_region(region)
        exposed = set(region.exposed)
        remat = self._remat_closure(exposed & set(self.remat))
        resets = sorted((exposed & region.assigned & self.locals) - self.varying)
        loads = sorted(self.private & (exposed | (region.assigned - region.definite)))
        stores = [] if region.final else sorted(self.private & region.assigned)
        pre = [f"{n} = __hpvm_u_{n}" for n in resets]
        if loads or stores:
            pre.append(f"{_FLAT} = ({_IDS[0]} * {_EXTENTS[1]} + {_IDS[1]}) * {_EXTENTS[2]} + {_IDS[2]}")
        pre += [f"{n} = __hpvm_p_{n}[{_FLAT}]" for n in loads]
        inner = (
            [copy.deepcopy(self.remat[n]) for n in remat]
            + _parse("\n".join(pre))
            + self._final_returns(region)
        )
        inner += _parse("\n".join(f"__hpvm_p_{n}[{_FLAT}] = {n}" for n in stores))
        # x innermost: the instances of a region may run in any order, and with x inside LLVM
        # can vectorize the common 1-D case (its y and z loops run once).
        # (and its id through __hpvm_narrow, for the same reason: narrow.py).
        loop = _parse(
            f"for {_IDS[2]} in range({_EXTENTS[2]}):\n"
            f"    for {_IDS[1]} in range({_EXTENTS[1]}):\n"
            f"        for {_IDS[0]}_w in range({self._x_bound(inner)}):\n"
            f"            {_IDS[0]} = __hpvm_narrow({_IDS[0]}_w, {_EXTENTS[0]} <= {MASK})"
        )[0]
        innermost = loop.body[0].body[0]  # type: ignore[attr-defined]
        innermost.body = innermost.body + inner
        return _parse("\n".join(f"__hpvm_u_{n} = {n}" for n in resets)) + [loop]

    def _x_bound(self, inner: list[ast.stmt]) -> str:
        """The x extent, narrowed when the whole region is ``if lid < u:`` (``lid`` the x id,
        ``u`` uniform): a tree reduction's phases then visit only the active instances."""
        bound = _EXTENTS[0]
        body = [s for s in inner if not _is_noop(s)]
        ids = {
            name
            for name, stmt in self.remat.items()
            if isinstance(stmt.value, ast.Name) and stmt.value.id == _IDS[0]
        }
        while (
            body
            and isinstance(body[0], ast.Assign)
            and all(isinstance(t, ast.Name) and t.id in self.remat for t in body[0].targets)
        ):
            body = body[1:]  # recomputed locals (lid = __hpvm_i, ...)
        if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse:
            return bound
        test = body[0].test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Lt, ast.LtE, ast.Eq))
            and isinstance(test.left, ast.Name)
            and (test.left.id in ids or test.left.id == _IDS[0])
            and not _reads_varying(test.comparators[0], self.varying)
            and not any(isinstance(n, ast.Call) for n in ast.walk(test.comparators[0]))
        ):
            return bound
        limit = ast.unparse(test.comparators[0])
        if isinstance(test.ops[0], (ast.LtE, ast.Eq)):  # lid == u: instances 0..u, one active
            limit = f"({limit}) + 1"
        if isinstance(test.ops[0], (ast.Lt, ast.LtE)) and _plain_arithmetic(test.comparators[0]):
            # Every instance the loop visits passes ``lid < u``: ``u`` reads only names, which
            # hold their region-start values in every instance (uniform locals the region
            # assigns are reset per instance), so it is the value the bound was computed
            # from. Without the guard the loop body is straight-line code LLVM vectorizes.
            inner[inner.index(body[0])] = ast.copy_location(
                ast.If(ast.Constant(True), body[0].body, []), body[0]
            )
        return f"max(0, min({bound}, {limit}))"

    def _remat_closure(self, names: set[str]) -> list[str]:
        """``names`` and the recomputed locals they read, in definition order."""
        todo, found = list(names), set()
        while todo:
            n = todo.pop()
            if n not in found:
                found.add(n)
                todo += [m.id for m in _loads(self.remat[n].value) if m.id in self.remat]
        return sorted(found, key=lambda n: (self.remat[n].lineno, self.remat[n].col_offset))

    def _final_returns(self, region: _Region) -> list[ast.stmt]:
        """The final region with ``return v`` turned into ``__hpvm_ret = v`` + leaving the instance."""
        stmts = region.stmts
        returns = [n for s in stmts for n in _walk_own(s) if isinstance(n, ast.Return)]
        if not returns:
            return stmts
        if len(returns) == 1 and stmts[-1] is returns[0]:
            return stmts[:-1] + self._ret_assign(returns[0])
        body, uses_done = self._rewrite_returns(stmts, in_loop=False)
        once = _parse("for __hpvm_once in range(1):\n    pass")[0]
        assert isinstance(once, ast.For)
        once.body = body
        return (_parse(f"{_DONE} = False") if uses_done else []) + [once]

    def _ret_assign(self, ret: ast.Return) -> list[ast.stmt]:
        if ret.value is None or (isinstance(ret.value, ast.Constant) and ret.value.value is None):
            return []
        return [ast.copy_location(ast.Assign([ast.Name(_RET, ast.Store())], ret.value), ret)]

    def _rewrite_returns(self, stmts: list[ast.stmt], in_loop: bool) -> tuple[list[ast.stmt], bool]:
        """Returns leave a one-iteration loop; inside user loops a flag carries them out."""
        out: list[ast.stmt] = []
        uses_done = False
        for s in stmts:
            if isinstance(s, ast.Return):
                out += self._ret_assign(s)
                if in_loop:
                    out += _parse(f"{_DONE} = True")
                    uses_done = True
                out.append(ast.Break())
            elif isinstance(s, (ast.For, ast.While)):
                has_return = any(isinstance(n, ast.Return) for b in s.body for n in _walk_own(b))
                s.body, d1 = self._rewrite_returns(s.body, in_loop=True)
                s.orelse, d2 = self._rewrite_returns(s.orelse, in_loop)
                out.append(s)
                if has_return:
                    out += _parse(f"if {_DONE}:\n    break")
                uses_done = uses_done or d1 or d2
            elif isinstance(s, ast.If):
                s.body, d1 = self._rewrite_returns(s.body, in_loop)
                s.orelse, d2 = self._rewrite_returns(s.orelse, in_loop)
                out.append(s)
                uses_done = uses_done or d1 or d2
            else:
                out.append(s)
        return out, uses_done


def _plain_arithmetic(expr: ast.expr) -> bool:
    """Names, constants and arithmetic only: nothing that reads memory or calls."""
    allowed = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
    return all(isinstance(n, allowed) for n in ast.walk(expr))


def _stores_shallow(stmt: ast.stmt) -> set[str]:
    """Names a statement binds itself (not in the statements it contains)."""
    if isinstance(stmt, ast.For):
        return _stores(stmt.target)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return _stores(stmt.target)
    if isinstance(stmt, ast.With):
        return {
            n for item in stmt.items if item.optional_vars is not None for n in _stores(item.optional_vars)
        }
    return set()
