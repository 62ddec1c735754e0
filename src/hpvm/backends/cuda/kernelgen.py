"""Python source of a numba-cuda kernel for a ``KernelSpec`` (its meaning: ``gpu/spec.py``).

The kernel computes the thread's instance from ``cuda.blockIdx`` / ``cuda.threadIdx``,
builds the context tuple the leaf clones read, copies shared buffers in, calls the leaf
clones (``cuda.jit(device=True)`` functions) and stores the outputs later steps need.
"""

from __future__ import annotations

from ...ir import instance_context as ictx
from ..gpu.spec import TABLE_FIXED, ArgRef, KernelSpec

INDENT = "    "


def kernel_source(spec: KernelSpec, symbols: list[str]) -> str:
    """The kernel's ``def`` (named ``spec.name``); ``symbols[c]`` is call ``c``'s device function."""
    params = ["__table", "__s0", "__s1", "__s2", "__bpp", *(p.name for p in spec.params)]
    body = [
        "__g = cuda.blockIdx.x",
        "__row = __g // __bpp",
        "__local = (__g - __row * __bpp) * cuda.blockDim.x + cuda.threadIdx.x",
        "__total = __s0 * __s1 * __s2",
    ]
    if not spec.barrier and not spec.shared:
        body += ["if __local >= __total:", INDENT + "return"]
    body += ["__gp = __table[__row, 0]", "__flat = __table[__row, 1] + __local"]
    ids = ["0", "0", "0"]
    if spec.dims == 1:
        body.append("__i0 = __local")
    elif spec.dims == 2:
        body += ["__i0 = __local // __s1", "__i1 = __local - __i0 * __s1"]
    elif spec.dims == 3:
        body += [
            "__i0 = __local // (__s1 * __s2)",
            "__t = __local - __i0 * (__s1 * __s2)",
            "__i1 = __t // __s2",
            "__i2 = __t - __i1 * __s2",
        ]
    for a in range(spec.dims):
        ids[a] = f"__i{a}"
    ctx = [*ids, "__s0", "__s1", "__s2", str(spec.dims)]
    ctx += [f"__table[__row, {TABLE_FIXED + k}]" for k in range(ictx.STRIDE * (spec.ctx_levels - 1))]
    body.append(f"__ctx = ({', '.join(ctx)},)")
    for k, buf in enumerate(spec.shared):
        body += [
            f"__sh{k} = cuda.shared.array({buf.length}, np.{buf.dtype})",
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
