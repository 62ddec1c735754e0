"""The typed syntax tree of an HBIR program: what the parser makes and the checker reads.

Every node is a frozen dataclass carrying the ``line`` and ``column`` (1-based) it was
written at. Positions take no part in equality, so a program printed and parsed again
(``printer.py``) is *equal* to the original even though every position moved — what the
round-trip property test checks.

Syntax is kept close to what was written: ``i++`` is already ``i += 1`` here, ``else if``
is an ``else`` holding one ``If``, and parentheses leave no trace; everything else (which
names resolve, what a flag means, types) is the checker's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """What every syntax node has: where it was written."""

    line: int = field(default=0, compare=False, kw_only=True)
    column: int = field(default=0, compare=False, kw_only=True)


# ---- expressions -------------------------------------------------------------------------


@dataclass(frozen=True)
class IntLit(Node):
    value: int


@dataclass(frozen=True)
class FloatLit(Node):
    value: float


@dataclass(frozen=True)
class BoolLit(Node):
    value: bool


@dataclass(frozen=True)
class StrLit(Node):
    """A C string literal; ``value`` is the text between the quotes, escapes as written."""

    value: str


@dataclass(frozen=True)
class Ref(Node):
    """A name or a dotted reference: ``i``, ``data.A``, ``target.t.x_max``, ``grid.x``."""

    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class Index(Node):
    """``base[index]``; ``A[i][j]`` is ``Index(Index(A, i), j)``."""

    base: Expr
    index: Expr


@dataclass(frozen=True)
class Unary(Node):
    op: str  # "-" or "!"
    operand: Expr


@dataclass(frozen=True)
class Binary(Node):
    op: str  # || && == != < <= > >= + - * / %
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Call(Node):
    """``name(args)``: ``printf``, ``bsg_finish`` as statements, ``chunked(4)`` as a data flag."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cond(Node):
    """C's ``cond ? then : orelse``."""

    cond: Expr
    then: Expr
    orelse: Expr


Expr = IntLit | FloatLit | BoolLit | StrLit | Ref | Index | Unary | Binary | Call | Cond


def index_chain(expr: Expr) -> tuple[Expr, tuple[Expr, ...]]:
    """``A[i][j]`` as ``(A, (i, j))``; any other expression as ``(expr, ())``."""
    indices: list[Expr] = []
    while isinstance(expr, Index):
        indices.append(expr.index)
        expr = expr.base
    return expr, tuple(reversed(indices))


def sub_exprs(e: Expr) -> Iterator[Expr]:
    """``e`` and every expression inside it."""
    yield e
    if isinstance(e, Index):
        yield from sub_exprs(e.base)
        yield from sub_exprs(e.index)
    elif isinstance(e, Unary):
        yield from sub_exprs(e.operand)
    elif isinstance(e, Binary):
        yield from sub_exprs(e.left)
        yield from sub_exprs(e.right)
    elif isinstance(e, Call):
        for a in e.args:
            yield from sub_exprs(a)
    elif isinstance(e, Cond):
        for a in (e.cond, e.then, e.orelse):
            yield from sub_exprs(a)


def ref_names(e: Expr) -> set[str]:
    """The last part of every name ``e`` reads (``data.A[i]`` reads ``A`` and ``i``)."""
    return {x.parts[-1] for x in sub_exprs(e) if isinstance(x, Ref)}


# ---- target ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemField(Node):
    """``size 8G;``: ``value`` as written (``8G``, ``16K``, ``8B``, ``4`` or ``?``)."""

    name: str
    value: str


@dataclass(frozen=True)
class Memory(Node):
    name: str
    dims: tuple[Expr, ...]
    fields: tuple[MemField, ...]


@dataclass(frozen=True)
class Tile(Node):
    name: str
    dims: tuple[Expr, ...]
    memories: tuple[Memory, ...] | None  # None: no { ... } body


@dataclass(frozen=True)
class Target(Node):
    items: tuple[Memory | Tile, ...]


# ---- config ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TileMap(Node):
    """``tile target.t[x+2][y];`` — which physical tile each member of the group is."""

    ref: Expr


@dataclass(frozen=True)
class Temporal(Node):
    """``temporal;`` or ``temporal N;`` — recorded, not acted on (docs/hbir.md)."""

    value: Expr | None


@dataclass(frozen=True)
class Group(Node):
    name: str
    dims: tuple[Expr, ...]
    items: tuple[TileMap | Temporal | Group, ...]


@dataclass(frozen=True)
class Config(Node):
    groups: tuple[Group, ...]


# ---- data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Const(Node):
    name: str
    value: Expr
    const: bool  # written with ``const``


@dataclass(frozen=True)
class LayoutDecl(Node):
    name: str
    flags: tuple[Expr, ...]


@dataclass(frozen=True)
class Distribution(Node):
    """``= block[tx][ty]``: the kind word and the partition grid."""

    kind: str
    dims: tuple[Expr, ...]


@dataclass(frozen=True)
class ArrayDecl(Node):
    """``C: int[dim] = block[..][..] { target.g[x][y]; chunked; device; };``"""

    name: str
    elem: str
    dims: tuple[Expr, ...]
    distribution: Distribution | None
    flags: tuple[Expr, ...]


@dataclass(frozen=True)
class Prop(Node):
    key: str
    value: Expr


@dataclass(frozen=True)
class IOArrayDecl(Node):
    """``in A : int[3][3] { location : config.t, layout : block }``"""

    direction: str  # "in" or "out"
    name: str
    elem: str
    dims: tuple[Expr, ...]
    props: tuple[Prop, ...]


@dataclass(frozen=True)
class Data(Node):
    items: tuple[Const | LayoutDecl | ArrayDecl | IOArrayDecl, ...]


# ---- code --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayInit(Node):
    """C's brace initialiser ``{1, 2, 3}`` (rows nest: ``{{1, 2}, {3, 4}}``)."""

    items: tuple[Expr | ArrayInit, ...]


@dataclass(frozen=True)
class VarDecl(Node):
    """``int v = e;``, or a local array ``int t[4][4] = {...};`` (``dims`` not empty)."""

    elem: str
    name: str
    init: Expr | ArrayInit | None
    dims: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Assign(Node):
    target: Expr
    op: str  # = += -= *= /= %=
    value: Expr


@dataclass(frozen=True)
class ExprStmt(Node):
    expr: Expr


@dataclass(frozen=True)
class If(Node):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] | None


@dataclass(frozen=True)
class While(Node):
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Node):
    """C's ``for (init; cond; step) body``; any part may be missing."""

    init: VarDecl | Assign | ExprStmt | None
    cond: Expr | None
    step: Assign | ExprStmt | None
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class ForIn(Node):
    """``for (int i in iterator<n, L, x, y>) body``: this tile's share of ``0..n`` under L."""

    elem: str
    var: str
    args: tuple[Expr, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break(Node):
    pass


@dataclass(frozen=True)
class Continue(Node):
    pass


@dataclass(frozen=True)
class Compound(Node):
    body: tuple[Stmt, ...]


Stmt = VarDecl | Assign | ExprStmt | If | While | For | ForIn | Break | Continue | Compound


@dataclass(frozen=True)
class Block(Node):
    """``config.tg[x][y] { ... }``: code run by the group's tiles; each index is a name
    (every tile, bound to that coordinate) or an integer (only tiles at that coordinate)."""

    group: str
    indices: tuple[Expr, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Code(Node):
    items: tuple[VarDecl | Block, ...]


Segment = Target | Config | Data | Code


@dataclass(frozen=True)
class Program(Node):
    segments: tuple[Segment, ...]
    filename: str = field(default="<hbir>", compare=False)

    def segment(self, kind: type) -> Segment | None:
        """The first segment of that class, or ``None``."""
        return next((s for s in self.segments if isinstance(s, kind)), None)


def walk_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of ``stmts``, nested ones included, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.orelse or ())
        elif isinstance(s, (While, ForIn, Compound)):
            yield from walk_stmts(s.body)
        elif isinstance(s, For):
            yield from walk_stmts(tuple(x for x in (s.init, s.step) if x is not None))
            yield from walk_stmts(s.body)
