"""Static facts about a leaf's Python source, shared by the verifier and the back ends.

One AST walk finds the intrinsic calls (structure queries with the ancestor level they
query, barriers, atomics, malloc), the builder and host calls a leaf must not make, which array
parameters are read and written, and the arity of each ``return``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import pyast
from .bodies import LLVMBody
from .graph import LeafFunction
from .intrinsics import BUILDER_CALLS, HOST_CALLS, INTRINSICS, LOWERED_PREFIX, QUERY_INTRINSICS
from .moduletext import StaticDef

_NAMES = frozenset(INTRINSICS) | BUILDER_CALLS | HOST_CALLS
# NumPy methods that modify the array they are called on.
_MUTATING_METHODS = {"fill", "sort", "put", "resize", "itemset", "partition", "setfield", "byteswap"}


@dataclass(frozen=True)
class Query:
    """A call of get_node_instance_id_* / get_num_node_instances_*."""

    name: str
    axis: int
    level: int | None  # 0 = the leaf's own node, 1 = its parent, ...; None = not known statically
    line: int


@dataclass
class LeafInfo:
    calls: list[tuple[str, int]] = field(default_factory=list)  # (intrinsic or builder, line)
    queries: list[Query] = field(default_factory=list)
    barrier_lines: list[int] = field(default_factory=list)
    misplaced_barriers: list[int] = field(default_factory=list)  # not a statement of its own
    atomics: list[tuple[str, str | None, int]] = field(default_factory=list)  # (op, array param, line)
    writes: dict[str, int] = field(default_factory=dict)  # array param -> first line written
    uses: dict[str, int] = field(default_factory=dict)  # param -> first line used
    returns: list[tuple[int, int]] = field(default_factory=list)  # (number of values, line)
    raise_lines: list[int] = field(default_factory=list)  # the leaf's own `raise` statements
    parsed: bool = True

    @property
    def uses_barrier(self) -> bool:
        return bool(self.barrier_lines)

    @property
    def builder_calls(self) -> list[tuple[str, int]]:
        return [(n, line) for n, line in self.calls if n in BUILDER_CALLS]

    @property
    def host_calls(self) -> list[tuple[str, int]]:
        return [(n, line) for n, line in self.calls if n in HOST_CALLS]


def parse_leaf(fn: LeafFunction) -> ast.FunctionDef | None:
    """The leaf's ``def`` as an AST with real file line numbers, or None without source."""
    try:
        source = fn.source
    except (OSError, TypeError):
        return None
    tree = pyast.parse(source)
    ast.increment_lineno(tree, fn.source_line - 1)
    func = tree.body[0]
    return func if isinstance(func, ast.FunctionDef) else None


def intrinsic_name(call: ast.Call, env: dict[str, Any]) -> str | None:
    """The hpvm intrinsic or builder a call refers to (``hpvm.barrier()``, ``barrier()``)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Name):
            module = env.get(base.id)
            name = getattr(module, "__name__", "")
            if (module is None and base.id == "hpvm") or name == "hpvm" or name.startswith("hpvm."):
                return func.attr if func.attr in _NAMES else None
        return None
    if isinstance(func, ast.Name):
        lowered = func.id.removeprefix(LOWERED_PREFIX)
        if lowered != func.id and func.id not in env and lowered in INTRINSICS:
            return lowered  # a clone's call of the back end's implementation (clone_leaves.py)
        obj = env.get(func.id)
        if isinstance(obj, StaticDef):
            return None  # a def of the leaf's own text (its class is hpvm's, the def is not)
        module = getattr(obj, "__module__", "") or ""
        if obj is not None and module.startswith("hpvm.") and func.id in _NAMES:
            return func.id
        if obj is not None and getattr(obj, "__name__", None) in _NAMES and module.startswith("hpvm."):
            return obj.__name__
    return None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def analyze_leaf(fn: LeafFunction) -> LeafInfo:
    """Static facts about ``fn``, cached on the function (``set_source`` clears the cache, and
    so does running a body read from a program file: its names are known better then)."""
    info = fn.__dict__.get("_leaf_info")
    if info is None:
        info = fn.__dict__["_leaf_info"] = _analyze(fn)
    return info


_LLVM_DEFINE = re.compile(r'^define [^\n]*?@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)\(', re.M)
_LLVM_CALLEE = re.compile(r'@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)\(')


def llvm_intrinsics_reached(module: str, function: str) -> set[str]:
    """The ``llvm.hpvm.*`` intrinsics (short names: ``barrier``, ``malloc``...) that
    ``function`` of the LLVM text ``module`` calls, directly or through the functions it
    calls directly — a textual scan, so that passes and verifiers can ask an LLVM leaf what
    they ask a Python one (does it use barriers? allocate?) without an LLVM parser."""
    bodies: dict[str, str] = {}
    for m in _LLVM_DEFINE.finditer(module):
        end = module.find("\n}", m.end())
        bodies[m.group(1).strip('"')] = module[m.end() : end if end >= 0 else len(module)]
    seen, todo, found = {function}, [function], set()
    while todo:
        for callee in _LLVM_CALLEE.findall(bodies.get(todo.pop(), "")):
            callee = callee.strip('"')
            if callee.startswith("llvm.hpvm."):
                found.add(callee[len("llvm.hpvm.") :])
            elif callee in bodies and callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return found


def _analyze(fn: LeafFunction) -> LeafInfo:
    info = LeafInfo()
    if isinstance(fn.body, LLVMBody):  # no Python: only what the intrinsics it reaches say
        info.parsed = False
        reached = llvm_intrinsics_reached(fn.body.module, fn.body.function)
        line = fn.location.line
        info.calls = [(name, line) for name in sorted(reached & {"malloc", "barrier"})]
        info.barrier_lines = [line] if "barrier" in reached else []
        return info
    func = parse_leaf(fn)
    if func is None:
        info.parsed = False
        return info
    env = visible_names(fn)
    params = {p.name for p in fn.params}
    levels: dict[str, int] = {}  # local name -> ancestor level of the node handle it holds

    def level_of(expr: ast.AST) -> int | None:
        if isinstance(expr, ast.Name):
            return levels.get(expr.id)
        if isinstance(expr, ast.Call):
            name = intrinsic_name(expr, env)
            if name == "get_node":
                return 0
            if name == "get_parent_node" and expr.args:
                inner = level_of(expr.args[0])
                return None if inner is None else inner + 1
        return None

    # First the handle variables (n = get_node(); p = get_parent_node(n); ...), to a fixpoint.
    assigns = [
        n
        for n in ast.walk(func)
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
    ]
    for _ in range(4):
        for node in assigns:
            lvl = level_of(node.value)
            if lvl is not None:
                levels[node.targets[0].id] = lvl
    statement_calls = {id(n.value) for n in ast.walk(func) if isinstance(n, ast.Expr)}
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = intrinsic_name(node, env)
            if name is None:
                if isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATING_METHODS:
                    target = _root_name(node.func.value)
                    if target in params:
                        info.writes.setdefault(target, node.lineno)
                continue
            info.calls.append((name, node.lineno))
            if name == "barrier":
                info.barrier_lines.append(node.lineno)
                if id(node) not in statement_calls:
                    info.misplaced_barriers.append(node.lineno)
            elif name.startswith("atomic_"):
                target = _root_name(node.args[0]) if node.args else None
                info.atomics.append((name[len("atomic_") :], target, node.lineno))
                if target in params:
                    info.writes.setdefault(target, node.lineno)
            elif name.startswith(("get_node_instance_id_", "get_num_node_instances_")):
                lvl = level_of(node.args[0]) if node.args else None
                info.queries.append(Query(name, QUERY_INTRINSICS[name][1], lvl, node.lineno))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in _stored(t):  # (in bins[data[i]] = ..., bins is written, data read)
                    name = _root_name(sub)
                    if name in params:
                        info.writes.setdefault(name, node.lineno)
        elif isinstance(node, ast.Name) and node.id in params:
            info.uses.setdefault(node.id, node.lineno)
    for node in _own_statements(func):
        if isinstance(node, ast.Return):
            if node.value is None:
                count = 0
            elif isinstance(node.value, ast.Tuple):
                count = len(node.value.elts)
            else:
                count = 1
            info.returns.append((count, node.lineno))
        elif isinstance(node, ast.Raise):
            info.raise_lines.append(node.lineno)
    info.returns.sort(key=lambda r: r[1])
    info.raise_lines.sort()
    return info


def _stored(target: ast.AST) -> Iterator[ast.Subscript]:
    """The subscripts an assignment target stores into: the target itself, or each element
    of a tuple or list target (``a[i], b[j] = ...``) — not subscripts inside its indices."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            yield from _stored(item)
    elif isinstance(target, ast.Starred):
        yield from _stored(target.value)
    elif isinstance(target, ast.Subscript):
        yield target


def _own_statements(func: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``func``'s body, not descending into nested functions, lambdas or classes."""
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def handle_level(expr: ast.AST, handles: dict[str, int], env: dict[str, Any]) -> int | None:
    """Which node handle ``expr`` denotes in leaf code: 0 for ``hpvm.get_node()``, 1 for its
    parent, and so on (``handles`` maps variables already known to hold one); ``None`` if
    it is not a node handle. Back ends that rewrite the query intrinsics share this."""
    if isinstance(expr, ast.Name):
        return handles.get(expr.id)
    if isinstance(expr, ast.Call):
        name = intrinsic_name(expr, env)
        if name == "get_node" and not expr.args:
            return 0
        if name == "get_parent_node" and len(expr.args) == 1:
            inner = handle_level(expr.args[0], handles, env)
            return None if inner is None else inner + 1
    return None


def visible_names(leaf: LeafFunction) -> dict[str, Any]:
    """The names the analyses that only *look* at a leaf resolve its code's names in: the
    names its code sees (``leaf_namespace``) once it has run, and before — a leaf read from
    a program file, whose code has not run — what its text binds statically
    (``ModuleText.static_names``: hpvm's objects and its own defs; other names unknown)."""
    pending = leaf.pending_code
    if pending is not None:
        return pending.static_names()
    return leaf_namespace(leaf)


def leaf_namespace(leaf: Any) -> dict[str, Any]:
    """The names a leaf's code sees: its module's globals and its closure's values (empty
    cells left out). Back ends that recompile a leaf's rewritten source run it in this; for
    a leaf read from a program file, asking runs its code (``LeafFunction.pyfunc``)."""
    pyfunc = leaf.pyfunc
    namespace = dict(getattr(pyfunc, "__globals__", {}) or {})
    code = getattr(pyfunc, "__code__", None)
    closure = getattr(pyfunc, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    return namespace
