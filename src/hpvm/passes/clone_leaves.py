"""Clone leaves with their context (seed 001, DFG2LLVM_CPU step 1): leaves become functions
a Numba compiler (``cpu``'s, numba-cuda's) compiles.

Each leaf is cloned with one extra parameter, ``__hpvm_ctx``: a tuple of int64 holding, for
the leaf's own node and each ancestor, the instance ids and extents in x, y, z and the number
of dimensions (the layout of ``ir/instance_context.py``: level 0 is the leaf's node, 1 its
parent…). The query intrinsics become constant-index reads of that tuple, node-handle
variables disappear, atomics and ``malloc`` call ``__hpvm_atomic_<op>`` / ``__hpvm_malloc``
and barriers become calls of ``__hpvm_barrier`` — names each back end binds to its own
implementations (the ``cpu`` back end splits its leaves at the barrier markers,
``backends/cpu/barriers.py``). The clone keeps the leaf's line numbers, so Numba's messages
point at the user's source.

A leaf in the leaf IR's dialect (``ir/leafir``) is lowered there, once for every back end
(``leafir/lowering.py``), and its clone is the Python ``pyemit`` emits from the lowered IR
(``LeafClone.ir``); back ends rewrite that IR further (privatized atomics, pooled
``malloc``) and emit again. A leaf outside the dialect keeps the syntax-tree rewrite below
(``_Cloner``, ``LeafClone.ir`` is ``None``), and back ends take their conservative path for
it. Both live with the passes, so back ends share them without importing each other. As a pass (``CloneLeaves``) it writes the clones into the IR, as
generated bodies whose lines map to the leaf's — printable, golden-tested — and back ends
read them back (``clone_of``) instead of cloning themselves.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CompileError
from ..ir import instance_context as ictx
from ..ir import pyast
from ..ir.bodies import PYTHON_KINDS, GeneratedBody
from ..ir.graph import InternalFunction, LeafFunction, functions
from ..ir.intrinsics import INTRINSICS, LOWERED_PREFIX
from ..ir.leafinfo import handle_level, intrinsic_name, leaf_namespace, parse_leaf, visible_names
from ..ir.leafir import LeafIR, LeafIRUnsupported, leaf_ir, ops
from ..ir.leafir.lowering import LoweredLeaf, lower_queries, lowering_error
from ..ir.leafir.pyemit import BARRIER_MARKER, CTX_PARAM, CloneSpelling, emit_problem, emit_python
from ..ir.leafir.pyemit import namespace as emitted_names
from ..ir.pysource import generated_body, unparse_with_lines
from .base import Module, Pass


@dataclass
class LeafClone:
    """A leaf rewritten to read its context (see the module doc)."""

    leaf: LeafFunction  # the leaf as the IR has it (its clone, after CloneLeaves): back ends key by it
    symbol: str  # the clone's unique function name
    func: ast.FunctionDef  # the rewritten def (line numbers of the user's file)
    levels: int  # how many context levels it reads (max level + 1; 0 if none)
    barrier_lines: list[int] = field(default_factory=list)
    user: LeafFunction = None  # type: ignore[assignment]  # the leaf as written (default: leaf)
    #: the lowered leaf IR ``func`` is emitted from (``None``: a leaf outside the dialect,
    #: cloned by rewriting its syntax tree), and how it was spelled
    ir: LeafIR | None = None
    spelling: CloneSpelling = field(default_factory=CloneSpelling)
    #: the intrinsics the clone calls the back end's implementation of (``malloc``,
    #: ``atomic_add``...: ``Intrinsic.lowered_call``), as CloneLeaves made it
    calls: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.user is None:
            self.user = self.leaf

    @property
    def uses_barrier(self) -> bool:
        return bool(self.barrier_lines)

    def source(self) -> str:
        if self.ir is not None:
            return emit_python(self.ir, self.symbol, spelling=self.spelling)[0]
        return ast.unparse(self.func)

    def namespace(self) -> dict[str, Any]:
        """The names the clone runs in: for a clone emitted from the leaf IR, the names that
        Python reads (``np``...), and the leaf's own only when a ``raise`` may read them (its
        exception is opaque text); the leaf's own for a syntax-tree clone. (The generated
        module keeps its namespace for the life of the process: a leaf defined in a function
        would keep that function's locals, a whole program's root among them, alive.)"""
        if self.ir is None:
            return leaf_namespace(self.user)
        if not any(isinstance(s, ops.Raise) for s in ops.walk_stmts(self.ir.body)):
            return emitted_names()
        return {**leaf_namespace(self.user), **emitted_names()}

    def reemitted(self, ir: LeafIR, tag: str, spelling: CloneSpelling | None = None) -> LeafClone:
        """This clone with its lowered IR rewritten by a back end (``ir``) and emitted
        again, named ``<symbol>_<tag><digest of the new code>`` (Numba's disk cache is keyed
        by the name and the file)."""
        spelling = spelling if spelling is not None else self.spelling
        symbol, text, lines = _emit(ir, f"{self.symbol}_{tag}", spelling)
        return replace(self, symbol=symbol, func=_mapped(text, lines, ir.line), ir=ir, spelling=spelling)


def symbol_for(fn: Any, kind: str) -> str:
    """A unique, deterministic Python identifier for a node function's generated code."""
    digest = hashlib.sha1(f"{fn.location}:{fn.name}:{id(fn) if kind == 'anon' else ''}".encode()).hexdigest()[
        :10
    ]
    safe = re.sub(r"\W", "_", fn.name)
    return f"__hpvm_{kind}_{safe}_{digest}"


def _fail(leaf: LeafFunction, backend: str, line: int, what: str) -> CompileError:
    return lowering_error(leaf.name, leaf.location.file, line, backend, what)


def _emit(ir: LeafIR, prefix: str, spelling: CloneSpelling) -> tuple[str, str, tuple[int, ...]]:
    """The clone's Python emitted from a lowered ``ir``: its symbol (``prefix`` and a hash of
    the code), the text and each line's line in the leaf's file."""
    text, lines = emit_python(ir, "__hpvm_clone", spelling=spelling)
    symbol = f"{prefix}{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return symbol, text.replace("def __hpvm_clone(", f"def {symbol}(", 1), lines


def _mapped(text: str, lines: tuple[int, ...], default: int) -> ast.FunctionDef:
    """The ``def`` of emitted ``text``, each node at the line of the leaf's file its line
    stands for (``default`` where none): Numba's messages point at the user's source."""
    return _with_lines(text, lambda line: (lines[line - 1] if 0 < line <= len(lines) else 0) or default)


def _with_lines(text: str, line_of: Any) -> ast.FunctionDef:
    func = pyast.parse(text).body[0]
    assert isinstance(func, ast.FunctionDef)
    for node in ast.walk(func):
        for attr in ("lineno", "end_lineno"):
            line = getattr(node, attr, None)
            if line is not None:
                setattr(node, attr, line_of(line))
        _keep_positions_ordered(node)
    return func


def _ir_calls(ir: LeafIR) -> frozenset[str]:
    """The intrinsics a lowered IR calls the back end's implementation of."""
    return frozenset(
        e.intrinsic.name
        for stmt in ops.walk_stmts(ir.body)
        for top in ops.stmt_exprs(stmt)
        for e in ops.walk_expr(top)
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.lowered_call
    )


def generated_clone(
    leaf: LeafFunction, symbol: str, source: str, line: int, levels: int, barriers: list[int]
) -> LeafClone:
    """A clone a back end generates itself (an LLVM leaf's Numba wrapper, ``cpu``): its
    ``def`` in ``source`` named ``symbol``, every node at ``line`` of the leaf's file; no
    leaf IR (nothing reads its body)."""
    return LeafClone(leaf, symbol, _with_lines(source, lambda _: line), levels, barriers)


def _lowered(leaf: LeafFunction, backend: str) -> LoweredLeaf | None:
    """``leaf``'s lowered IR, or ``None`` for a leaf outside the dialect (or one whose
    variables the emitted Python cannot have): the syntax-tree clone is made instead."""
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported:
        return None
    if emit_problem(ir) is not None:
        return None
    return lower_queries(ir, backend)


class _Cloner(ast.NodeTransformer):
    def __init__(self, leaf: LeafFunction, env: dict[str, Any], backend: str):
        self.leaf = leaf
        self.backend = backend
        self.env = env
        self.handles: dict[str, int] = {}  # handle variable -> ancestor level
        self.max_level = -1
        self.barrier_lines: list[int] = []
        self.calls: set[str] = set()
        self.allowed_handle_uses: set[int] = set()  # ids of Name nodes consumed by queries

    # -- node handles --------------------------------------------------------------------

    def level_of(self, expr: ast.AST) -> int | None:
        return handle_level(expr, self.handles, self.env)

    def collect_handles(self, func: ast.FunctionDef) -> None:
        assigns = [
            n
            for n in ast.walk(func)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        ]
        for _ in range(8):  # chains of handle variables, to a fixpoint
            for node in assigns:
                level = self.level_of(node.value)
                if level is not None:
                    self.handles[node.targets[0].id] = level

    # -- rewriting -----------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node is not self.root:
            return self.generic_visit(node)
        node.decorator_list = []
        node.returns = None
        for arg in node.args.args:
            arg.annotation = None
        node.args.args.append(ast.arg(arg=CTX_PARAM))
        node.body = [self.visit(stmt) for stmt in node.body]
        node.body = [s for s in node.body if s is not None] or [ast.Pass()]
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in self.handles
        ):
            if self.level_of(node.value) is None:
                raise _fail(
                    self.leaf,
                    self.backend,
                    node.lineno,
                    f"node handle '{node.targets[0].id}' is assigned something else",
                )
            return ast.copy_location(ast.Pass(), node)  # handles exist only at compile time
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if isinstance(call, ast.Call) and intrinsic_name(call, self.env) == "barrier":
            self.barrier_lines.append(node.lineno)
            marker = ast.Call(ast.Name(BARRIER_MARKER, ast.Load()), [], [])
            return ast.copy_location(ast.Expr(ast.copy_location(marker, call)), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = intrinsic_name(node, self.env)
        if name is None:
            return self.generic_visit(node)
        if name in ictx.QUERY_OFFSETS:
            if len(node.args) != 1:
                raise _fail(self.leaf, self.backend, node.lineno, f"hpvm.{name}() takes one node handle")
            level = self.level_of(node.args[0])
            if level is None:
                raise _fail(
                    self.leaf,
                    self.backend,
                    node.lineno,
                    f"the node handle passed to hpvm.{name}() is not known at compile time "
                    "(use hpvm.get_node() / hpvm.get_parent_node(...) directly or through a variable)",
                )
            self.max_level = max(self.max_level, level)
            index = ast.Constant(ictx.index(level, ictx.QUERY_OFFSETS[name]))
            read = ast.Subscript(ast.Name(CTX_PARAM, ast.Load()), index, ast.Load())
            return ast.copy_location(read, node)
        if name in ("get_node", "get_parent_node"):
            raise _fail(
                self.leaf, self.backend, node.lineno, f"hpvm.{name}() is used other than in a structure query"
            )
        if INTRINSICS[name].lowered_call:  # the back end binds __hpvm_<name>
            self.calls.add(name)
            node.func = ast.copy_location(ast.Name(f"{LOWERED_PREFIX}{name}", ast.Load()), node.func)
            node.args = [self.visit(a) for a in node.args]
            return node
        if name == "barrier":
            raise _fail(self.leaf, self.backend, node.lineno, "hpvm.barrier() must be a statement of its own")
        raise _fail(self.leaf, self.backend, node.lineno, f"hpvm.{name}() cannot be called in a leaf")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.handles and isinstance(node.ctx, ast.Load):
            raise _fail(
                self.leaf,
                self.backend,
                node.lineno,
                f"node handle '{node.id}' is used other than as the argument of a structure query",
            )
        return node


def clone_leaf(leaf: LeafFunction, backend: str = "cpu") -> LeafClone:
    """The clone of ``leaf``; what cannot be cloned is a ``CompileError`` naming the line and
    saying that the ``backend`` back end cannot compile it."""
    return _clone_with_text(leaf, backend)[0]


def _clone_with_text(leaf: LeafFunction, backend: str) -> tuple[LeafClone, str, tuple[int, ...]]:
    """The clone, its source and its source map (lines of the leaf's file)."""
    lowered = _lowered(leaf, backend)
    if lowered is not None:
        symbol, text, lines = _emit(lowered.ir, f"{symbol_for(leaf, 'leaf')}_", CloneSpelling())
        func = _mapped(text, lines, lowered.ir.line)
        barriers = list(lowered.barrier_lines)
        clone = LeafClone(
            leaf, symbol, func, lowered.levels, barriers, ir=lowered.ir, calls=_ir_calls(lowered.ir)
        )
        return clone, text, lines
    clone = _tree_clone(leaf, backend)
    return (clone, *unparse_with_lines(clone.func))


def _tree_clone(leaf: LeafFunction, backend: str) -> LeafClone:
    """The syntax-tree clone of a leaf outside the leaf IR's dialect."""
    func = parse_leaf(leaf)
    if func is None:
        raise CompileError(
            f"leaf '{leaf.name}' ({leaf.location}): its Python source is not available, so the "
            f"{backend} back end cannot compile it (a leaf read from IR text has no code: save and load "
            "programs as .hpvm files, which carry their leaves' source)"
        )
    env = visible_names(leaf)  # (its static names, if its code has not run: hpvm show --lowered)
    cloner = _Cloner(leaf, env, backend)
    cloner.root = func  # type: ignore[attr-defined]
    cloner.collect_handles(func)
    # Query arguments are consumed before names are checked: visit calls first via generic order.
    func = cloner.visit(func)
    func.name = "__hpvm_clone"
    ast.fix_missing_locations(func)
    # The symbol carries a hash of the generated code: Numba's disk cache is keyed by the
    # user's file and the function's name, so a change in what we generate (a new hpvm, an
    # edited leaf) must give a new name, or a stale cached machine code would be loaded.
    digest = hashlib.sha1(ast.unparse(func).encode()).hexdigest()[:8]
    symbol = f"{symbol_for(leaf, 'leaf')}_{digest}"
    func.name = symbol
    calls = frozenset(cloner.calls)
    return LeafClone(leaf, symbol, func, cloner.max_level + 1, cloner.barrier_lines, calls=calls)


# ---------------------------------------------------------------------------------------
# The pass: clones in the IR, as generated bodies that back ends compile


def cloned_leaf(leaf: LeafFunction, backend: str = "cpu") -> LeafFunction:
    """``leaf`` cloned with its context, as a leaf of the IR: same ports and attributes, and
    a ``GeneratedBody`` — the clone's source, each line mapped to the line of the leaf it
    came from, taking the context in parameter ``__hpvm_ctx``, run in the leaf's module
    (when it runs: cloning a leaf read from a program file does not run its code)."""
    clone, source, lines = _clone_with_text(leaf, backend)
    extra = emitted_names if clone.ir is not None else dict
    body = generated_body(
        clone.symbol,
        source,
        leaf.location.file,
        lines,
        context=CTX_PARAM,
        namespace=lambda: {**leaf_namespace(leaf), **extra()},
        static_base=lambda: {**visible_names(leaf), **extra()},
    )
    body = replace(body, cloned_from=leaf)
    return LeafFunction(
        None,
        leaf.name,
        list(leaf.params),
        list(leaf.outputs),
        hint=leaf.hint,
        ins=leaf.ins,
        outs=leaf.outs,
        location=leaf.location,
        body=body,
    )


def written_leaf(leaf: LeafFunction) -> LeafFunction:
    """The leaf as the user wrote it: the one a clone was made from, or ``leaf`` itself."""
    body = leaf.body
    return body.cloned_from if isinstance(body, GeneratedBody) and body.cloned_from is not None else leaf


def clone_of(leaf: LeafFunction, backend: str = "cpu") -> LeafClone:
    """The ``LeafClone`` a back end compiles for ``leaf``: read back from the IR when the
    CloneLeaves pass cloned it (its generated body, lines mapped to the leaf's file), else
    made now."""
    body = leaf.body
    if not (isinstance(body, GeneratedBody) and body.context == CTX_PARAM and body.cloned_from is not None):
        return clone_leaf(leaf, backend)
    original: LeafFunction = body.cloned_from
    func = _with_lines(body.source, lambda line: body.origin_of(line).line or original.location.line)
    lowered = _lowered(original, backend)
    if lowered is not None:
        symbol = _emit(lowered.ir, "", CloneSpelling())[0]
        if func.name.endswith(f"_{symbol}"):  # (the body is what the IR emits)
            barriers = list(lowered.barrier_lines)
            calls = _ir_calls(lowered.ir)
            return LeafClone(
                leaf, func.name, func, lowered.levels, barriers, original, lowered.ir, calls=calls
            )
    levels, barriers, calls = 0, [], set()
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == CTX_PARAM
            and isinstance(node.slice, ast.Constant)
        ):
            levels = max(levels, node.slice.value // ictx.STRIDE + 1)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == BARRIER_MARKER
        ):
            barriers.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.removeprefix(LOWERED_PREFIX) in INTRINSICS
            and INTRINSICS[node.func.id.removeprefix(LOWERED_PREFIX)].lowered_call
        ):
            calls.add(node.func.id.removeprefix(LOWERED_PREFIX))
    return LeafClone(leaf, func.name, func, levels, sorted(barriers), original, calls=frozenset(calls))


def _keep_positions_ordered(node: ast.AST) -> None:
    """A node's end after its start, which ``compile`` requires: lines mapped one by one to
    the leaf's file can put a node that spans several generated lines (a docstring the
    source map gives no line of its own) back to front."""
    start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if start is None or end is None:
        return
    if end < start:
        node.end_lineno = end = start  # type: ignore[attr-defined]
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if end == start and col is not None and end_col is not None and end_col < col:
        node.end_col_offset = col  # type: ignore[attr-defined]


@dataclass(frozen=True)
class CloneLeaves(Pass):
    """Seed 001's step 1 as a pass: every leaf the back end compiles becomes its clone with
    the context (``cloned_leaf``); leaves of nodes placed on the host (``place``: allocation
    nodes the interpreter runs) keep their Python. ``backend`` names the back end in the
    errors of what cannot be cloned."""

    backend: str = "cpu"
    name = "clone-leaves"

    def apply(self, module: Module) -> None:
        done: dict[int, LeafFunction] = {}
        for fn in functions(module.root):
            if not isinstance(fn, InternalFunction):
                continue
            for node in fn.graph.nodes:
                leaf = node.function
                if not isinstance(leaf, LeafFunction) or node.attrs.get("place") == "host":
                    continue
                if leaf.body_kind not in PYTHON_KINDS or (
                    isinstance(leaf.body, GeneratedBody) and leaf.body.context
                ):
                    continue  # (only Python is cloned; a clone is not cloned again)
                if id(leaf) not in done:
                    done[id(leaf)] = cloned_leaf(leaf, self.backend)
                node.function = done[id(leaf)]
