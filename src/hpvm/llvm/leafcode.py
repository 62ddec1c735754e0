"""A Python leaf's body as LLVM: Numba compiles it, its intrinsics become ``llvm.hpvm.*`` calls.

The leaf's function is cloned with a different ``hpvm`` in its globals: a module whose
intrinsics are Numba ``@intrinsic``s that emit a call to an external function. Numba JITs
what it compiles, and LLVM cannot select machine code for an unknown ``llvm.*`` intrinsic,
so the calls are emitted to ``__hpvm_llvm_<name>`` (with a dummy address registered for the
JIT, never called) and renamed ``llvm.hpvm.<name>`` in the text afterwards.

Numba's own calling convention (``i32 f(ptr retptr, ptr excinfo, args...)``) is wrapped by
an adapter compiled with the leaf: it takes the exported ABI's arguments (``abi.py``: a
pointer and its byte size, plus extents for arrays of rank 2 and more) and returns a flat
tuple of the output fields. ``export.py`` then writes the node function around it (testing
the adapter's status when it may return one that is not 0: ``CompiledLeaf.may_raise``).
"""

from __future__ import annotations

import ctypes
import re
import types as pytypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..ir.bodies import PYTHON_KINDS
from ..ir.graph import LeafFunction
from ..ir.intrinsics import ATOMIC_OPS
from ..ir.llvmcontext import own_context
from ..ir.types import ArrayType, NodeHandleType, PortType
from .errors import LLVMExportError

PLACEHOLDER = "__hpvm_llvm_"
#: hpvm intrinsic → (seed 000 name, number of node-handle operands, result).
_LOWERED = {
    "get_node": ("getNode", 0, "ptr"),
    "get_parent_node": ("getParentNode", 1, "ptr"),
    "get_num_dims": ("getNumDims", 1, "i32"),
    "barrier": ("barrier", 0, "void"),
    **{f"get_node_instance_id_{a}": (f"getNodeInstanceID.{a}", 1, "i64") for a in "xyz"},
    **{f"get_num_node_instances_{a}": (f"getNumNodeInstances.{a}", 1, "i64") for a in "xyz"},
}


#: Every intrinsic the export writes.
_SUPPORTED = frozenset(_LOWERED) | {"malloc"} | {f"atomic_{op}" for op in ATOMIC_OPS}


@dataclass(frozen=True)
class CompiledLeaf:
    """A leaf compiled by Numba: its module's text (intrinsics renamed) and the name of the
    adapter function, ``i32 @adapter(ptr retptr, ptr excinfo, <ABI arguments>)``.
    ``may_raise``: whether the adapter returns anything but status 0 (a ``raise`` in the
    leaf, or one Numba's own code makes), so that its node function must test the status."""

    module: str
    adapter: str
    arg_types: tuple[str, ...]  # the adapter's ABI arguments as Numba lowered them
    may_raise: bool


_KEEP: list[Any] = []  # the dummy callbacks whose addresses the JIT holds
_SHIM: pytypes.ModuleType | None = None


def _shim() -> pytypes.ModuleType:
    """The ``hpvm`` a cloned leaf sees: the lowered intrinsics, made once."""
    global _SHIM
    if _SHIM is not None:
        return _SHIM
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    dummy = ctypes.CFUNCTYPE(ctypes.c_int64)(lambda: 0)
    _KEEP.append(dummy)
    address = ctypes.cast(dummy, ctypes.c_void_p).value
    numba_types = {"ptr": types.voidptr, "i64": types.int64, "i32": types.int32, "void": types.none}
    shim = pytypes.ModuleType("hpvm")

    def make(seed_name: str, handles: int, result: str) -> Any:
        symbol = PLACEHOLDER + seed_name
        llvm.add_symbol(symbol, address)
        ret = numba_types[result]
        sig = ret(*([types.voidptr] * handles))

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            restype = ir.VoidType() if result == "void" else context.get_value_type(ret)
            fnty = ir.FunctionType(restype, [context.get_value_type(types.voidptr)] * handles)
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            value = builder.call(fn, list(args))
            return context.get_dummy_value() if result == "void" else value

        if handles == 0:

            def typer0(typingctx: Any) -> Any:
                return sig, codegen

            return intrinsic(typer0)

        def typer1(typingctx: Any, node: Any) -> Any:
            return sig, codegen

        return intrinsic(typer1)

    for name, (seed_name, handles, result) in _LOWERED.items():
        setattr(shim, name, make(seed_name, handles, result))
    _add_memory(shim, address)
    _SHIM = shim
    return shim


#: hpvm atomic → LLVM ``atomicrmw`` operation on floats (on signed integers, hpvm's atomic
#: names are LLVM's operations: ``ir.intrinsics.ATOMIC_OPS``; unsigned min/max are umin/umax).
_FLOAT_RMW = {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax"}


def _add_memory(shim: pytypes.ModuleType, address: int | None) -> None:
    """``malloc`` (``llvm.hpvm.malloc``, viewed as a ``uint8`` array) and the atomics: seed
    000's ``llvm.hpvm.atomic.<op>(ptr, i32)`` on ``int32`` elements; on other element types,
    which the seed has no intrinsic for, LLVM's own ``atomicrmw``."""
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic
    from numba.np.numpy_support import carray

    llvm.add_symbol(PLACEHOLDER + "malloc", address)

    def malloc_typer(typingctx: Any, nbytes: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fnty = ir.FunctionType(context.get_value_type(types.voidptr), [ir.IntType(64)])
            fn = cgutils.get_or_insert_function(builder.module, fnty, PLACEHOLDER + "malloc")
            n = context.cast(builder, args[0], signature.args[0], types.int64)
            return builder.call(fn, [n])

        return types.CPointer(types.uint8)(nbytes), codegen

    raw_malloc = intrinsic(malloc_typer)

    def malloc(nbytes: Any) -> Any:
        return carray(raw_malloc(nbytes), (nbytes,))

    shim.malloc = njit(malloc)

    def atomic(op: str) -> Any:
        symbol = PLACEHOLDER + f"atomic.{op}"
        llvm.add_symbol(symbol, address)

        def typer(typingctx: Any, array: Any, index: Any, value: Any) -> Any:
            # an integer index into a 1-D array, or a tuple of integers, one per dimension
            if not isinstance(array, types.Array):
                return None
            if isinstance(index, types.Integer):
                kinds = [index]
            elif isinstance(index, types.BaseTuple) and all(isinstance(t, types.Integer) for t in index):
                kinds = list(index)
            else:
                return None
            if len(kinds) != array.ndim:
                return None

            def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
                aryty, idxty, valty = signature.args
                ary = context.make_array(aryty)(context, builder, args[0])
                parts = [args[1]] if len(kinds) == 1 else cgutils.unpack_tuple(builder, args[1], len(kinds))
                idx = [context.cast(builder, v, t, types.intp) for v, t in zip(parts, kinds)]
                ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=True)
                dtype = aryty.dtype
                val = context.cast(builder, args[2], valty, dtype)
                if dtype == types.int32:
                    fnty = ir.FunctionType(ir.IntType(32), [ptr.type, ir.IntType(32)])
                    fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
                    return builder.call(fn, [ptr, val])
                if isinstance(dtype, types.Float):
                    return builder.atomic_rmw(_FLOAT_RMW[op], ptr, val, "seq_cst")
                rmw = op
                if op in ("min", "max") and not dtype.signed:
                    rmw = "u" + rmw
                return builder.atomic_rmw(rmw, ptr, val, "seq_cst")

            return array.dtype(array, index, value), codegen

        return intrinsic(typer)

    for op in ATOMIC_OPS:
        setattr(shim, f"atomic_{op}", atomic(op))


def _clone(leaf: LeafFunction) -> Any:
    """The leaf's function with the shim for ``hpvm`` and for intrinsics imported by name."""
    shim = _shim()
    pyfunc = leaf.pyfunc
    glb = dict(pyfunc.__globals__)
    for key, value in list(glb.items()):
        if isinstance(value, pytypes.ModuleType) and value.__name__ == "hpvm":
            glb[key] = shim
        elif getattr(value, "__module__", "") == "hpvm.lang.intrinsics":
            name = getattr(value, "__name__", "")
            if name in _LOWERED:
                glb[key] = getattr(shim, name)
    return pytypes.FunctionType(
        pyfunc.__code__, glb, pyfunc.__name__, pyfunc.__defaults__, pyfunc.__closure__
    )


def _numba_type(ptype: PortType) -> Any:
    from numba import from_dtype, types

    if isinstance(ptype, NodeHandleType):
        return types.voidptr
    if isinstance(ptype, ArrayType):
        return types.CPointer(from_dtype(ptype.dtype))
    return from_dtype(ptype.dtype)


def _adapter_source(leaf: LeafFunction) -> tuple[str, list[Any]]:
    """Python of the adapter and the Numba types of its arguments."""
    from numba import types

    args: list[str] = []
    argtypes: list[Any] = []
    calls: list[str] = []
    for k, p in enumerate(leaf.params):
        t = p.type
        if isinstance(t, ArrayType) and not t.sized:
            raise LLVMExportError(
                f"{leaf.describe()}: port '{p.name}' is a pointer without its size ({t}); its Python "
                "code needs the array's length, which a pointer alone does not carry in LLVM form: "
                "make the port a sized array"
            )
        if isinstance(t, ArrayType):
            args += [f"p{k}", f"b{k}"]
            argtypes += [_numba_type(t), types.int64]
            if t.rank == 1:
                calls.append(f"carray(p{k}, (b{k} // {t.dtype.itemsize},))")
            else:
                dims = [f"d{k}_{a}" for a in range(t.rank)]
                args += dims
                argtypes += [types.int64] * t.rank
                calls.append(f"carray(p{k}, ({', '.join(dims)},))")
        else:
            args.append(f"p{k}")
            argtypes.append(_numba_type(t))
            calls.append(f"p{k}")
    fields: list[str] = []
    outs = leaf.outputs
    for k, t in enumerate(outs):
        value = "r" if len(outs) == 1 else f"r[{k}]"
        if isinstance(t, ArrayType) and not t.sized:
            fields.append(f"{value}.ctypes.data")
        elif isinstance(t, ArrayType):
            fields += [f"{value}.ctypes.data", f"{value}.nbytes"]
            if t.rank > 1:
                fields += [f"{value}.shape[{a}]" for a in range(t.rank)]
        else:
            fields.append(value)
    body = [f"def adapter({', '.join(args)}):", f"    r = leaf({', '.join(calls)})"]
    body.append(f"    return ({', '.join(fields)},)" if fields else "    return 0")
    return "\n".join(body) + "\n", argtypes


def compile_leaf(leaf: LeafFunction) -> CompiledLeaf:
    """Numba's LLVM for ``leaf`` with its adapter; ``LLVMExportError`` if it does not compile."""
    if leaf.body_kind not in PYTHON_KINDS:
        raise LLVMExportError(
            f"{leaf.describe()}: has a {leaf.body_kind} body; the LLVM export compiles Python "
            "leaves and keeps LLVM ones (docs/llvm.md)"
        )
    from numba import njit
    from numba.np.numpy_support import carray

    source, argtypes = _adapter_source(leaf)
    text = None
    problem: Exception | None = None
    for inline in ("always", "never"):  # (the leaf inlined into its adapter where Numba can)
        namespace: dict[str, Any] = {"carray": carray}
        try:
            # NumPy's error model, as every back end compiles leaves (docs/semantics.md §7):
            # a division by zero gives IEEE 754 / 0, never a status code the ABI drops.
            namespace["leaf"] = njit(_clone(leaf), error_model="numpy", inline=inline)
            exec(compile(source, f"<hpvm llvm adapter of {leaf.name}>", "exec"), namespace)
            with _before_code_generation() as before:
                adapter = njit(tuple(argtypes), no_cpython_wrapper=True, error_model="numpy")(
                    namespace["adapter"]
                )
        except Exception as e:  # Numba's typing and lowering errors have many classes
            problem = e  # (the message of the plain compile, as without inlining)
            continue
        cres = next(iter(adapter.overloads.values()))
        text = before.get(cres.library.name) or cres.library.get_llvm_str()
        break
    if text is None:
        first = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        raise LLVMExportError(f"{leaf.describe()}: Numba cannot compile it to LLVM: {first}") from None
    text = re.sub(rf"@{PLACEHOLDER}([\w.]+)", r"@llvm.hpvm.\1", text)
    name = cres.fndesc.llvm_func_name
    arg_types, may_raise = _adapter_facts(text, name)
    return CompiledLeaf(text, name, arg_types, may_raise)


@contextmanager
def _before_code_generation() -> Iterator[dict[str, str]]:
    """Numba's modules as they are when it has optimized them and before it generates
    machine code from them (by library name), for what is compiled inside the block.

    Why: generating code rewrites the module in place (loop strength reduction turns an
    array's row pointer into one induction variable per address, CodeGenPrepare sinks
    addresses into their blocks), and ``get_llvm_str`` afterwards prints that. Exported,
    a leaf's ``b[p, col]`` then reached the cpu back end's jam (``llvm_native/wijam.py``)
    as a pointer per lane, which it could only load lane by lane from memory the lanes do
    not know to be neighbours; before, it is ``b + p*ld + col``. Numba gives no hook
    between the two steps, so its library's ``_finalize_specific`` (the step that
    generates code) is wrapped while Numba's compiler lock is held, so that no other
    thread compiles meanwhile; a Numba without that step exports what it prints after."""
    from numba.core.codegen import JITCodeLibrary
    from numba.core.compiler_lock import global_compiler_lock

    captured: dict[str, str] = {}
    generate = JITCodeLibrary.__dict__.get("_finalize_specific")
    if generate is None:
        yield captured
        return

    def kept(library: Any) -> None:
        captured[library.name] = str(library._final_module)
        generate(library)

    with global_compiler_lock:
        JITCodeLibrary._finalize_specific = kept  # type: ignore[method-assign]
        try:
            yield captured
        finally:
            JITCodeLibrary._finalize_specific = generate  # type: ignore[method-assign]


def _adapter_facts(text: str, name: str) -> tuple[tuple[str, ...], bool]:
    """The LLVM types of the adapter's ABI arguments (after ``retptr`` and ``excinfo``), and
    whether it may return a status other than 0 (Numba folds it to ``ret i32 0`` when no
    path raises)."""
    with own_context() as parse:  # (the types' names do not depend on the process)
        fn = parse(text).get_function(name)
        returns = [ins for block in fn.blocks for ins in block.instructions if ins.opcode == "ret"]
        may_raise = any(str(next(iter(ins.operands))).strip() != "i32 0" for ins in returns)
        return tuple(str(a.type) for a in fn.arguments)[2:], may_raise


__all__ = ["CompiledLeaf", "compile_leaf"]
