"""HBIR statements → the Python of a leaf body, line by line with the HBIR line it came from.

One code block becomes one function (the leaf's body, a ``GeneratedBody``). The generated
code is the Numba subset every back end compiles, and keeps C's meaning:

* ints divide truncating toward zero and ``%`` takes the dividend's sign (Python's ``//``
  and ``%`` floor), written out inline as ``abs``/``//`` arithmetic;
* assignments convert as C does (a float stored in an int truncates; ``int``/``float``/
  ``bool`` around the value where the types differ); ``&&``/``||``/``!`` give bools;
* a C ``for`` is a ``range`` loop when it plainly counts (``for (int i = a; i < b; i++)``
  with a bound and a variable the body does not change), otherwise a ``while`` loop whose
  ``continue``\\ s run the step first;
* ``for (int i in iterator<n, L, x, y>)`` visits this tile's share of ``0..n`` under L
  (``_iterator``: the ownership of ``ir/layouts.py`` over the group's tiles in row-major
  order), ``bsg_finish()`` returns from the block, ``printf`` appends a record to the
  tile's row of the log arrays (``hbir_log``: format id and values; ``hbir_nlog``: count),
  its ``%s`` string literals already put into the format (``printf.inline_strings``);
* a local array (``int t[4] = {1, 2};``) is ``np.zeros`` where it is declared, then its
  initialiser's elements (C's rules: the rest stay zero).

Every variable declaration gets a Python name of its own (``i``, then ``i__1``...), so C's
block scoping survives Python's function scoping and each name keeps one type.

Array indices that are provably never negative are written ``np.uint64(i)``. Why: Numba
wraps negative indices (``i < 0 ? i + n : i``), and unless LLVM can prove ``i >= 0`` that
select stays in the loop and the loop does not vectorize — it could not for the tile loops
of HBIR programs (``for (int j = y * cols; ...)``), and the benchmark programs ran 3–4×
slower than the same loops over views (benchmarks/hbir.py). An unsigned index has no
select. The proof is syntactic (``nonneg``): literals, constants, extents and coordinates,
``+ * / %`` of such (and any expression of constants that evaluates to ``>= 0``), and int locals whose every value is such (declared with one and never
assigned again; counting-loop and iterator variables the body does not assign). The value
is unchanged, so the cast means the same on every back end. Only indices that read a local
are cast: one of coordinates and constants alone (``A[x + 3]``) is left for the ``cpu`` back
end's bounds pre-check to read, and its select is loop-invariant anyway.

The writing is shared out: ``codeexpr.py`` (expressions, and the proof of ``nonneg``),
``codeloops.py`` (C ``for``, ``iterator``, wait loops); this module writes a block's
statements and its function around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ast as A
from .codeexpr import ExprWriter, nonneg
from .codeloops import RUNNING, TURNS, WAIT_COLUMNS, WAITING, LoopWriter, grid_size, row_major
from .consteval import fold
from .model import BlockInfo, Model, axis_name
from .printf import LOG_VALUES, inline_strings, printf_conversions
from .symbols import Scope, Symbol, resolve_ref
from .waits import wait_loops

#: How many printf records each tile keeps (more are counted and reported as dropped).
LOG_CAPACITY = 256

_IND = "    "


@dataclass
class Generated:
    """A block's function: its text, the HBIR line of each text line, and what it uses."""

    name: str
    text: str
    lines: tuple[int, ...]
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    logs: bool = False
    params: list[str] = field(default_factory=list)  # the function's parameters, in order
    waits: bool = False  # has a wait loop (waits.py): takes hbir_wait


class BlockWriter:
    """Writes one block's function (``write()``): its statements, with an ``ExprWriter``
    for expressions and a ``LoopWriter`` for loops, and the function around them."""

    def __init__(self, model: Model, info: BlockInfo, name: str, track: bool = False):
        self.model, self.info, self.name = model, info, name
        self.group = info.group
        self.out: list[tuple[int, str]] = []
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.logs = False
        self.taken: dict[str, int] = {}
        self.steps: list[list[tuple[A.Node, A.Stmt]] | None] = []  # per loop: the C for's step
        self.counter = 0
        self.reassigned = _assigned_names(info.block.body)  # names some statement assigns to
        shared = set(model.arrays) | set(model.globals)
        self.waits = {id(loop) for loop in wait_loops(info.block.body, shared)}  # waits.py
        self.waiting = track  # keeps its tiles' rows of hbir_wait (a program with wait loops)
        self.exprs = ExprWriter(self.reads)
        self.loops = LoopWriter(self)

    def emit(self, depth: int, line: int, text: str) -> None:
        self.out.append((line, _IND * depth + text))

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"hbir_{base}{self.counter}"

    def local_name(self, name: str) -> str:
        n = self.taken.get(name, 0)
        self.taken[name] = n + 1
        return name if n == 0 else f"{name}__{n}"

    def body(self, stmts: tuple[A.Stmt, ...], scope: Scope, depth: int, line: int) -> None:
        before = len(self.out)
        scope.push()
        for s in stmts:
            self.stmt(s, scope, depth)
        scope.pop()
        if len(self.out) == before:
            self.emit(depth, line, "pass")

    def declare(self, name: str, elem: str, scope: Scope, positive: bool = False) -> str:
        """A new Python name for a local; ``positive``: its every value is ``>= 0``."""
        python = self.local_name(name)
        scope.declare(name, Symbol("local", elem, python=python, nonneg=positive))
        return python

    def stmt(self, s: A.Stmt, scope: Scope, depth: int) -> None:
        line = s.line
        if isinstance(s, A.VarDecl) and s.dims:
            self.local_array(s, scope, depth)
        elif isinstance(s, A.VarDecl):
            init = {"int": "0", "float": "0.0", "bool": "False"}[s.elem]
            if s.init is not None:
                init = self.exprs.converted(s.init, s.elem, scope)
            positive = (
                s.elem == "int"
                and (s.init is None or nonneg(s.init, scope))
                and s.name not in self.reassigned
            )
            python = self.declare(s.name, s.elem, scope, positive)
            self.emit(depth, line, f"{python} = {init}")
        elif isinstance(s, A.Assign):
            self.assign(s, scope, depth)
        elif isinstance(s, A.ExprStmt):
            self.call(s.expr, scope, depth)  # type: ignore[arg-type]
        elif isinstance(s, A.If):
            self.emit(depth, line, f"if {self.exprs.expr(s.cond, scope)}:")
            self.body(s.then, scope, depth + 1, line)
            if s.orelse:
                self.emit(depth, line, "else:")
                self.body(s.orelse, scope, depth + 1, line)
        elif isinstance(s, A.While):
            self.steps.append(None)
            self.loops.wait_loop(
                s, self.exprs.expr(s.cond, scope), depth, lambda: self.body(s.body, scope, depth + 1, line)
            )
            self.steps.pop()
        elif isinstance(s, A.For):
            self.loops.c_for(s, scope, depth)
        elif isinstance(s, A.ForIn):
            self.loops.iterator(s, scope, depth)
        elif isinstance(s, A.Break):
            self.emit(depth, line, "break")
        elif isinstance(s, A.Continue):
            step = self.steps[-1] if self.steps else None
            for st in step or ():
                self.stmt(st, scope, depth)  # type: ignore[arg-type]
            self.emit(depth, line, "continue")
        elif isinstance(s, A.Compound):
            self.body(s.body, scope, depth, line)

    def local_array(self, s: A.VarDecl, scope: Scope, depth: int) -> None:
        """``int t[4][4] = {...};``: a new zeroed NumPy array each time the declaration runs
        (per tile, per iteration of an enclosing loop), then the initialiser's values."""
        env = {**self.model.target_values, **self.model.consts}
        shape = tuple(int(fold(d, env)) for d in s.dims)
        values: list[tuple[tuple[int, ...], str]] = []
        items = s.init.items if isinstance(s.init, A.ArrayInit) else ()
        if len(shape) == 2 and items and all(isinstance(i, A.ArrayInit) for i in items):
            for r, row in enumerate(items):
                for c, v in enumerate(row.items):  # type: ignore[union-attr]
                    values.append(((r, c), self.exprs.converted(v, s.elem, scope)))  # type: ignore[arg-type]
        else:
            for k, v in enumerate(items):
                at = (k,) if len(shape) == 1 else (k // shape[1], k % shape[1])
                values.append((at, self.exprs.converted(v, s.elem, scope)))  # type: ignore[arg-type]
        python = self.local_name(s.name)
        dtype = {"int": "np.int32", "float": "np.float32", "bool": "np.bool_"}[s.elem]
        self.emit(depth, s.line, f"{python} = np.zeros({shape}, {dtype})")
        for at, text in values:
            self.emit(depth, s.line, f"{python}[{', '.join(map(str, at))}] = {text}")
        scope.declare(s.name, Symbol("local", s.elem, rank=len(shape), python=python))

    def assign(self, s: A.Assign, scope: Scope, depth: int) -> None:
        target = s.target
        if isinstance(target, A.Ref):
            sym = resolve_ref(target, scope)
            assert sym is not None
            elem = sym.elem
            if sym.kind == "global":
                self.writes.add(target.parts[-1])
        else:
            base, _ = A.index_chain(target)
            sym = resolve_ref(base, scope)  # type: ignore[arg-type]
            assert sym is not None
            elem = sym.elem
            self.writes.add(sym.python)
        value = s.value if s.op == "=" else A.Binary(s.op[0], target, s.value, line=s.line, column=s.column)
        left = self.exprs.expr(target, scope)  # (an array stored to is counted as read too: harmless)
        self.emit(depth, s.line, f"{left} = {self.exprs.converted(value, elem, scope)}")

    def call(self, call: A.Call, scope: Scope, depth: int) -> None:
        if call.name == "bsg_finish":
            self.loops.leave(depth, call.line)
            return
        fmt, args = inline_strings(call.args[0].value, call.args[1:])  # type: ignore[union-attr]
        formats = self.model.printf_formats
        if fmt not in formats:
            formats.append(fmt)
        self.logs = True
        k = self.fresh("k")
        values = [self.exprs.expr(a, scope) for a in args]
        self.emit(depth, call.line, f"{k} = hbir_nlog[hbir_tile]")
        self.emit(depth, call.line, f"if {k} < {LOG_CAPACITY}:")
        self.emit(depth + 1, call.line, f"hbir_log[hbir_tile, {k}, 0] = {formats.index(fmt)}")
        for j, v in enumerate(values[:LOG_VALUES], start=1):
            self.emit(depth + 1, call.line, f"hbir_log[hbir_tile, {k}, {j}] = {v}")
        self.emit(depth, call.line, f"hbir_nlog[hbir_tile] = {k} + 1")

    def write(self, scope: Scope) -> Generated:
        block = self.info.block
        body_start = len(self.out)
        self.body(block.body, scope, 1, block.line)
        body = self.out[body_start:]
        self.out = self.out[:body_start]
        line = block.line
        chain = self.group.chain
        node = "hbir_node"
        self.emit(1, line, f"{node} = hpvm.get_node()")
        replicated = any(f is None for f in self.info.fixed)
        for level in range(len(chain) - 1, -1, -1):
            g = chain[level]
            if level == len(chain) - 1:
                handle = node
            else:
                parent = f"hbir_parent{len(chain) - 1 - level}"
                prev = node if level == len(chain) - 2 else f"hbir_parent{len(chain) - 2 - level}"
                self.emit(1, line, f"{parent} = hpvm.get_parent_node({prev})")
                handle = parent
            if g is self.group and not replicated:
                for k in range(len(g.dims)):
                    self.emit(1, line, f"{g.name}__{axis_name(k)} = {self.info.fixed[k]}")
            else:
                for k, text in enumerate(coordinates(g.dims, handle)):
                    self.emit(1, line, f"{g.name}__{axis_name(k)} = {text}")
        if replicated:
            for k, f in enumerate(self.info.fixed):
                if f is not None:
                    self.emit(1, line, f"if {self.group.name}__{axis_name(k)} != {f}:")
                    self.emit(2, line, "return")
        if self.logs or self.waiting:
            self.emit(1, line, f"hbir_tile = {self.tile_index(scope)}")
        if self.waiting:
            self.emit(1, line, f"hbir_wait[hbir_tile, {RUNNING}] = 1")
        head = self.out
        self.out = head + body
        if self.waiting:
            self.emit(1, line, f"hbir_wait[hbir_tile, {RUNNING}] = 0")
        params = self.params()
        # The def comes first (analyses read a generated body's first statement); the import
        # after it runs when the module does, before the function is ever called.
        text_lines = [(line, f"def {self.name}({', '.join(params)}):"), *self.out]
        text_lines += [
            (line, ""),
            (line, ""),
            (line, "import hpvm  # noqa: E402 (the intrinsics the body calls)"),
            (line, "import numpy as np  # noqa: E402 (unsigned indices, local arrays)"),
        ]
        text = "\n".join(t for _, t in text_lines) + "\n"
        lines = tuple(n for n, _ in text_lines)
        return Generated(self.name, text, lines, self.reads, self.writes, self.logs, params, self.waiting)

    def params(self) -> list[str]:
        used = self.reads | self.writes
        out = [a for a in self.model.arrays if a in used]
        out += [g for g in self.model.globals if g in used]
        if self.logs:
            out += ["hbir_log", "hbir_nlog"]
        if self.waiting:
            out.append("hbir_wait")
        return out

    def tile_index(self, scope: Scope) -> str:
        """The tile's place in row-major order over every tile array: its printf row."""
        g = self.group
        offset = 0
        for name, dims in self.model.tile_arrays.items():
            if name == g.tile_array:
                break
            offset += grid_size(dims)
        shape = self.model.tile_arrays[g.tile_array or ""]
        syms: dict[str, Symbol] = {
            k: v for k, v in scope.frames[0].items() if v.kind in ("target", "group", "extent")
        }
        for k in range(len(g.dims)):
            syms[axis_name(k)] = Symbol("coord", "int", python=f"{g.name}__{axis_name(k)}")
        inner = Scope(syms)
        _, indices = A.index_chain(g.tile_map)  # type: ignore[arg-type]
        coords = [self.exprs.expr(i, inner) for i in indices]
        return f"{offset} + {row_major(coords, shape)}"


def _assigned_names(stmts: tuple[A.Stmt, ...]) -> set[str]:
    """Every name an assignment (``=``, ``+=``, ``++``...) anywhere in ``stmts`` writes."""
    return {
        s.target.parts[-1]
        for s in A.walk_stmts(stmts)
        if isinstance(s, A.Assign) and isinstance(s.target, A.Ref)
    }


def coordinates(dims: tuple[int, ...], handle: str) -> list[str]:
    """How a node instance reads its group coordinates: hpvm's ids x, y, z up to three
    dimensions; beyond, the z id holds the third and later coordinates row-major
    (``model.node_grid``), each recovered by division and remainder."""
    axes = [f"hpvm.get_node_instance_id_{'xyz'[k]}({handle})" for k in range(min(len(dims), 3))]
    if len(dims) <= 3:
        return axes
    out = axes[:2]
    rest = dims[2:]
    for k in range(len(rest)):
        stride = grid_size(rest[k + 1 :])
        out.append(f"(({axes[2]} // {stride}) % {rest[k]})")
    return out


def generate(
    model: Model, info: BlockInfo, name: str, outer: dict[str, Symbol], track: bool = False
) -> Generated:
    """The function of one code block; ``track``: the program has wait loops, and every
    block keeps its tiles' rows of ``hbir_wait`` (running, waiting at, turns)."""
    return BlockWriter(model, info, name, track).write(Scope(outer))


def has_waits(model: Model) -> bool:
    """Whether some block of the program has a wait loop (``waits.py``)."""
    shared = set(model.arrays) | set(model.globals)
    return any(wait_loops(b.block.body, shared) for b in model.blocks)


__all__ = [
    "LOG_CAPACITY",
    "LOG_VALUES",
    "RUNNING",
    "TURNS",
    "WAITING",
    "WAIT_COLUMNS",
    "Generated",
    "generate",
    "has_waits",
    "printf_conversions",
]
