"""An LLVM leaf's clone called from Numba-compiled code (the ``cpu`` back end's graphs).

``leaf_wrappers(leaf)`` gives Python source for two functions Numba compiles like a Python
leaf's clone — ``sym(ports..., __hpvm_ctx)`` (one instance) and, for leaves with barriers,
``sym_group(ports..., parent_ctx, ex, ey, ez, dims)`` (every instance of one parent
instance, on one thread: work-item loops or coroutines) — and the namespace they need. They call Numba intrinsics that pack
the arguments into slots and call the clone's trampoline; the intrinsic links the clone's
module into the calling function's library (Numba's ``add_linking_library``), so LLVM sees
the leaf's code when it optimizes the graph function and inlines it into the loop over
instances: no call through a pointer, no GIL.

Outputs come back as slots: scalars as they are, an array as its address and size, turned
back into the input array at that address (the very object, as a Python leaf returns it) or
a view of ``malloc``'d memory. A pointer-only output (``u8[*]``) is its address alone: the
input array at that address, else the memory from there to the end of the input holding it,
else of its ``malloc`` chunk (``host.HEAP.room``), else a ``LaunchError``. Before the
outputs come the context's error slots: when the leaf raised (``leaf_errors.py``), the
wrapper raises ``LeafRaised`` from compiled code, which reaches the launch like any
exception of a Python leaf (through parallel loops too: ``cpu/loop_errors.py``), and the
back end names the node. For a leaf that cannot raise, LLVM folds the test away (the slot
is stored 0 just before the inlined call).
"""

from __future__ import annotations

import threading
from typing import Any

from ...ir.graph import LeafFunction
from ...ir.types import ArrayType, ScalarType
from .host import HEAP, HOST_ROOM, register_host_symbols
from .leaf_errors import LeafRaised
from .native import HEADER, RAISED, NativeLeaf, native_leaf

#: The context's error slots a call returns (native._helpers: the status, the exception
#: info, a failed checked access's offset and its array's bytes).
ERROR_SLOTS = 4

_LIBRARIES: dict[tuple[int, str], Any] = {}
_LOCK = threading.Lock()


def _library(codegen: Any, native: NativeLeaf, symbol: str = "", text: str = "") -> Any:
    """The clone's module as a Numba code library (once per codegen and clone); with
    ``symbol``, the module ``text`` defining it (a jammed clone: ``wijam.py``)."""
    key = (id(codegen), symbol or native.digest)
    with _LOCK:
        lib = _LIBRARIES.get(key)
        if lib is None:
            import llvmlite.binding as llvm

            register_host_symbols()
            lib = codegen.create_library(f"hpvm_llvm_leaf_{symbol or native.digest}")
            module = llvm.parse_assembly(text or native.text)
            module.triple = codegen._llvm_module.triple
            module.data_layout = codegen._llvm_module.data_layout
            lib.add_llvm_module(module)
            lib.finalize()
            _LIBRARIES[key] = lib
        return lib


def _numba_type(ptype: Any) -> Any:
    import numba
    from numba import types

    if ptype.name == "bool":
        return types.boolean
    return numba.from_dtype(ptype.dtype)


def _out_types(leaf: LeafFunction) -> list[Any]:
    from numba import types

    out: list[Any] = []
    for t in leaf.out_types:
        if isinstance(t, ArrayType) and not t.sized:
            out.append(types.voidptr)
        elif isinstance(t, ArrayType):
            out += [types.voidptr, types.int64] + ([types.int64] * t.rank if t.rank > 1 else [])
        else:
            out.append(_numba_type(t))
    return out


def _check_args(leaf: LeafFunction, args: tuple[Any, ...]) -> None:
    from numba import types
    from numba.core.errors import TypingError

    for p, ty in zip(leaf.params, args):
        if isinstance(p.type, ArrayType):
            if not isinstance(ty, types.Array) or ty.ndim != p.type.rank:
                raise TypingError(f"leaf '{leaf.name}': port '{p.name}' takes {p.type}, got {ty}")


def _store_args(
    context: Any, builder: Any, leaf: LeafFunction, sig_args: Any, values: Any, slots: Any
) -> None:
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core.errors import TypingError

    i64 = ir.IntType(64)
    k = 0

    def store(value: Any) -> None:
        nonlocal k
        at = builder.gep(slots, [ir.Constant(i64, k)])
        builder.store(value, builder.bitcast(at, value.type.as_pointer()))
        k += 1

    for p, ty, value in zip(leaf.params, sig_args, values):
        if isinstance(p.type, ArrayType):
            ary = context.make_array(ty)(context, builder, value)
            store(builder.ptrtoint(ary.data, i64))
            if not p.type.sized:
                continue
            store(builder.mul(ary.nitems, ary.itemsize))
            if p.type.rank > 1:
                for extent in cgutils.unpack_tuple(builder, ary.shape):
                    store(extent)
        else:
            want = _numba_type(p.type)
            if ty != want:
                raise TypingError(f"leaf '{leaf.name}': port '{p.name}' takes {want}, got {ty}")
            store(value)


def _load_outs(context: Any, builder: Any, out_types: list[Any], slots: Any) -> list[Any]:
    from llvmlite import ir

    i64 = ir.IntType(64)
    values = []
    for k, ty in enumerate(out_types):
        at = builder.gep(slots, [ir.Constant(i64, k)])
        values.append(builder.load(builder.bitcast(at, context.get_value_type(ty).as_pointer())))
    return values


def _slots_and_context(
    context: Any, builder: Any, leaf: LeafFunction, native: NativeLeaf, sig: Any, llargs: Any
) -> tuple[Any, Any]:
    """The argument slots and the native context (its error slots zeroed, then the levels'
    ids and extents) of a call ``f(ports..., ctx)``, built on the stack."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils

    i64 = ir.IntType(64)
    slots = cgutils.alloca_once(builder, i64, size=max(1, len(native.args)))
    values = cgutils.unpack_tuple(builder, llargs[0], len(sig.args[0]))
    _store_args(context, builder, leaf, tuple(sig.args[0]), values, slots)
    levels = cgutils.unpack_tuple(builder, llargs[1], len(sig.args[1]))
    ctx = cgutils.alloca_once(builder, i64, size=HEADER + len(levels))
    for k in range(HEADER):
        builder.store(ir.Constant(i64, 0), builder.gep(ctx, [ir.Constant(i64, k)]))
    for k, (v, t) in enumerate(zip(levels, sig.args[1])):  # ids and extents, any integer width
        builder.store(
            context.cast(builder, v, t, types.int64), builder.gep(ctx, [ir.Constant(i64, HEADER + k)])
        )
    return slots, ctx


def _call_intrinsic(leaf: LeafFunction, native: NativeLeaf) -> Any:
    """``f(ports..., ctx)`` → (the context's error slots 0 to 3, the output slots...), calling
    the clone's trampoline: slot 0 is not 0 when the leaf raised (``leaf_errors.py``)."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    out_types = _out_types(leaf)

    @intrinsic
    def call(typingctx, ports, levels):  # type: ignore[no-untyped-def]
        _check_args(leaf, tuple(ports))
        ret = types.Tuple((*[types.int64] * ERROR_SLOTS, *out_types))

        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            i64 = ir.IntType(64)
            context.active_code_library.add_linking_library(_library(context.codegen(), native))
            slots, ctx = _slots_and_context(context, builder, leaf, native, sig, llargs)
            out = cgutils.alloca_once(builder, i64, size=max(1, len(out_types)))
            ptr = ir.IntType(8).as_pointer()
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr]), native.call_symbol
            )
            builder.call(fn, [builder.bitcast(v, ptr) for v in (slots, ctx, out)])
            error = _load_outs(context, builder, [types.int64] * ERROR_SLOTS, ctx)
            values = [*error, *_load_outs(context, builder, out_types, out)]
            return context.make_tuple(builder, sig.return_type, values)

        return ret(ports, levels), codegen

    return call


def _jam_intrinsic(leaf: LeafFunction, native: NativeLeaf, symbol: str, text: str) -> Any:
    """``f(ports..., ctx)`` → nothing, running ``wijam.jam_module``'s jammed instances (which
    neither raise nor return outputs), whose module ``text`` it links in."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def call(typingctx, ports, levels):  # type: ignore[no-untyped-def]
        _check_args(leaf, tuple(ports))

        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            library = _library(context.codegen(), native, symbol, text)
            context.active_code_library.add_linking_library(library)
            slots, ctx = _slots_and_context(context, builder, leaf, native, sig, llargs)
            ptr = ir.IntType(8).as_pointer()
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), symbol
            )
            builder.call(fn, [builder.bitcast(v, ptr) for v in (slots, ctx)])
            return context.get_dummy_value()

        return types.none(ports, levels), codegen

    return call


def _group_intrinsic(leaf: LeafFunction, native: NativeLeaf, checked: bool = False, runner: str = "") -> Any:
    """``f(ports..., parent_ctx, ex, ey, ez, dims)`` → (status, the raising instance's
    context slots 0 and 1, [checked: its row-major index, its slots 2 and 3,] the last instance's output
    slots...), running the clone's group function (the instances as work-item loops or
    coroutines, wiloops.py and coro.py; ``NativeLeaf.group_symbol``), or ``runner``: its
    copy for constant extents (``wispecial.py``), registered by name."""
    errors = 5 if checked else 2
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    out_types = _out_types(leaf)

    @intrinsic
    def group(typingctx, ports, parent_levels, ex, ey, ez, dims):  # type: ignore[no-untyped-def]
        _check_args(leaf, tuple(ports))
        ret = types.Tuple((types.int32, *[types.int64] * errors, *out_types))

        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            i64 = ir.IntType(64)
            n = 1
            if native.barrier_lowering != "workitem":  # (else called by name: _register_group, wispecial)
                context.active_code_library.add_linking_library(_library(context.codegen(), native))
            slots = cgutils.alloca_once(builder, i64, size=max(1, len(native.args)))
            values = cgutils.unpack_tuple(builder, llargs[0], len(sig.args[0]))
            _store_args(context, builder, leaf, tuple(sig.args[0]), values, slots)
            count = len(sig.args[n])
            parent = cgutils.unpack_tuple(builder, llargs[n], count) if count else []
            pctx = cgutils.alloca_once(builder, i64, size=max(1, len(parent)))
            for k, (v, t) in enumerate(zip(parent, sig.args[n])):  # any integer width
                builder.store(
                    context.cast(builder, v, t, types.int64), builder.gep(pctx, [ir.Constant(i64, k)])
                )
            sizes = [
                context.cast(builder, v, t, types.int64) for v, t in zip(llargs[n + 1 :], sig.args[n + 1 :])
            ]
            out = cgutils.alloca_once(builder, i64, size=max(1, len(out_types)))
            err = cgutils.alloca_once(builder, i64, size=5)  # (coro.group_runner's err)
            ptr = ir.IntType(8).as_pointer()
            fnty = ir.FunctionType(ir.IntType(32), [ptr, ptr, i64, i64, i64, i64, i64, ptr, i64, ptr])
            fn = cgutils.get_or_insert_function(builder.module, fnty, runner or native.group_symbol)
            status = builder.call(
                fn,
                [
                    builder.bitcast(slots, ptr),
                    builder.bitcast(pctx, ptr),
                    ir.Constant(i64, len(parent)),
                    *sizes,
                    builder.bitcast(out, ptr),
                    ir.Constant(i64, 0),
                    builder.bitcast(err, ptr),
                ],
            )
            error = _load_outs(context, builder, [types.int64] * errors, err)
            values = [status, *error, *_load_outs(context, builder, out_types, out)]
            return context.make_tuple(builder, sig.return_type, values)

        return ret(ports, parent_levels, ex, ey, ez, dims), codegen

    return group


def _address() -> Any:
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def address(typingctx, ptr):  # type: ignore[no-untyped-def]
        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            return builder.ptrtoint(llargs[0], ir.IntType(64))

        return types.int64(ptr), codegen

    return address


def _heap_room() -> Any:
    """``room(address)``: ``HEAP.room`` from compiled code, through ``__hpvm_host_room``."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def room(typingctx, address):  # type: ignore[no-untyped-def]
        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            i64 = ir.IntType(64)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]), HOST_ROOM)
            return builder.call(fn, [llargs[0]])

        return types.int64(types.int64), codegen

    return room


#: What graph code calls around a parent instance whose LLVM leaves ``malloc`` (host.py).
HEAP_MARK, HEAP_RELEASE = "__hpvm_llvm_heap_mark", "__hpvm_llvm_heap_release"
_HEAP_HELPERS: dict[str, Any] = {}


def heap_helpers() -> dict[str, Any]:
    """``mark()`` and ``release(mark)`` for graph code: the calling thread's heap and its
    position (``host.HOST_ENTER``, a pair of integers to graph code) and the return to it
    (``host.HOST_LEAVE``, without looking the heap up again), so that the buffers a parent
    instance's LLVM leaves ``malloc``'d die with it (when nothing carries them out:
    ``MallocFlow``)."""
    if not _HEAP_HELPERS:
        from llvmlite import ir
        from numba import types
        from numba.core import cgutils
        from numba.extending import intrinsic

        from .host import HOST_ENTER, HOST_LEAVE

        i64, ptr = ir.IntType(64), ir.IntType(8).as_pointer()
        pair = types.UniTuple(types.int64, 2)

        @intrinsic
        def mark(typingctx):  # type: ignore[no-untyped-def]
            def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
                fnty = ir.FunctionType(ir.LiteralStructType([ptr, i64]), [])
                got = builder.call(cgutils.get_or_insert_function(builder.module, fnty, HOST_ENTER), [])
                heap = builder.ptrtoint(builder.extract_value(got, 0), i64)
                return context.make_tuple(builder, sig.return_type, [heap, builder.extract_value(got, 1)])

            return pair(), codegen

        @intrinsic
        def release(typingctx, at):  # type: ignore[no-untyped-def]
            def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
                heap, position = cgutils.unpack_tuple(builder, llargs[0], 2)
                fnty = ir.FunctionType(ir.VoidType(), [ptr, i64])
                fn = cgutils.get_or_insert_function(builder.module, fnty, HOST_LEAVE)
                builder.call(fn, [builder.inttoptr(heap, ptr), position])
                return context.get_dummy_value()

            return types.none(pair), codegen

        _HEAP_HELPERS.update({HEAP_MARK: mark, HEAP_RELEASE: release})
    return dict(_HEAP_HELPERS)


_ADDRESS: Any = None
_ROOM: Any = None
_REGISTERED: set[str] = set()


def _register_group(native: NativeLeaf) -> None:
    """A work-item-loop group runner (``wiloops.py``) compiled once on its own (``jit.py``)
    and resolvable by name, so that graph code calls it instead of linking its module in:
    Numba optimizes every library that links a module again as a whole, and the runner's
    many loop nests cost seconds each time (45 s for sgemm's graph functions, against 12 s
    with the coroutine runner linked)."""
    with _LOCK:
        if native.digest in _REGISTERED:
            return
        import llvmlite.binding as llvm

        from .jit import jit_leaf

        llvm.add_symbol(
            native.group_symbol, jit_leaf(native).engine.get_function_address(native.group_symbol)
        )
        _REGISTERED.add(native.digest)


def leaf_wrappers(
    leaf: LeafFunction, symbol: str, checked: bool = False, plain_group: bool = True
) -> tuple[str, str | None, dict[str, Any], NativeLeaf]:
    """Python source of ``symbol`` (one instance) and, for a leaf with barriers, of
    ``symbol + "_group"``; the names they use; the clone (``checked``: with its array
    accesses checked, ``checked.py``). ``CompileError`` naming the leaf when its LLVM
    cannot be run. ``plain_group`` false: the caller never calls ``symbol + "_group"``
    (only ``group_wrapper``'s copies), so a work-item runner is not compiled for it."""
    native = native_leaf(leaf, checked=checked)
    # Now, not when the intrinsic is compiled: a graph function Numba loads from its disk
    # cache links against __hpvm_host_malloc without compiling anything.
    register_host_symbols()
    if native.barrier_lowering == "workitem" and plain_group:
        _register_group(native)
    names = {"__hpvm_native_leaf": native, f"{symbol}_native": _call_intrinsic(leaf, native), **_names()}
    params, passed, checks = _ports(leaf, names)
    outputs, first = _outputs(leaf, params, ERROR_SLOTS)
    ret = "return " + (outputs[0] if len(outputs) == 1 else "(" + "".join(o + ", " for o in outputs) + ")")
    lines = [
        f"def {symbol}({', '.join([*params, '__hpvm_ctx'])}):",
        *checks,
        f"    __r = {symbol}_native(({''.join(a + ', ' for a in passed)}), __hpvm_ctx)",
        "    if __r[0] != 0:",  # the leaf raised: the back end names the node (cpu/raised.py)
        f"        raise __hpvm_LeafRaised({native.digest!r}, __r[0], __r[1]{_instance(checked)})",
        *_unpack_lines(leaf, params, first),
        "    " + (ret if outputs else "return None"),
    ]
    source = "\n".join(lines) + "\n"
    group_source = None
    if native.uses_barrier:
        names[f"{symbol}_group_native"] = _group_intrinsic(leaf, native, checked)
        group_source = _group_source(leaf, native, f"{symbol}_group", params, passed, checks, checked)
    return source, group_source, names, native


def _names() -> dict[str, Any]:
    """The names every wrapper's source uses besides its intrinsic."""
    global _ADDRESS, _ROOM
    import numba
    import numpy as np

    if _ADDRESS is None:
        _ADDRESS, _ROOM = _address(), _heap_room()
    return {
        "__hpvm_llvm_address": _ADDRESS,
        "__hpvm_llvm_room": _ROOM,
        "__hpvm_llvm_view": numba.carray,
        "__hpvm_LeafRaised": LeafRaised,
        "np": np,
    }


def group_wrapper(
    leaf: LeafFunction, native: NativeLeaf, symbol: str, extents: tuple[int, int, int]
) -> tuple[str, dict[str, Any]] | None:
    """Python source of ``symbol(ports..., parent_ctx, ex, ey, ez, dims)`` — the group
    function of ``leaf_wrappers`` — calling the copy of the work-item loops specialized on
    ``extents`` (``wispecial.py``), which the caller passes; and the names it uses. ``None``
    for a leaf run as coroutines (nothing to specialize), or when the copy cannot be made
    (LLVM refused it: then the plain runner, registered here, serves — slower, never
    wrong). Unchecked code only."""
    if native.barrier_lowering != "workitem":
        return None
    from .wispecial import specialized_group

    try:
        runner = specialized_group(native, extents)
    except (AssertionError, RuntimeError):  # (a runner text the rewrite does not read)
        _register_group(native)
        return None
    names = {f"{symbol}_native": _group_intrinsic(leaf, native, runner=runner), **_names()}
    params, passed, checks = _ports(leaf, names)
    return _group_source(leaf, native, symbol, params, passed, checks, False), names


def _group_source(
    leaf: LeafFunction,
    native: NativeLeaf,
    symbol: str,
    params: list[str],
    passed: list[str],
    checks: list[str],
    checked: bool,
) -> str:
    """Python source of the group function ``symbol``, calling the intrinsic ``symbol_native``."""
    outputs, first = _outputs(leaf, params, 6 if checked else 3)
    ret = "return " + (outputs[0] if len(outputs) == 1 else "(" + "".join(o + ", " for o in outputs) + ")")
    message = repr(
        f"leaf '{leaf.name}' ({leaf.location}): a leaf with barriers runs the instances of a "
        "parent instance on one thread, and the values they keep across barriers (coroutine "
        "frames or work-item-loop arrays) did not fit in memory; launch fewer "
        "instances per parent instance"
    )
    lines = [
        f"def {symbol}({', '.join([*params, '__hpvm_parent', '__ex', '__ey', '__ez', '__dims'])}):",
        *checks,
        f"    __r = {symbol}_native(({''.join(a + ', ' for a in passed)}), __hpvm_parent, __ex, __ey, __ez, __dims)",
        f"    if __r[0] == {RAISED}:",
        f"        raise __hpvm_LeafRaised({native.digest!r}, __r[1], __r[2]{_group_instance(checked)})",
        "    if __r[0] != 0:",
        f"        raise __hpvm_LaunchError({message})",
        *_unpack_lines(leaf, params, first),
        "    " + (ret if outputs else "return None"),
    ]
    return "\n".join(lines) + "\n"


def _ports(leaf: LeafFunction, names: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """A wrapper's parameters, what it passes the intrinsic for each (scalars as the port's
    dtype, whose names go to ``names``), and its checks of the arrays' layout."""
    params = [f"__p{k}" for k in range(len(leaf.params))]
    passed = []
    for name, p in zip(params, leaf.params):
        if isinstance(p.type, ScalarType):
            names[f"__hpvm_dt_{p.type.dtype.name}"] = p.type.dtype.type
            passed.append(f"__hpvm_dt_{p.type.dtype.name}({name})")
        else:
            passed.append(name)
    # LLVM code indexes (pointer, byte size[, extents]) memory: a strided view would be read
    # wrong. (Numba folds the test away for arrays it types as C-contiguous.)
    checks = []
    for name, p in zip(params, leaf.params):
        if isinstance(p.type, ArrayType):
            message = repr(
                f"leaf '{leaf.name}' ({leaf.location}): port '{p.name}' of an LLVM leaf takes a "
                "C-contiguous array, and this one is a strided view; pass np.ascontiguousarray(...)"
            )
            checks += [
                f"    if not {name}.flags.c_contiguous:",
                f"        raise __hpvm_LaunchError({message})",
            ]
    return params, passed, checks


def jam_wrapper(
    leaf: LeafFunction, native: NativeLeaf, symbol: str, axis: int, width: int
) -> tuple[str, dict[str, Any]] | str:
    """Python source of ``symbol(ports..., ctx)``, running the instance of ``ctx`` and its
    ``width - 1`` neighbours along ``axis`` jammed (``wijam.py``), and the names it uses;
    or why the leaf is not jammed."""
    import numpy as np

    from .wijam import jam_module, jam_symbol

    text, why = jam_module(native, axis, width)
    if text is None:
        return why
    names: dict[str, Any] = {
        f"{symbol}_native": _jam_intrinsic(leaf, native, jam_symbol(native.digest, axis, width), text),
        "np": np,
    }
    params, passed, checks = _ports(leaf, names)
    lines = [
        f"def {symbol}({', '.join([*params, '__hpvm_ctx'])}):",
        *checks,
        f"    {symbol}_native(({''.join(a + ', ' for a in passed)}), __hpvm_ctx)",
    ]
    return "\n".join(lines) + "\n", names


def _instance(checked: bool) -> str:
    """Checked mode's extra ``LeafRaised`` arguments: a failed checked access's offset and
    its array's bytes (the context's slots 2 and 3), and the raising instance's context (its
    ids and extents, then its parent's: cpu/raised.py names the instance in the node's path
    as the interpreter does). Only on the failing path, and only in checked code: unchecked
    code stays as it was."""
    return ", __r[2], __r[3], __hpvm_ctx" if checked else ""


def _group_instance(checked: bool) -> str:
    """``_instance`` for the group runner: the raising instance's ids from its row-major
    index within the parent instance (the runner's ``err[2]``), the extents, then the
    parent's context."""
    if not checked:
        return ""
    ids = "__r[3] // (__ey * __ez), __r[3] % (__ey * __ez) // __ez, __r[3] % __ez"
    return f", __r[4], __r[5], ({ids}, __ex, __ey, __ez, __dims) + __hpvm_parent"


def _outputs(leaf: LeafFunction, params: list[str], first: int) -> tuple[list[str], int]:
    return [f"__o{k}" for k in range(len(leaf.out_types))], first


def _unpack_lines(leaf: LeafFunction, params: list[str], first: int) -> list[str]:
    """``__o<k> = ...`` for each output, from the slots in ``__r`` starting at ``first``."""
    lines = []
    k = first
    for port, t in enumerate(leaf.out_types):
        if not isinstance(t, ArrayType):
            lines.append(f"    __o{port} = __r[{k}]")
            k += 1
            continue
        candidates = [
            name
            for name, p in zip(params, leaf.params)
            if isinstance(p.type, ArrayType) and p.type.dtype == t.dtype and p.type.rank == t.rank
        ]
        if not t.sized:
            lines += _pointer_lines(leaf, params, candidates, port, k, t)
            k += 1
            continue
        if t.rank > 1:
            shape = "(" + "".join(f"__r[{k + 2 + a}], " for a in range(t.rank)) + ")"
        else:
            shape = f"(__r[{k + 1}] // {t.dtype.itemsize},)"
        view = f"__hpvm_llvm_view(__r[{k}], {shape}, np.{t.dtype.name})"
        lines.append(f"    __q{port} = __hpvm_llvm_address(__r[{k}])")
        for j, name in enumerate(candidates):
            lines.append(f"    {'if' if j == 0 else 'elif'} __q{port} == {name}.ctypes.data:")
            lines.append(f"        __o{port} = {name}")
        if candidates:
            lines.append("    else:")
            lines.append(f"        __o{port} = {view}")
        else:
            lines.append(f"    __o{port} = {view}")
        k += 2 + (t.rank if t.rank > 1 else 0)
    return lines


def _pointer_lines(
    leaf: LeafFunction, params: list[str], candidates: list[str], port: int, k: int, t: ArrayType
) -> list[str]:
    """``__o<port> = ...`` for a pointer-only output in slot ``k``: the input at its address,
    else the rest of the input holding it, else the rest of its heap chunk."""
    arrays = [name for name, p in zip(params, leaf.params) if isinstance(p.type, ArrayType)]
    q, size, dtype = f"__q{port}", t.dtype.itemsize, f"np.{t.dtype.name}"
    lines = [f"    {q} = __hpvm_llvm_address(__r[{k}])"]
    tests = [(f"{q} == {name}.ctypes.data", f"{name}") for name in candidates]
    for name in arrays:
        end = f"{name}.ctypes.data + {name}.nbytes"
        tests.append(
            (
                f"{name}.ctypes.data <= {q} < {end}",
                f"__hpvm_llvm_view(__r[{k}], (({end} - {q}) // {size},), {dtype})",
            )
        )
    message = repr(
        f"leaf '{leaf.name}' ({leaf.location}): output {port} is a pointer that is neither in one of "
        "its array inputs nor memory from llvm.hpvm.malloc"
    )
    for j, (test, value) in enumerate(tests):
        lines += [f"    {'if' if j == 0 else 'elif'} {test}:", f"        __o{port} = {value}"]
    indent = "    " if not tests else "        "
    if tests:
        lines.append("    else:")
    lines += [
        f"{indent}__n{port} = __hpvm_llvm_room({q})",
        f"{indent}if __n{port} < 0:",
        f"{indent}    raise __hpvm_LaunchError({message})",
        f"{indent}__o{port} = __hpvm_llvm_view(__r[{k}], (__n{port} // {size},), {dtype})",
    ]
    return lines


__all__ = ["HEAP", "HEAP_MARK", "HEAP_RELEASE", "heap_helpers", "jam_wrapper", "leaf_wrappers"]
