"""A leaf → OpenCL C: one leaf becomes one OpenCL C function that a kernel calls.

The function is emitted from the leaf's IR (``ir/leafir``, built once per leaf), which types
every value as Numba does; this back end reads no Python. The emitter's parts: statements and
the driver (``emit_stmts``), scalar expressions (``emit_exprs``), arrays and private arrays
(``emit_arrays``), intrinsics (``emit_intrinsics``), C values and names (``values``); this
module holds the interface the rest of the back end uses and the signature. Python semantics
that C lacks come from ``helpers``: floor division and modulo, integer powers, ``min``/
``max``, negative indices, float atomics.

The generated function's parameters, in order (``TranslatedLeaf.signature`` lists them):

* per scalar parameter ``x``: ``T x``;
* per array parameter ``a`` of rank r: ``[const] __global T* a`` (``__local`` for buffers the
  launch plan puts in local memory), then ``long a__off`` unless the spec says the offset is
  0, then the extents ``long a__n0 .. a__n{r-1}``, then, unless the array is C-contiguous,
  the element strides ``long a__s0 ..``. Arrays the leaf never writes are ``const``;
* ``__private const long* hpvm__ctx`` when the leaf queries its node or an ancestor and the
  caller uses the default ``ContextQueries``;
* per output k: ``T* hpvm__out{k}`` for a scalar, ``long* hpvm__out{k}`` for an array (the
  returned view of one of the leaf's array parameters: offset, extents, strides, in elements;
  ``TranslatedLeaf.array_outputs`` names the parameter).

Anything outside the supported subset — outside the leaf IR's dialect (``LeafIRUnsupported``,
reported with its hint) or outside what OpenCL C can do (a private array of a run-time size,
a returned private array...) — is a ``CompileError`` naming the leaf, the file and line and
the construct, with the advice to run the node on ``cpu`` or ``interp``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir.graph import LeafFunction
from ...ir.leafir import LeafIR, LeafIRUnsupported, leaf_ir
from ...ir.types import ArrayType, ScalarType
from ...passes.clone_leaves import written_leaf
from . import cltypes as ct
from .emit_stmts import LeafEmitter
from .helpers import FP64, Helpers
from .values import CTX_NAME, OUT_PREFIX, CNames, fail

# ---------------------------------------------------------------------------------------
# What the caller says about the parameters and the node context


@dataclass(frozen=True)
class ScalarSpec:
    dtype: np.dtype


@dataclass(frozen=True)
class ArraySpec:
    """How an array parameter reaches the function: element type, rank, address space
    (``global`` or ``local``), whether it is C-contiguous (strides then follow from the
    extents and are not passed) and whether its first element sits at offset 0 of the buffer."""

    dtype: np.dtype
    rank: int
    space: str = "global"
    contiguous: bool = True
    zero_offset: bool = False


ParamSpec = ScalarSpec | ArraySpec


def specs_for(leaf: LeafFunction, args: Sequence[Any] | None = None) -> list[ParamSpec]:
    """Specs from the leaf's port types, refined by example arguments when given (layout)."""
    specs: list[ParamSpec] = []
    for k, p in enumerate(leaf.params):
        t = p.type
        if isinstance(t, ArrayType):
            arg = args[k] if args is not None else None
            contiguous = bool(arg.flags.c_contiguous) if isinstance(arg, np.ndarray) else True
            specs.append(ArraySpec(t.dtype, t.rank, contiguous=contiguous))
        elif isinstance(t, ScalarType):
            specs.append(ScalarSpec(t.dtype))
        else:
            raise fail(leaf, None, f"parameter '{p.name}' is a node handle ({t})")
    return specs


class QueryMap(Protocol):
    """C expressions (of type long) for the structure queries, by ancestor level (0: the
    leaf's own node, 1: its parent...) and axis (0-2)."""

    uses_ctx_param: bool

    def instance_id(self, level: int, axis: int) -> str: ...

    def num_instances(self, level: int, axis: int) -> str: ...

    def num_dims(self, level: int) -> str: ...


class ContextQueries:
    """The default: the caller passes the instance context (``ir/instance_context.py``) as a
    ``long`` array, the parameter ``hpvm__ctx``."""

    uses_ctx_param = True

    def instance_id(self, level: int, axis: int) -> str:
        return f"{CTX_NAME}[{ictx.index(level, ictx.ID + axis)}]"

    def num_instances(self, level: int, axis: int) -> str:
        return f"{CTX_NAME}[{ictx.index(level, ictx.EXTENT + axis)}]"

    def num_dims(self, level: int) -> str:
        return f"{CTX_NAME}[{ictx.index(level, ictx.DIMS)}]"


# ---------------------------------------------------------------------------------------
# The result


@dataclass
class TranslatedLeaf:
    leaf: LeafFunction
    name: str  # the C function's name
    specs: list[ParamSpec]
    lines: list[tuple[str, int | None]]  # the function's C lines, each with its Python line
    signature: list[tuple[str, str]]  # (C parameter declaration, role) in order
    array_outputs: dict[int, str]  # output index -> the array parameter the returned view is of
    written: set[str]  # array parameters the leaf writes
    helpers: Helpers
    levels: int  # context levels queried (max level + 1)
    uses_barrier: bool
    uses_ctx: bool
    extensions: set[str] = field(default_factory=set)
    local_types: dict[str, np.dtype] = field(default_factory=dict)  # inferred scalar locals
    level_lines: dict[int, int] = field(default_factory=dict)  # ancestor level -> first line querying it

    @property
    def source(self) -> str:
        return "\n".join(text for text, _ in self.lines)


def render_program(leaves: Sequence[TranslatedLeaf], kernels: Sequence[str] = ()) -> tuple[str, list[Any]]:
    """One OpenCL program: extension pragmas, helpers, leaf functions, then ``kernels``.

    Returns the source and, per source line (0-based), ``(leaf, python line)`` or ``None``,
    so that compiler messages can be mapped back to the user's file."""
    helpers = Helpers()
    extensions: set[str] = set()
    for t in leaves:
        helpers.merge(t.helpers)
        extensions |= t.extensions | t.helpers.extensions
    out: list[str] = []
    where: list[Any] = []

    def emit(text: str, origin: Any = None) -> None:
        for line in text.split("\n"):
            out.append(line)
            where.append(origin)

    for ext in sorted(extensions):
        emit(f"#pragma OPENCL EXTENSION {ext} : enable")
    if helpers.keys:
        emit(helpers.render())
    for t in leaves:
        emit("")
        for text, line in t.lines:
            emit(text, (t.leaf, line) if line is not None else None)
    for k in kernels:
        emit("")
        emit(k)
    return "\n".join(out) + "\n", where


def translate_leaf(
    leaf: LeafFunction,
    specs: Sequence[ParamSpec] | None = None,
    queries: QueryMap | None = None,
    name: str | None = None,
) -> TranslatedLeaf:
    """Emit ``leaf`` as an OpenCL C function from its leaf IR (raises ``CompileError`` naming
    the line).

    The emitter lowers the query intrinsics itself, so it reads the leaf as written (for a
    leaf the CloneLeaves pass cloned, the leaf it was cloned from)."""
    leaf = written_leaf(leaf)
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported as e:
        raise _refused(leaf, e) from None
    return emit_leaf(leaf, ir, specs, queries, name)


def emit_leaf(
    leaf: Any,
    ir: LeafIR,
    specs: Sequence[ParamSpec] | None = None,
    queries: QueryMap | None = None,
    name: str | None = None,
) -> TranslatedLeaf:
    """``ir`` (the leaf IR of ``leaf``) as an OpenCL C function. ``leaf`` gives the ports,
    the name and the place errors name (a ``LeafFunction``, or anything with its ``name``,
    ``params``, ``out_types``, ``location`` and ``where``: the tests emit random IR)."""
    specs = list(specs) if specs is not None else specs_for(leaf)
    if len(specs) != len(leaf.params):
        raise ValueError(f"{len(specs)} specs for the {len(leaf.params)} parameters of {leaf.name}")
    for spec in specs:
        if isinstance(spec, ArraySpec) and spec.space not in ("global", "local"):
            raise ValueError(f"address space {spec.space!r}")
    for k, t in enumerate(leaf.out_types):
        if not isinstance(t, (ArrayType, ScalarType)):
            raise fail(leaf, None, f"output {k} is a node handle ({t})")
    if name is None:
        digest = hashlib.sha1(f"{leaf.location}:{leaf.name}:{specs}".encode()).hexdigest()[:8]
        name = f"hpvm_leaf_{re.sub(r'[^A-Za-z0-9_]', '_', leaf.name)}_{digest}"
    names = CNames()
    for p in leaf.params:
        names(p.name)
    emitter = LeafEmitter(leaf, ir, specs, queries or ContextQueries(), names)
    body = emitter.run()
    signature = _signature(leaf, specs, emitter, names)
    lines: list[tuple[str, int | None]] = [(f"void {name}(", ir.line)]
    for k, (decl, _) in enumerate(signature):
        lines.append((f"    {decl}{',' if k + 1 < len(signature) else ') {'}", ir.line))
    if not signature:
        lines[0] = (f"void {name}(void) {{", ir.line)
    lines.extend(body)
    lines.append(("}", None))
    types = [*emitter.scalar_locals.values(), *emitter.used_types, *(s.dtype for s in specs)]
    return TranslatedLeaf(
        leaf=leaf,
        name=name,
        specs=specs,
        lines=lines,
        signature=signature,
        array_outputs=dict(emitter.array_outputs),
        written=set(emitter.written),
        helpers=emitter.helpers,
        levels=emitter.max_level + 1,
        uses_barrier=emitter.uses_barrier,
        uses_ctx=emitter.uses_ctx,
        extensions={FP64} if any(t == ct.F64 for t in types) else set(),
        local_types=dict(emitter.scalar_locals),
        level_lines=dict(emitter.level_lines),
    )


def _refused(leaf: LeafFunction, e: LeafIRUnsupported) -> CompileError:
    """A leaf outside the leaf IR's dialect: the back end's error, at the construct's place."""
    if e.where is None and e.construct.endswith("without Python source"):
        return CompileError(
            f"leaf '{leaf.name}' ({leaf.location}): its Python source is not available, so the "
            "opencl back end cannot translate it (save and load programs as .hpvm files, which "
            "carry their leaves' source) — or run it with target='cpu' or target='interp'"
        )
    return fail(leaf, e.where, e.hint or f"{e.construct} is not supported")


def _signature(
    leaf: LeafFunction, specs: list[ParamSpec], emitter: LeafEmitter, names: CNames
) -> list[tuple[str, str]]:
    """The C parameters in order, each with its role (the module docstring lists them)."""
    sig: list[tuple[str, str]] = []
    for p, spec in zip(leaf.params, specs):
        c = names(p.name)
        if isinstance(spec, ScalarSpec):
            sig.append((f"{ct.c_name(spec.dtype)} {c}", f"scalar {p.name}"))
            continue
        const = "" if p.name in emitter.written else "const "
        sig.append((f"{const}__{spec.space} {ct.c_storage(spec.dtype)}* {c}", f"array {p.name}"))
        if not spec.zero_offset:
            sig.append((f"long {c}__off", f"offset {p.name}"))
        for k in range(spec.rank):
            sig.append((f"long {c}__n{k}", f"extent {p.name} {k}"))
        if not spec.contiguous:
            for k in range(spec.rank):
                sig.append((f"long {c}__s{k}", f"stride {p.name} {k}"))
    if emitter.uses_ctx and emitter.queries.uses_ctx_param:
        sig.append((f"__private const long* {CTX_NAME}", "context"))
    for k, t in enumerate(leaf.out_types):
        if isinstance(t, ScalarType):
            sig.append((f"__private {ct.c_name(t.dtype)}* {OUT_PREFIX}{k}", f"output {k}"))
        else:
            sig.append((f"__private long* {OUT_PREFIX}{k}", f"array-output {k}"))
    return sig


__all__ = [
    "CTX_NAME",
    "FP64",
    "OUT_PREFIX",
    "ArraySpec",
    "ContextQueries",
    "QueryMap",
    "ScalarSpec",
    "TranslatedLeaf",
    "emit_leaf",
    "render_program",
    "specs_for",
    "translate_leaf",
]
