"""Arrays in the OpenCL emitter: the leaf's array parameters as views (pointer, offset,
extents, strides), element references with Python's negative indices, rows, ``.view(dtype)``,
``.shape``/``.size``, and the work-item's private arrays (``np.zeros`` of a constant shape).

Why views: an array parameter reaches the C function as a pointer plus its layout, and a
row or a retyped view is the same pointer with another offset, extents or element type, so
an array value is never copied; only its offset can change at run time (a local array
variable holds its own offset, ``<name>__off``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.leafir import ops
from ...ir.types import ArrayType
from . import cltypes as ct
from .values import Val, View, cast

#: The fill of each kind of local array (``np.empty`` is left as it is).
_FILLS = {"zeros": "0", "ones": "1", "empty": None}
_FUNCS = {"zeros": "np.zeros", "ones": "np.ones", "empty": "np.empty"}


class ArrayEmitter:
    """The array half of the emitter (mixed into ``emit_stmts.LeafEmitter``)."""

    helpers: Any
    cname: Any
    written: set[str]
    param_views: dict[str, View]
    array_locals: dict[str, View]
    private_arrays: dict[str, View]
    final: bool

    def param_view(self, name: str, spec: Any, prologue: list[tuple[str, int | None]]) -> View:
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

    def view(self, e: ops.Expr) -> View:
        v = self.expr(e)
        if not isinstance(v, View):
            raise self.fail_at(f"{self.describe(v)} where an array is needed")
        return v

    def array_var(self, name: str, type: ArrayType) -> View:
        """A local array variable: its view (a placeholder while its assignment has not been
        emitted yet in an early round; the last round has every view)."""
        found = self.array_locals.get(name) or self.private_arrays.get(name)
        if found is not None:
            return found
        if self.final:
            raise self.fail_at(f"array variable '{name}' is used before its assignment")
        n = ["1"] * type.rank
        return View(name, self.cname(name), type.dtype, "global", "0", n, list(n))

    # -- elements and rows ---------------------------------------------------------------------

    def indices(self, exprs: tuple[ops.Expr, ...]) -> list[Val]:
        return [self.scalar(i) for i in exprs]

    def _index_code(self, view: View, k: int, index: Val) -> str:
        if index.nonneg:
            return index.code if index.dtype == ct.I64 else f"(long)({index.code})"
        return f"{self.helpers.wrap()}({cast(index, ct.I64)}, {view.shape[k]})"

    def offset(self, view: View, indices: list[Val]) -> str:
        terms = [] if view.off == "0" else [view.off]
        for k, index in enumerate(indices):
            code = self._index_code(view, k, index)
            stride = view.strides[k]
            terms.append(code if stride == "1" else f"{code} * {stride}")
        return " + ".join(terms) if terms else "0"

    def ref(self, view: View, indices: list[Val]) -> str:
        return f"{view.ptr}[{self.offset(view, indices)}]"

    def load(self, view: View, indices: list[Val]) -> Val:
        ref = self.ref(view, indices)
        effects = any(i.effects for i in indices)
        if view.dtype == ct.BOOL:
            return Val(f"({ref} != 0)", ct.BOOL, 0, effects=effects)
        return Val(ref, view.dtype, 0 if view.dtype.kind == "u" else None, effects=effects)

    def _expr_Load(self, e: ops.Load) -> Any:
        view = self.view(e.array)
        indices = self.indices(e.indices)
        if len(indices) == view.rank:
            return self.load(view, indices)
        n = len(indices)
        head = View(view.base, view.ptr, view.dtype, view.space, view.off, view.shape[:n], view.strides[:n])
        off = f"({self.offset(head, indices)})"
        return View(view.base, view.ptr, view.dtype, view.space, off, view.shape[n:], view.strides[n:])

    def store_value(self, value: Val, dtype: np.dtype) -> str:
        if dtype == ct.BOOL:
            return f"(uchar)({cast(value, ct.BOOL)})"
        return cast(value, dtype)

    # -- shapes and retyping ---------------------------------------------------------------------

    def _expr_Shape(self, e: ops.Shape) -> Val:
        return Val(self.view(e.array).shape[e.axis], ct.I64, 0)

    def _expr_Size(self, e: ops.Size) -> Val:
        return Val(f"({' * '.join(self.view(e.array).shape)})", ct.I64, 0)

    def _expr_Retype(self, e: ops.Retype) -> View:
        """``a.view(np.float32)``: the same bytes as another element type (1-D, contiguous)."""
        view = self.view(e.array)
        dtype = e.type.dtype
        if dtype == ct.BOOL or not ct.is_scalar(dtype):
            raise self.fail_at("'.view()' takes one NumPy scalar type (a.view(np.float32))")
        if view.strides[0] != "1":
            raise self.fail_at(
                "'.view()' works on 1-D contiguous arrays only (here the array may be strided)"
            )
        old, new = view.dtype.itemsize, dtype.itemsize
        const = "" if view.base in self.written else "const "
        ptr = f"(({const}__{view.space} {ct.c_storage(dtype)}*){view.ptr})"
        if old == new:
            return View(view.base, ptr, dtype, view.space, view.off, view.shape, ["1"])
        off = "0" if view.off == "0" else f"(({view.off}) * {old} / {new})"
        n = f"({view.shape[0]} * {old} / {new})"
        return View(view.base, ptr, dtype, view.space, off, [n], ["1"])

    def _expr_Alloc(self, e: ops.Alloc) -> View:
        raise self.fail_at(
            f"{_FUNCS[e.fill]}() other than assigned to a name (a = np.zeros(SHAPE, DTYPE)) is not supported"
        )

    # -- local arrays ----------------------------------------------------------------------------

    def private_array(self, name: str, e: ops.Alloc) -> None:
        """``a = np.zeros(SHAPE, DTYPE)`` with a constant shape: a ``__private`` array of the
        work-item, declared once at the top and filled here each time the statement runs (a
        loop's every iteration gets a new array, as in Python)."""
        func = _FUNCS[e.fill]
        shape = []
        for extent in e.shape:
            if not isinstance(extent, ops.Const) or isinstance(extent.value, bool) or extent.value < 0:
                raise self.fail_at(
                    f"{func}() with a shape not known when the kernel is compiled is not supported (a "
                    "work-item's own array needs constant extents)"
                )
            shape.append(int(extent.value))
        dtype = e.type.dtype
        if not ct.is_scalar(dtype):
            raise self.fail_at(f"{func} with the element type {e.type.elem} is not supported")
        strides = ["1"] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = str(int(strides[k + 1]) * shape[k + 1])
        c = f"{self.cname(name)}__priv"
        self.private_arrays[name] = View(name, c, dtype, "private", "0", [str(n) for n in shape], strides)
        fill = _FILLS[e.fill]
        if fill is not None:
            size = math.prod(shape)
            self.emit(f"for (long {c}__z = 0; {c}__z < {size}; {c}__z++) {c}[{c}__z] = {fill};")

    def view_local(self, name: str, view: View) -> None:
        off = f"{self.cname(name)}__off"
        self.array_locals[name] = View(
            view.base, view.ptr, view.dtype, view.space, off, view.shape, view.strides
        )
        self.emit(f"{off} = {view.off};")

    def private_declarations(self) -> list[tuple[str, int | None]]:
        decls: list[tuple[str, int | None]] = []
        for view in self.array_locals.values():
            decls.append((f"    long {view.off} = 0;", None))
        for view in self.private_arrays.values():
            size = math.prod(int(n) for n in view.shape)
            decls.append((f"    {ct.c_storage(view.dtype)} {view.ptr}[{size}];", None))
        return decls
