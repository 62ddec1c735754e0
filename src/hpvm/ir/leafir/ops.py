"""The leaf IR's operations: a small structured dialect of typed, frozen values.

Why a dialect of its own: a leaf's body reaches the back ends as Python text, and each back
end parses it again and pattern-matches the syntax tree. The leaf IR is that body parsed
once, with every value typed by Numba's rules (``ir/numeric.py``), every intrinsic carrying
its entry of ``ir/intrinsics.py`` and every statement its source line, so analyses and
emitters can read facts instead of re-deriving them from text (issue 25).

Shapes of the dialect:

* a ``LeafIR``: name, typed parameters (port types of ``ir/types.py``), output types, the
  typed locals, a body (a tuple of statements), the file and the line of the ``def``;
* statements: ``Assign`` (to a variable), ``Store`` (into an array element), ``For`` (over
  ``range(start, stop, step)``), ``While``, ``If`` (with an ``else`` block, maybe empty),
  ``Return``, ``Break``, ``Continue`` and ``ExprStmt`` (an expression kept for its effect:
  a barrier, an atomic whose old value is not used);
* expressions, each with its ``type`` (a ``ScalarType``, an ``ArrayType`` for array values
  and views, ``node`` for node handles): ``Const``, ``Var``, ``Unary``, ``Binary``,
  ``Compare``, ``BoolOp``, ``IfExp``, ``Load`` (an element, or a view when fewer indices
  than the rank are given), ``Shape`` (``a.shape[k]``), ``Size`` (``a.size``), ``Retype``
  (``a.view(dtype)``), ``Alloc`` (a local array: ``np.zeros(shape, dtype)``), ``Cast``,
  ``Call`` (``math``/NumPy functions and the builtins the leaf language allows),
  ``IntrinsicOp`` and, in a leaf whose queries were lowered (``leafir/lowering.py``),
  ``CtxRead`` (a read of the instance context).

Nodes compare by value, so ``parse(print(ir)) == ir`` is a plain ``==``. Types are set by
the constructors of ``leafir/rules.py`` (``binary(...)``, ``load(...)``...), which the
builder, the text parser and the verifier share: one typing per construct.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ...errors import HPVMError, SourceLocation
from ..graph import Param
from ..intrinsics import Intrinsic
from ..types import ArrayType, NodeHandleType, PortType, ScalarType, node_t, scalar_type

_I64 = scalar_type("i64")


class LeafIRUnsupported(HPVMError):
    """A leaf uses a construct outside the leaf IR's dialect (today's coverage, not a user
    mistake: the back ends keep their own path for such leaves). Names the construct, the
    leaf and the file and line, so coverage gaps are visible rather than mistranslated."""

    def __init__(self, leaf: str, where: SourceLocation | None, construct: str, hint: str | None = None):
        #: ``hint``: what to tell a user of the leaf language, where the construct has a
        #: well-known alternative (back ends report it as their own error's reason)
        self.leaf, self.where, self.construct, self.hint = leaf, where, construct, hint
        place = f" ({where})" if where is not None else ""
        advice = f"; {hint}" if hint else ""
        super().__init__(f"leaf '{leaf}'{place}: {construct} is outside the leaf IR's dialect{advice}")


# ---------------------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Const:
    """A number or a boolean of a scalar type (Python literals are i64, f64 or bool)."""

    value: bool | int | float
    type: ScalarType

    def __post_init__(self) -> None:
        if isinstance(self.value, float) and self.value != self.value:
            object.__setattr__(self, "value", NAN)  # one NaN object: equal constants compare equal


#: The NaN every NaN constant holds (tuples compare members by identity first).
NAN = float("nan")


@dataclass(frozen=True)
class Var:
    """A parameter or a local variable, with its (one, unified) type."""

    name: str
    type: PortType


@dataclass(frozen=True)
class Unary:
    """``-x``, ``+x``, ``~x`` or ``not x``."""

    op: str
    operand: Expr
    type: ScalarType


@dataclass(frozen=True)
class Binary:
    """``left <op> right``, ``op`` one of ``numeric.BINARY_OPS``."""

    op: str
    left: Expr
    right: Expr
    type: ScalarType


@dataclass(frozen=True)
class Compare:
    """A comparison chain ``a < b <= c``: ``ops`` between consecutive ``operands``."""

    ops: tuple[str, ...]
    operands: tuple[Expr, ...]
    type: ScalarType


@dataclass(frozen=True)
class BoolOp:
    """``a and b and ...`` or ``a or b or ...`` (short-circuit; Python's value semantics)."""

    op: str
    values: tuple[Expr, ...]
    type: ScalarType


@dataclass(frozen=True)
class IfExp:
    """``body if test else orelse``."""

    test: Expr
    body: Expr
    orelse: Expr
    type: ScalarType


@dataclass(frozen=True)
class Load:
    """``array[i, j, ...]``: an element when every dimension is indexed, else a view of the
    remaining dimensions (``m[i]`` of a 2-D array is a 1-D row)."""

    array: Expr
    indices: tuple[Expr, ...]
    type: ScalarType | ArrayType


@dataclass(frozen=True)
class Shape:
    """``array.shape[axis]`` (and ``len(array)``, axis 0): an i64."""

    array: Expr
    axis: int
    type: ScalarType


@dataclass(frozen=True)
class Size:
    """``array.size``: the number of elements, an i64."""

    array: Expr
    type: ScalarType


@dataclass(frozen=True)
class Retype:
    """``array.view(dtype)``: the same bytes seen as a 1-D array of another element type."""

    array: Expr
    type: ArrayType


@dataclass(frozen=True)
class Alloc:
    """A new local array: ``np.zeros(shape, dtype)``, ``np.ones`` or ``np.empty`` (``fill``),
    made each time it is evaluated (a loop's every iteration gets a new one, as in Python)."""

    fill: str
    shape: tuple[Expr, ...]
    type: ArrayType


@dataclass(frozen=True)
class Cast:
    """A conversion: ``np.float32(x)``, ``int(x)``, ``float(x)``, and the implicit ones of an
    assignment, a store or a return into a place of another type (made explicit here)."""

    value: Expr
    type: ScalarType


@dataclass(frozen=True)
class Call:
    """A function of the leaf language: ``math.<f>``, NumPy's scalar ``np.<f>``, ``min``,
    ``max``, ``abs``. ``func`` is the canonical spelling (``math.sqrt``)."""

    func: str
    args: tuple[Expr, ...]
    type: ScalarType


@dataclass(frozen=True)
class IntrinsicOp:
    """A call of an hpvm intrinsic, with its entry of ``ir/intrinsics.py`` (its kind, arity,
    atomic operation, query axis...). A node handle's type is ``node``; ``barrier`` is
    ``None``-typed and only appears as an ``ExprStmt``."""

    intrinsic: Intrinsic
    args: tuple[Expr, ...]
    type: PortType | None


@dataclass(frozen=True)
class CtxRead:
    """A read of the instance context (``ir/instance_context.py``): ``field`` (an offset
    within a level: ``ID + axis``, ``EXTENT + axis``, ``DIMS``) of ancestor ``level`` (0:
    the leaf's own node). What a structure query becomes once lowered
    (``leafir/lowering.py``): a compiled leaf receives its context and reads it at a
    constant index, so node handles no longer exist. Always an ``i64``."""

    level: int
    field: int
    type: ScalarType = _I64


Expr = (
    Const
    | Var
    | Unary
    | Binary
    | Compare
    | BoolOp
    | IfExp
    | Load
    | Shape
    | Size
    | Retype
    | Alloc
    | Cast
    | Call
    | IntrinsicOp
    | CtxRead
)


# ---------------------------------------------------------------------------------------
# Statements (each with the line of the leaf's file it was written on)


@dataclass(frozen=True)
class Assign:
    target: Var
    value: Expr
    line: int


@dataclass(frozen=True)
class Store:
    """``array[indices] = value`` (``value`` already of the element type)."""

    array: Expr
    indices: tuple[Expr, ...]
    value: Expr
    line: int


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)`` (the bounds as written; ``var``'s type is
    the loop variable's, Numba's range type unified with its other assignments)."""

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class While:
    test: Expr
    body: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class If:
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    line: int


@dataclass(frozen=True)
class Return:
    """``return a, b``: one value per output, of the output's type."""

    values: tuple[Expr, ...]
    line: int


@dataclass(frozen=True)
class Raise:
    """``raise E(...)``: the leaf stops with an error. ``exc`` is the exception expression's
    Python text (``None`` for a bare ``raise``), kept opaque: an exception is not a typed
    value, and only the back ends that run leaves as Python (``pyemit``) or refuse the
    statement (``opencl``, ``cuda``) read it. For the analyses it ends its path like a
    ``return``, except that an instance that raises fails the whole launch."""

    exc: str | None
    line: int


@dataclass(frozen=True)
class Break:
    line: int


@dataclass(frozen=True)
class Continue:
    line: int


@dataclass(frozen=True)
class ExprStmt:
    value: Expr
    line: int


Stmt = Assign | Store | For | While | If | Return | Raise | Break | Continue | ExprStmt
#: What blocks hold: statements in order.
Block = tuple[Stmt, ...]


@dataclass(frozen=True)
class LeafIR:
    """One leaf's body in the dialect. ``locals`` declares every local variable with its
    type, in the order first assigned; ``file``/``line`` are where the ``def`` is."""

    name: str
    params: tuple[Param, ...]
    outputs: tuple[PortType, ...]
    locals: tuple[tuple[str, PortType], ...]
    body: Block
    file: str
    line: int
    # derived lookups, not part of the value
    _types: dict[str, PortType] = field(init=False, compare=False, repr=False, hash=False)
    #: what analyses found about this IR (``leafir/analyses/``): kept with it, since it
    #: never changes; a changed leaf is a new ``LeafIR`` with none
    analyses: dict[object, object] = field(init=False, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        types = {p.name: p.type for p in self.params}
        types.update(self.locals)
        object.__setattr__(self, "_types", types)
        object.__setattr__(self, "analyses", {})

    def type_of(self, name: str) -> PortType | None:
        """The type of a parameter or local (None: not a name of this leaf)."""
        return self._types.get(name)

    def where(self, line: int) -> SourceLocation:
        return SourceLocation(self.file, line)


def children(stmt: Stmt) -> tuple[Block, ...]:
    """The blocks nested in a statement (a loop's body, an if's two branches)."""
    if isinstance(stmt, (For, While)):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.body, stmt.orelse)
    return ()


def walk_stmts(block: Block) -> Iterator[Stmt]:
    """Every statement of ``block`` and the blocks nested in it, in order."""
    for stmt in block:
        yield stmt
        for inner in children(stmt):
            yield from walk_stmts(inner)


def handle_assignments(block: Block) -> dict[str, list[Expr]]:
    """Every node-handle variable of ``block`` (at any depth) with the values assigned to it,
    in order: what the query lowering and the verifier decide each handle's level from."""
    assigns: dict[str, list[Expr]] = {}
    for stmt in walk_stmts(block):
        if isinstance(stmt, Assign) and stmt.target.type == node_t:
            assigns.setdefault(stmt.target.name, []).append(stmt.value)
    return assigns


def stmt_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement holds directly (not those of nested statements)."""
    if isinstance(stmt, Assign):
        return (stmt.target, stmt.value)
    if isinstance(stmt, Store):
        return (stmt.array, *stmt.indices, stmt.value)
    if isinstance(stmt, For):
        return (stmt.var, stmt.start, stmt.stop, stmt.step)
    if isinstance(stmt, (While, If)):
        return (stmt.test,)
    if isinstance(stmt, Return):
        return stmt.values
    if isinstance(stmt, ExprStmt):
        return (stmt.value,)
    return ()


def operands(expr: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of an expression."""
    if isinstance(expr, (Unary,)):
        return (expr.operand,)
    if isinstance(expr, Binary):
        return (expr.left, expr.right)
    if isinstance(expr, Compare):
        return expr.operands
    if isinstance(expr, BoolOp):
        return expr.values
    if isinstance(expr, IfExp):
        return (expr.test, expr.body, expr.orelse)
    if isinstance(expr, Load):
        return (expr.array, *expr.indices)
    if isinstance(expr, (Shape, Size, Retype)):
        return (expr.array,)
    if isinstance(expr, Cast):
        return (expr.value,)
    if isinstance(expr, Alloc):
        return expr.shape
    if isinstance(expr, (Call, IntrinsicOp)):
        return expr.args
    return ()


def walk_expr(expr: Expr) -> Iterator[Expr]:
    """``expr`` and every expression inside it, outermost first."""
    todo = [expr]
    while todo:
        e = todo.pop()
        yield e
        todo.extend(reversed(operands(e)))


__all__ = [
    "Alloc",
    "ArrayType",
    "Assign",
    "BoolOp",
    "Binary",
    "Block",
    "Break",
    "Call",
    "Cast",
    "Compare",
    "Const",
    "Continue",
    "CtxRead",
    "Expr",
    "ExprStmt",
    "For",
    "If",
    "IfExp",
    "IntrinsicOp",
    "LeafIR",
    "LeafIRUnsupported",
    "Load",
    "NodeHandleType",
    "Retype",
    "Return",
    "ScalarType",
    "Shape",
    "Size",
    "Stmt",
    "Store",
    "Unary",
    "Var",
    "While",
    "children",
    "operands",
    "stmt_exprs",
    "walk_expr",
    "walk_stmts",
]
