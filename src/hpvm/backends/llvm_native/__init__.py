"""Running leaves whose body is LLVM IR (``LLVMBody``): seed 001's DFG2LLVM_CPU on LLVM code.

One transformation, shared by every back end that runs such leaves on the host (``cpu``
links it into its Numba-generated graph code, ``interp`` JITs it and calls it instance by
instance), so there is one copy of the logic:

``native.native_leaf(leaf)`` clones the leaf's module into a module of its own: the node
function (and every function it calls that reaches a query) takes an extra context pointer
``%__hpvm_ctx``; the query intrinsics become reads of that context, atomics ``atomicrmw``,
``malloc`` a call into the host's allocator (``host.py``), ``barrier`` the end of one
work-item loop (``wiloops.py``) or a coroutine suspend (``coro.py``); a *trampoline* ``void(ptr args, ptr ctx, ptr out)`` calls it with its
arguments and outputs in 8-byte slots, and a *group* function runs every instance of one
parent instance on one thread, as work-item loops or LLVM coroutines (for leaves with
barriers). ``jit.py``: the module JIT-compiled on its own
(llvmlite's MCJIT) and called through ctypes; ``numba_call.py``: the trampoline called
from Numba code, its module linked into the caller's so LLVM inlines it.

Not a back end: a lower layer of ``hpvm.backends`` (pyproject's import-linter contract),
so ``cpu`` and ``interp`` share it without importing each other. Importing this package
imports nothing heavy (llvmlite and Numba are loaded on first use).
"""
