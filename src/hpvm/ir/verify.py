"""The verifier: every structural rule of seed 000 and of DESIGN.md's "Ports" paragraph.

``verify(root)`` collects every problem it finds and raises one ``VerificationError``
listing them; each message names the node function or node, the port and the source line.
Rules that depend on data (replication sizes computed from inputs) are re-checked at launch.
"""

from __future__ import annotations

import graphlib
import re
from collections import Counter
from typing import Any

from ..errors import HPVMError, VerificationError
from .bodies import GeneratedBody, LLVMBody, PythonBody, llvm_abi_types
from .expr import ROUNDING, Expr, Shape, rounding_differs
from .expr import Param as ParamExpr
from .graph import (
    ALL_TO_ALL,
    HINTS,
    ONE_TO_ONE,
    ChildGraph,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    written_in,
    written_out,
)
from .helpercalls import helper_intrinsics
from .intrinsics import FLOAT_ATOMIC_OPS, atomic_dtypes
from .layouts import GRID_DIMS, Layout
from .leafinfo import analyze_leaf
from .types import ArrayType, ScalarType


def verify(root: NodeFunction) -> None:
    """Raise ``VerificationError`` listing every rule ``root``'s program breaks.

    When every problem is of one more precise kind (all tracing errors, say), the error
    raised is of that kind (``TracingError`` is a ``VerificationError``).
    """
    kinds: dict[str, type[VerificationError]] = {}
    problems = program_problems(root, kinds)
    if problems:
        found = {kinds.get(p, VerificationError) for p in problems}
        raise (found.pop() if len(found) == 1 else VerificationError)(problems)


def program_problems(
    root: NodeFunction, kinds: dict[str, type[VerificationError]] | None = None
) -> list[str]:
    """Every problem in ``root``'s program; ``kinds`` receives the error class of the problems
    that are not plain verification errors (tracing errors raised while building a graph)."""
    problems: list[str] = []
    if not isinstance(root, InternalFunction):
        what = root.describe() if isinstance(root, NodeFunction) else repr(root)
        return [
            f"the root of a graph must be an @hpvm.internal node function, not {what}; "
            "wrap the leaf in an internal node that creates it"
        ]
    seen: set[int] = set()
    recursive = _recursion_problems(root, problems)
    _walk(root, [root.root_dims], [root], problems, seen, recursive, {} if kinds is None else kinds)
    return list(dict.fromkeys(problems))  # keep order, drop repeats


def _recursion_problems(root: InternalFunction, problems: list[str]) -> set[int]:
    """Report every function that contains itself; return the ids of the functions whose
    hierarchy is infinite (they contain such a function), whose graphs are not checked
    further (their output types would be defined in terms of themselves)."""
    active: list[NodeFunction] = []
    done: dict[int, bool] = {}  # function id -> its hierarchy is infinite

    def visit(fn: NodeFunction) -> bool:
        if not isinstance(fn, InternalFunction):
            return False
        try:
            nodes = fn.graph.nodes
        except HPVMError:
            return False  # reported by _walk
        active.append(fn)
        infinite = False
        for node in nodes:
            child = node.function
            if any(child is f for f in active):
                cycle = active[next(i for i, f in enumerate(active) if f is child) :]
                chain = " -> ".join(f.name for f in [*cycle, child])
                problems.append(
                    f"{child.describe()} contains itself ({chain}, through node '{node.name}' "
                    f"at {node.location}): the node hierarchy must be finite"
                )
                infinite = True
            elif id(child) in done:
                infinite |= done[id(child)]
            else:
                infinite |= visit(child)
        active.pop()
        done[id(fn)] = infinite
        return infinite

    visit(root)
    return {i for i, infinite in done.items() if infinite}


def _walk(
    fn: NodeFunction,
    dims_path: list[int],
    fn_path: list[NodeFunction],
    problems: list[str],
    seen: set[int],
    recursive: set[int],
    kinds: dict[str, type[VerificationError]],
) -> None:
    """Check ``fn`` (once) and, along this path of the hierarchy, its leaves' queries."""
    if id(fn) not in seen:
        seen.add(id(fn))
        problems.extend(function_problems(fn))
    if isinstance(fn, LeafFunction):
        problems.extend(_query_problems(fn, dims_path))
        return
    assert isinstance(fn, InternalFunction)
    try:
        graph = fn.graph
    except HPVMError as e:
        problems.extend(getattr(e, "problems", None) or [str(e)])
        if isinstance(e, VerificationError):
            kinds.update(dict.fromkeys(e.problems, type(e)))
        return
    if id(fn) not in recursive and not _graph_checked(graph, seen):
        problems.extend(graph_problems(fn, graph))
    for node in graph.nodes:
        child = node.function
        if any(child is f for f in fn_path):
            continue  # reported by _recursion_problems
        _walk(child, [node.dims, *dims_path], [*fn_path, child], problems, seen, recursive, kinds)


def _graph_checked(graph: ChildGraph, seen: set[int]) -> bool:
    key = -id(graph)
    if key in seen:
        return True
    seen.add(key)
    return False


# ---------------------------------------------------------------------------------------
# Rules about one node function


def function_problems(fn: NodeFunction) -> list[str]:
    """Problems visible in one node function alone (attributes, and a leaf's source)."""
    problems: list[str] = []
    params = {p.name: p for p in fn.params}
    if fn.hint is not None and fn.hint not in HINTS:
        problems.append(
            f"{fn.describe()}: hint {fn.hint!r} is not one of hpvm.CPU_TARGET, "
            "hpvm.GPU_TARGET, hpvm.TENSOR_TARGET (or None)"
        )
    for attr in ("ins", "outs"):
        for name in getattr(fn, attr):
            if name not in params:
                problems.append(
                    f"{fn.describe()}: {attr} names '{name}', which is not a parameter "
                    f"(parameters: {', '.join(params) or 'none'})"
                )
            elif not isinstance(params[name].type, ArrayType):
                problems.append(
                    f"{fn.describe()}: {attr} names '{name}', a {params[name].type} scalar; "
                    "ins/outs list array parameters only"
                )
    if len(set(params)) != len(fn.params):
        dup = [n for n, c in Counter(p.name for p in fn.params).items() if c > 1]
        problems.append(f"{fn.describe()}: parameter names repeat: {', '.join(dup)}")
    problems.extend(layout_problems(fn))
    if isinstance(fn, LeafFunction):
        if isinstance(fn.body, LLVMBody):
            problems.extend(_llvm_body_problems(fn, fn.body))
        else:
            problems.extend(_leaf_source_problems(fn))
    return problems


def _llvm_body_problems(fn: LeafFunction, body: LLVMBody) -> list[str]:
    """An LLVM body must define the function it names, taking its ports as the ABI of
    LLVM form says (``llvm_abi_types``: scalars by value, arrays as a pointer, its byte size
    and, from rank 2, its extents)."""
    match = re.search(rf"define\b[^@\n]*@{re.escape(body.function)}\s*\(", body.module)
    if match is None:
        return [
            f"{fn.describe()}: its LLVM body names function @{body.function}, which its module "
            "does not define; name a function the module defines"
        ]
    args = [a for a in _llvm_arguments(body.module, match.end()) if a and a != "..."]
    want = sum(len(llvm_abi_types(p.type)) for p in fn.params)
    if len(args) != want:
        return [
            f"{fn.describe()}: its LLVM function @{body.function} takes {len(args)} argument(s) "
            f"but the leaf's {len(fn.params)} port(s) take {want}; give the function one argument "
            "per scalar port and a pointer, its i64 byte size and (rank 2 and more) one i64 "
            "extent per dimension for each array port, a pointer alone for a pointer-only "
            "port (docs/llvm.md)"
        ]
    return []


def _llvm_arguments(text: str, start: int) -> list[str]:
    """The arguments of a ``define`` whose ``(`` ends at ``start``: split at the commas
    outside parentheses and quoted strings (attributes such as ``"hpvm.port"="f32[:, :]"``
    or ``range(i32 0, 4)`` hold commas)."""
    args, depth, current, quoted = [], 0, "", False
    for c in text[start:]:
        if quoted:
            quoted = c != '"'
        elif c == '"':
            quoted = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            args.append(current.strip())
            current = ""
            continue
        current += c
    return [*args, current.strip()]


# ---------------------------------------------------------------------------------------
# Data layouts of array parameters (ir/layouts.py, docs/layouts.md)


def layout_problems(fn: NodeFunction) -> list[str]:
    """Layouts that do not fit their parameter: on a non-array, an axis beyond the array's
    rank, a chunk smaller than one element."""
    problems: list[str] = []
    for p in fn.params:
        if p.layout is None:
            continue
        where = f"{fn.describe()}: parameter '{p.name}' ({p.type})"
        if not isinstance(p.layout, Layout):
            problems.append(
                f"{where} has layout {p.layout!r}, which is not an hpvm.Layout; use "
                "hpvm.Layout.block(), .chunked(n), .strided() or .replicated()"
            )
            continue
        if not isinstance(p.type, ArrayType):
            problems.append(
                f"{where} has layout({p.layout}), but only array parameters carry layouts; "
                f"remove the layout of '{p.name}' or make it an array"
            )
            continue
        problems.extend(_layout_fit_problems(where, p.layout, p.type.rank))
    return problems


def _layout_fit_problems(where: str, layout: Layout, rank: int) -> list[str]:
    problems = []
    stated = f"{where} has layout({layout})"
    chunk = layout.chunk_size
    if chunk is not None and chunk < 1:
        problems.append(
            f"{stated}: a chunk of {chunk} elements; chunks hold at least one element — "
            "write chunked(1) or more"
        )
    for dim, axis in enumerate(layout.axes or ()):
        if axis is not None and not 0 <= axis < rank:
            problems.append(
                f"{stated}: grid dimension {GRID_DIMS[dim]} partitions axis {axis}, but a "
                f"{rank}-D array has axes 0..{rank - 1}; name an axis below {rank}, or _ for a "
                "grid dimension that partitions nothing"
            )
    return problems


def layout_grid_problems(fn: InternalFunction, graph: ChildGraph) -> list[str]:
    """A node must be replicated in every grid dimension its function's layouts name:
    ``axes(_, 0)`` partitions over y, so the node needs a 2-D (or 3-D) grid."""
    problems = []
    for node in graph.nodes:
        child = node.function
        for p in child.params:
            layout = p.layout
            if not isinstance(layout, Layout) or layout.min_grid_dims <= node.dims:
                continue
            need = layout.min_grid_dims
            problems.append(
                f"node '{node.name}' ({node.location}) in '{fn.name}': {child.describe()} gives "
                f"parameter '{p.name}' layout({layout}), which partitions over grid dimension "
                f"{GRID_DIMS[need - 1]}, but the node is replicated in {node.dims} dimension(s); "
                f"replicate it in at least {need} (hpvm.create_node_{need}d) or drop grid "
                f"dimension {GRID_DIMS[need - 1]} from the layout's axes"
            )
    return problems


def _leaf_source_problems(fn: LeafFunction) -> list[str]:
    info = analyze_leaf(fn)
    problems = []
    where = f"leaf '{fn.name}'"
    for name, line in info.builder_calls:
        problems.append(
            f"{where} ({fn.where(line)}) calls hpvm.{name}(); leaves compute and cannot create "
            "nodes, edges or binds — build the graph in an @hpvm.internal node"
        )
    for name, line in info.host_calls:
        problems.append(
            f"{where} ({fn.where(line)}) calls hpvm.{name}(), a host call; seed 000's host API "
            "(init, cleanup, track/untrack/request_memory, launch, wait, push, pop) belongs in "
            "host code, never in a node — launch the graph from the host and give the leaf what it "
            "needs as inputs"
        )
    for line in info.misplaced_barriers:
        problems.append(
            f"{where} ({fn.where(line)}): hpvm.barrier() must be a statement of its own "
            "(it returns nothing and cannot be part of an expression)"
        )
    arrays = {p.name: p.type for p in fn.params if isinstance(p.type, ArrayType)}
    declared = set(fn.ins) | set(fn.outs)
    for name, line in info.writes.items():
        if name in arrays and name not in fn.outs:
            problems.append(
                f"{where} ({fn.where(line)}) writes array '{name}', which its outs does not "
                f"declare; add '{name}' to outs=(...)"
            )
    for name, line in info.uses.items():
        if name in arrays and name not in declared and name not in info.writes:
            problems.append(
                f"{where} ({fn.where(line)}) reads array '{name}', which its ins does not "
                f"declare; add '{name}' to ins=(...)"
            )
    for op, target, line in info.atomics:
        atype = arrays.get(target or "")
        if atype is None:
            continue
        kind = atype.dtype.kind
        if atype.dtype in atomic_dtypes(op):
            continue
        if kind in "iu":
            problems.append(
                f"{where} ({fn.where(line)}): atomic_{op} on '{target}' ({atype}); atomics work on "
                "int32, int64, float32 and float64 arrays"
            )
        elif kind == "f" and op not in FLOAT_ATOMIC_OPS:
            problems.append(
                f"{where} ({fn.where(line)}): atomic_{op} on float array '{target}' ({atype}); "
                "bitwise and exchange atomics need an int32 or int64 array"
            )
        else:
            problems.append(
                f"{where} ({fn.where(line)}): atomic_{op} on '{target}' ({atype}) is not supported"
            )
    if isinstance(fn.body, (PythonBody, GeneratedBody)):
        problems.extend(_helper_problems(fn))
    n_out = len(fn.out_types)
    for count, line in info.returns:
        if count != n_out and not (count == 1 and n_out > 1):
            problems.append(
                f"{where} ({fn.where(line)}) returns {count} value(s) but its annotation declares "
                f"{n_out} output(s); fix the return or the '-> ...' annotation"
            )
    return problems


def _helper_problems(fn: LeafFunction) -> list[str]:
    """Seed 000: "the auxiliary functions are not allowed to include any HPVM intrinsics"."""
    by_line: dict[tuple[Any, str, int], list[str]] = {}
    for found in helper_intrinsics(fn):
        by_line.setdefault((found.chain, found.file, found.line), []).append(f"hpvm.{found.intrinsic}()")
    problems = []
    for (chain, file, line), calls in by_line.items():
        first, *rest = chain
        path = (
            f"leaf '{fn.name}' ({first.file}:{first.line}) calls helper '{first.name}' ({first.defined_at})"
        )
        for step in rest:
            path += f", which calls '{step.name}' ({step.defined_at}) at line {step.line}"
        problems.append(
            f"{path}, which calls {' and '.join(calls)} at {file}:{line}; functions a leaf calls may "
            "not use HPVM intrinsics (seed 000: they are not part of the node hierarchy) — make "
            f"the call in the leaf's own body and pass what '{chain[-1].name}' needs as arguments"
        )
    return problems


def _query_problems(fn: LeafFunction, dims_path: list[int]) -> list[str]:
    """A leaf may query only dimensions its node (or the queried ancestor) is replicated in."""
    problems = []
    info = analyze_leaf(fn)
    for q in info.queries:
        if q.level is None:
            continue  # not known statically; the interpreter checks it when it runs
        if q.level >= len(dims_path):
            problems.append(
                f"leaf '{fn.name}' ({fn.where(q.line)}) calls {q.name} on an ancestor "
                f"{q.level} levels up, above the root of the graph"
            )
            continue
        dims = dims_path[q.level]
        if q.axis >= dims:
            who = (
                "its own node"
                if q.level == 0
                else ("its parent" if q.level == 1 else f"its ancestor {q.level} levels up")
            )
            allowed = (
                f"only {', '.join('xyz'[:dims])} can be queried" if dims else "no dimension can be queried"
            )
            problems.append(
                f"leaf '{fn.name}' ({fn.where(q.line)}) calls {q.name} on {who}, which "
                f"is replicated in {dims} dimension(s); {allowed}"
            )
    return problems


# ---------------------------------------------------------------------------------------
# Rules about one child graph


def graph_problems(fn: InternalFunction, graph: ChildGraph) -> list[str]:
    problems: list[str] = []
    members = {id(n) for n in graph.nodes}
    names = Counter(n.name for n in graph.nodes)
    for name, count in names.items():
        if count > 1:
            problems.append(f"{fn.describe()}: {count} child nodes are named '{name}'")
    params = {p.name: p for p in fn.params}

    for node in graph.nodes:
        if node.dims > 3:
            problems.append(
                f"node '{node.name}' ({node.location}): {node.dims} dimensions; nodes are "
                "replicated in at most three (x, y, z)"
            )
        problems.extend(_size_problems(fn, node, params))

    feeds: dict[tuple[int, int], str] = {}  # (child, input) → its first feed, described
    for e in graph.edges:
        if id(e.src) not in members or id(e.dst) not in members:
            problems.append(
                f"{e.describe()}: edges connect only children of the same internal node ('{fn.name}')"
            )
            continue
        src_out, dst_in = e.src.function.out_types, e.dst.function.params
        ok = True
        if not 0 <= e.sp < len(src_out):
            problems.append(f"{e.describe()}: '{e.src.name}' has no output {e.sp} (it has {len(src_out)})")
            ok = False
        if not 0 <= e.dp < len(dst_in):
            problems.append(f"{e.describe()}: '{e.dst.name}' has no input {e.dp} (it has {len(dst_in)})")
            ok = False
        if ok and src_out[e.sp] != dst_in[e.dp].type:
            problems.append(
                f"{e.describe()}: output {written_out(e.src.function, e.sp)} of '{e.src.name}' is {src_out[e.sp]} but input "
                f"'{dst_in[e.dp].name}' of '{e.dst.name}' is {dst_in[e.dp].type}"
            )
        if e.repl not in (ONE_TO_ONE, ALL_TO_ALL):
            problems.append(f"{e.describe()}: replication must be one_to_one (0) or all_to_all (1)")
        if e.repl == ONE_TO_ONE:
            problems.extend(_grid_problems(e))
        if (id(e.dst), e.dp) in feeds:
            problems.append(_double_feed(e.dst, e.dp, e.describe(), feeds[(id(e.dst), e.dp)]))
        feeds.setdefault((id(e.dst), e.dp), e.describe())

    for b in graph.in_binds:
        if id(b.dst) not in members:
            problems.append(f"{b.describe(fn)}: '{b.dst.name}' is not a child of '{fn.name}'")
            continue
        ok = True
        if not 0 <= b.ip < len(fn.params):
            problems.append(f"{b.describe(fn)}: '{fn.name}' has no input {b.ip} (it has {len(fn.params)})")
            ok = False
        if not 0 <= b.ic < len(b.dst.function.params):
            problems.append(
                f"{b.describe(fn)}: '{b.dst.name}' has no input {b.ic} (it has {len(b.dst.function.params)})"
            )
            ok = False
        if ok:
            outer, inner = fn.params[b.ip], b.dst.function.params[b.ic]
            if outer.type != inner.type:
                problems.append(
                    f"{b.describe(fn)}: input '{outer.name}' of '{fn.name}' is {outer.type} but "
                    f"input '{inner.name}' of '{b.dst.name}' is {inner.type}"
                )
        if (id(b.dst), b.ic) in feeds:
            problems.append(_double_feed(b.dst, b.ic, b.describe(fn), feeds[(id(b.dst), b.ic)]))
        feeds.setdefault((id(b.dst), b.ic), b.describe(fn))

    for node in graph.nodes:
        for i, p in enumerate(node.function.params):
            if (id(node), i) not in feeds:
                problems.append(
                    f"input {written_in(node.function, i)} ('{p.name}') of node '{node.name}' ({node.location}) in "
                    f"'{fn.name}' has no feed; connect it with hpvm.edge(...) or hpvm.bind_in(...)"
                )

    problems.extend(_output_problems(fn, graph, members))
    problems.extend(_cycle_problems(fn, graph))
    problems.extend(layout_grid_problems(fn, graph))
    return problems


def _double_feed(node: Node, port: int, what: str, first: str) -> str:
    """The message for ``what`` feeding an input ``first`` already feeds (both described
    with their locations: the user removes one of the two)."""
    name = node.function.params[port].name if 0 <= port < len(node.function.params) else str(port)
    return (
        f"{what}: input {written_in(node.function, port)} ('{name}') of '{node.name}' is already fed by "
        f"{first}; every child input has exactly one feed (an edge or an input bind)"
    )


def _size_problems(fn: InternalFunction, node: Node, params: dict) -> list[str]:
    problems = []
    for axis, size in enumerate(node.sizes):
        if not isinstance(size, Expr):
            problems.append(f"node '{node.name}' ({node.location}): size {axis} is not an expression")
            continue
        value = _constant_value(size)
        rounded = _constant_rounding(size, value) if value is not None else None
        if rounded is not None:
            problems.append(
                f"node '{node.name}' ({node.location}): replication size '{size}' (dimension "
                f"{'xyz'[axis]}) is {value} in Python but {rounded} in HPVM-C and LLVM: {ROUNDING}"
            )
        elif value is not None and value < 0:
            problems.append(
                f"node '{node.name}' ({node.location}): replication size '{size}' (dimension "
                f"{'xyz'[axis]}) is {value}; sizes must be >= 0, and this one uses no input, so no "
                "launch could run the node: fix the expression"
            )
        for name in sorted(size.params()):
            p = params.get(name)
            if p is None:
                problems.append(
                    f"node '{node.name}' ({node.location}): replication size '{size}' uses "
                    f"'{name}', which is not an input of '{fn.name}'"
                )
            elif isinstance(p.type, ArrayType) and not p.type.sized:
                problems.append(
                    f"node '{node.name}' ({node.location}): replication size '{size}' uses "
                    f"'{name}', a pointer without its size ({p.type}); pass the size as an integer "
                    "port and use that"
                )
            elif isinstance(p.type, ArrayType):
                if not _only_shapes(size, name, p.type.rank):
                    problems.append(
                        f"node '{node.name}' ({node.location}): replication size '{size}' uses "
                        f"array '{name}'; only its shape ({name}.shape[k], k < {p.type.rank}) may appear"
                    )
            elif not (isinstance(p.type, ScalarType) and p.type.is_integer):
                problems.append(
                    f"node '{node.name}' ({node.location}): replication size '{size}' uses "
                    f"'{name}', a {p.type} input; sizes are integer expressions"
                )
    return problems


def _constant_rounding(size: Expr, value: int) -> int | None:
    """A constant size's value with LLVM's truncating division where it is not ``value``
    (``expr.rounding_differs``)."""
    try:
        return rounding_differs(size, {}, value)
    except (ZeroDivisionError, ValueError, TypeError):
        return None


def _constant_value(size: Expr) -> int | None:
    """The value of a size that reads no input (``None`` otherwise, or for a constant
    division by zero, which the launch reports as it evaluates it)."""
    if size.params():
        return None
    try:
        return int(size.evaluate({}))
    except (ZeroDivisionError, ValueError, TypeError):
        return None


def _only_shapes(expr: Expr, name: str, rank: int) -> bool:
    if isinstance(expr, Shape):
        return expr.name != name or 0 <= expr.axis < rank
    if isinstance(expr, ParamExpr):
        return expr.name != name
    children = [getattr(expr, "lhs", None), getattr(expr, "rhs", None), *getattr(expr, "args", ())]
    return all(_only_shapes(c, name, rank) for c in children if isinstance(c, Expr))


def _grid_problems(e) -> list[str]:  # type: ignore[no-untyped-def]
    if e.src.dims != e.dst.dims:
        return [
            f"{e.describe()}: one-to-one edges need identical grids, but '{e.src.name}' has "
            f"{e.src.dims} dimension(s) and '{e.dst.name}' {e.dst.dims}"
        ]
    for axis, (a, b) in enumerate(zip(e.src.sizes, e.dst.sizes)):
        if a.params() or b.params():
            continue  # symbolic sizes are compared when the graph runs
        try:
            same = a.evaluate({}) == b.evaluate({})
        except ZeroDivisionError:
            continue  # the launch reports it, with the node
        if not same:
            return [
                f"{e.describe()}: one-to-one edges need identical grids, but dimension {'xyz'[axis]} "
                f"of '{e.src.name}' has {a} instances and of '{e.dst.name}' {b}"
            ]
    return []


def _output_problems(fn: InternalFunction, graph: ChildGraph, members: set[int]) -> list[str]:
    problems = []
    by_op: dict[int, list] = {}
    sources: Counter[tuple[int, int]] = Counter()
    for b in graph.out_binds:
        if id(b.src) not in members:
            problems.append(f"{b.describe(fn)}: '{b.src.name}' is not a child of '{fn.name}'")
            continue
        n_out = len(b.src.function.out_types)
        if not 0 <= b.oc < n_out:
            problems.append(f"{b.describe(fn)}: '{b.src.name}' has no output {b.oc} (it has {n_out})")
        if b.op < 0:
            problems.append(f"{b.describe(fn)}: output index {b.op} is negative")
        if sources[(id(b.src), b.oc)]:
            problems.append(
                f"{b.describe(fn)}: output {written_out(b.src.function, b.oc)} of '{b.src.name}' is already bound; "
                "output binds have unique sources"
            )
        sources[(id(b.src), b.oc)] += 1
        by_op.setdefault(b.op, []).append(b)
    for op, binds in sorted(by_op.items()):
        if len(binds) > 1:
            problems.append(
                f"{binds[1].describe(fn)}: output {written_out(fn, op)} of '{fn.name}' is already bound by "
                f"{binds[0].describe(fn)}; output binds have unique destinations"
            )
    count = max(by_op) + 1 if by_op else 0
    for op in range(count):
        if op not in by_op:
            problems.append(
                f"{fn.describe()}: output {written_out(fn, op)} is not bound, but output {written_out(fn, count - 1)} is; the "
                "outputs of an internal node are 0..(highest bound index), each bound once"
            )
    declared = fn.declared_outputs
    if declared is not None and not problems:
        actual = [by_op[op][0].src.function.out_types[by_op[op][0].oc] for op in range(count)]
        if len(actual) != len(declared) or any(a != d for a, d in zip(actual, declared)):
            problems.append(
                f"{fn.describe()}: its return annotation declares outputs "
                f"({', '.join(map(str, declared))}) but its output binds give "
                f"({', '.join(map(str, actual))})"
            )
    return problems


def _cycle_problems(fn: InternalFunction, graph: ChildGraph) -> list[str]:
    sorter: graphlib.TopologicalSorter = graphlib.TopologicalSorter()
    for node in graph.nodes:
        sorter.add(node.name)
    for e in graph.edges:
        sorter.add(e.dst.name, e.src.name)
    try:
        sorter.prepare()
    except graphlib.CycleError as err:
        cycle = " -> ".join(err.args[1])
        return [f"{fn.describe()}: its child graph has a cycle ({cycle}); dataflow graphs are acyclic"]
    return []


def topological_order(graph: ChildGraph) -> list[Node]:
    """The child nodes in an order where every edge goes forward (creation order breaks ties)."""
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    preds: dict[int, set[int]] = {id(n): set() for n in graph.nodes}
    for e in graph.edges:
        preds[id(e.dst)].add(id(e.src))
    sorter = graphlib.TopologicalSorter(preds)
    by_id = {id(n): n for n in graph.nodes}
    order: list[Node] = []
    sorter.prepare()
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        order.extend(by_id[i] for i in ready)
        sorter.done(*ready)
    return order
