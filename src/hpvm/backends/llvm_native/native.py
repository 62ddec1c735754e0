"""An LLVM leaf cloned for the host (seed 001, DFG2LLVM_CPU step 1 on LLVM code).

Seed 001 clones each leaf with its instance ids and extents as parameters and replaces the
query intrinsics by them. Queries in LLVM leaves may sit in callees (a leaf exported from
Python calls an adapter that calls Numba's body, which calls ``llvm.hpvm.getNode``), so the
parameter is one *context pointer*, threaded through every function on a path from the
node function to a ``getNode``/``barrier``/``malloc`` call (or to ``__hpvm_leaf_error``,
the runtime function an exported leaf calls when its body raised); node handles become pointers
into that context, so handles may travel through any code (phis, memory, calls). LLVM's
inliner then folds the context away where the caller's values are known.

The native context (``ctx`` below), 8-byte slots::

    [0], [1] zero, until the instance calls ``__hpvm_leaf_error(status, excinfo)``: then
             1 << 32 | status, and the exception info's address (``leaf_errors.py``
             reads them; whoever calls the clone zeroes them and checks [0] after),
    [2], [3] recorded with them: 0, or for checked mode's ``__hpvm_leaf_error_at`` the
             failed access's byte offset and its array's bytes (``checked.py``),
    [4 + 7*k ...] level k (0: the leaf's node, 1: its parent, ...) in the layout of
    ``ir/instance_context.py``: ids x, y, z; extents x, y, z; number of dimensions.

A handle is the address of its level; ``getParentNode`` adds one level (levels past the
root hold the root's values: the caller sizes the context with ``levels`` levels, one per
``getParentNode`` call site plus one, since LLVM code has no static handle levels).

The clone's module keeps only what the node function uses (everything else internal and
removed), so leaves of one program, or the same leaf in Python and in LLVM, never clash
when linked into one module. Its external symbols: ``__hpvm_call.<digest>`` (the
trampoline) and ``__hpvm_group.<digest>`` (the group runner); ``digest`` hashes the module
text, so a changed leaf never meets a stale compiled one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CompileError
from ...ir.bodies import LEAF_ERROR, LEAF_ERROR_DECLARATION, LLVMBody, llvm_abi_types, llvm_struct_return
from ...ir.cache import stored_json
from ...ir.graph import LeafFunction
from ...ir.instance_context import STRIDE
from ...ir.intrinsics import ATOMIC_OPS
from ...ir.llvm_text import global_name
from ...ir.types import NodeHandleType
from .coro import ERROR_CALL, barrier_helper, coroutine_module, slot_call
from .leaf_errors import CHECK_FAILED
from .nodebug import without_debug_info
from .stored import code_version
from .wiloops import NONNEGATIVE, NONNEGATIVE_MD, workitem_module

#: Bump when the generated module changes (the digest of every clone includes it).
NATIVE_VERSION = 9  # 9: without debug metadata (nodebug.py)
#: The code that writes clones' modules (this file's helpers and trampoline, the barrier
#: leaves' lowering), hashed into every digest: a change to it never meets graph code Numba
#: cached on disk with the old module inlined.
_GENERATOR = hashlib.sha1(
    b"".join(
        (Path(__file__).parent / name).read_bytes()
        for name in (
            "native.py",
            "coro.py",
            "wiloops.py",
            "wiuniform.py",
            "wirecompute.py",
            "wiguard.py",
            "wijam.py",
        )
    )
).hexdigest()[:12]
HEADER = 4  # slots before level 0 in the native context: the error slots (_helpers)
CTX = "%__hpvm_ctx"
HOST_MALLOC = "__hpvm_host_malloc"
#: What the group runner returns when an instance raised (0: done, 1: out of memory).
RAISED = 2

QUERY_OFFSETS = {
    "getNodeInstanceID.x": 0,
    "getNodeInstanceID.y": 1,
    "getNodeInstanceID.z": 2,
    "getNumNodeInstances.x": 3,
    "getNumNodeInstances.y": 4,
    "getNumNodeInstances.z": 5,
}
#: Seed 000's llvm.hpvm.atomic.<op> (i32): hpvm's atomic names are LLVM's atomicrmw operations.
ATOMICS = ATOMIC_OPS
#: Intrinsics that need the context pointer where they are called.
CTX_INTRINSICS = frozenset({"getNode", "barrier", "malloc"})
LEAF_INTRINSICS = frozenset(
    {"getNode", "getParentNode", "getNumDims", "barrier", "malloc"}
    | set(QUERY_OFFSETS)
    | {f"atomic.{op}" for op in ATOMICS}
)

#: Numba names the function that turns a dynamic exception's values into Python objects by
#: a hash of their types, the same in every module. Seen on ``cpu``: once a clone holding one
#: was linked into graph code, a Python leaf's dynamic ``raise`` compiled later ran the
#: clone's copy, whose Numba environment is null ("Error creating Python tuple from runtime
#: exception arguments"). The clone's copy gets a name of its own.
_NUMBA_UNWRAP = "__excinfo_unwrap_args"
_TARGET_ATTRS = re.compile(r' "(?:target-cpu|target-features|tune-cpu)"="[^"]*"')


@dataclass(frozen=True)
class NativeLeaf:
    """An LLVM leaf's clone: its module text and how to call it.

    ``args``: the LLVM type of each argument slot (the ports' ABI, ``llvm_abi_types``);
    ``outs``: each output slot's type (the fields of the returned struct). ``levels``: how
    many context levels the clone may read.
    """

    leaf_name: str
    text: str
    digest: str
    args: tuple[str, ...]
    outs: tuple[str, ...]
    levels: int
    uses_barrier: bool
    uses_malloc: bool
    #: How the group runner runs a barrier leaf: "workitem" (``wiloops.py``) or "coroutine"
    #: (``coro.py``); "" without barriers. ``fallback``: why not work-item loops.
    barrier_lowering: str = ""
    fallback: str = ""
    #: The clone's return type as its module spells it (``void``, ``{ float }``, ...).
    ret: str = "void"

    @property
    def call_symbol(self) -> str:
        """``void(ptr args, ptr ctx, ptr out)``: one instance."""
        return f"__hpvm_call.{self.digest}"

    @property
    def group_symbol(self) -> str:
        """``i32(ptr args, ptr parent, i64 nparent, i64 nx, i64 ny, i64 nz, i64 dims, ptr out,
        i64 all, ptr err)``: every instance of one parent instance on the calling thread, as
        work-item loops (``wiloops.py``) or as coroutines that switch at each barrier
        (``coro.py``; ``barrier_lowering`` says which); 0 on success, 1 when their
        frames do not fit in memory, ``RAISED`` (2) when an instance raised: then ``err``
        holds the first such instance's (row-major) context slots 0 and 1 and its index.
        ``out`` receives the last instance's output slots, or with ``all`` every instance's,
        row-major. Only in the clones of leaves that reach a barrier."""
        return f"__hpvm_group.{self.digest}"


def _fail(leaf: LeafFunction, what: str) -> CompileError:
    return CompileError(f"leaf '{leaf.name}' ({leaf.location}): {what}")


_CACHE: dict[tuple[str, str, tuple[str, ...], tuple[str, ...], bool], NativeLeaf] = {}
#: Barrier leaves as work-item loops where their barriers allow (``wiloops.py``); off, or
#: ``HPVM_WORKITEM_LOOPS=0``, every barrier leaf runs as coroutines (``coro.py``).
WORKITEM_LOOPS = os.environ.get("HPVM_WORKITEM_LOOPS", "1") != "0"
_LOCK = threading.Lock()


def native_leaf(
    leaf: LeafFunction, recorded: bool = False, checked: bool = False, warn: bool = True
) -> NativeLeaf:
    """The clone of ``leaf`` (an ``LLVMBody`` leaf), made once per module text, function and
    ABI; a ``CompileError`` naming the leaf when its LLVM cannot be run. ``recorded``: the
    clone of its instrumented module, whose accesses report themselves (``instrument.py``);
    ``checked``: of its module with its array accesses checked (``checked.py``; ``warn``:
    saying which it cannot check) — both: the checked module, instrumented."""
    body = leaf.body
    assert isinstance(body, LLVMBody)
    if checked or recorded:
        native_leaf(leaf)  # the plain clone's errors first, as the user's module has them
    if recorded:  # (instrumented first: its sites are the user's instructions, not the checks')
        from .instrument import instrumented

        marked = instrumented(body)
        assert marked is not None  # (the module parsed: the plain clone read it)
        body = marked.body
    if checked:
        from .checked import checked_body

        body = checked_body(leaf, warn, body)
    try:
        return _cached(leaf, body)
    except CompileError as e:  # (a construct the instrumentation does not handle)
        if not recorded:
            raise
        why = str(e).removeprefix(f"leaf '{leaf.name}' ({leaf.location}): ")
        raise _fail(
            leaf,
            f"interp's race detector could not instrument its LLVM to record its accesses ({why}); "
            "run it with the detector off: hpvm.backends.interp.configure(races=False)",
        ) from None


def _cached(leaf: LeafFunction, body: LLVMBody) -> NativeLeaf:
    args, outs = _abi(leaf)
    loops = WORKITEM_LOOPS
    key = (body.module, body.function, args, outs, loops)
    with _LOCK:
        found = _CACHE.get(key)
        if found is None:
            found = _CACHE[key] = _stored_clone(leaf, body, args, outs, loops)
        return found


#: NativeLeaf's fields but the leaf's name (what a clone made from a module is, whatever
#: leaf carries that module), and the type each has in JSON
_CLONE_FIELDS: dict[str, type] = {
    "text": str,
    "digest": str,
    "args": list,
    "outs": list,
    "levels": int,
    "uses_barrier": bool,
    "uses_malloc": bool,
    "barrier_lowering": str,
    "fallback": str,
    "ret": str,
}
assert set(_CLONE_FIELDS) == {f.name for f in dataclasses.fields(NativeLeaf)} - {"leaf_name"}


def _stored_clone(
    leaf: LeafFunction, body: LLVMBody, args: tuple[str, ...], outs: tuple[str, ...], loops: bool
) -> NativeLeaf:
    """``_clone`` from hpvm's cache (``llvm-clone/``, ``ir.cache.stored_json``), else cloned
    and stored there (``stored.py``): a later process skips parsing, the dead-code pass and the work-item
    loops' -O3 (0.46 s of ``examples/c/sgemm.c``'s 1.8 s warm run). A leaf refused raises
    as it did, and stores nothing."""

    def build() -> dict[str, Any]:
        made = _clone(leaf, body, args, outs, loops)
        return {name: getattr(made, name) for name in _CLONE_FIELDS}

    found = stored_json(
        "llvm-clone", code_version(), [body.function, args, outs, loops], body.module, _CLONE_FIELDS, build
    )
    tuples = {name: tuple(found[name]) for name in ("args", "outs")}  # (JSON made them lists)
    return NativeLeaf(leaf.name, **{**found, **tuples})


def _abi(leaf: LeafFunction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    for p in leaf.params:
        if isinstance(p.type, NodeHandleType):
            raise _fail(leaf, f"port '{p.name}' is a node handle; LLVM leaves taking node handles do not run")
    args = tuple(t for p in leaf.params for t in llvm_abi_types(p.type))
    outs = tuple(t for t in leaf.out_types for t in llvm_abi_types(t))
    return args, outs


def _struct(types: tuple[str, ...]) -> str:
    return "{ " + ", ".join(types) + " }" if types else "{}"


def _return_type(fn: Any) -> str:
    return str(fn.global_value_type.get_function_return())


def _returns_void(fn: Any) -> bool:
    return _return_type(fn) == "void"


def _define_line(text: str, name: str) -> int:
    """The index of the line defining ``name`` in ``text.splitlines()``."""
    head = f"{global_name(name)}("
    for k, line in enumerate(text.splitlines()):
        if line.startswith("define") and head in line:
            return k
    raise KeyError(name)


def optimize_module(module: Any, level: int, passes: tuple[str, ...] = (), vectorize: bool = True) -> None:
    """Run LLVM's pipeline at ``level`` on ``module`` (or only ``passes``); ``vectorize``
    False: without the loop and SLP vectorizers."""
    import llvmlite.binding as llvm

    machine = target_machine()
    tuning = llvm.create_pipeline_tuning_options(speed_level=level)
    if not vectorize:
        tuning.loop_vectorization = False
        tuning.slp_vectorization = False
    builder = llvm.create_pass_builder(machine, tuning)
    if passes:
        pm = llvm.create_new_module_pass_manager()
        for name in passes:
            getattr(pm, f"add_{name}_pass")()
    else:
        pm = builder.getModulePassManager()
    pm.run(module, builder)


_MACHINE: Any = None


def target_machine() -> Any:
    """The host's target machine (llvmlite), made once: its CPU and features, as Numba's,
    so the clone is optimized (and JIT-compiled for ``interp``) for the machine it runs on."""
    global _MACHINE
    if _MACHINE is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _MACHINE = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(),
            codemodel="jitdefault",
            jit=True,
        )
    return _MACHINE


def _clone(
    leaf: LeafFunction, body: LLVMBody, args: tuple[str, ...], outs: tuple[str, ...], loops: bool
) -> NativeLeaf:
    import llvmlite.binding as llvm

    try:
        module = llvm.parse_assembly(body.module)
        module.verify()
    except RuntimeError as e:
        raise _fail(leaf, f"its LLVM module is not valid LLVM IR: {str(e).strip()}") from None
    try:
        fn = module.get_function(body.function)
    except NameError:
        raise _fail(leaf, f"its LLVM module defines no function @{body.function}") from None
    if fn.is_declaration:
        raise _fail(leaf, f"its LLVM module only declares @{body.function}; the node function needs a body")
    actual = tuple(str(a.type) for a in fn.arguments)
    if actual != args:
        raise _fail(
            leaf,
            f"@{body.function} takes ({', '.join(actual)}) but its ports {[p.name for p in leaf.params]} "
            f"are ({', '.join(args)}) in LLVM form (docs/llvm.md, the ABI of node functions); "
            "fix the function's parameters or the ports",
        )
    returned = llvm_struct_return(fn)
    # (hand-written leaves without outputs may return void; a returned struct may be named
    # or packed, as HPVM's %struct.out.f: the clone calls the function with its own type)
    ret = "void" if returned is None and not outs and _returns_void(fn) else None
    if returned is not None and returned.fields == outs:
        ret = returned.spelled
    if ret is None:
        have = f"{returned.spelled} ({', '.join(returned.fields)})" if returned else _return_type(fn)
        raise _fail(
            leaf,
            f"@{body.function} returns {have} but its outputs are {_struct(outs)} in LLVM form; "
            "a node function returns the struct of its outputs",
        )
    digest = hashlib.sha1(
        f"{NATIVE_VERSION}\n{_GENERATOR}\n{loops}\n{body.function}\n{args}\n{outs}\n{body.module}".encode()
    ).hexdigest()[:16]
    # Keep only what the node function uses: everything else internal, then dropped (the
    # node function itself external until then: a C leaf may be `static`, and the pass
    # would drop it, and LLVM abort on the next use of the freed function).
    fn.linkage = "external"
    for f in module.functions:
        if not f.is_declaration and f.name != body.function:
            f.linkage = "internal"
            if f.name.startswith(_NUMBA_UNWRAP):
                f.name = f"{f.name}.{digest}"
    for g in module.global_variables:
        if not g.is_declaration and not g.name.startswith("llvm."):
            g.linkage = "internal"
    module.triple = llvm.get_process_triple()
    module.data_layout = str(target_machine().target_data)
    optimize_module(module, 0, ("global_dead_code_eliminate",))

    # Who calls what, directly; where the intrinsics are.
    callees: dict[str, set[str]] = {}
    used: dict[str, list[str]] = {}  # intrinsic -> functions calling it
    parent_calls = 0
    for f in module.functions:
        if f.is_declaration:
            continue
        callees[f.name] = set()
        for block in f.blocks:
            for ins in block.instructions:
                if ins.opcode not in ("call", "invoke", "callbr"):
                    continue
                callee = list(ins.operands)[-1].name
                if callee.startswith("llvm.hpvm."):
                    short = callee[len("llvm.hpvm.") :]
                    if short not in LEAF_INTRINSICS:
                        raise _fail(
                            leaf, f"@{f.name} calls @{callee}, which a leaf cannot call: {str(ins).strip()}"
                        )
                    used.setdefault(short, []).append(f.name)
                    parent_calls += short == "getParentNode"
                elif callee:
                    callees[f.name].add(callee)
    raising = _error_callers(leaf, module, callees)
    needs = _callers(
        {f for short in CTX_INTRINSICS for f in used.get(short, [])} | {body.function} | raising, callees
    )

    fn.linkage = "internal"  # (after the dead-code pass, which would have dropped it)
    text = str(module)
    # The clone runs on this host, compiled by a target machine for it (as Numba's code is):
    # clang's target attributes would name the CPU clang was told about instead, and mix
    # two targets in the functions LLVM inlines into each other.
    text = _TARGET_ATTRS.sub("", text)
    entry = f"__hpvm_leaf.{digest}"
    text = re.sub(r"^declare [^\n]*@llvm\.hpvm\.[^\n]*\n", "", text, flags=re.M)
    lines = text.split("\n")
    for name in sorted(needs):
        g = global_name(name)
        k = _define_line(text, name)
        head = lines[k]
        at = head.index(f"{g}(") + len(g) + 1
        lines[k] = head[:at] + ("ptr %__hpvm_ctx" if head[at] == ")" else "ptr %__hpvm_ctx, ") + head[at:]
        call = re.compile(re.escape(g) + r"\((\)?)")
        other = re.compile(re.escape(g) + r"(?![-a-zA-Z$._0-9(])")
        for j, line in enumerate(lines):
            if j == k:
                continue
            if other.search(line):
                raise _fail(
                    leaf,
                    f"{g} reaches an HPVM query, barrier or malloc and is used other than by a direct "
                    f"call ({line.strip()}); such functions take the instance context, so call them directly",
                )
            lines[j] = call.sub(lambda m, g=g: f"{g}(ptr %__hpvm_ctx{')' if m.group(1) else ', '}", line)
    text = "\n".join(lines)
    text = text.replace("@llvm.hpvm.getNode()", "@__hpvm_q.getNode(ptr %__hpvm_ctx)")
    text = text.replace("@llvm.hpvm.barrier()", "@__hpvm_q.barrier(ptr %__hpvm_ctx)")
    text = text.replace("@llvm.hpvm.malloc(", "@__hpvm_q.malloc(ptr %__hpvm_ctx, ")
    text = text.replace("@llvm.hpvm.", "@__hpvm_q.")
    # a raise, or checked.py's failed access: into the context's slots (_helpers)
    if any(f.name in (LEAF_ERROR, CHECK_FAILED) for f in module.functions):
        text = re.sub(rf"^declare [^\n]*@(?:{LEAF_ERROR}|{CHECK_FAILED})\([^\n]*\n", "", text, flags=re.M)
        text = text.replace(f"@{LEAF_ERROR}(", f"@{ERROR_CALL}(ptr %__hpvm_ctx, i64 0, i64 0, ")
        text = text.replace(f"@{CHECK_FAILED}(", f"@{ERROR_CALL}(ptr %__hpvm_ctx, ")
        if f"@{LEAF_ERROR}" in text:
            raise _fail(
                leaf,
                f"@{LEAF_ERROR} is used other than by a direct call; it records the error of the "
                "instance calling it, so call it directly (docs/llvm.md)",
            )
    k = _define_line(text, body.function)
    lines = text.split("\n")
    lines[k] = lines[k].replace(f"{global_name(body.function)}(", f"@{entry}(", 1)
    text = "\n".join(lines)
    declared = {f.name for f in module.functions}
    uses_barrier = "barrier" in used
    levels = min(1 + parent_calls, 16)
    text += _helpers(declared, uses_barrier)
    text += _trampoline(entry, digest, args, outs, ret)
    lowering = fallback = ""
    if uses_barrier:  # work-item loops (wiloops.py), else coroutines (coro.py), and the group runner
        reach = _callers(set(used["barrier"]), callees)
        names = {f"@{entry}" if f == body.function else global_name(f) for f in reach}
        how: dict[str, Any] = dict(
            entry=entry,
            digest=digest,
            args=args,
            outs=outs,
            ret=ret,
            reach_barrier=names,
            declared=declared,
            header=HEADER,
            raised=RAISED,
        )
        made, fallback = workitem_module(leaf, text, **how) if loops else (None, "work-item loops are off")
        lowering = "workitem" if made is not None else "coroutine"
        text = made if made is not None else coroutine_module(leaf, text, **how)
    text = without_debug_info(text)  # (nothing reads it from here on: nodebug.py)
    try:
        check = llvm.parse_assembly(text)
        check.verify()
    except RuntimeError as e:  # a construct the rewrite does not handle: say so, with the leaf
        raise _fail(leaf, f"its LLVM could not be cloned for running ({str(e).strip()})") from None
    return NativeLeaf(
        leaf.name, text, digest, args, outs, levels, uses_barrier, "malloc" in used, lowering, fallback, ret
    )


def _error_callers(leaf: LeafFunction, module: Any, callees: dict[str, set[str]]) -> set[str]:
    """The functions that call ``__hpvm_leaf_error`` (``ir.bodies.LEAF_ERROR``), whose
    declaration must be the ABI's, or checked mode's ``__hpvm_leaf_error_at``
    (``leaf_errors.CHECK_FAILED``); they take the context, where the error is recorded."""
    callers = {f for f, called in callees.items() if called & {LEAF_ERROR, CHECK_FAILED}}
    if LEAF_ERROR in callees:
        raise _fail(
            leaf,
            f"its module defines @{LEAF_ERROR}, which is hpvm's runtime function for a leaf that "
            "raised (docs/llvm.md, the ABI of node functions); rename its definition",
        )
    if any(LEAF_ERROR in called for called in callees.values()):
        declared = str(module.get_function(LEAF_ERROR).global_value_type)
        if declared.replace(" ", "") != "void(i32,ptr)":
            raise _fail(
                leaf,
                f"it declares @{LEAF_ERROR} as {declared}; the ABI's is {LEAF_ERROR_DECLARATION} "
                "(Numba's status, its exception info)",
            )
    return callers


def _query(name: str, offset: int, nonnegative: bool) -> str:
    """The replacement of the instance query ``name`` (the context's word ``offset``);
    ``nonnegative``: its load says the value is never negative (``wiloops.NONNEGATIVE``)."""
    known = f", !range !{NONNEGATIVE_MD}" if nonnegative else ""
    return (
        f"define internal i64 @__hpvm_q.{name}(ptr %h) alwaysinline {{\n"
        f"  %a = getelementptr i8, ptr %h, i64 {8 * offset}\n  %v = load i64, ptr %a, align 8{known}\n  ret i64 %v\n}}"
    )


def nonnegative_queries(text: str) -> str:
    """``text`` (a clone's, before it is optimized) with its instance queries' loads marked
    never negative. For the jammed leaf (``wijam.py``): there it lets LLVM drop a Python
    leaf's wrap-around of ``col + lane`` (the tiled sgemm's LLVM leaves: 292 → 153 ms at
    1024³). Not for every clone: on the block reduction's work-item loops the same marks
    cost 1.4–1.9 → 3.0–3.2 ms, LLVM transforming them otherwise (issue 24)."""
    for name, offset in QUERY_OFFSETS.items():
        text = text.replace(_query(name, offset, False), _query(name, offset, True))
    return f"{text}\n{NONNEGATIVE}\n"


def _declare(declared: set[str], name: str, decl: str) -> str:
    return "" if name in declared else decl + "\n"


def _helpers(declared: set[str], barrier: bool) -> str:
    """The intrinsics' replacements, internal and always inlined (``barrier``: the leaf
    reaches one, whose replacement is ``coro.barrier_helper``)."""
    out = ["", "; hpvm: the intrinsics on the native context (backends/llvm_native/native.py)"]
    out.append(
        "define internal ptr @__hpvm_q.getNode(ptr %c) alwaysinline {\n"
        f"  %h = getelementptr i8, ptr %c, i64 {8 * HEADER}\n  ret ptr %h\n}}"
    )
    out.append(
        "define internal ptr @__hpvm_q.getParentNode(ptr %h) alwaysinline {\n"
        f"  %p = getelementptr i8, ptr %h, i64 {8 * STRIDE}\n  ret ptr %p\n}}"
    )
    for name, offset in QUERY_OFFSETS.items():
        out.append(_query(name, offset, nonnegative=False))
    out.append(
        "define internal i32 @__hpvm_q.getNumDims(ptr %h) alwaysinline {\n"
        f"  %a = getelementptr i8, ptr %h, i64 {8 * 6}\n  %v = load i64, ptr %a, align 8\n"
        "  %d = trunc i64 %v to i32\n  ret i32 %d\n}"
    )
    for op in ATOMICS:
        out.append(
            f"define internal i32 @__hpvm_q.atomic.{op}(ptr %p, i32 %v) alwaysinline {{\n"
            f"  %r = atomicrmw {op} ptr %p, i32 %v seq_cst, align 4\n  ret i32 %r\n}}"
        )
    if barrier:
        out.append(barrier_helper())
    # ctx[0]: 1 << 32 | the status (nonzero once recorded), ctx[1]: the exception info,
    # ctx[2] and ctx[3]: a failed checked access's byte offset and its array's bytes
    # (checked.py; 0 for a leaf's own raise); the first call of an instance wins
    # (leaf_errors.py reads them).
    out.append(
        f"define internal void @{ERROR_CALL}(ptr %c, i64 %o, i64 %n, i32 %s, ptr %e) alwaysinline {{\n"
        "  %old = load i64, ptr %c, align 8\n  %first = icmp eq i64 %old, 0\n"
        "  br i1 %first, label %record, label %done\nrecord:\n"
        "  %z = zext i32 %s to i64\n  %flagged = or i64 %z, 4294967296\n"
        "  store i64 %flagged, ptr %c, align 8\n  %slot = getelementptr i8, ptr %c, i64 8\n"
        "  %info = ptrtoint ptr %e to i64\n  store i64 %info, ptr %slot, align 8\n"
        "  %oslot = getelementptr i8, ptr %c, i64 16\n  store i64 %o, ptr %oslot, align 8\n"
        "  %nslot = getelementptr i8, ptr %c, i64 24\n  store i64 %n, ptr %nslot, align 8\n"
        "  br label %done\ndone:\n  ret void\n}"
    )
    out.append(_declare(declared, HOST_MALLOC, f"declare ptr @{HOST_MALLOC}(i64)"))
    out.append(
        "define internal ptr @__hpvm_q.malloc(ptr %c, i64 %n) alwaysinline {\n"
        f"  %p = call ptr @{HOST_MALLOC}(i64 %n)\n  ret ptr %p\n}}"
    )
    return "\n".join(out) + "\n"


def _callers(targets: set[str], callees: dict[str, set[str]]) -> set[str]:
    """``targets`` and every function that calls one of them, directly or not."""
    found = set(targets)
    changed = True
    while changed:
        changed = False
        for f, called in callees.items():
            if f not in found and called & found:
                found.add(f)
                changed = True
    return found


def _trampoline(entry: str, digest: str, args: tuple[str, ...], outs: tuple[str, ...], ret: str) -> str:
    """``__hpvm_call.<digest>(ptr args, ptr ctx, ptr out)``: the clone with its arguments and
    outputs in 8-byte slots (what ctypes and Numba's calling side can build uniformly);
    ``ret``: the clone's return type as its module spells it."""
    body = slot_call(entry, args, outs, ret)
    return (
        f"\ndefine void @__hpvm_call.{digest}(ptr %args, ptr %ctx, ptr %out) alwaysinline {{\n"
        + "\n".join(body)
        + "\n  ret void\n}\n"
    )


__all__ = ["HOST_MALLOC", "RAISED", "NativeLeaf", "global_name", "native_leaf", "target_machine"]
