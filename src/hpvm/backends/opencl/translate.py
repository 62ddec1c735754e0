"""Python leaf → OpenCL C: one leaf becomes one OpenCL C function that a kernel calls.

The translation is typed from the launch: each parameter's spec (scalar dtype, or array dtype,
rank, address space and layout) is given, and every local variable and expression gets the
type Numba would give it (``cltypes``). Python semantics that C lacks come from ``helpers``:
floor division and modulo, integer powers, ``min``/``max``, negative indices, float atomics.

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

Anything outside the supported subset is a ``CompileError`` naming the leaf, the file and
line and the construct, with the advice to run the node on ``cpu`` or ``interp``.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir import numeric as nt
from ...ir.graph import LeafFunction
from ...ir.intrinsics import ATOMIC_OPS, QUERY_INTRINSICS
from ...ir.leafinfo import handle_level, intrinsic_name, leaf_namespace, parse_leaf
from ...ir.types import ArrayType, ScalarType
from ...passes.clone_leaves import written_leaf
from ..gpu.zeros import ZerosCall, constant_zeros
from . import cltypes as ct
from .functions import cast_dtype, math_function
from .helpers import FP64, Helpers

OUT_PREFIX = "hpvm__out"
CTX_NAME = "hpvm__ctx"


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
            raise _fail(leaf, None, f"parameter '{p.name}' is a node handle ({t})")
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
    """Translate ``leaf`` to an OpenCL C function (raises ``CompileError`` naming the line).

    The translator lowers the query intrinsics itself, so it reads the leaf as written (for a
    leaf the CloneLeaves pass cloned, the leaf it was cloned from)."""
    leaf = written_leaf(leaf)
    func = parse_leaf(leaf)
    if func is None:
        raise CompileError(
            f"leaf '{leaf.name}' ({leaf.location}): its Python source is not available, so the "
            "opencl back end cannot translate it (save and load programs as .hpvm files, which "
            "carry their leaves' source) — or run it with target='cpu' or target='interp'"
        )
    specs = list(specs) if specs is not None else specs_for(leaf)
    if len(specs) != len(leaf.params):
        raise ValueError(f"{len(specs)} specs for the {len(leaf.params)} parameters of {leaf.name}")
    if name is None:
        digest = hashlib.sha1(f"{leaf.location}:{leaf.name}:{specs}".encode()).hexdigest()[:8]
        name = f"hpvm_leaf_{re.sub(r'[^A-Za-z0-9_]', '_', leaf.name)}_{digest}"
    return _Translator(leaf, func, specs, queries or ContextQueries(), name).run()


# ---------------------------------------------------------------------------------------
# Values during translation


@dataclass
class Val:
    """A scalar C expression with its type; ``nonneg`` when provably >= 0 (no index wrap);
    ``const`` its value when known at translation time; ``effects`` when it has side effects."""

    code: str
    dtype: np.dtype
    nonneg: bool = False
    const: Any = None
    effects: bool = False
    lb: int | None = None  # a lower bound of an integer value, when known

    def __post_init__(self) -> None:
        if self.lb is None and self.nonneg:
            self.lb = 0
        elif self.lb is not None and self.lb >= 0:
            self.nonneg = True


@dataclass
class View:
    """An array value: a view of the leaf's array parameter ``base``."""

    base: str
    ptr: str
    dtype: np.dtype
    space: str
    off: str
    shape: list[str]
    strides: list[str]
    retyped: bool = False  # a .view() as another element type than the parameter's

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Handle:
    level: int


@dataclass(frozen=True)
class PyObj:
    """A Python object named in the leaf (a module, a function, a type)."""

    obj: Any


@dataclass(frozen=True)
class ShapeOf:
    view: View


class _Untyped(Exception):
    """A local read before any assignment typed it (retried in the next inference round)."""


_C_RESERVED = set(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union
    unsigned void volatile while bool true false half uchar ushort uint ulong size_t ptrdiff_t
    intptr_t uintptr_t global local constant private kernel read_only write_only read_write
    image2d_t image3d_t sampler_t event_t complex imaginary main printf barrier""".split()
)
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|float|double|half|bool)\d+$")
_C_FUNCTIONS = set(
    """sqrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh expm1
    log1p erf erfc tgamma lgamma exp2 cbrt fabs floor ceil trunc rint round abs min max fmin fmax
    isnan isinf isfinite atan2 hypot copysign fmod pow pown as_int as_uint as_long as_ulong
    as_float as_double mad fma clamp sign select convert_int get_local_id get_group_id
    get_global_id get_local_size get_num_groups get_global_size get_work_dim""".split()
)


def _fail(leaf: LeafFunction, line: int | None, what: str) -> CompileError:
    """``line``: a line of the leaf's source (a generated body's maps to the file it was
    generated from, ``LeafFunction.where``); ``None``: the leaf's own place."""
    place = leaf.location if line is None else leaf.where(line)
    return CompileError(
        f"leaf '{leaf.name}' ({place.file}:{place.line}): {what}; the opencl back end cannot "
        "translate this to OpenCL C — run this node with target='cpu' or target='interp'"
    )


def _float_literal(value: float, dtype: np.dtype) -> str:
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if dtype == ct.F32:
            return f"{text}f"
        return text
    return text if dtype == ct.F32 else f"((double){text})"


def _int_literal(value: int, dtype: np.dtype) -> str:
    if dtype == ct.I64 and value == -(2**63):
        return "(-9223372036854775807L - 1)"
    if value < 0:
        return f"({ct.literal(str(value), dtype)})"
    return ct.literal(str(value), dtype)


# ---------------------------------------------------------------------------------------


class _Translator:
    def __init__(
        self, leaf: LeafFunction, func: ast.FunctionDef, specs: list[ParamSpec], queries: QueryMap, name: str
    ):
        self.leaf = leaf
        self.func = func
        self.specs = specs
        self.queries = queries
        self.name = name
        env = dict(getattr(builtins, "__dict__", {}))
        env.update(leaf_namespace(leaf))
        self.env = env
        self.params = {p.name: spec for p, spec in zip(leaf.params, specs)}
        # The state inference builds up over rounds and the final emission uses.
        self.local_types: dict[str, np.dtype] = {}
        self.lower: dict[str, int | None] = {}  # lower bounds of integer locals (None: unknown)
        self.lowered: dict[str, int] = {}  # how often each bound went down (widened after 3)
        self.array_locals: dict[str, tuple[int, View]] = {}  # name -> (id of the assigning stmt, view)
        # constant-shape np.zeros arrays: name -> (id of the assigning stmt, view of a __private array)
        self.private_arrays: dict[str, tuple[int, View]] = {}
        self.handles: dict[str, int] = {}
        self.written: set[str] = set()
        self.changed = False
        self.final = False
        self.cnames: dict[str, str] = {}
        self.used_cnames: set[str] = set()

    # -- driver -----------------------------------------------------------------------------

    def run(self) -> TranslatedLeaf:
        self._check_signature()
        self._collect_handles()
        for p in self.leaf.params:
            self.cname(p.name)
        for _ in range(20):  # inference to a fixpoint: types only widen, negativity only grows
            self.changed = False
            self._emit_function()
            if not self.changed:
                break
        self.final = True
        body = self._emit_function()
        signature = self._signature()
        lines: list[tuple[str, int | None]] = [
            (f"void {self.name}(", self.leaf.location.line),
        ]
        for k, (decl, _) in enumerate(signature):
            lines.append((f"    {decl}{',' if k + 1 < len(signature) else ') {'}", self.leaf.location.line))
        if not signature:
            lines[0] = (f"void {self.name}(void) {{", self.leaf.location.line)
        lines.extend(body)
        lines.append(("}", None))
        extensions = set()
        if any(t == ct.F64 for t in self._all_types()):
            extensions.add(FP64)
        return TranslatedLeaf(
            leaf=self.leaf,
            name=self.name,
            specs=self.specs,
            lines=lines,
            signature=signature,
            array_outputs=dict(self.array_outputs),
            written=set(self.written),
            helpers=self.helpers,
            levels=self.max_level + 1,
            uses_barrier=self.uses_barrier,
            uses_ctx=self.uses_ctx,
            extensions=extensions,
            local_types=dict(self.local_types),
            level_lines=dict(self.level_lines),
        )

    def _all_types(self) -> list[np.dtype]:
        types = list(self.local_types.values()) + self.used_types
        types += [s.dtype for s in self.specs]
        return types

    def _check_signature(self) -> None:
        for spec in self.specs:
            if isinstance(spec, ArraySpec) and spec.space not in ("global", "local"):
                raise ValueError(f"address space {spec.space!r}")
        for k, t in enumerate(self.leaf.out_types):
            if not isinstance(t, (ArrayType, ScalarType)):
                raise _fail(self.leaf, None, f"output {k} is a node handle ({t})")

    def _collect_handles(self) -> None:
        assigns = [
            n
            for n in ast.walk(self.func)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        ]
        for _ in range(8):
            for node in assigns:
                level = self._handle_level(node.value)
                if level is not None:
                    self.handles[node.targets[0].id] = level

    def _handle_level(self, expr: ast.AST) -> int | None:
        return handle_level(expr, self.handles, self.env)

    # -- names ------------------------------------------------------------------------------

    def cname(self, py: str) -> str:
        c = self.cnames.get(py)
        if c is None:
            c = py
            if (
                c in _C_RESERVED
                or c in _C_FUNCTIONS
                or _VECTOR.match(c)
                or "__" in c
                or c.startswith(("_", "hpvm"))
                or c.isupper()  # OpenCL's macros are upper case: M_PI, FLT_MAX, CLK_LOCAL_MEM_FENCE...
                or not c.isascii()
            ):
                c = "v_" + re.sub(r"[^A-Za-z0-9]+", "_", py).strip("_")
            base, k = c, 1
            while c in self.used_cnames:
                k += 1
                c = f"{base}_{k}"
            self.cnames[py] = c
            self.used_cnames.add(c)
        return c

    def fail(self, node: ast.AST, what: str) -> CompileError:
        return _fail(self.leaf, getattr(node, "lineno", None), what)

    # -- the function body -------------------------------------------------------------------

    def _emit_function(self) -> list[tuple[str, int | None]]:
        self.out: list[tuple[str, int | None]] = []
        self.indent = 1
        self.line: int | None = self.func.lineno
        self.tmp_count = 0
        self.helpers = Helpers()
        self.array_outputs: dict[int, str] = {}
        self.max_level = -1
        self.level_lines: dict[int, int] = {}
        self.uses_barrier = False
        self.uses_ctx = False
        self.used_types: list[np.dtype] = []
        self.loop_depth = 0
        self.in_condition = False
        self.param_views: dict[str, View] = {}
        prologue: list[tuple[str, int | None]] = []
        for p, spec in zip(self.leaf.params, self.specs):
            if isinstance(spec, ArraySpec):
                self.param_views[p.name] = self._param_view(p.name, spec, prologue)
        body = list(self.func.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        self._block(body)
        decls: list[tuple[str, int | None]] = []
        for py, t in self.local_types.items():
            decls.append((f"    {ct.c_name(t)} {self.cname(py)} = 0;", None))
        for _, view in self.array_locals.values():
            decls.append((f"    long {view.off} = 0;", None))
        for _, view in self.private_arrays.values():
            size = math.prod(int(n) for n in view.shape)
            decls.append((f"    {ct.c_storage(view.dtype)} {view.ptr}[{size}];", None))
        return prologue + decls + self.out

    def _param_view(self, name: str, spec: ArraySpec, prologue: list[tuple[str, int | None]]) -> View:
        c = self.cname(name)
        shape = [f"{c}__n{k}" for k in range(spec.rank)]
        if spec.contiguous:
            strides = ["1"] * spec.rank
            for k in range(spec.rank - 2, -1, -1):
                strides[k] = f"{c}__s{k}"
                inner = strides[k + 1]
                expr = shape[k + 1] if inner == "1" else f"{inner} * {shape[k + 1]}"
                prologue.append((f"    const long {c}__s{k} = {expr};", None))
        else:
            strides = [f"{c}__s{k}" for k in range(spec.rank)]
        off = "0" if spec.zero_offset else f"{c}__off"
        return View(name, c, spec.dtype, spec.space, off, shape, strides)

    def _signature(self) -> list[tuple[str, str]]:
        sig: list[tuple[str, str]] = []
        for p, spec in zip(self.leaf.params, self.specs):
            c = self.cname(p.name)
            if isinstance(spec, ScalarSpec):
                sig.append((f"{ct.c_name(spec.dtype)} {c}", f"scalar {p.name}"))
                continue
            const = "" if p.name in self.written else "const "
            sig.append((f"{const}__{spec.space} {ct.c_storage(spec.dtype)}* {c}", f"array {p.name}"))
            if not spec.zero_offset:
                sig.append((f"long {c}__off", f"offset {p.name}"))
            for k in range(spec.rank):
                sig.append((f"long {c}__n{k}", f"extent {p.name} {k}"))
            if not spec.contiguous:
                for k in range(spec.rank):
                    sig.append((f"long {c}__s{k}", f"stride {p.name} {k}"))
        if self.uses_ctx and self.queries.uses_ctx_param:
            sig.append((f"__private const long* {CTX_NAME}", "context"))
        for k, t in enumerate(self.leaf.out_types):
            if isinstance(t, ScalarType):
                sig.append((f"__private {ct.c_name(t.dtype)}* {OUT_PREFIX}{k}", f"output {k}"))
            else:
                sig.append((f"__private long* {OUT_PREFIX}{k}", f"array-output {k}"))
        return sig

    def emit(self, text: str) -> None:
        self.out.append(("    " * self.indent + text, self.line))

    def tmp(self, dtype: np.dtype, code: str) -> str:
        if self.in_condition:
            raise self.fail(self.func, "an and/or with side effects inside a condition is not supported")
        self.tmp_count += 1
        name = f"hpvm__t{self.tmp_count}"
        self.emit(f"{ct.c_name(dtype)} {name} = {code};")
        return name

    # -- statements --------------------------------------------------------------------------

    def _block(self, stmts: Sequence[ast.stmt]) -> None:
        for stmt in stmts:
            if self.final:
                self._stmt(stmt)
                continue
            mark = len(self.out)
            try:
                self._stmt(stmt)
            except _Untyped:
                del self.out[mark:]  # typed in a later round
                self.changed = True

    def _stmt(self, node: ast.stmt) -> None:
        self.line = node.lineno
        method = getattr(self, f"_stmt_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"a '{type(node).__name__}' statement is not supported")
        method(node)

    def _stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def _stmt_Break(self, node: ast.Break) -> None:
        self.emit("break;")

    def _stmt_Continue(self, node: ast.Continue) -> None:
        self.emit("continue;")

    def _stmt_Expr(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Constant):
            return  # a string used as a comment
        if isinstance(value, ast.Call) and intrinsic_name(value, self.env) == "barrier":
            if value.args or value.keywords:
                raise self.fail(node, "hpvm.barrier() takes no arguments")
            self.uses_barrier = True
            self.emit("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
            return
        v = self.expr(value)
        if isinstance(v, Val):
            self.emit(f"(void)({v.code});")

    def _stmt_Assign(self, node: ast.Assign) -> None:
        zeros = constant_zeros(node, self._resolve_object)
        if zeros is not None:
            self._private_array(zeros, node)
            return
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in self.handles:
                if self._handle_level(node.value) is None:
                    raise self.fail(node, f"node handle '{name}' is assigned something else")
                return
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            self._assign_tuple(node.targets[0], node.value, node)
            return
        value = self.expr(node.value)
        if len(node.targets) > 1 and isinstance(value, Val) and (value.effects or not _simple(value.code)):
            value = Val(self.tmp(value.dtype, value.code), value.dtype, value.nonneg, value.const)
        for target in node.targets:
            self._assign(target, value, node)

    def _stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        self._assign(node.target, self.expr(node.value), node)

    def _assign_tuple(self, target: ast.Tuple, value: ast.expr, node: ast.stmt) -> None:
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            raise self.fail(
                node, "unpacking assignment needs a tuple of as many values on the right (a, b = x, y)"
            )
        vals = []
        for e in value.elts:
            v = self.expr(e)
            if not isinstance(v, Val):
                raise self.fail(node, "only scalars can be assigned in an unpacking assignment")
            vals.append(Val(self.tmp(v.dtype, v.code), v.dtype, v.nonneg, v.const))
        for t, v in zip(target.elts, vals):
            self._assign(t, v, node)

    def _assign(self, target: ast.expr, value: Any, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if name in self.params:
                spec = self.params[name]
                same_kind = (
                    isinstance(spec, ScalarSpec)
                    and isinstance(value, Val)
                    and spec.dtype != ct.BOOL
                    and ct.is_float(spec.dtype) == ct.is_float(value.dtype)
                )
                if not same_kind:
                    raise self.fail(
                        node,
                        f"assigning {self._describe(value)} to the parameter '{name}' is not supported "
                        "(a scalar parameter keeps its type; use a new name)",
                    )
                self.emit(f"{self.cname(name)} = {self.cast(value, spec.dtype)};")
                return
            if isinstance(value, View):
                self._assign_view(name, value, node)
                return
            if not isinstance(value, Val):
                raise self.fail(node, f"'{name}' is assigned {self._describe(value)}, which is not a value")
            if name in self.array_locals:
                raise self.fail(node, f"'{name}' holds an array and is assigned a scalar")
            self._set_type(name, value.dtype)
            self._bound(name, value.lb if ct.is_integral(value.dtype) else None)
            self.emit(f"{self.cname(name)} = {self.cast(value, self.local_types[name])};")
        elif isinstance(target, ast.Subscript):
            view, index = self._element(target)
            if not isinstance(value, Val):
                raise self.fail(node, f"storing {self._describe(value)} into an array element")
            self.written.add(view.base)
            self.emit(f"{self._ref(view, index)} = {self._store_cast(value, view.dtype)};")
        elif isinstance(target, ast.Tuple):
            raise self.fail(node, "nested unpacking is not supported")
        else:
            raise self.fail(node, f"assigning to {ast.unparse(target)} is not supported")

    def _private_array(self, zeros: ZerosCall, node: ast.stmt) -> None:
        """``a = np.zeros(SHAPE, DTYPE)`` with a constant shape: a zero-filled ``__private``
        array of the work-item, declared once at the top and zeroed here each time the
        statement runs (a loop's every iteration gets a new zeroed array, as in Python)."""
        name = zeros.target
        if name in self.params or name in self.local_types or name in self.array_locals:
            raise self.fail(node, f"'{name}' is assigned an array here and something else elsewhere")
        dtype = ct.F64
        if zeros.dtype is not None:
            obj = self._resolve_object(zeros.dtype)
            dtype = cast_dtype(obj) if obj is not None else None
            if dtype is None and isinstance(obj, (np.dtype, str)):
                dtype = np.dtype(obj)
            if dtype is None or not ct.is_scalar(dtype):
                raise self.fail(
                    node, f"np.zeros with the element type {ast.unparse(zeros.dtype)} is not supported"
                )
        known = self.private_arrays.get(name)
        if known is not None and known[0] != id(node):
            raise self.fail(
                node, f"array variable '{name}' is assigned in more than one place (assign each array once)"
            )
        shape = list(zeros.shape)
        strides = ["1"] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = str(int(strides[k + 1]) * shape[k + 1])
        c = f"{self.cname(name)}__priv"
        view = View(name, c, dtype, "private", "0", [str(n) for n in shape], strides)
        self.private_arrays[name] = (id(node), view)
        size = math.prod(shape)
        self.emit(f"for (long {c}__z = 0; {c}__z < {size}; {c}__z++) {c}[{c}__z] = 0;")

    def _resolve_object(self, node: ast.expr) -> Any:
        """The Python object ``node`` names in the leaf's namespace (None if none)."""
        found = self._resolve(node)
        return found.obj if isinstance(found, PyObj) else None

    def _assign_view(self, name: str, view: View, node: ast.stmt) -> None:
        if name in self.local_types:
            raise self.fail(node, f"'{name}' holds a scalar and is assigned an array")
        known = self.array_locals.get(name)
        if known is not None and known[0] != id(node):
            raise self.fail(
                node,
                f"array variable '{name}' is assigned in more than one place (assign each array "
                "variable once)",
            )
        off = f"{self.cname(name)}__off"
        local = View(view.base, view.ptr, view.dtype, view.space, off, view.shape, view.strides, view.retyped)
        self.array_locals[name] = (id(node), local)
        self.emit(f"{off} = {view.off};")

    def _bound(self, name: str, lb: int | None) -> None:
        """Merge a new assignment's lower bound into the variable's (loops widen to unknown)."""
        if name not in self.lower:
            self.lower[name] = lb
            self.changed = True
            return
        old = self.lower[name]
        new = None if old is None or lb is None else min(old, lb)
        if new != old:
            self.lowered[name] = self.lowered.get(name, 0) + 1
            if self.lowered[name] > 3:
                new = None
            if self.final:
                raise self.fail(self.func, f"internal error: the bound of '{name}' changed after inference")
            self.lower[name] = new
            self.changed = True

    def _set_type(self, name: str, dtype: np.dtype) -> None:
        old = self.local_types.get(name)
        new = dtype if old is None else nt.promote(old, dtype)
        if old is None or old != new:
            if self.final:  # cannot happen after the fixpoint; guards against a bug in inference
                raise self.fail(self.func, f"internal error: the type of '{name}' changed after inference")
            self.local_types[name] = new
            self.changed = True

    def _stmt_AugAssign(self, node: ast.AugAssign) -> None:
        rhs = self.expr(node.value)
        if not isinstance(rhs, Val):
            raise self.fail(node, f"augmented assignment of {self._describe(rhs)}")
        target = node.target
        if isinstance(target, ast.Name):
            current = self.expr(ast.copy_location(ast.Name(target.id, ast.Load()), target))
            if not isinstance(current, Val):
                raise self.fail(node, f"augmented assignment to array variable '{target.id}'")
            self._assign(target, self.binop(node.op, current, rhs, node), node)
        elif isinstance(target, ast.Subscript):
            view, index = self._element(target)
            index = [
                i if _simple(i.code) else Val(self.tmp(i.dtype, i.code), i.dtype, i.nonneg) for i in index
            ]
            current = self._load(view, index)
            self.written.add(view.base)
            result = self.binop(node.op, current, rhs, node)
            self.emit(f"{self._ref(view, index)} = {self._store_cast(result, view.dtype)};")
        else:
            raise self.fail(node, f"augmented assignment to {ast.unparse(target)} is not supported")

    def _stmt_If(self, node: ast.If) -> None:
        self.emit(f"if ({self.condition(node.test)}) {{")
        self._nested(node.body)
        orelse = node.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ast.If):
            self.line = orelse[0].lineno
            self.emit(f"}} else if ({self.condition(orelse[0].test)}) {{")
            self._nested(orelse[0].body)
            orelse = orelse[0].orelse
        if orelse:
            self.emit("} else {")
            self._nested(orelse)
        self.emit("}")

    def _nested(self, stmts: Sequence[ast.stmt]) -> None:
        self.indent += 1
        self._block(stmts)
        self.indent -= 1

    def _stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.fail(node, "while ... else is not supported")
        self.emit(f"while ({self.condition(node.test)}) {{")
        self.loop_depth += 1
        self._nested(node.body)
        self.loop_depth -= 1
        self.emit("}")

    def _stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.fail(node, "for ... else is not supported")
        call = node.iter
        if not (
            isinstance(call, ast.Call)
            and isinstance(self._resolve(call.func), PyObj)
            and self._resolve(call.func).obj is builtins.range
        ):
            raise self.fail(node, "only loops over range(...) are supported (for i in range(a, b, step))")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.fail(node, "range() takes 1 to 3 positional arguments")
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "the loop variable must be a plain name")
        args = [self.expr(a) for a in call.args]
        for a, src in zip(args, call.args):
            if not isinstance(a, Val) or not ct.is_integral(a.dtype):
                raise self.fail(src, f"range() needs integer bounds, not {self._describe(a)}")
        loop_t = ct.range_type([a.dtype for a in args])
        if len(args) == 1:
            start, stop, step = Val("0", ct.I64, True, 0), args[0], Val("1", ct.I64, True, 1)
        elif len(args) == 2:
            (start, stop), step = args, Val("1", ct.I64, True, 1)
        else:
            start, stop, step = args
        if step.const == 0:
            raise self.fail(node, "range() step must not be zero")
        self.tmp_count += 1
        k = self.tmp_count
        ctype = ct.c_name(loop_t)
        counter, stop_c = f"hpvm__i{k}", f"hpvm__stop{k}"
        self.emit("{")
        self.indent += 1
        self.emit(f"const {ctype} {stop_c} = {self.cast(stop, loop_t)};")
        if step.const is not None:
            cond = f"{counter} {'<' if step.const > 0 else '>'} {stop_c}"
            incr = f"{counter} += {self.cast(step, loop_t)}"
        else:
            step_c = f"hpvm__step{k}"
            self.emit(f"const {ctype} {step_c} = {self.cast(step, loop_t)};")
            cond = f"({step_c} > 0 ? {counter} < {stop_c} : ({step_c} < 0 && {counter} > {stop_c}))"
            incr = f"{counter} += {step_c}"
        self.emit(f"for ({ctype} {counter} = {self.cast(start, loop_t)}; {cond}; {incr}) {{")
        lb = None
        if step.const is not None and step.const > 0:
            lb = start.lb
        elif step.const is not None and stop.lb is not None:
            lb = stop.lb + 1
        self.indent += 1
        self._assign(node.target, Val(counter, loop_t, loop_t.kind == "u", lb=lb), node)
        self.loop_depth += 1
        self._block(node.body)
        self.loop_depth -= 1
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")

    def _stmt_Return(self, node: ast.Return) -> None:
        types = self.leaf.out_types
        if node.value is None:
            values: list[ast.expr] = []
        elif isinstance(node.value, ast.Tuple) and len(types) != 1:
            values = list(node.value.elts)
        else:
            values = [node.value]
        if len(values) != len(types):
            raise self.fail(
                node,
                f"return gives {len(values)} value(s) for {len(types)} output(s) (return a tuple "
                "literal: return a, b)",
            )
        for k, (expr, t) in enumerate(zip(values, types)):
            v = self.expr(expr)
            if isinstance(t, ScalarType):
                if not isinstance(v, Val):
                    raise self.fail(
                        node, f"output {k} is a scalar ({t}) but the leaf returns {self._describe(v)}"
                    )
                self.emit(f"*{OUT_PREFIX}{k} = {self.cast(v, t.dtype)};")
            else:
                if not isinstance(v, View) or v.dtype != t.dtype or v.rank != t.rank:
                    raise self.fail(
                        node, f"output {k} is an array ({t}) but the leaf returns {self._describe(v)}"
                    )
                if v.space == "private":
                    raise self.fail(
                        node,
                        f"output {k} returns the leaf's own array '{v.base}', which ends with the leaf "
                        "on a GPU; copy it into an array parameter and return that",
                    )
                base = self.array_outputs.setdefault(k, v.base)
                if base != v.base:
                    raise self.fail(
                        node,
                        f"output {k} returns a view of '{v.base}' here and of '{base}' elsewhere; the "
                        "opencl back end needs each array output to come from one parameter",
                    )
                parts = [v.off, *v.shape, *v.strides]
                for j, part in enumerate(parts):
                    self.emit(f"{OUT_PREFIX}{k}[{j}] = {part};")
        self.emit("return;")

    # -- expressions -------------------------------------------------------------------------

    def condition(self, node: ast.expr) -> str:
        self.in_condition = True
        try:
            v = self.expr(node, truth=True)
        finally:
            self.in_condition = False
        if not isinstance(v, Val):
            raise self.fail(node, f"{self._describe(v)} used as a condition")
        return _strip_parens(v.code)

    def expr(self, node: ast.expr, truth: bool = False) -> Any:
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"the expression '{ast.unparse(node)}' is not supported")
        v = method(node, truth) if type(node).__name__ in ("BoolOp",) else method(node)
        if isinstance(v, Val) and v.const is None:  # constants are written in the type they are cast to
            self.used_types.append(v.dtype)
        return v

    def _expr_Constant(self, node: ast.Constant) -> Val:
        return self.constant(node.value, node)

    def constant(self, value: Any, node: ast.AST) -> Val:
        if isinstance(value, (bool, np.bool_)):
            return Val("true" if value else "false", ct.BOOL, True, bool(value))
        if isinstance(value, (int, np.integer)):
            dtype = ct.I64 if isinstance(value, int) else np.dtype(type(value))
            v = int(value)
            if not np.iinfo(dtype).min <= v <= np.iinfo(dtype).max:
                raise self.fail(node, f"the integer {v} does not fit in {dtype}")
            return Val(_int_literal(v, dtype), dtype, v >= 0, v, lb=v)
        if isinstance(value, (float, np.floating)):
            dtype = ct.F64 if isinstance(value, float) else np.dtype(type(value))
            return Val(_float_literal(float(value), dtype), dtype, value >= 0, float(value))
        raise self.fail(node, f"the constant {value!r} is not supported (numbers and booleans are)")

    def _expr_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.handles:
            return Handle(self.handles[name])
        spec = self.params.get(name)
        if spec is not None:
            if isinstance(spec, ArraySpec):
                return self.param_views[name]
            return Val(self.cname(name), spec.dtype, spec.dtype.kind in "ub")
        if name in self.array_locals:
            return self.array_locals[name][1]
        if name in self.private_arrays:
            return self.private_arrays[name][1]
        if name in self.local_types:
            return Val(self.cname(name), self.local_types[name], lb=self.lower.get(name))
        if self._assigned_locally(name):
            if self.final:
                raise self.fail(node, f"'{name}' is used before any assignment gives it a type")
            raise _Untyped(name)
        if name in self.env:
            return self._python_value(self.env[name], node)
        raise self.fail(node, f"the name '{name}' is not defined")

    def _assigned_locally(self, name: str) -> bool:
        cache = getattr(self, "_local_names", None)
        if cache is None:
            cache = set()
            for n in ast.walk(self.func):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    cache.add(n.id)
            self._local_names = cache
        return name in cache

    def _python_value(self, obj: Any, node: ast.AST) -> Any:
        if isinstance(obj, (bool, int, float, np.number, np.bool_)):
            return self.constant(obj, node)
        return PyObj(obj)

    def _expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, View):
            if attr == "shape":
                return ShapeOf(base)
            if attr == "size":
                code = " * ".join(base.shape)
                return Val(f"({code})", ct.I64, True)
            if attr == "ndim":
                return self.constant(base.rank, node)
            raise self.fail(
                node, f"the array attribute '.{attr}' is not supported (.shape, .size and .ndim are)"
            )
        if isinstance(base, PyObj):
            if not hasattr(base.obj, attr):
                raise self.fail(node, f"'{ast.unparse(node)}' does not exist")
            value = getattr(base.obj, attr)
            return self._python_value(value, node)
        raise self.fail(node, f"the attribute '.{attr}' of {self._describe(base)} is not supported")

    def _resolve(self, node: ast.expr) -> Any:
        """What a callee names, without emitting code (None if not a Python object)."""
        if isinstance(node, ast.Name):
            if node.id in self.params or node.id in self.local_types or node.id in self.handles:
                return None
            if node.id in self.env and not self._assigned_locally(node.id):
                return PyObj(self.env[node.id])
            return None
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            if isinstance(base, PyObj) and hasattr(base.obj, node.attr):
                return PyObj(getattr(base.obj, node.attr))
        return None

    def _expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, ShapeOf):
            k = self.expr(node.slice)
            if not isinstance(k, Val) or k.const is None or not isinstance(k.const, int):
                raise self.fail(node, "index .shape with an integer constant (a.shape[0])")
            rank = base.view.rank
            if not -rank <= k.const < rank:
                raise self.fail(node, f"shape index {k.const} is out of range for a {rank}-D array")
            return Val(base.view.shape[k.const % rank], ct.I64, True)
        if isinstance(base, View):
            indices = self._indices(node, base)
            if len(indices) == base.rank:
                return self._load(base, indices)
            return self._subview(base, indices)
        raise self.fail(node, f"indexing {self._describe(base)} is not supported")

    def _indices(self, node: ast.Subscript, view: View) -> list[Val]:
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(elts) > view.rank:
            raise self.fail(node, f"{len(elts)} indices for a {view.rank}-D array")
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.fail(
                    node, "slices (a[i:j]) are not supported; index elements or whole rows (a[i])"
                )
            v = self.expr(e)
            if not isinstance(v, Val) or not ct.is_integral(v.dtype):
                raise self.fail(node, f"an array index must be an integer, not {self._describe(v)}")
            out.append(v)
        return out

    def _element(self, target: ast.Subscript) -> tuple[View, list[Val]]:
        view = self.expr(target.value)
        if not isinstance(view, View):
            raise self.fail(target, f"storing into {self._describe(view)}")
        indices = self._indices(target, view)
        if len(indices) != view.rank:
            raise self.fail(target, f"assigning to a row of a {view.rank}-D array; index every dimension")
        return view, indices

    def _index_code(self, view: View, k: int, index: Val) -> str:
        if index.nonneg:
            return index.code if index.dtype == ct.I64 else f"(long)({index.code})"
        return f"{self.helpers.wrap()}({self.cast(index, ct.I64)}, {view.shape[k]})"

    def _offset(self, view: View, indices: list[Val]) -> str:
        terms = [] if view.off == "0" else [view.off]
        for k, index in enumerate(indices):
            code = self._index_code(view, k, index)
            stride = view.strides[k]
            terms.append(code if stride == "1" else f"{code} * {stride}")
        return " + ".join(terms) if terms else "0"

    def _ref(self, view: View, indices: list[Val]) -> str:
        return f"{view.ptr}[{self._offset(view, indices)}]"

    def _load(self, view: View, indices: list[Val]) -> Val:
        ref = self._ref(view, indices)
        if view.dtype == ct.BOOL:
            return Val(f"({ref} != 0)", ct.BOOL, True)
        return Val(ref, view.dtype, view.dtype.kind == "u", effects=any(i.effects for i in indices))

    def _subview(self, view: View, indices: list[Val]) -> View:
        n = len(indices)
        off = self._offset(
            View(view.base, view.ptr, view.dtype, view.space, view.off, view.shape[:n], view.strides[:n]),
            indices,
        )
        return View(view.base, view.ptr, view.dtype, view.space, f"({off})", view.shape[n:], view.strides[n:])

    def _store_cast(self, value: Val, dtype: np.dtype) -> str:
        if dtype == ct.BOOL:
            return f"(uchar)({self.cast(value, ct.BOOL)})"
        return self.cast(value, dtype)

    def cast(self, value: Val, dtype: np.dtype) -> str:
        if value.dtype == dtype:
            return value.code
        if dtype == ct.BOOL:
            return f"({value.code} != 0)"
        if value.const is not None and not isinstance(value.const, bool):
            if ct.is_float(dtype):
                return _float_literal(float(value.const), dtype)
            if ct.is_integral(value.dtype):
                info = np.iinfo(dtype)
                if info.min <= value.const <= info.max:
                    return _int_literal(int(value.const), dtype)
        return f"(({ct.c_name(dtype)}){value.code})"

    def _expr_UnaryOp(self, node: ast.UnaryOp) -> Val:
        v = self.expr(node.operand)
        if not isinstance(v, Val):
            raise self.fail(node, f"unary operator on {self._describe(v)}")
        if isinstance(node.op, ast.Not):
            return Val(f"(!{v.code})", ct.BOOL, True, None if v.const is None else not v.const, v.effects)
        if isinstance(node.op, ast.Invert):
            if v.dtype == ct.BOOL:
                return Val(f"(!{v.code})", ct.BOOL, True, None, v.effects)
            if not ct.is_int(v.dtype):
                raise self.fail(node, f"~ on a {v.dtype} value")
            return Val(self._narrow_unary("~", v), nt.widen(v.dtype), False, None, v.effects)
        t = nt.widen(v.dtype) if ct.is_integral(v.dtype) else v.dtype
        if isinstance(node.op, ast.UAdd):
            return Val(self.cast(v, t), t, v.nonneg, v.const, v.effects)
        const = -v.const if v.const is not None and not isinstance(v.const, bool) else None
        if const is not None and t == ct.I64 and -(2**63) <= const < 2**63:
            return self.constant(const, node)
        if v.dtype == ct.BOOL:
            return Val(f"(-{self.cast(v, t)})", t, False, const, v.effects)
        if ct.is_int(v.dtype):
            return Val(self._narrow_unary("-", v), t, False, const, v.effects)
        return Val(f"(-{v.code})", t, False, const, v.effects)

    @staticmethod
    def _narrow_unary(op: str, v: Val) -> str:
        """Numba applies ``-`` and ``~`` in the operand's own width, then widens to 64 bits
        (``-int32(-2**31)`` stays ``-2**31``; ``~uint8(1)`` is 254)."""
        wide = nt.widen(v.dtype)
        if v.dtype == wide:
            return f"({op}{v.code})"
        if op == "-" and v.dtype == ct.I32:
            # negate in unsigned arithmetic: ``-INT_MIN`` on an int is undefined in C, and
            # PoCL's LLVM folds ``(long)(int)(-c)`` into ``-(long)c`` (2**31, not -2**31)
            return f"(({ct.c_name(wide)})({ct.c_name(v.dtype)})(0u - (uint)({v.code})))"
        return f"(({ct.c_name(wide)})({ct.c_name(v.dtype)})({op}{v.code}))"

    def _expr_BinOp(self, node: ast.BinOp) -> Val:
        left, right = self.expr(node.left), self.expr(node.right)
        return self.binop(node.op, left, right, node)

    def binop(self, op: ast.operator, left: Any, right: Any, node: ast.AST) -> Val:
        if not isinstance(left, Val) or not isinstance(right, Val):
            bad = left if not isinstance(left, Val) else right
            raise self.fail(
                node, f"arithmetic on {self._describe(bad)} (whole-array operations are not supported)"
            )
        effects = left.effects or right.effects
        both_nonneg = left.nonneg and right.nonneg
        a, b = left.dtype, right.dtype
        if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(op)]
            t = self._binary_type(node, sym, a, b)
            nonneg = both_nonneg and not isinstance(op, ast.Sub)
            lb = None
            if ct.is_integral(t) and left.lb is not None:
                if isinstance(op, ast.Add) and right.lb is not None:
                    lb = left.lb + right.lb
                elif (
                    isinstance(op, ast.Sub)
                    and isinstance(right.const, int)
                    and not isinstance(right.const, bool)
                ):
                    lb = left.lb - right.const
                elif isinstance(op, ast.Mult) and right.lb is not None and left.lb >= 0 and right.lb >= 0:
                    lb = left.lb * right.lb
            return Val(
                f"({self.cast(left, t)} {sym} {self.cast(right, t)})",
                t,
                nonneg or t.kind == "u",
                effects=effects,
                lb=lb,
            )
        if isinstance(op, ast.Div):
            t = self._binary_type(node, "/", a, b)
            return Val(f"({self.cast(left, t)} / {self.cast(right, t)})", t, both_nonneg, effects=effects)
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            which = "floordiv" if isinstance(op, ast.FloorDiv) else "mod"
            t = self._binary_type(node, "//" if which == "floordiv" else "%", a, b)
            fn = self.helpers.divmod(which, ct.c_name(t))
            nonneg = right.nonneg and (which == "mod" or left.nonneg)
            return Val(f"{fn}({self.cast(left, t)}, {self.cast(right, t)})", t, nonneg, effects=effects)
        if isinstance(op, ast.Pow):
            t = self._binary_type(node, "**", a, b)
            if ct.is_integral(t):
                fn = self.helpers.ipow(ct.c_name(t))
                return Val(
                    f"{fn}({self.cast(left, t)}, {self.cast(right, t)})", t, left.nonneg, effects=effects
                )
            if ct.is_integral(b):
                if right.const in (2, 3) and _simple(left.code):
                    x = self.cast(left, t)
                    return Val(f"({x} * {x}{' * ' + x if right.const == 3 else ''})", t, effects=effects)
                return Val(f"pown({self.cast(left, t)}, (int)({right.code}))", t, effects=effects)
            return Val(f"pow({self.cast(left, t)}, {self.cast(right, t)})", t, effects=effects)
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
            sym = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}[
                type(op)
            ]
            if not (ct.is_integral(a) and ct.is_integral(b)):
                raise self.fail(node, f"'{sym}' needs integer operands, not {a} and {b}")
            if a == ct.BOOL and b == ct.BOOL and sym in "&|^":
                return Val(f"(({left.code}) {sym} ({right.code}))", ct.BOOL, True, effects=effects)
            t = self._binary_type(node, sym, a, b)
            nonneg = (
                both_nonneg
                or (sym == "&" and (left.nonneg or right.nonneg))
                or (sym == ">>" and left.nonneg)
                or t.kind == "u"
            )
            return Val(f"({self.cast(left, t)} {sym} {self.cast(right, t)})", t, nonneg, effects=effects)
        raise self.fail(node, f"the operator {type(op).__name__} is not supported")

    def _expr_BoolOp(self, node: ast.BoolOp, truth: bool = False) -> Val:
        values = [self.expr(v, truth=True) for v in node.values]
        for v in values:
            if not isinstance(v, Val):
                raise self.fail(node, f"{self._describe(v)} in and/or")
        sym = "&&" if isinstance(node.op, ast.And) else "||"
        if truth or all(v.dtype == ct.BOOL for v in values):
            return Val(
                "(" + f" {sym} ".join(f"({v.code})" for v in values) + ")",
                ct.BOOL,
                True,
                effects=any(v.effects for v in values),
            )
        # A value context: Python returns one of the operands.
        t = values[0].dtype
        for v in values[1:]:
            t = nt.promote(t, v.dtype)
        result = values[-1]
        code = self.cast(result, t)
        for v in reversed(values[:-1]):
            x = self.tmp(v.dtype, v.code) if v.effects else v.code
            xv = Val(x, v.dtype)
            if sym == "&&":
                code = f"({x} ? {code} : {self.cast(xv, t)})"
            else:
                code = f"({x} ? {self.cast(xv, t)} : {code})"
        return Val(code, t, all(v.nonneg for v in values))

    def _expr_Compare(self, node: ast.Compare) -> Val:
        parts = []
        left = self.expr(node.left)
        effects = False
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp)
            if not isinstance(left, Val) or not isinstance(right, Val):
                bad = left if not isinstance(left, Val) else right
                raise self.fail(node, f"comparing {self._describe(bad)}")
            sym = {
                ast.Lt: "<",
                ast.LtE: "<=",
                ast.Gt: ">",
                ast.GtE: ">=",
                ast.Eq: "==",
                ast.NotEq: "!=",
            }.get(type(op))
            if sym is None:
                raise self.fail(node, f"the comparison '{type(op).__name__}' is not supported")
            t = nt.promote(left.dtype, right.dtype)
            if t == ct.BOOL and sym not in ("==", "!="):
                t = ct.I64
            parts.append(f"({self.cast(left, t)} {sym} {self.cast(right, t)})")
            effects = effects or left.effects or right.effects
            left = right
        code = parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
        return Val(code, ct.BOOL, True, effects=effects)

    def _expr_IfExp(self, node: ast.IfExp) -> Val:
        cond = self.condition(node.test)
        a, b = self.expr(node.body), self.expr(node.orelse)
        if not isinstance(a, Val) or not isinstance(b, Val):
            raise self.fail(node, "a conditional expression must give scalars")
        t = nt.promote(a.dtype, b.dtype)
        return Val(
            f"({cond} ? {self.cast(a, t)} : {self.cast(b, t)})",
            t,
            a.nonneg and b.nonneg,
            effects=a.effects or b.effects,
        )

    def _expr_Call(self, node: ast.Call) -> Any:
        name = intrinsic_name(node, self.env)
        if name is not None:
            return self._intrinsic(name, node)
        if node.keywords:
            raise self.fail(node, "keyword arguments are not supported in calls")
        if isinstance(node.func, ast.Attribute):
            base = self.expr(node.func.value)
            if isinstance(base, View):
                if node.func.attr == "view":
                    return self._retype(base, node)
                raise self.fail(node, f"the array method '.{node.func.attr}()' is not supported")
        callee = (
            self.expr(node.func) if not isinstance(node.func, ast.Attribute) else self._resolve(node.func)
        )
        if callee is None:
            callee = self.expr(node.func)
        if not isinstance(callee, PyObj):
            raise self.fail(node, f"calling {self._describe(callee)} is not supported")
        obj = callee.obj
        fname = ast.unparse(node.func)
        known = (builtins.len, builtins.min, builtins.max, builtins.round)
        if cast_dtype(obj) is None and math_function(obj) is None and not any(obj is k for k in known):
            raise self.fail(node, f"the function {fname}() is not supported in OpenCL leaves")
        args = [self.expr(a) for a in node.args]
        if obj is builtins.len:
            if len(args) != 1 or not isinstance(args[0], View):
                raise self.fail(node, "len() takes one array")
            return Val(args[0].shape[0], ct.I64, True)
        for a in args:
            if not isinstance(a, Val):
                raise self.fail(node, f"{fname}() of {self._describe(a)} is not supported")
        effects = any(a.effects for a in args)
        dtype = cast_dtype(obj)
        if dtype is not None:
            if len(args) != 1:
                raise self.fail(node, f"{fname}() takes one argument here")
            v = args[0]
            if obj is builtins.int and ct.is_int(v.dtype):
                dtype = v.dtype  # int() of an integer keeps its type (Numba)
            if v.const is not None:
                pyv = dtype.type(v.const).item()
                return Val(self.cast(v, dtype), dtype, pyv >= 0, pyv, effects)
            nonneg = v.nonneg and (ct.is_integral(dtype) or ct.is_float(dtype))
            return Val(self.cast(v, dtype), dtype, nonneg or dtype.kind in "ub", effects=effects)
        if obj in (builtins.min, builtins.max):
            if len(args) < 2:
                raise self.fail(
                    node, f"{fname}() of one value (an array?) is not supported; pass two or more scalars"
                )
            which = "min" if obj is builtins.min else "max"
            t = args[0].dtype
            for a in args[1:]:
                t = nt.promote(t, a.dtype)
            fn = self.helpers.minmax(which, ct.c_name(t))
            code = self.cast(args[0], t)
            for a in args[1:]:
                code = f"{fn}({code}, {self.cast(a, t)})"
            nonneg = all(a.nonneg for a in args) if which == "min" else any(a.nonneg for a in args)
            return Val(code, t, nonneg, effects=effects)
        if obj is builtins.round:
            if len(args) != 1:
                raise self.fail(node, "round() with ndigits is not supported")
            v = args[0]
            if ct.is_integral(v.dtype):
                return v
            return Val(f"((long)rint({v.code}))", ct.I64, v.nonneg, effects=effects)
        fn = math_function(obj)
        if fn is None:
            raise self.fail(node, f"the function {fname}() is not supported in OpenCL leaves")
        if len(args) != fn.arity:
            raise self.fail(node, f"{fname}() takes {fn.arity} argument(s)")
        if fn.kind == "float":
            t = nt.math_type(args[0].dtype)
            return Val(
                f"{fn.cname}({self.cast(args[0], t)})",
                t,
                fn.cname in ("sqrt", "exp", "fabs", "exp2"),
                effects=effects,
            )
        if fn.kind == "to_int":
            v = args[0]
            if ct.is_integral(v.dtype):
                return Val(self.cast(v, nt.widen(v.dtype)), nt.widen(v.dtype), v.nonneg, effects=effects)
            return Val(f"((long){fn.cname}({v.code}))", ct.I64, v.nonneg, effects=effects)
        if fn.kind == "same":
            v = args[0]
            if v.dtype == ct.BOOL:
                v = Val(self.cast(v, ct.I64), ct.I64, True)
            if ct.is_float(v.dtype):
                return Val(f"fabs({v.code})", v.dtype, True, effects=effects)
            if v.dtype.kind == "u":
                return v
            return Val(f"(({ct.c_name(v.dtype)})abs({v.code}))", v.dtype, True, effects=effects)
        if fn.kind == "predicate":
            v = args[0]
            if not ct.is_float(v.dtype):
                return Val("true" if fn.cname == "isfinite" else "false", ct.BOOL, True)
            return Val(f"({fn.cname}({v.code}) != 0)", ct.BOOL, True, effects=effects)
        if fn.kind == "float2":
            t = nt.math2_type(fn.cname, args[0].dtype, args[1].dtype)
            code = f"{fn.cname}({self.cast(args[0], t)}, {self.cast(args[1], t)})"
            return Val(code, t, fn.cname == "hypot", effects=effects)
        raise AssertionError(fn.kind)

    def _binary_type(self, node: ast.AST, op: str, a: np.dtype, b: np.dtype) -> np.dtype:
        """The type of ``x <op> y`` under Numba's rules (``ir/numeric.py``, the one copy every
        back end follows); an operation Numba refuses is a compile error here too."""
        t = nt.binary_type(op, a, b)
        if t is None:
            raise self.fail(node, f"'{op}' is not defined for {a} and {b} in compiled leaves")
        return t

    def _retype(self, view: View, node: ast.Call) -> View:
        """``a.view(np.float32)``: the same bytes as another element type (1-D, contiguous)."""
        target = self._resolve(node.args[0]) if len(node.args) == 1 else None
        obj = target.obj if isinstance(target, PyObj) else None
        dtype = cast_dtype(obj) if obj is not None else None
        if dtype is None and isinstance(obj, ScalarType):
            dtype = obj.dtype
        if dtype is None or dtype == ct.BOOL or node.keywords:
            raise self.fail(node, "'.view()' takes one NumPy scalar type (a.view(np.float32))")
        if view.rank != 1 or view.strides[0] != "1":
            raise self.fail(
                node, "'.view()' works on 1-D contiguous arrays only (here the array may be strided)"
            )
        old, new = view.dtype.itemsize, dtype.itemsize
        const = "" if view.base in self.written else "const "
        ptr = f"(({const}__{view.space} {ct.c_storage(dtype)}*){view.ptr})"
        if old == new:
            return View(view.base, ptr, dtype, view.space, view.off, view.shape, ["1"], retyped=True)
        off = "0" if view.off == "0" else f"(({view.off}) * {old} / {new})"
        n = f"({view.shape[0]} * {old} / {new})"
        return View(view.base, ptr, dtype, view.space, off, [n], ["1"], retyped=True)

    # -- intrinsics --------------------------------------------------------------------------

    def _intrinsic(self, name: str, node: ast.Call) -> Any:
        if name in ("get_node", "get_parent_node"):
            level = self._handle_level(node)
            if level is None:
                raise self.fail(node, f"hpvm.{name}() of a handle not known at compile time")
            return Handle(level)
        if name in QUERY_INTRINSICS or name == "get_num_dims":
            if len(node.args) != 1 or node.keywords:
                raise self.fail(node, f"hpvm.{name}() takes one node handle")
            level = self._handle_level(node.args[0])
            if level is None:
                raise self.fail(
                    node,
                    f"the node handle passed to hpvm.{name}() is not known at compile time (use "
                    "hpvm.get_node() / hpvm.get_parent_node(...) directly or through a variable)",
                )
            self.max_level = max(self.max_level, level)
            self.level_lines.setdefault(level, node.lineno)
            self.uses_ctx = True
            if name == "get_num_dims":
                return Val(self.queries.num_dims(level), ct.I64, True)
            kind, axis = QUERY_INTRINSICS[name]
            if kind == "id":
                return Val(self.queries.instance_id(level, axis), ct.I64, True)
            return Val(self.queries.num_instances(level, axis), ct.I64, True)
        if name.startswith("atomic_"):
            return self._atomic(name[len("atomic_") :], node)
        if name == "barrier":
            raise self.fail(node, "hpvm.barrier() must be a statement of its own")
        if name == "malloc":
            raise self.fail(
                node,
                "hpvm.malloc() is supported only in an allocation node whose buffer the launch "
                "plan places (a leaf that returns the buffer to a sibling under a replicated parent)",
            )
        raise self.fail(node, f"hpvm.{name}() cannot be called in a leaf")

    def _atomic(self, op: str, node: ast.Call) -> Val:
        if op not in ATOMIC_OPS:
            raise self.fail(node, f"unknown atomic operation {op}")
        if len(node.args) != 3 or node.keywords:
            raise self.fail(node, f"hpvm.atomic_{op}(array, index, value) takes three arguments")
        view = self.expr(node.args[0])
        if not isinstance(view, View):
            raise self.fail(node, f"hpvm.atomic_{op}() needs an array, not {self._describe(view)}")
        index_node = node.args[1]
        elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        if len(elts) != view.rank:
            raise self.fail(node, f"hpvm.atomic_{op}() on a {view.rank}-D array needs {view.rank} indices")
        indices = []
        for e in elts:
            v = self.expr(e)
            if not isinstance(v, Val) or not ct.is_integral(v.dtype):
                raise self.fail(node, f"an atomic's index must be an integer, not {self._describe(v)}")
            indices.append(v)
        value = self.expr(node.args[2])
        if not isinstance(value, Val):
            raise self.fail(node, f"an atomic's value must be a scalar, not {self._describe(value)}")
        dtype = view.dtype
        ok = (dtype.kind in "iu" and dtype.itemsize in (4, 8)) or (
            dtype.kind == "f" and op in ("add", "sub", "min", "max")
        )
        if not ok:
            raise self.fail(node, f"atomic_{op} on a {dtype} array is not supported")
        self.written.add(view.base)
        ctype = ct.c_name(dtype)
        fn = self.helpers.atomic(op, ctype, view.space)
        if op == "sub" and dtype.kind in "iu":
            fn = self.helpers.atomic("add", ctype, view.space)
            arg = f"-({self.cast(value, dtype)})"
        else:
            arg = self.cast(value, dtype)
        ref = self._ref(view, indices)
        return Val(f"{fn}(&{ref}, {arg})", dtype, dtype.kind == "u", effects=True)

    # -- misc --------------------------------------------------------------------------------

    def _describe(self, v: Any) -> str:
        if isinstance(v, View):
            return f"an array ({v.dtype}, {v.rank}-D)"
        if isinstance(v, Val):
            return f"a {v.dtype} value"
        if isinstance(v, Handle):
            return "a node handle"
        if isinstance(v, ShapeOf):
            return "an array's shape"
        if isinstance(v, PyObj):
            return f"the Python object {getattr(v.obj, '__name__', type(v.obj).__name__)}"
        return repr(v)


_SIMPLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^\(?-?[0-9.]+[fLU]*\)?$")


def _strip_parens(code: str) -> str:
    """``(a == b)`` → ``a == b`` when the parentheses enclose the whole expression."""
    if not (code.startswith("(") and code.endswith(")")):
        return code
    depth = 0
    for k, ch in enumerate(code):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(code) - 1:
            return code
    return code[1:-1]


def _simple(code: str) -> bool:
    """A C expression cheap and pure enough to repeat (a name or a literal)."""
    return bool(_SIMPLE.match(code))


__all__ = [
    "ArraySpec",
    "ContextQueries",
    "QueryMap",
    "ScalarSpec",
    "TranslatedLeaf",
    "render_program",
    "specs_for",
    "translate_leaf",
]
