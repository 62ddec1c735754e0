"""Python source of a numba-cuda kernel for a ``KernelSpec`` (its meaning: ``gpu/spec.py``).

The kernel computes the thread's instance from ``cuda.blockIdx`` / ``cuda.threadIdx`` (the
prologue of ``gpu/prologue.py``, rendered in Python), builds the context tuple the leaf
clones read, copies shared buffers in, calls the leaf clones (``cuda.jit(device=True)``
functions) and stores the outputs later steps need.

A direct launch (``Form.direct``) is a ``dims``-D CUDA grid whose x axis is the instance
axis the leaves index arrays along with unit stride (by default the last one), so that a
warp's threads touch consecutive elements: ``gpu/prologue.device_axes`` lists the instance
axes in CUDA's order x, y, z.
"""

from __future__ import annotations

from ..gpu.prologue import Const, Expr, Form, Let, TableRead, ThreadId, Var, prologue, render
from ..gpu.spec import ArgRef, KernelSpec

INDENT = "    "
_THREAD_IDS = {"group": "cuda.blockIdx.x", "local": "cuda.threadIdx.x", "group_size": "cuda.blockDim.x"}


def kernel_source(spec: KernelSpec, symbols: list[str], form: Form, alignment: int | None = None) -> str:
    """The kernel's ``def`` (named ``spec.name``) in ``form``; ``symbols[c]`` is call ``c``'s
    device function. Shared buffers are aligned to ``alignment`` bytes when it is given: a
    ``malloc`` buffer is bytes (``uint8``, aligned to 1) that leaves view as wider types."""
    params = ["__table", "__s0", "__s1", "__s2", "__bpp", *(p.name for p in spec.params)]
    start = prologue(spec, form)
    body: list[str] = []
    for step in start.steps:
        if isinstance(step, Let):
            body.append(f"__{step.name} = {_python(step.value, spec.dims)}")
        else:
            body += [f"if {_python(step.condition, spec.dims)}:", INDENT + "return"]
    body.append(f"__ctx = ({', '.join(_python(v, spec.dims) for v in start.context)},)")
    for k, buf in enumerate(spec.shared):
        body += [
            f"__sh{k} = cuda.shared.array({buf.length}, np.{buf.dtype}{'' if alignment is None else f', {alignment}'})",
            f"__src{k} = {_arg(spec, buf.source)}",
            "__e = cuda.threadIdx.x",
            f"while __e < {buf.length}:",
            INDENT + f"__sh{k}[__e] = __src{k}[__e]",
            INDENT + "__e += cuda.blockDim.x",
        ]
    if spec.shared:
        body.append("cuda.syncthreads()")
    for c, call in enumerate(spec.calls):
        args = [_arg(spec, a) for a in call.args]
        body.append(f"__r{c} = {symbols[c]}({', '.join([*args, '__ctx'])})")
    for out in spec.outputs:
        value = _result(spec, out.call, out.port)
        target = f"{spec.params[out.param].name}"
        if out.mode == "each":
            body.append(f"{target}[__flat] = {value}")
        else:
            body += ["if __local == __total - 1:", INDENT + f"{target}[__gp] = {value}"]
    return f"def {spec.name}({', '.join(params)}):\n" + "".join(INDENT + line + "\n" for line in body)


def _python(expr: Expr, dims: int) -> str:
    """A prologue expression in Python: every name (implicit parameters included) as
    ``__<name>``, the table as a 2-D array, global ids from ``cuda.grid`` (int64)."""

    def leaf(e: Expr) -> str:
        if isinstance(e, Var):
            return f"__{e.name}"
        if isinstance(e, Const):
            return str(e.value)
        if isinstance(e, ThreadId):
            if e.kind != "global":
                return _THREAD_IDS[e.kind]
            return "cuda.grid(1)" if dims == 1 else f"cuda.grid({dims})[{e.axis}]"
        assert isinstance(e, TableRead)
        return f"__table[{_python(e.row, dims)}, {e.column}]"

    return render(expr, leaf, "//")


def _result(spec: KernelSpec, call: int, port: int) -> str:
    if len(spec.calls[call].leaf.out_types) == 1:
        return f"__r{call}"
    return f"__r{call}[{port}]"


def _arg(spec: KernelSpec, ref: ArgRef) -> str:
    if ref.kind == "param":
        return spec.params[ref.param].name
    if ref.kind == "row":
        index = "__flat" if ref.index == "flat" else "__gp"
        if ref.map >= 0:
            index = f"{spec.params[ref.map].name}[{index}]"
        return f"{spec.params[ref.param].name}[{index}]"
    if ref.kind == "result":
        return _result(spec, ref.call, ref.port)
    return f"__sh{ref.shared}"
