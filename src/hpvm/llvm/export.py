"""``to_hpvm_ir(root)``: a program as HPVM IR in LLVM form, as seed 000's implementation
section describes it.

One LLVM function per node function. An internal node's function holds only
``llvm.hpvm.createNode*`` / ``createEdge`` / ``bind.input`` / ``bind.output`` calls, the
integer arithmetic of its replication sizes (``add``, ``sub``, ``mul``, ``sdiv`` for ``//``,
``srem`` for ``%``, ``llvm.smin``/``llvm.smax`` for ``hpvm.size_min``/``size_max``, ``udiv`` of
an array's byte size for ``a.shape[0]``, ``sext``/``zext`` of narrower ports) and its
``ret``. A leaf's function adapts the ABI (``abi.py``) to Numba's compiled body
(``leafcode.py``). The module is parsed, the leaves' modules linked in, and the result
verified by LLVM before it is returned.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from ..ir.bodies import LLVMBody
from ..ir.expr import BinOp, Call, Const, Expr, Param, Shape
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction, functions
from ..ir.printer import function_refs
from ..ir.types import ArrayType, NodeHandleType, PortType, ScalarType
from ..ir.verify import verify
from . import abi, tensorleaf
from .errors import LLVMExportError
from .leafcode import CompiledLeaf, compile_leaf

_BINOPS = {"+": "add", "-": "sub", "*": "mul", "//": "sdiv", "%": "srem"}


def to_hpvm_ir(root: InternalFunction) -> str:
    """The program rooted at ``root`` as LLVM IR text that parses and verifies."""
    import llvmlite.binding as llvm

    verify(root)
    fns = list(functions(root))
    refs = {k: v[1:] for k, v in function_refs(fns).items()}  # "@f.1" → "f.1"
    leaves = [fn for fn in fns if isinstance(fn, LeafFunction)]
    tensors = {id(fn): ops for fn in leaves if (ops := tensorleaf.tensor_operations(fn)) is not None}
    compiled = {
        id(fn): _compiled(fn) for fn in leaves if not isinstance(fn.body, LLVMBody) and id(fn) not in tensors
    }
    kept = {
        id(fn): f"__hpvm_body.{k}.{fn.name}" for k, fn in enumerate(leaves) if isinstance(fn.body, LLVMBody)
    }
    header = _target(next(iter(compiled.values())).module) if compiled else []
    lines = [*header, *abi.DECLARATIONS.values(), "declare i64 @llvm.smin.i64(i64, i64)"]
    lines.append("declare i64 @llvm.smax.i64(i64, i64)")
    tensor_ops: set[str] = set()
    for fn in fns:
        lines.append("")
        if isinstance(fn, LeafFunction) and id(fn) in kept:
            lines.extend(_kept_leaf(fn, refs, kept[id(fn)]))
        elif isinstance(fn, LeafFunction) and id(fn) in tensors:
            ret = _struct(fn.outputs)
            used, body = tensorleaf.leaf_body(fn, tensors[id(fn)], ret)
            tensor_ops |= used
            lines.extend([_header(fn, refs, ret, "leaf"), *body])
        elif isinstance(fn, LeafFunction):
            lines.extend(_leaf(fn, refs, compiled[id(fn)]))
        else:
            assert isinstance(fn, InternalFunction)
            lines.extend(_internal(fn, refs))
    lines += tensorleaf.declarations(tensor_ops)
    text = "\n".join(lines) + "\n"
    try:
        module = llvm.parse_assembly(text)
        for leaf in compiled.values():
            module.link_in(_linkable(leaf.module, leaf.adapter, leaf.adapter))
        for fn in leaves:
            if id(fn) in kept:
                body = fn.body
                assert isinstance(body, LLVMBody)
                module.link_in(_linkable(body.module, body.function, kept[id(fn)]))
        module.verify()
    except RuntimeError as e:  # a bug of ours, not the user's: say so with LLVM's words
        raise AssertionError(f"the exported module does not verify: {e}\n{text}") from None
    return str(module)


#: Each leaf's Numba module, while the leaf lives and keeps its body (Numba takes a while).
_COMPILED: weakref.WeakKeyDictionary[LeafFunction, tuple[object, CompiledLeaf]] = weakref.WeakKeyDictionary()


def _compiled(leaf: LeafFunction) -> CompiledLeaf:
    known = _COMPILED.get(leaf)
    if known is not None and known[0] is leaf.body:
        return known[1]
    made = compile_leaf(leaf)
    _COMPILED[leaf] = (leaf.body, made)
    return made


def _target(numba_text: str) -> list[str]:
    """The target lines of Numba's module, so that linking its leaves warns of nothing."""
    return re.findall(r"^target (?:datalayout|triple) = .*$", numba_text, re.M)


def _attr(key: str, value: str | None = None) -> str:
    return f'"{key}"' if value is None else f'"{key}"="{value}"'


def _struct(types: list[PortType]) -> str:
    fields = [t for p in types for t in abi.llvm_types(p)]
    return "{ " + ", ".join(fields) + " }" if fields else "{}"


def _params(fn: NodeFunction) -> list[str]:
    out = []
    for p in fn.params:
        first = abi.llvm_types(p.type)[0]
        attrs = []
        if isinstance(p.type, ArrayType):
            attrs += [_attr("in")] if p.name in fn.ins else []
            attrs += [_attr("out")] if p.name in fn.outs else []
        attrs.append(_attr("hpvm.port", str(p.type)))
        if p.layout is not None:
            attrs.append(_attr("hpvm.layout", str(p.layout)))
        out.append(f"{first} {' '.join(attrs)} %{abi.quote(p.name)}")
        if isinstance(p.type, ArrayType):
            out.append(f"i64 {_attr('hpvm.size')} %{abi.quote(p.name + '.size')}")
            if p.type.rank > 1:
                out += [
                    f"i64 {_attr('hpvm.extent')} %{abi.quote(f'{p.name}.d{a}')}" for a in range(p.type.rank)
                ]
    return out


def _header(fn: NodeFunction, refs: dict[int, str], ret: str, kind: str) -> str:
    attrs = [_attr("hpvm.kind", kind), _attr("hpvm.name", fn.name)]
    if fn.hint is not None:
        attrs.append(_attr("hpvm.hint", fn.hint))
    attrs.append(_attr("hpvm.outputs", "(" + ", ".join(str(t) for t in fn.out_types) + ")"))
    if isinstance(fn, InternalFunction) and fn.declared_outputs is not None:
        attrs.append(_attr("hpvm.declared"))
    # The order ins/outs were written in (the parameters' "in"/"out" say which, not the order).
    for key, names in (("hpvm.ins", fn.ins), ("hpvm.outs", fn.outs)):
        if names:
            attrs.append(_attr(key, ", ".join(names)))
    return f"define {ret} @{abi.quote(refs[id(fn)])}({', '.join(_params(fn))}) {' '.join(attrs)} {{"


def _arg_names(fn: NodeFunction) -> list[tuple[str, str]]:
    """(LLVM type, %name) of every ABI argument, in order."""
    out = []
    for p in fn.params:
        names = [p.name] + ([p.name + ".size"] if isinstance(p.type, ArrayType) else [])
        if isinstance(p.type, ArrayType) and p.type.rank > 1:
            names += [f"{p.name}.d{a}" for a in range(p.type.rank)]
        out += [(t, "%" + abi.quote(n)) for t, n in zip(abi.llvm_types(p.type), names)]
    return out


def _leaf(fn: LeafFunction, refs: dict[int, str], leaf: CompiledLeaf) -> list[str]:
    ret = _struct(fn.outputs)
    nfields = sum(abi.arity(t) for t in fn.outputs)
    lines = [_header(fn, refs, ret, "leaf"), "entry:"]
    lines.append(f"  %.ret = alloca [{8 * (nfields + 1)} x i8], align 16")
    lines.append("  %.exc = alloca ptr, align 8")
    args = []
    for k, ((mine, name), theirs) in enumerate(zip(_arg_names(fn), leaf.arg_types)):
        if mine == theirs:
            args.append(f"{mine} {name}")
        elif mine == "i1" and theirs == "i8":
            lines.append(f"  %.a{k} = zext i1 {name} to i8")
            args.append(f"i8 %.a{k}")
        else:
            raise LLVMExportError(
                f"{fn.describe()}: Numba passes argument {k} as {theirs}, the ABI as {mine}"
            )
    decl = f"declare i32 @{leaf.adapter}(ptr, ptr, {', '.join(leaf.arg_types)})".replace(", )", ")")
    lines.insert(0, decl)
    lines.append(f"  %.status = call i32 @{leaf.adapter}({', '.join(['ptr %.ret', 'ptr %.exc', *args])})")
    if nfields:
        lines.append(f"  %.out = load {ret}, ptr %.ret, align 8")
        lines.append(f"  ret {ret} %.out")
    else:
        lines.append("  ret {} zeroinitializer")
    return [*lines, "}"]


def _kept_leaf(fn: LeafFunction, refs: dict[int, str], body_name: str) -> list[str]:
    """A leaf whose body is already LLVM (an imported program's): its node function calls
    the body's function, linked in under ``body_name``."""
    ret = _struct(fn.outputs)
    args = _arg_names(fn)
    decl = f"declare {ret} @{abi.quote(body_name)}({', '.join(t for t, _ in args)})"
    call = f"call {ret} @{abi.quote(body_name)}({', '.join(f'{t} {n}' for t, n in args)})"
    return [decl, _header(fn, refs, ret, "leaf"), "entry:", f"  %.out = {call}", f"  ret {ret} %.out", "}"]


def _linkable(text: str, function: str, name: str) -> Any:
    """A leaf's module, ready to be linked in: ``function`` renamed ``name`` and external,
    everything else it defines internal, so that the linker takes only what the function
    uses and renames what clashes (an imported module holds the whole program it came from;
    Numba's holds Python wrappers of the adapter that no node function calls)."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(text)
    for f in module.functions:
        if f.is_declaration:
            continue
        if f.name == function:
            f.name = name
            f.linkage = "external"
        else:
            f.linkage = "internal"
    for g in module.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"
    return module


class _Sizes:
    """Emits the instructions computing replication sizes in an internal node."""

    def __init__(self, fn: InternalFunction):
        self.fn = fn
        self.lines: list[str] = []
        self.count = 0

    def temp(self, text: str, suffix: str = "") -> str:
        name = f"%.s{self.count}{suffix}"
        self.count += 1
        self.lines.append(f"  {name} = {text}")
        return name

    def value(self, expr: Expr) -> str:
        """An ``i64`` operand (constant or ``%name``) computing ``expr``."""
        if isinstance(expr, Const):
            return str(expr.value)
        if isinstance(expr, Param):
            param = self.fn.params[self.fn.param_index(expr.name)]  # type: ignore[index]
            t = param.type
            assert isinstance(t, ScalarType) and not isinstance(t, NodeHandleType)
            lt, name = abi.llvm_types(t)[0], "%" + abi.quote(param.name)
            if lt == "i64":
                return name
            ext = "zext" if t.dtype.kind in "ub" else "sext"
            return self.temp(f"{ext} {lt} {name} to i64")
        if isinstance(expr, Shape):
            param = self.fn.params[self.fn.param_index(expr.name)]  # type: ignore[index]
            assert isinstance(param.type, ArrayType)
            if param.type.rank == 1:
                size = "%" + abi.quote(param.name + ".size")
                return self.temp(f"udiv i64 {size}, {param.type.dtype.itemsize}")
            return "%" + abi.quote(f"{param.name}.d{expr.axis}")
        if isinstance(expr, BinOp):
            lhs, rhs = self.value(expr.lhs), self.value(expr.rhs)
            return self.temp(f"{_BINOPS[expr.op]} i64 {lhs}, {rhs}")
        assert isinstance(expr, Call)
        # min(a, b, c) is smin(smin(a, b), c); the inner calls are named ".fold" so that the
        # import reads min(a, b, c) back, and min(min(a, b), c) stays nested.
        acc = self.value(expr.args[0])
        for k, arg in enumerate(expr.args[1:], start=2):
            call = f"call i64 @llvm.s{expr.fn}.i64(i64 {acc}, i64 {self.value(arg)})"
            acc = self.temp(call, ".fold" if k < len(expr.args) else "")
        return acc


def _internal(fn: InternalFunction, refs: dict[int, str]) -> list[str]:
    ret = _struct(fn.out_types)
    lines = [_header(fn, refs, ret, "internal"), "entry:"]
    sizes = _Sizes(fn)
    graph = fn.graph
    for node in graph.nodes:
        values = [sizes.value(s) for s in node.sizes]
        lines += sizes.lines
        sizes.lines = []
        callee = "createNode" + (f"{node.dims}D" if node.dims else "")
        args = [f"ptr @{abi.quote(refs[id(node.function)])}", *(f"i64 {v}" for v in values)]
        lines.append(f"  %{abi.quote(node.name)} = call ptr @llvm.hpvm.{callee}({', '.join(args)})")
    flag = {False: "false", True: "true"}
    for e in graph.edges:
        sp = abi.leading_indices(e.src.function.out_types)[e.sp]
        dp = abi.leading_indices([p.type for p in e.dst.function.params])[e.dp]
        for k in range(abi.arity(e.dst.function.params[e.dp].type)):
            lines.append(
                f"  call ptr @llvm.hpvm.createEdge(ptr %{abi.quote(e.src.name)}, ptr %{abi.quote(e.dst.name)}, "
                f"i1 {flag[bool(e.repl)]}, i32 {sp + k}, i32 {dp + k}, i1 {flag[e.stream]})"
            )
    own = abi.leading_indices([p.type for p in fn.params])
    for b in graph.in_binds:
        ic = abi.leading_indices([p.type for p in b.dst.function.params])[b.ic]
        for k in range(abi.arity(fn.params[b.ip].type)):
            lines.append(
                f"  call void @llvm.hpvm.bind.input(ptr %{abi.quote(b.dst.name)}, i32 {own[b.ip] + k}, "
                f"i32 {ic + k}, i1 {flag[b.stream]})"
            )
    outs = abi.leading_indices(fn.out_types)
    for ob in graph.out_binds:
        src_types = ob.src.function.out_types
        oc = abi.leading_indices(src_types)[ob.oc]
        for k in range(abi.arity(src_types[ob.oc])):
            lines.append(
                f"  call void @llvm.hpvm.bind.output(ptr %{abi.quote(ob.src.name)}, i32 {oc + k}, "
                f"i32 {outs[ob.op] + k}, i1 {flag[ob.stream]})"
            )
    lines.append(f"  ret {ret} undef" if ret != "{}" else "  ret {} undef")
    return [*lines, "}"]


__all__ = ["to_hpvm_ir"]
