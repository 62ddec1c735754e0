"""OpenCL C for a ``KernelSpec`` (its meaning: ``gpu/spec.py``): leaf functions plus one kernel.

The kernel computes the work-item's instance from its group and local ids (the prologue of
``gpu/prologue.py``, rendered in C), builds the context array the translated leaves read
(``translate.ContextQueries``: ``ir/instance_context.py``'s layout), copies shared buffers
into ``__local`` memory, calls the leaves and stores the outputs later steps need.

Every array parameter is passed as its buffer, the element offset of its first element, its
extents and — unless it is C-contiguous — its element strides. Which arrays are contiguous or
start at offset 0 is known only from the arguments of a launch, so a spec has one generated
program per *layout* (``layout_of``); a program is built the first time its layout is seen.

Read-only parameters (``KernelParam.read_only``: no leaf of the kernel has them in its
``outs``) are ``const __global T*``, and ``restrict`` too when the launch's layout says that no
written parameter shares their buffer (a view of the same tracked array would): the
compiler may then keep their loads in registers across stores and vectorize around them
(seed 001's step 7 moves such arguments to constant memory; ``__constant`` is limited to a
few arguments of 64 KiB on most devices and known to fit only at launch, and PoCL's CPU
device has no constant memory, so hpvm stays with ``const restrict`` global pointers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import CompileError
from ...ir.types import ArrayType, ScalarType
from ..gpu.prologue import Const, Expr, Form, Let, TableRead, ThreadId, Var, prologue, render
from ..gpu.spec import IMPLICIT_PARAMS, ArgRef, KernelSpec
from . import cltypes as ct
from .translate import (
    CTX_NAME,
    ArraySpec,
    ParamSpec,
    ScalarSpec,
    TranslatedLeaf,
    render_program,
    translate_leaf,
)


@dataclass(frozen=True)
class Layout:
    """What a launch fixes beyond the spec: per parameter, for arrays, (C-contiguous, at offset
    0, ``restrict``: read-only and sharing no buffer with a written parameter); and the
    prologue's form (``gpu/prologue.py``: ``exact``, no bounds test; ``direct``, the grid is
    the NDRange and the instance ids are the global ids)."""

    arrays: tuple[tuple[bool, bool, bool] | None, ...]
    form: Form = Form()


_THREAD_IDS = {
    "group": "get_group_id(0)",
    "local": "(long)get_local_id(0)",
    "group_size": "(long)get_local_size(0)",
    "global": "get_global_id({axis})",
}


@dataclass
class ArrayForm:
    """How an array reaches a leaf inside the kernel: pointer, element offset, extents, strides."""

    ptr: str
    off: str
    shape: list[str]
    strides: list[str]
    contiguous: bool
    space: str
    dtype: np.dtype
    param: int | None  # the kernel parameter it points into (None: a __local buffer)

    def spec(self) -> ArraySpec:
        return ArraySpec(self.dtype, len(self.shape), self.space, self.contiguous, self.off == "0")

    def call_args(self) -> list[str]:
        args = [self.ptr]
        if self.off != "0":
            args.append(self.off)
        args += self.shape
        if not self.contiguous:
            args += self.strides
        return args


@dataclass
class ScalarForm:
    code: str
    dtype: np.dtype


@dataclass
class GeneratedKernel:
    source: str
    where: list[Any]  # per line: (leaf, python line) or None
    leaves: list[TranslatedLeaf]
    name: str


def kernel_name(spec: KernelSpec) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", spec.name)


def layout_of(spec: KernelSpec, args: list[Any], form: Form) -> Layout:
    """The layout of a launch (``args``: device handles, see ``device.py``) in ``form``."""
    written = {a.buffer for p, a in zip(spec.params, args) if p.kind == "array" and not p.read_only}
    out: list[tuple[bool, bool, bool] | None] = []
    for p, a in zip(spec.params, args):
        if p.kind == "array":
            out.append((bool(a.c_contiguous), a.offset == 0, p.read_only and a.buffer not in written))
        else:
            out.append(None)
    return Layout(tuple(out), form)


def generic_layout(spec: KernelSpec) -> Layout:
    return Layout(tuple((False, False, False) if p.kind == "array" else None for p in spec.params))


def generate(spec: KernelSpec, layout: Layout) -> GeneratedKernel:
    """The program (leaf functions and the kernel) for ``spec`` with arrays laid out as ``layout``."""
    return _KernelWriter(spec, layout).write()


class _KernelWriter:
    def __init__(self, spec: KernelSpec, layout: Layout):
        self.spec = spec
        self.layout = layout
        self.forms: dict[int, ArrayForm] = {}  # kernel param -> its whole-array form
        self.body: list[str] = []
        self.results: dict[tuple[int, int], ArrayForm | ScalarForm] = {}

    def write(self) -> GeneratedKernel:
        spec = self.spec
        params = [
            "__global const long* restrict hpvm__table",
            "const long s0",
            "const long s1",
            "const long s2",
            "const long bpp",
        ]
        declarations: list[str] = []  # at kernel scope, first
        for k, p in enumerate(spec.params):
            if p.kind == "scalar":
                dtype = np.dtype(p.dtype)
                params.append(f"const {'uchar' if dtype == ct.BOOL else ct.c_name(dtype)} p{k}")
                continue
            contiguous, zero, restrict = self.layout.arrays[k] or (False, False, False)
            shape = [f"p{k}__n{d}" for d in range(p.rank)]
            strides = [f"p{k}__s{d}" for d in range(p.rank)]
            const = "const " if p.read_only else ""
            pointer = "* restrict" if restrict else "*"
            decls = [f"{const}__global {ct.c_storage(np.dtype(p.dtype))}{pointer} p{k}"]
            if not zero:
                decls.append(f"const long p{k}__off")
            decls += [f"const long {s}" for s in shape]
            if contiguous:
                if p.rank:
                    strides[-1] = "1"
                for d in range(p.rank - 2, -1, -1):
                    inner = strides[d + 1]
                    declarations.append(
                        f"    const long p{k}__s{d} = {shape[d + 1] if inner == '1' else f'{inner} * {shape[d + 1]}'};"
                    )
            else:
                decls += [f"const long {s}" for s in strides]
            params += decls
            self.forms[k] = ArrayForm(
                f"p{k}",
                "0" if zero else f"p{k}__off",
                shape,
                strides,
                contiguous,
                "global",
                np.dtype(p.dtype),
                k,
            )
        levels = spec.ctx_levels
        b = self.body
        start = prologue(spec, self.layout.form)
        for step in start.steps:
            if isinstance(step, Let):
                b.append(f"    const long hpvm__{step.name} = {self.c(step.value)};")
            else:
                b.append(f"    if ({self.c(step.condition)}) return;")
        b.append(f"    long {CTX_NAME}[{len(start.context)}];")
        for k, value in enumerate(start.context):
            b.append(f"    {CTX_NAME}[{k}] = {self.c(value)};")
        shared_forms: list[ArrayForm] = []
        for k, buf in enumerate(spec.shared):
            dtype = np.dtype(buf.dtype)
            store = ct.c_storage(dtype)
            src = self.arg(buf.source, ArrayType(_scalar(dtype), 1))
            assert isinstance(src, ArrayForm)
            # __local variables must be declared at kernel scope: hoisted to the declarations.
            declarations.append(
                f"    __local {store} hpvm__sh{k}[{max(buf.length, 1)}] __attribute__((aligned(16)));"
            )
            b += [
                f"    for (long e = get_local_id(0); e < {buf.length}; e += get_local_size(0))",
                f"        hpvm__sh{k}[e] = {src.ptr}[{_plus(src.off, 'e')}];",
            ]
            shared_forms.append(
                ArrayForm(f"hpvm__sh{k}", "0", [str(buf.length)], ["1"], True, "local", dtype, None)
            )
        if spec.shared:
            b.append("    barrier(CLK_LOCAL_MEM_FENCE);")
        self.shared_forms = shared_forms
        leaves: list[TranslatedLeaf] = []
        for c, call in enumerate(spec.calls):
            leaf = call.leaf
            forms = [self.arg(ref, p.type) for ref, p in zip(call.args, leaf.params)]
            specs: list[ParamSpec] = [
                f.spec() if isinstance(f, ArrayForm) else ScalarSpec(f.dtype) for f in forms
            ]
            t = translate_leaf(leaf, specs)
            if t.levels > levels:
                line = min(ln for lvl, ln in t.level_lines.items() if lvl >= levels)
                raise CompileError(
                    f"leaf '{leaf.name}' ({leaf.location.file}:{line}): it queries {t.levels - 1} level(s) "
                    f"above its node, but node '{call.node}' has only {levels - 1} ancestor(s) (the root "
                    "has no parent)"
                )
            leaves.append(t)
            args: list[str] = []
            for p, f in zip(leaf.params, forms):
                if isinstance(f, ArrayForm):
                    args += f.call_args()
                    if p.name in t.written and f.param is not None and spec.params[f.param].read_only:
                        raise CompileError(
                            f"leaf '{leaf.name}' ({leaf.location}): it writes array '{p.name}', which is "
                            f"not in its outs {list(leaf.outs)} (node '{call.node}'); declare it there"
                        )
                else:
                    args.append(f.code)
            if t.uses_ctx:
                args.append(CTX_NAME)
            for port, out in enumerate(leaf.out_types):
                name = f"hpvm__r{c}_{port}"
                if isinstance(out, ScalarType):
                    b.append(f"    {ct.c_name(out.dtype)} {name} = 0;")
                    args.append(f"&{name}")
                    self.results[(c, port)] = ScalarForm(name, out.dtype)
                else:
                    b.append(f"    long {name}[{1 + 2 * out.rank}];")
                    args.append(name)
                    base = t.array_outputs.get(port)
                    if base is None:
                        self.results[(c, port)] = _no_view(leaf, port, out)
                        continue
                    src = forms[leaf.param_index(base)]  # type: ignore[index]
                    assert isinstance(src, ArrayForm)
                    r = out.rank
                    self.results[(c, port)] = ArrayForm(
                        src.ptr,
                        f"{name}[0]",
                        [f"{name}[{1 + d}]" for d in range(r)],
                        [f"{name}[{1 + r + d}]" for d in range(r)],
                        False,
                        src.space,
                        src.dtype,
                        src.param,
                    )
            b.append(f"    {t.name}({', '.join(args)});")
        for out in spec.outputs:
            value = self.results[(out.call, out.port)]
            if not isinstance(value, ScalarForm):
                raise CompileError(
                    f"kernel {spec.name}: output {out.port} of call {out.call} is not a scalar"
                )
            target = self.forms[out.param]
            index = "hpvm__flat" if out.mode == "each" else "hpvm__gp"
            store = f"{target.ptr}[{_plus(target.off, index)}] = {_store(value, target.dtype)};"
            if out.mode == "each":
                b.append(f"    {store}")
            else:
                b.append(f"    if (hpvm__local == hpvm__total - 1) {store}")
        name = kernel_name(spec)
        kernel = f"__kernel void {name}(\n    " + ",\n    ".join(params) + ") {\n"
        kernel += "\n".join(declarations + b) + "\n}"
        unique: dict[str, TranslatedLeaf] = {}
        for t in leaves:
            unique.setdefault(t.name, t)
        source, where = render_program(list(unique.values()), [kernel])
        return GeneratedKernel(source, where, leaves, name)

    def c(self, expr: Expr) -> str:
        """A prologue expression in C: implicit parameters by their names (``s0``, ``bpp``),
        prologue variables as ``hpvm__<name>`` locals, the table as a flat array."""

        def leaf(e: Expr) -> str:
            if isinstance(e, Var):
                return e.name if e.name in IMPLICIT_PARAMS else f"hpvm__{e.name}"
            if isinstance(e, Const):
                return str(e.value)
            if isinstance(e, ThreadId):
                return _THREAD_IDS[e.kind].format(axis=e.axis)
            assert isinstance(e, TableRead)
            if e.row == Const(0):
                return f"hpvm__table[{e.column}]"
            index = f"{self.c(e.row)} * {self.spec.table_width}"
            return f"hpvm__table[{index}{f' + {e.column}' if e.column else ''}]"

        return render(expr, leaf, "/")

    def arg(self, ref: ArgRef, ptype: Any) -> ArrayForm | ScalarForm:
        """The form of one leaf argument (see ``ArgRef`` in ``gpu/spec.py``)."""
        spec = self.spec
        if ref.kind == "result":
            return self.results[(ref.call, ref.port)]
        if ref.kind == "shared":
            return self.shared_forms[ref.shared]
        p = spec.params[ref.param]
        if ref.kind == "param":
            if p.kind == "scalar":
                return ScalarForm(f"p{ref.param}", np.dtype(p.dtype))
            return self.forms[ref.param]
        whole = self.forms[ref.param]
        index = "hpvm__flat" if ref.index == "flat" else "hpvm__gp"
        if ref.map >= 0:
            m = self.forms[ref.map]
            index = f"{m.ptr}[{_plus(m.off, index)}]"
        row = _plus(whole.off, index if whole.strides[0] == "1" else f"{index} * {whole.strides[0]}")
        if p.rank == 1:
            dtype = whole.dtype
            load = f"{whole.ptr}[{row}]"
            if dtype == ct.BOOL:
                load = f"({load} != 0)"
            return ScalarForm(load, dtype)
        return ArrayForm(
            whole.ptr,
            f"({row})",
            whole.shape[1:],
            whole.strides[1:],
            whole.contiguous,
            whole.space,
            whole.dtype,
            whole.param,
        )


def _plus(off: str, index: str) -> str:
    return index if off == "0" else f"{off} + {index}"


def _store(value: ScalarForm, dtype: np.dtype) -> str:
    if dtype == ct.BOOL:
        return f"(uchar)({value.code})"
    if value.dtype == dtype:
        return value.code
    return f"(({ct.c_name(dtype)}){value.code})"


def _scalar(dtype: np.dtype) -> ScalarType:
    from ...ir.types import scalar_type

    return scalar_type(dtype)


def _no_view(leaf: Any, port: int, out: ArrayType) -> ArrayForm:
    raise CompileError(
        f"leaf '{leaf.name}' ({leaf.location}): array output {port} ({out}) has no source array"
    )
