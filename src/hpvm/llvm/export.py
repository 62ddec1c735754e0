"""``to_hpvm_ir(root)``: a program as HPVM IR in LLVM form, as seed 000's implementation
section describes it.

One LLVM function per node function. An internal node's function holds only
``llvm.hpvm.createNode*`` / ``createEdge`` / ``bind.input`` / ``bind.output`` calls, the
integer arithmetic of its replication sizes (``add``, ``sub``, ``mul``, ``sdiv`` for ``//``,
``srem`` for ``%``, ``llvm.smin``/``llvm.smax`` for ``hpvm.size_min``/``size_max``, ``udiv`` of
an array's byte size for ``a.shape[0]``, ``sext``/``zext`` of narrower ports) and its
``ret``. A leaf's function adapts the ABI (``abi.py``) to Numba's compiled body
(``leafcode.py``) and, when Numba's status says the body raised, calls the runtime's
``__hpvm_leaf_error`` (``ir.bodies.LEAF_ERROR``) with the status and Numba's exception
info. The module is parsed, the leaves' modules linked in, whatever reaches an HPVM
intrinsic inlined into the node functions (seed 000: ``seedrule.py``), and the result
verified by LLVM before it is returned.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ir.bodies import LEAF_ERROR, LEAF_ERROR_DECLARATION, LLVMBody, LLVMStruct, llvm_struct_return
from ..ir.expr import BinOp, Call, Const, Expr, Param, Shape
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction, functions
from ..ir.llvmcontext import own_context
from ..ir.printer import function_refs
from ..ir.types import ArrayType, NodeHandleType, PortType, ScalarType
from ..ir.verify import verify
from . import abi, seedrule, tensorleaf
from .errors import LLVMExportError
from .leafcode import CompiledLeaf, compile_leaf

_BINOPS = {"+": "add", "-": "sub", "*": "mul", "//": "sdiv", "%": "srem"}


def to_hpvm_ir(root: InternalFunction) -> str:
    """The program rooted at ``root`` as LLVM IR text that parses and verifies, its HPVM
    intrinsics called only in node functions (seed 000)."""
    return assemble(root, _node_functions, _inline_intrinsics)


def _node_functions(program: Program) -> list[str]:
    lines: list[str] = []
    for fn in program.functions:
        lines.append("")
        if isinstance(fn, LeafFunction):
            args = _arg_names(fn)
            decls, body, out = program.leaf_call(fn, args, "", check=True)
            lines += [*decls, _header(fn, program.refs, _struct(fn.outputs), "leaf"), "entry:", *body]
            lines += [f"  ret {_struct(fn.outputs)} {out}", "}"]
        else:
            assert isinstance(fn, InternalFunction)
            lines.extend(_internal(fn, program.refs))
    return lines


def _inline_intrinsics(program: Program, text: str) -> str:
    """Seed 000: what reaches an HPVM intrinsic inlined into the node functions."""
    leaves = {program.refs[id(fn)]: fn.describe() for fn in program.leaves}
    return seedrule.inline_into_node_functions(text, leaves)


class Program:
    """What writing a program in LLVM form needs beside its graph: its node functions, their
    LLVM names, and each leaf's body (Numba's module, or an LLVM body kept as it is). Shared
    by the export (one function per node function) and PREPARE (seed 004: node functions
    inlined into directive regions)."""

    def __init__(self, root: InternalFunction):
        verify(root)
        self.root = root
        self.functions = list(functions(root))
        self.refs = {k: v[1:] for k, v in function_refs(self.functions).items()}  # "@f.1" → "f.1"
        leaves = [fn for fn in self.functions if isinstance(fn, LeafFunction)]
        self.leaves = leaves
        # tensor leaves are calls of seed 001's llvm.hpvm.tensor.* intrinsics (tensorleaf.py)
        self.tensors = {id(fn): ops for fn in leaves if (ops := tensorleaf.tensor_operations(fn)) is not None}
        self.compiled = {
            id(fn): _compiled(fn)
            for fn in leaves
            if not isinstance(fn.body, LLVMBody) and id(fn) not in self.tensors
        }
        self.kept = {
            id(fn): f"__hpvm_body.{k}.{fn.name}"
            for k, fn in enumerate(leaves)
            if isinstance(fn.body, LLVMBody)
        }
        self.declared: set[str] = set()

    def header(self) -> list[str]:
        """Target lines and the declarations every module in LLVM form starts with."""
        header = _target(next(iter(self.compiled.values())).module) if self.compiled else []
        return [
            *header,
            *abi.DECLARATIONS.values(),
            *(f"declare i64 @llvm.s{m}.i64(i64, i64)" for m in ("min", "max")),
        ]

    def leaf_call(
        self, fn: LeafFunction, args: list[tuple[str, str]], tmp: str, check: bool = False, escape: str = ""
    ) -> tuple[list[str], list[str], str]:
        """The code of leaf ``fn``'s node function applied to ``args`` ((LLVM type, operand)
        per ABI argument): (declarations it needs, once per module; instructions; the
        operand of its output struct). ``tmp`` prefixes its temporaries' names. With
        ``check``, the status of a Numba body that may raise is tested: when it raised, the
        code calls ``__hpvm_leaf_error`` and returns zeros (the export's node functions), or
        branches to label ``escape`` (PREPARE's tasks, which end in their region)."""
        if id(fn) in self.kept:
            return self._kept_call(fn, args, tmp)
        if id(fn) in self.tensors:
            used, lines, out = tensorleaf.tensor_call(
                fn, self.tensors[id(fn)], args, tmp, _struct(fn.outputs)
            )
            decls = [
                d
                for op in sorted(used)
                for d in self._declare(tensorleaf.declaration(op), tensorleaf.intrinsic(op))
            ]
            return decls, lines, out
        return self._numba_call(fn, args, tmp, check, escape)

    def _declare(self, line: str, name: str) -> list[str]:
        if name in self.declared:
            return []
        self.declared.add(name)
        return [line]

    def _numba_call(
        self, fn: LeafFunction, args: list[tuple[str, str]], tmp: str, check: bool, escape: str
    ) -> tuple[list[str], list[str], str]:
        leaf = self.compiled[id(fn)]
        ret = _struct(fn.outputs)
        nfields = sum(abi.arity(t) for t in fn.outputs)
        lines = [
            f"  %{tmp}.ret = alloca [{8 * (nfields + 1)} x i8], align 16",
            f"  %{tmp}.exc = alloca ptr, align 8",
        ]
        actual = []
        for k, ((mine, name), theirs) in enumerate(zip(args, leaf.arg_types)):
            if mine == theirs:
                actual.append(f"{mine} {name}")
            elif mine == "i1" and theirs == "i8":
                lines.append(f"  %{tmp}.a{k} = zext i1 {name} to i8")
                actual.append(f"i8 %{tmp}.a{k}")
            else:
                raise LLVMExportError(
                    f"{fn.describe()}: Numba passes argument {k} as {theirs}, the ABI as {mine}"
                )
        decl = f"declare i32 @{leaf.adapter}(ptr, ptr, {', '.join(leaf.arg_types)})".replace(", )", ")")
        call_args = ", ".join([f"ptr %{tmp}.ret", f"ptr %{tmp}.exc", *actual])
        lines.append(f"  %{tmp}.status = call i32 @{leaf.adapter}({call_args})")
        decls = self._declare(decl, leaf.adapter)
        if check and leaf.may_raise:
            decls += self._declare(LEAF_ERROR_DECLARATION, LEAF_ERROR)
            lines += _status_check(tmp, ret, escape)
        if not nfields:
            return decls, lines, "zeroinitializer"
        lines.append(f"  %{tmp}.out = load {ret}, ptr %{tmp}.ret, align 8")
        return decls, lines, f"%{tmp}.out"

    def _kept_call(
        self, fn: LeafFunction, args: list[tuple[str, str]], tmp: str
    ) -> tuple[list[str], list[str], str]:
        """A leaf whose body is already LLVM (an imported program's): its node function calls
        the body's function, linked in under its kept name."""
        body_name = self.kept[id(fn)]
        ret = _struct(fn.outputs)
        decl = f"declare {ret} @{abi.quote(body_name)}({', '.join(t for t, _ in args)})"
        call = f"call {ret} @{abi.quote(body_name)}({', '.join(f'{t} {n}' for t, n in args)})"
        return self._declare(decl, body_name), [f"  %{tmp}.out = {call}"], f"%{tmp}.out"

    def link(self, text: str) -> str:
        """``text`` parsed, the leaves' bodies linked in, verified: the module's text. In a
        context of its own, so that the type names the linker gives (``%struct.out.f.0``
        for the second leaf module defining it) count from zero in every export rather than
        from what the process parsed before (``ir/llvmcontext.py``)."""
        with own_context() as parse:
            try:
                module = parse(text)
                for leaf in self.compiled.values():
                    module.link_in(_linkable(parse, leaf.module, leaf.adapter, leaf.adapter))
                for fn in self.leaves:
                    if id(fn) in self.kept:
                        body = fn.body
                        assert isinstance(body, LLVMBody)
                        kept = _linkable(
                            parse, body.module, body.function, self.kept[id(fn)], _struct(fn.outputs)
                        )
                        module.link_in(kept)
                module.verify()
            except RuntimeError as e:  # a bug of ours, not the user's: say so with LLVM's words
                raise AssertionError(f"the written module does not verify: {e}\n{text}") from None
            return str(module)


def assemble(
    root: InternalFunction,
    write: Callable[[Program], list[str]],
    finish: Callable[[Program, str], str] | None = None,
) -> str:
    """The module ``write`` gives the functions of (after the common header), linked and
    verified, then given to ``finish`` (the export's inlining) when there is one."""
    program = Program(root)
    lines = program.header()
    lines += write(program)
    text = program.link("\n".join(lines) + "\n")
    return finish(program, text) if finish is not None else text


def _status_check(tmp: str, ret: str, escape: str = "") -> list[str]:
    """After the call of a Numba body: when its status is not 0 (it raised), pass the status
    and Numba's exception info to ``__hpvm_leaf_error`` and return zeros (the runtime reports
    the error, never these values), or branch to label ``escape``."""
    return [
        f"  %{tmp}.failed = icmp ne i32 %{tmp}.status, 0",
        f'  br i1 %{tmp}.failed, label %{tmp}.raised, label %{tmp}.done, !prof !{{!"branch_weights", i32 1, i32 2000}}',
        f"{tmp}.raised:",
        f"  %{tmp}.excinfo = load ptr, ptr %{tmp}.exc, align 8",
        f"  call void @{LEAF_ERROR}(i32 %{tmp}.status, ptr %{tmp}.excinfo)",
        f"  br label %{escape}" if escape else f"  ret {ret} zeroinitializer",
        f"{tmp}.done:",
    ]


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


def _params(fn: NodeFunction, named: bool = True) -> list[str]:
    """The ABI parameters of ``fn``'s LLVM function. Unnamed (a declaration's, PREPARE's),
    each carries its name as ``"hpvm.arg"``: LLVM keeps no names on declarations."""
    out = []
    for (first, name), p in zip(_leading(fn), fn.params):
        attrs = []
        if isinstance(p.type, ArrayType):
            attrs += [_attr("in")] if p.name in fn.ins else []
            attrs += [_attr("out")] if p.name in fn.outs else []
        attrs.append(_attr("hpvm.port", str(p.type)))
        if p.layout is not None:
            attrs.append(_attr("hpvm.layout", str(p.layout)))
        out.append(_param(first, attrs, name, named))
        for t, extra in abi_args(fn)[len(out) : len(out) + abi.arity(p.type) - 1]:
            key = "hpvm.size" if extra.endswith(".size") else "hpvm.extent"
            out.append(_param(t, [_attr(key)], extra, named))
    return out


def _leading(fn: NodeFunction) -> list[tuple[str, str]]:
    """(LLVM type, name) of the first ABI argument of each port."""
    args = abi_args(fn)
    return [args[k] for k in abi.leading_indices([p.type for p in fn.params])]


def _param(t: str, attrs: list[str], name: str, named: bool) -> str:
    if named:
        return f"{t} {' '.join(attrs)} %{abi.quote(name)}"
    return f"{t} {' '.join([*attrs, _attr('hpvm.arg', name)])}"


def abi_args(fn: NodeFunction) -> list[tuple[str, str]]:
    """(LLVM type, name) of every ABI argument of ``fn``, in order: ``x``, ``x.size``,
    ``x.d0``… for an array ``x`` (``x`` alone for a pointer-only one)."""
    out = []
    for p in fn.params:
        sized = isinstance(p.type, ArrayType) and p.type.sized  # (a pointer-only array: its ptr)
        names = [p.name] + ([p.name + ".size"] if sized else [])
        if isinstance(p.type, ArrayType) and p.type.rank > 1:
            names += [f"{p.name}.d{a}" for a in range(p.type.rank)]
        out += list(zip(abi.llvm_types(p.type), names))
    return out


def fields(types: list[PortType]) -> list[str]:
    """The LLVM fields of a struct of ports (a node function's outputs)."""
    return [t for p in types for t in abi.llvm_types(p)]


def definition(fn: NodeFunction, refs: dict[int, str]) -> str:
    """The ``define`` line of ``fn``'s node function, as the export writes it."""
    kind = "leaf" if isinstance(fn, LeafFunction) else "internal"
    return _header(fn, refs, _struct(fn.out_types), kind)


def declaration(fn: NodeFunction, refs: dict[int, str]) -> str:
    """``fn`` declared, with the attributes its definition would have: what PREPARE keeps
    of a node function it inlined, for EXTRACT to define it again."""
    kind = "leaf" if isinstance(fn, LeafFunction) else "internal"
    return _header(fn, refs, _struct(fn.out_types), kind, named=False)


def _header(fn: NodeFunction, refs: dict[int, str], ret: str, kind: str, named: bool = True) -> str:
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
    head = f"{ret} @{abi.quote(refs[id(fn)])}({', '.join(_params(fn, named))}) {' '.join(attrs)}"
    return f"define {head} {{" if named else f"declare {head}"


def _arg_names(fn: NodeFunction) -> list[tuple[str, str]]:
    """(LLVM type, %name) of every ABI argument, in order."""
    return [(t, "%" + abi.quote(n)) for t, n in abi_args(fn)]


def _linkable(
    parse: Callable[[str], Any], text: str, function: str, name: str, ret: str | None = None
) -> Any:
    """A leaf's module, ready to be linked in: ``function`` renamed ``name`` and external,
    everything else it defines internal, so that the linker takes only what the function
    uses and renames what clashes (an imported module holds the whole program it came from;
    Numba's holds Python wrappers of the adapter that no node function calls). ``ret``: the
    literal struct the caller expects; a function returning another spelling of it (HPVM's
    named, packed ``%struct.out.f``) is wrapped by one returning ``ret``. ``parse``: the
    link's context's (modules link only within one context)."""
    module = parse(text)
    own = llvm_struct_return(module.get_function(function)) if ret is not None else None
    wrap = own is not None and own.spelled != ret
    for f in module.functions:
        if f.is_declaration:
            continue
        if f.name == function:
            f.name = f"{name}.own" if wrap else name
            f.linkage = "external"
        else:
            f.linkage = "internal"
    for g in module.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"
    if wrap:
        assert own is not None and ret is not None
        params = [str(a.type) for a in module.get_function(f"{name}.own").arguments]
        module.link_in(parse(_return_wrapper(name, params, own, ret)))
        module.get_function(f"{name}.own").linkage = "internal"
    return module


def _return_wrapper(name: str, params: list[str], own: LLVMStruct, ret: str) -> str:
    """``@name``: ``@name.own`` (which returns ``own``, a named or packed struct) returning
    the literal struct ``ret`` of the same fields. Its named type has ``own``'s body, which
    the linker identifies with the function's own type."""
    own_type = f"%{abi.quote(name + '.ret')}"
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    lines = [
        f"{own_type} = type {own.literal}",
        f"declare {own_type} @{abi.quote(name + '.own')}({', '.join(params)})",
        f"define {ret} @{abi.quote(name)}({args}) alwaysinline {{",
        f"  %r = call {own_type} @{abi.quote(name + '.own')}({args})",
    ]
    out = "zeroinitializer"
    for k, t in enumerate(own.fields):
        lines.append(f"  %f{k} = extractvalue {own_type} %r, {k}")
        lines.append(f"  %o{k} = insertvalue {ret} {'poison' if k == 0 else out}, {t} %f{k}, {k}")
        out = f"%o{k}"
    return "\n".join([*lines, f"  ret {ret} {out}", "}"]) + "\n"


class Sizes:
    """Emits the instructions computing replication sizes in an internal node. ``operand``
    gives the operand of one of the node's ABI arguments by name (``%x.size`` in its own
    function; PREPARE's re-read value inside its region); ``prefix`` names the temporaries."""

    def __init__(self, fn: InternalFunction, operand: Callable[[str], str] | None = None, prefix: str = ".s"):
        self.fn = fn
        self.lines: list[str] = []
        self.count = 0
        self.operand = operand or (lambda name: "%" + abi.quote(name))
        self.prefix = prefix

    def temp(self, text: str, suffix: str = "") -> str:
        name = "%" + abi.quote(f"{self.prefix}{self.count}{suffix}")
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
            lt, name = abi.llvm_types(t)[0], self.operand(param.name)
            if lt == "i64":
                return name
            ext = "zext" if t.dtype.kind in "ub" else "sext"
            return self.temp(f"{ext} {lt} {name} to i64")
        if isinstance(expr, Shape):
            param = self.fn.params[self.fn.param_index(expr.name)]  # type: ignore[index]
            assert isinstance(param.type, ArrayType)
            if param.type.rank == 1:
                size = self.operand(param.name + ".size")
                return self.temp(f"udiv i64 {size}, {param.type.dtype.itemsize}")
            return self.operand(f"{param.name}.d{expr.axis}")
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


@dataclass(frozen=True)
class Connection:
    """One ``createEdge`` / ``bind.input`` / ``bind.output`` call in LLVM indices (one per
    LLVM argument of a port: an array's size and extents are connected beside its pointer).
    ``kind``: ``edge`` (``a``, ``b``: source field, destination argument), ``in`` (the
    parent's argument, the child's) or ``out`` (the child's field, the parent's)."""

    kind: str
    src: str | None
    dst: str | None
    a: int
    b: int
    stream: bool
    repl: bool = False

    def line(self) -> str:
        flag = {False: "false", True: "true"}
        if self.kind == "edge":
            return (
                f"  call ptr @llvm.hpvm.createEdge(ptr %{abi.quote(self.src or '')}, ptr %{abi.quote(self.dst or '')}, "
                f"i1 {flag[self.repl]}, i32 {self.a}, i32 {self.b}, i1 {flag[self.stream]})"
            )
        node = self.dst if self.kind == "in" else self.src
        which = "bind.input" if self.kind == "in" else "bind.output"
        return f"  call void @llvm.hpvm.{which}(ptr %{abi.quote(node or '')}, i32 {self.a}, i32 {self.b}, i1 {flag[self.stream]})"


def connections(fn: InternalFunction) -> list[Connection]:
    """The edges and binds of ``fn``'s graph as the LLVM calls that write them."""
    graph = fn.graph
    out: list[Connection] = []
    for e in graph.edges:
        sp = abi.leading_indices(e.src.function.out_types)[e.sp]
        dp = abi.leading_indices([p.type for p in e.dst.function.params])[e.dp]
        for k in range(abi.arity(e.dst.function.params[e.dp].type)):
            out.append(Connection("edge", e.src.name, e.dst.name, sp + k, dp + k, e.stream, bool(e.repl)))
    own = abi.leading_indices([p.type for p in fn.params])
    for b in graph.in_binds:
        ic = abi.leading_indices([p.type for p in b.dst.function.params])[b.ic]
        for k in range(abi.arity(fn.params[b.ip].type)):
            out.append(Connection("in", None, b.dst.name, own[b.ip] + k, ic + k, b.stream))
    outs = abi.leading_indices(fn.out_types)
    for ob in graph.out_binds:
        src_types = ob.src.function.out_types
        oc = abi.leading_indices(src_types)[ob.oc]
        for k in range(abi.arity(src_types[ob.oc])):
            out.append(Connection("out", ob.src.name, None, oc + k, outs[ob.op] + k, ob.stream))
    return out


def _internal(fn: InternalFunction, refs: dict[int, str]) -> list[str]:
    ret = _struct(fn.out_types)
    lines = [_header(fn, refs, ret, "internal"), "entry:"]
    sizes = Sizes(fn)
    for node in fn.graph.nodes:
        values = [sizes.value(s) for s in node.sizes]
        lines += sizes.lines
        sizes.lines = []
        lines.append(create_node(node.name, node.dims, refs[id(node.function)], values))
    lines += [c.line() for c in connections(fn)]
    lines.append(f"  ret {ret} undef")
    return [*lines, "}"]


def create_node(name: str, dims: int, function: str, sizes: list[str]) -> str:
    """The ``createNode*`` call of node ``name`` of ``function``, replicated by ``sizes``."""
    callee = "createNode" + (f"{dims}D" if dims else "")
    args = [f"ptr @{abi.quote(function)}", *(f"i64 {v}" for v in sizes)]
    return f"  %{abi.quote(name)} = call ptr @llvm.hpvm.{callee}({', '.join(args)})"


__all__ = [
    "abi_args",
    "declaration",
    "definition",
    "fields",
    "Connection",
    "Program",
    "Sizes",
    "assemble",
    "connections",
    "create_node",
    "to_hpvm_ir",
]
