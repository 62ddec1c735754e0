"""``__hpvm_parallel_for(task, count, *locals)``: ``task(c, locals)`` for every chunk ``c``
in ``range(count)``, on Numba's threading layer, from compiled code, without a ``prange``.

Why. The parallel loops of generated code (``chunks.py``) are loops over one chunk per
thread whose body is one call. Written as a ``prange``, each made Numba's parfor lowering
build a gufunc for that body: the body typed again, lowered, its LLVM module optimized and
turned into machine code with every function it calls linked in (the chunk and the leaves
inlined there), then a wrapper kernel, then the graph function's own module optimized and
turned into machine code with the gufunc linked in once more. On a cold cache that was a
third of the cpu back end's compile time: 0.56 s of a 1-D vector add's 1.2 s, 35 % of the
test suite's Numba time (docs/backends/cpu-performance.md, "Cold compile").

What. The intrinsic calls Numba's threading layer directly — ``numba_parallel_for``, the
function a parfor's kernel calls, with the thread count a parfor passes
(``get_num_threads``) — on a small kernel it writes into the calling module: the kernel
loads the packed arguments and calls ``task`` (an ordinary compiled function, typed once, as
the chunk functions are) for each chunk index it is handed. The graph function itself then
has no parallel loop and compiles without Numba's parallel passes. A single chunk is called
on the launching thread, without the threading layer (a tiny graph's launch).

What stays as it was: chunks and their schedule (``chunks.py``: one contiguous balanced
chunk per thread), failures (``task`` calls the chunk through ``__hpvm_try_call``, which
records, never raises; ``__hpvm_reraise`` after the loop), nesting (a chunk whose node
launches its own parallel loop calls the same threading layer from a worker, as the gufunc
did), the ``noalias``, inlined chunk functions of ``restrict.py``.

Arrays are borrowed. The kernel clears each packed array's meminfo (its reference count's
owner) and Python object, as a gufunc's arrays have none: the caller holds the arrays for
the whole loop, and a chunk never keeps one past its return. Passed with their meminfos,
every call inside a chunk that takes an array (a block's group function, per block)
counted references with atomic instructions on one shared counter from every thread: the
HPVM-C block reduction ran at 0.9–2 ms on two threads against 0.70 ms on one
(0.33–0.37 ms with borrowed arrays, as with the ``prange``).

Constants stay constants. The locals are passed one by one, not as a tuple the caller
builds, and typed literal first (``prefer_literal``): a local Numba knows as a constant (a
replication size written ``__hn0_s1 = 4``) reaches ``task`` as ``Literal[int](4)`` inside the
packed tuple, so the task — compiled for this one loop — and the chunk inlined there see the
number, as a ``prange`` gufunc saw its literal arguments. A tuple built in the caller would
have widened it to ``int64``: the HBIR 512³ matrix multiply's inner loop, bounded by
``y * 128`` and ``min(512, …)`` with ``y < s1``, then had an unknown trip count, was not
unrolled, and kept C's row in memory across ``k`` instead of in registers — 5.5 ms against
3.6 ms with the number (docs/backends/cpu-performance.md).

How the kernel finds its chunk. ``numba_parallel_for(fn, args, dims, steps, data,
inner_ndim, array_count, num_threads)`` splits ``dims[0]`` iterations among the threads and
calls ``fn`` with ``args[j]`` advanced by ``steps[j]`` per iteration and ``dims[0]`` set to
the iterations of that call (one on the OpenMP and workqueue layers, a range on TBB's). The
one "array" is a null base with a step of one byte: the pointer handed to the kernel is the
first chunk index itself.
"""

from __future__ import annotations

from typing import Any

from .loop_errors import ChunkCompileError

_HELPERS: dict[str, Any] = {}


def parallel_for_helpers() -> dict[str, Any]:
    """The name generated code calls, ``__hpvm_parallel_for`` (made once). Starts Numba's
    threading layer: a graph function loaded from the cache calls into it without
    compiling anything that would start it."""
    if not _HELPERS:
        from numba.np.ufunc.parallel import _launch_threads

        _launch_threads()  # (registers numba_parallel_for and get_num_threads with LLVM)
        _HELPERS["__hpvm_parallel_for"] = _build()
    return dict(_HELPERS)


def _build() -> Any:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.errors import NumbaError
    from numba.extending import intrinsic

    i8p = ir.IntType(8).as_pointer()
    i64 = ir.IntType(64)
    kernel_type = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), i64.as_pointer(), i64.as_pointer(), i8p])
    parallel_for_type = ir.FunctionType(ir.VoidType(), [i8p] * 5 + [i64] * 3)

    @intrinsic(prefer_literal=True)
    def parallel_for(typingctx, task, count, *locals_):  # type: ignore[no-untyped-def]
        """``task(c, locals_)`` for ``c`` in ``range(count)``, the chunks side by side."""
        if not isinstance(task, types.Dispatcher):
            return None
        if not isinstance(types.unliteral(count), types.Integer):
            return None
        # (Numba passes star arguments as one tuple; its literal members are kept: the
        # module docstring)
        pack = types.StarArgTuple.from_types(locals_)
        try:
            call = task.get_call_type(typingctx, (types.int64, pack), {})
        except NumbaError as e:
            raise ChunkCompileError(e) from None
        if call is None:
            return None

        def borrowed(context: Any, builder: ir.IRBuilder, value: Any, typ: Any) -> Any:
            """``value`` with every array's reference to its owner (meminfo) and Python
            object cleared, in tuples too: what the chunks are given borrows the caller's
            arrays, as a gufunc's are (see the module docstring)."""
            if isinstance(typ, types.Array):
                array = context.make_array(typ)(context, builder, value=value)
                array.meminfo = cgutils.get_null_value(array.meminfo.type)
                array.parent = cgutils.get_null_value(array.parent.type)
                return array._getvalue()
            if isinstance(typ, types.BaseTuple):
                for i, member in enumerate(typ.types):
                    item = borrowed(context, builder, builder.extract_value(value, i), member)
                    value = builder.insert_value(value, item, i)
            return value

        def kernel_for(context: Any, module: ir.Module, compiled: Any) -> ir.Function:
            """The kernel ``numba_parallel_for`` runs, defined once per calling module."""
            kernel = cgutils.get_or_insert_function(
                module, kernel_type, f"__hpvm_kernel.{compiled.fndesc.mangled_name}"
            )
            if not kernel.is_declaration:
                return kernel
            kernel.linkage = "internal"
            builder = ir.IRBuilder(kernel.append_basic_block())
            args, dims, _, data = kernel.args
            first = builder.ptrtoint(builder.load(args), i64)
            packed = borrowed(
                context,
                builder,
                builder.load(builder.bitcast(data, context.get_value_type(pack).as_pointer())),
                pack,
            )
            callee = context.declare_function(module, compiled.fndesc)
            with cgutils.for_range(builder, builder.load(dims)) as loop:
                chunk = context.cast(builder, builder.add(first, loop.index), types.int64, call.args[0])
                values = [chunk, context.cast(builder, packed, pack, call.args[1])]
                # (the status is not read: task records failures in its table, try_call)
                context.call_conv.call_function(
                    builder, callee, compiled.fndesc.restype, compiled.fndesc.argtypes, values
                )
            builder.ret_void()
            return kernel

        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            _, count_value, pack_value = llargs
            compiled = task.dispatcher.get_compile_result(call)
            context.add_linking_libs([compiled.library])
            module = builder.module
            kernel = kernel_for(context, module, compiled)
            n = context.cast(builder, count_value, count, types.int64)
            slot = cgutils.alloca_once_value(builder, pack_value)
            data = builder.bitcast(slot, i8p)
            args = cgutils.alloca_once(builder, i8p)
            builder.store(i8p(None), args)  # chunk indices from 0 (see the module docstring)
            dims = cgutils.alloca_once_value(builder, n)
            steps = cgutils.alloca_once_value(builder, i64(1))
            with builder.if_then(builder.icmp_signed(">", n, i64(0))):
                with builder.if_else(builder.icmp_signed("==", n, i64(1))) as (one, many):
                    with one:  # (the launching thread, no wake-up)
                        builder.call(kernel, [args, dims, steps, data])
                    with many:
                        threads = builder.call(
                            cgutils.get_or_insert_function(
                                module, ir.FunctionType(i64, []), "get_num_threads"
                            ),
                            [],
                        )
                        run = cgutils.get_or_insert_function(module, parallel_for_type, "numba_parallel_for")
                        builder.call(
                            run,
                            [
                                builder.bitcast(kernel, i8p),
                                builder.bitcast(args, i8p),
                                builder.bitcast(dims, i8p),
                                builder.bitcast(steps, i8p),
                                data,
                                i64(0),  # inner dimensions: none
                                i64(1),  # "arrays": the chunk index
                                threads,
                            ],
                        )
            return context.get_dummy_value()

        return types.none(task, count, pack), codegen

    return parallel_for


__all__ = ["parallel_for_helpers"]
