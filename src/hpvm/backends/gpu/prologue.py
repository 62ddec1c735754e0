"""The kernel prologue: how a GPU thread finds its instance, described once for both languages.

Every kernel of the GPU lowering starts the same way (``spec.py`` gives the meaning): from
its block and thread ids it computes its parent instance's table row, its instance within
that parent (``local``), the instance count (``total``), the row's parent index (``gp``),
its flat instance index (``flat``), its instance ids, and the context its leaves read. This
module says *what* to compute, as a few assignments over a tiny expression language; each
kernel generator renders them in its language (``cuda/kernelgen.py`` in Python for
numba-cuda, ``opencl/kernelgen.py`` in OpenCL C), so both get the same fast paths.

A launch picks one ``Form`` of the prologue (``launch_form``), and devices build one kernel
per form they meet:

* **grouped** (the plan's 1-D geometry): ``bpp`` blocks per parent instance, ids unravelled
  from ``local`` by division (none for a 1-D grid), and a bounds test for a last block
  that is only partly filled;
* **exact**: the same, without the bounds test, when the blocks are exactly full — a
  divergent test kept PoCL from vectorizing a work-group (vector add 3.5x slower);
* **direct**: a launch over one parent instance without barriers or shared memory runs the
  instance grid itself as a multi-dimensional launch, so the instance ids are the global
  ids — no division at all (64-bit divisions to unravel 3-D ids made a stencil 6x slower on
  PoCL) and no bounds test (the block shape divides the grid). Which instance axis is which
  hardware dimension is ``device_axes``: the axis the kernel's leaves index arrays along with
  unit stride is the fastest-varying one (CUDA's x, OpenCL's dimension 0), so that a warp's
  threads (a PoCL work-group's vectorized loop) touch consecutive elements, and blocks are
  as long as possible along it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...ir import instance_context as ictx
from ...ir.leafstride import nest_order, unit_stride_axis
from .spec import TABLE_FIXED, Geometry, KernelSpec


@dataclass(frozen=True)
class Form:
    """What a launch fixes that the prologue can use (see the module doc)."""

    exact: bool = False  # every block is full: no bounds test
    direct: bool = False  # one parent instance launched as its grid: the ids are the global ids


# ---------------------------------------------------------------------------------------
# Expressions: int64 values, rendered by each kernel generator


@dataclass(frozen=True)
class Var:
    """A prologue variable, or an implicit kernel parameter (``spec.IMPLICIT_PARAMS``)."""

    name: str


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class Bin:
    """``left op right``; ``/`` is the quotient of non-negative integers."""

    op: str  # "+", "-", "*", "/", ">="
    left: Expr
    right: Expr


@dataclass(frozen=True)
class ThreadId:
    """A hardware id. ``kind``: ``group`` (the block's index), ``local`` (the thread's index in
    its block), ``group_size`` (threads per block) — along the launch's only dimension — or
    ``global`` (the thread's index in the whole launch along hardware dimension ``axis``, 0
    the fastest-varying: CUDA's x, OpenCL's dimension 0; direct form only, ``device_axes``
    says which instance axis it is)."""

    kind: str
    axis: int = 0


@dataclass(frozen=True)
class TableRead:
    """``table[row, column]`` (the table is ``[rows, spec.table_width]``)."""

    row: Expr
    column: int


Expr = Var | Const | Bin | ThreadId | TableRead

_PRECEDENCE = {">=": 0, "+": 1, "-": 1, "*": 2, "/": 2}


def render(expr: Expr, leaf: Callable[[Expr], str], division: str) -> str:
    """``expr`` as infix text with the fewest parentheses, ``division`` spelling ``/``
    (Python's ``//``, C's ``/``); ``leaf`` renders everything that is not a ``Bin`` (names,
    constants, ids, table reads) in the target language."""
    if not isinstance(expr, Bin):
        return leaf(expr)
    level = _PRECEDENCE[expr.op]
    left, right = render(expr.left, leaf, division), render(expr.right, leaf, division)
    if isinstance(expr.left, Bin) and _PRECEDENCE[expr.left.op] < level:
        left = f"({left})"
    if isinstance(expr.right, Bin) and _PRECEDENCE[expr.right.op] <= level:
        right = f"({right})"
    return f"{left} {division if expr.op == '/' else expr.op} {right}"


# ---------------------------------------------------------------------------------------
# The prologue


@dataclass(frozen=True)
class Let:
    """Define prologue variable ``name``."""

    name: str
    value: Expr


@dataclass(frozen=True)
class ExitIf:
    """End the thread when ``condition`` holds (it has no instance)."""

    condition: Expr


@dataclass(frozen=True)
class Prologue:
    """The steps, in order, defining ``row``, ``local``, ``total``, ``gp`` and ``flat`` (and
    the instance ids they need); then the context the leaves read (``ir/instance_context.py``:
    the instance's own level, then the ancestors' from its table row)."""

    steps: tuple[Let | ExitIf, ...]
    context: tuple[Expr, ...]


_S = (Var("s0"), Var("s1"), Var("s2"))


def prologue(spec: KernelSpec, form: Form) -> Prologue:
    """The prologue of ``spec``'s kernel in ``form``."""
    dims = spec.dims
    local, row = Var("local"), Var("row")
    steps: list[Let | ExitIf]
    if form.direct:  # one parent instance: its table row is row 0
        ids: tuple[Expr, ...] = tuple(Var(f"i{a}") for a in range(dims))
        hardware = device_axes(spec)
        steps = [Let(f"i{a}", ThreadId("global", hardware.index(a))) for a in range(dims)]
        steps += [Let("row", Const(0)), Let("local", _row_major(ids)), Let("total", _TOTAL)]
        first: Expr = Const(0)
    else:
        offset = Bin("*", Bin("-", Var("g"), Bin("*", row, Var("bpp"))), ThreadId("group_size"))
        steps = [
            Let("g", ThreadId("group")),
            Let("row", Bin("/", Var("g"), Var("bpp"))),
            Let("local", Bin("+", offset, ThreadId("local"))),
            Let("total", _TOTAL),
        ]
        if not (spec.barrier or spec.shared or form.exact):
            steps.append(ExitIf(Bin(">=", local, Var("total"))))
        first = row
    steps += [Let("gp", TableRead(first, 0)), Let("flat", Bin("+", TableRead(first, 1), local))]
    if not form.direct:
        ids, unravel = _unravel(dims, local)
        steps += unravel
    own = ictx.level(dims, list(ids), list(_S))
    ancestors = [TableRead(row, TABLE_FIXED + k) for k in range(ictx.STRIDE * (spec.ctx_levels - 1))]
    context = tuple(Const(v) if isinstance(v, int) else v for v in [*own, *ancestors])
    return Prologue(tuple(steps), context)


_TOTAL = Bin("*", Bin("*", _S[0], _S[1]), _S[2])


def _row_major(ids: Sequence[Expr]) -> Expr:
    """The row-major index of the instance with ``ids`` (x outermost)."""
    index: Expr = Const(0)
    for a, i in enumerate(ids):
        index = i if a == 0 else Bin("+", Bin("*", index, _S[a]), i)
    return index


def _unravel(dims: int, local: Expr) -> tuple[tuple[Expr, ...], list[Let | ExitIf]]:
    """The row-major ids of instance ``local`` of a ``dims``-D grid (x outermost)."""
    _, s1, s2 = _S
    i0, i1, i2, t = Var("i0"), Var("i1"), Var("i2"), Var("t")
    if dims <= 1:
        return (local,) * dims, []  # a 1-D grid: the id is ``local`` itself
    if dims == 2:
        return (i0, i1), [Let("i0", Bin("/", local, s1)), Let("i1", Bin("-", local, Bin("*", i0, s1)))]
    plane = Bin("*", s1, s2)
    return (i0, i1, i2), [
        Let("i0", Bin("/", local, plane)),
        Let("t", Bin("-", local, Bin("*", i0, plane))),
        Let("i1", Bin("/", t, s2)),
        Let("i2", Bin("-", t, Bin("*", i1, s2))),
    ]


# ---------------------------------------------------------------------------------------
# Choosing the form of a launch


def device_axes(spec: KernelSpec) -> tuple[int, ...]:
    """The instance axes of a direct launch in the order of the hardware's dimensions, the
    fastest-varying first (CUDA's x, y, z; OpenCL's 0, 1, 2): the innermost loop first of the
    order the cpu back end runs the same leaves in (``ir/leafstride.nest_order``) — the axis
    the kernel's leaves index arrays along with unit stride first; by default the last
    instance axis (row-major: ``d[x, y]`` moves along y)."""
    dims = max(spec.dims, 1)
    return nest_order(dims, (unit_stride_axis(c.leaf) for c in spec.calls))[::-1]


def launch_form(
    spec: KernelSpec,
    geometry: Geometry,
    sizes: tuple[int, int, int],
    cap: int,
    item_sizes: tuple[int, ...],
    group_limits: Sequence[int] | None = None,
) -> tuple[Form, tuple[int, ...]]:
    """The form of one launch, and for a direct one the block shape along the grid's
    (instance) axes.

    Direct when the launch covers one parent instance without barriers or shared buffers and
    a block shape of at least 32 threads (or the whole grid) divides the grid: at most
    ``cap`` threads, at most ``item_sizes[h]`` along hardware dimension ``h`` and, with
    ``group_limits``, at most ``group_limits[h]`` blocks along it (``device_axes`` maps
    instance axes to hardware dimensions). Otherwise grouped, exact when every block is full.
    """
    count = sizes[0] * sizes[1] * sizes[2]
    if geometry.groups == geometry.bpp and not spec.barrier and not spec.shared:
        grid = sizes[: max(spec.dims, 1)]
        hardware = device_axes(spec)
        items = tuple(
            item_sizes[h] if h < len(item_sizes) else 1 for h in map(hardware.index, range(len(grid)))
        )
        local = local_shape(grid, cap, items, hardware)
        fits = group_limits is None or all(
            grid[a] // local[a] <= group_limits[h] for h, a in enumerate(hardware) if h < len(group_limits)
        )
        if math.prod(local) >= min(32, count) and fits:
            return Form(direct=True), local
    return Form(exact=count == geometry.group_size * geometry.bpp), ()


@functools.lru_cache(maxsize=1024)  # a launch path: the same grids come back launch after launch
def local_shape(
    grid: tuple[int, ...], cap: int, item_sizes: tuple[int, ...], fastest: tuple[int, ...] | None = None
) -> tuple[int, ...]:
    """A block shape for a direct launch: as long as possible along the grid's fastest
    (contiguous) dimension, then the next in ``fastest`` (default: the last dimension first),
    dividing the grid exactly, at most ``cap`` threads and ``item_sizes[d]`` along dimension
    ``d``. (PoCL's own choice for a 3-D stencil grid was 10x slower than rows of the fastest
    dimension.)"""
    local = [1] * len(grid)
    budget = cap
    for d in fastest if fastest is not None else range(len(grid) - 1, -1, -1):
        n = grid[d]
        limit = min(n, budget, item_sizes[d] if d < len(item_sizes) else 1)
        best = max((k for k in range(1, limit + 1) if n % k == 0), default=1)
        local[d] = best
        budget //= best
        if best < n or budget < 2:
            break
    return tuple(local)
