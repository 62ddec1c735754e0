"""Running an HPVM-C program's host code: its ``main``, JIT-compiled by llvmlite, with the
HPVM-C host calls answered by hpvm's runtime.

Each host call (``__hpvm__init``, ``__hpvm__launch``, ``llvm_hpvm_track_mem``...) is a
ctypes callback registered as ``__hpvm_py.<name>`` (``llvmlite.binding.add_symbol``), and
the host module gets a small LLVM definition of ``<name>`` with the signature the program
declared, which calls it — so the program's own machine code calls into the runtime
(``hpvm.ir.host``: this front end sits below the runtime and reaches it through that
interface). Node functions are not compiled here — their bodies become ``unreachable``;
the graph they describe runs on hpvm's back ends.

**A failing host call** (an untracked array, an error in a node surfacing at
``__hpvm__wait``) cannot raise through C frames. Its callback records the error and sets a
flag; the definition around it sees the flag and calls ``longjmp`` back to a ``_setjmp`` in a
wrapper of ``main``, which returns, so ``main``'s thread ends and ``run`` raises the error
(C frames have nothing to unwind; C++ destructors of ``main``'s locals are skipped, as by
``exit``). A failure in a host call made on another thread than ``main``'s (a program's own
pthread) cannot jump there: that thread is parked for good. One program runs at a time in
a process (the callbacks are process-wide symbols).
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HPVMError
from ..ir.host import host
from .argstruct import ArgStruct, byte_view
from .errors import HPVMCError
from .module import Module, split_top
from .tensorrt import TensorRuntime

_VOIDP = ctypes.c_void_p
_LOCK = threading.Lock()  # one program's host code at a time


@dataclass
class _Launch:
    """One ``__hpvm__launch``: the runtime's handle, the argument struct and its layout."""

    struct: ArgStruct
    handle: Any
    args_address: int
    stream: bool
    popped: list[Any] = field(default_factory=list)  # buffers pop returned: alive until run ends


class HostRun:
    """The state of one run of ``main``: tracked views, launches, the first error."""

    main_thread: int | None = None  # the thread running main (a failure there jumps out)

    def __init__(self, structs: dict[int, ArgStruct], roots: dict[int, Any], target: str | None):
        self.structs = structs  # root function address → its argument struct
        self.roots = roots  # root function address → hpvm root node function
        self.target = target
        self.views: dict[int, np.ndarray] = {}
        self.launches: dict[int, _Launch] = {}
        self.tensors = TensorRuntime()  # tensor_runtime.h's tensors
        self.error: BaseException | None = None
        self.failed = threading.Event()

    def view(self, address: int, size: int) -> np.ndarray:
        """The array of C memory at ``address``: the tracked view when there is one."""
        known = self.views.get(address)
        if known is not None and known.nbytes == size:
            return known
        return byte_view(address, size)

    # -- the host calls ------------------------------------------------------------
    def init(self) -> None:
        host().init()

    def cleanup(self) -> None:
        host().cleanup()
        self.views.clear()
        self.tensors.forget_tracking()

    def track(self, address: int, size: int) -> None:
        arr = byte_view(address, size)
        self.views[address] = arr
        host().track_memory(arr)

    def untrack(self, address: int) -> None:
        arr = self.views.pop(address, None)
        if arr is None:
            raise HPVMCError(
                f"llvm_hpvm_untrack_mem({address:#x}): that pointer is not tracked; track it with "
                "llvm_hpvm_track_mem(ptr, bytes) first"
            )
        host().untrack_memory(arr)

    def request(self, address: int, size: int) -> None:
        arr = self.views.get(address)
        if arr is None:
            raise HPVMCError(
                f"llvm_hpvm_request_mem({address:#x}, {size}): that pointer is not tracked; track it "
                "with llvm_hpvm_track_mem(ptr, bytes) first"
            )
        host().request_memory(arr)

    def launch(self, is_stream: int, fn: int, args: int) -> int:
        root = self.roots.get(fn)
        if root is None:
            raise HPVMCError(
                "__hpvm__launch: its second argument is not a root node function of this program"
            )
        struct = self.structs[fn]
        if is_stream:
            handle = host().launch(root, None, stream=True, target=self.target)
        else:
            handle = host().launch(root, self.read(struct, args, "__hpvm__launch"), target=self.target)
        cookie = len(self.launches) + 1  # what C sees as the graph's handle (never NULL)
        self.launches[cookie] = _Launch(struct, handle, args, bool(is_stream))
        return cookie

    def read(self, struct: ArgStruct, args: int, api: str) -> tuple[Any, ...]:
        """The launch arguments in the struct at ``args``: tensor ports through the tensor runtime."""
        return struct.read(
            args, self.view, lambda p, rank: self.tensors.launch_value(p, api, rank), self.views, api
        )

    def _launch_of(self, cookie: int, api: str) -> tuple[_Launch, ArgStruct]:
        found = self.launches.get(cookie)
        if found is None:
            raise HPVMCError(f"{api}: the handle is not one __hpvm__launch returned")
        return found, found.struct

    def wait(self, cookie: int) -> None:
        launch, struct = self._launch_of(cookie, "__hpvm__wait")
        outputs = host().wait(launch.handle)
        if not launch.stream and outputs is not None and launch.args_address:
            struct.write_outputs(launch.args_address + struct.out_start, outputs, self.tensors.register)

    def push(self, cookie: int, args: int) -> None:
        launch, struct = self._launch_of(cookie, "__hpvm__push")
        host().push(launch.handle, self.read(struct, args, "__hpvm__push"))

    def pop(self, cookie: int) -> int:
        launch, struct = self._launch_of(cookie, "__hpvm__pop")
        outputs = host().pop(launch.handle)
        buf = ctypes.create_string_buffer(max(struct.out_size, 1))
        launch.popped.append(buf)
        struct.write_outputs(ctypes.addressof(buf), outputs, self.tensors.register)
        return ctypes.addressof(buf)


_current: HostRun | None = None


#: Set by a failing callback; the host call's definition then jumps out of main.
_FAILED = ctypes.c_int(0)
_PY = "__hpvm_py."  # the callbacks' symbols
_ESCAPE = "__hpvm_c."  # the escape's symbols in the host module


def _guard(fn: Callable[..., Any], default: Any = None) -> Callable[..., Any]:
    """A callback body: an error is kept for ``run`` and the flag set, so the caller's
    definition jumps out of ``main`` (on another thread: parked; see the module docstring)."""

    def call(*args: Any) -> Any:
        run = _current
        if run is None:
            return default
        try:
            return fn(run, *args)
        except BaseException as e:  # noqa: BLE001 - C frames cannot unwind: hand it to run()
            if run.error is None:
                run.error = e
            run.failed.set()
            if threading.get_ident() != run.main_thread:
                threading.Event().wait()  # not main's thread: nowhere to jump to
            _FAILED.value = 1
            return default

    return call


_CALLBACKS: dict[str, Any] = {}
_SIGNATURES: dict[str, tuple[str, list[str]]] = {}  # name -> (LLVM result, LLVM parameters)
_LLVM_TYPES = {
    None: "void",
    _VOIDP: "ptr",
    ctypes.c_size_t: "i64",
    ctypes.c_uint: "i32",
    ctypes.c_int: "i32",
    ctypes.c_long: "i64",
    ctypes.c_char_p: "ptr",
    ctypes.c_double: "double",
    ctypes.c_float: "float",
}


def _register() -> None:
    """Create the callbacks once and register them, and the failure flag, as process symbols."""
    if _CALLBACKS:
        return
    import llvmlite.binding as llvm

    llvm.add_symbol(_ESCAPE + "failed", ctypes.addressof(_FAILED))
    specs: dict[str, tuple[Any, Callable[..., Any]]] = {
        "__hpvm__init": (ctypes.CFUNCTYPE(None), lambda r: r.init()),
        "__hpvm__cleanup": (ctypes.CFUNCTYPE(None), lambda r: r.cleanup()),
        "llvm_hpvm_track_mem": (ctypes.CFUNCTYPE(None, _VOIDP, ctypes.c_size_t), lambda r, p, n: r.track(p or 0, n)),
        "llvm_hpvm_untrack_mem": (ctypes.CFUNCTYPE(None, _VOIDP), lambda r, p: r.untrack(p or 0)),
        "llvm_hpvm_request_mem": (ctypes.CFUNCTYPE(None, _VOIDP, ctypes.c_size_t), lambda r, p, n: r.request(p or 0, n)),
        "__hpvm__launch": (
            ctypes.CFUNCTYPE(_VOIDP, ctypes.c_uint, _VOIDP, _VOIDP),
            lambda r, s, f, a: r.launch(s, f or 0, a or 0),
        ),
        "__hpvm__wait": (ctypes.CFUNCTYPE(None, _VOIDP), lambda r, h: r.wait(h or 0)),
        "__hpvm__push": (ctypes.CFUNCTYPE(None, _VOIDP, _VOIDP), lambda r, h, a: r.push(h or 0, a or 0)),
        "__hpvm__pop": (ctypes.CFUNCTYPE(_VOIDP, _VOIDP), lambda r, h: r.pop(h or 0)),
        **tensor_callbacks(),
    }  # fmt: skip
    for name, (proto, body) in specs.items():
        cb = proto(_guard(body))
        _CALLBACKS[name] = cb
        _SIGNATURES[name] = (_LLVM_TYPES[proto._restype_], [_LLVM_TYPES[t] for t in proto._argtypes_])
        llvm.add_symbol(_PY + name, ctypes.cast(cb, _VOIDP).value)


_DECLARE = re.compile(r"^declare\b[^@]*@([-\w.$]+)\((.*)\)")


def tensor_callbacks() -> dict[str, tuple[Any, Callable[..., Any]]]:
    """tensor_runtime.h's host calls (``tensorrt.py``)."""
    size, long_, int_ = ctypes.c_size_t, ctypes.c_long, ctypes.c_int
    return {
        "create4DTensor": (
            ctypes.CFUNCTYPE(_VOIDP, int_, int_, size, size, size, size),
            lambda r, t, f, a, b, c, d: r.tensors.create(t, f, (a, b, c, d)),
        ),
        "readTrainedWeights": (
            ctypes.CFUNCTYPE(_VOIDP, ctypes.c_char_p, int_, long_, long_, long_, long_),
            lambda r, p, t, a, b, c, d: r.tensors.read_weights((p or b"").decode(), t, (a, b, c, d)),
        ),
        "initTensorData": (
            ctypes.CFUNCTYPE(None, _VOIDP, _VOIDP, size),
            lambda r, t, p, n: r.tensors.init_data(t or 0, p or 0, n),
        ),
        "hpvm_request_tensor": (ctypes.CFUNCTYPE(None, _VOIDP, int_), lambda r, t, d: r.tensors.request(t or 0, d)),
        "freeTensor": (ctypes.CFUNCTYPE(None, _VOIDP), lambda r, t: r.tensors.free(t or 0)),
        "llvm_hpvm_initTensorRt": (ctypes.CFUNCTYPE(None, int_), lambda r, g: None),
        "llvm_hpvm_cleanupTensorRt": (ctypes.CFUNCTYPE(None), lambda r: r.tensors.clear()),
    }  # fmt: skip


def host_text(text: str, node_functions: set[str]) -> str:
    """The module with every node function's body replaced by ``unreachable`` (host code
    only), each host call defined around its callback, and ``main`` wrapped by the escape
    (``__hpvm_c.main``; see the module docstring)."""
    _register()
    module = Module.parse(text)
    lines = list(module.lines)
    for fn in sorted(module.functions.values(), key=lambda f: -f.start):
        if fn.name in node_functions:
            lines[fn.start : fn.end + 1] = [fn.define, "  unreachable", "}"]
    stubs: list[str] = []
    for k, line in enumerate(lines):
        m = _DECLARE.match(line)
        if m is not None and m.group(1) in _SIGNATURES:
            params = [p.split()[0] for p in split_top(m.group(2) + ")")[0]]
            stubs += _definition(m.group(1), params)
            lines[k] = ""
    main = module.functions.get("main")
    if main is not None:
        stubs += _escape([p.type for p in main.params])
    return "\n".join(lines + stubs) + "\n"


def _definition(name: str, declared: list[str]) -> list[str]:
    """``name`` defined with the program's declared parameters (``...``: the rest read with
    ``va_arg``), calling its callback, then jumping out of main if the callback failed."""
    result, wanted = _SIGNATURES[name]
    fixed = [t for t in declared if t != "..."]
    head = ", ".join([f"{t} %a{k}" for k, t in enumerate(fixed)] + (["..."] if "..." in declared else []))
    body = []
    args = [f"{t} %a{k}" for k, t in enumerate(fixed)]
    if "..." in declared:
        body += ["  %ap = alloca [32 x i8], align 16", "  call void @llvm.va_start.p0(ptr %ap)"]
        for k in range(len(fixed), len(wanted)):
            body.append(f"  %a{k} = va_arg ptr %ap, {wanted[k]}")
            args.append(f"{wanted[k]} %a{k}")
        body.append("  call void @llvm.va_end.p0(ptr %ap)")
    call = f'call {result} @"{_PY}{name}"({", ".join(args)})'
    body.append(f"  {call}" if result == "void" else f"  %r = {call}")
    body.append(f"  call void @{_ESCAPE}check()")
    body.append("  ret void" if result == "void" else f"  ret {result} %r")
    declare = f'declare {result} @"{_PY}{name}"({", ".join(wanted)})'
    return [declare, f"define {result} @{name}({head}) {{", *body, "}"]


def _escape(main_params: list[str]) -> list[str]:
    """The jump buffer, the check after each host call, and ``main``'s wrapper (taking
    ``argc, argv`` when ``main`` does; a third parameter, ``envp``, gets ``null``)."""
    params = "i32 %argc, ptr %argv" if main_params else ""
    actual = ["i32 %argc", "ptr %argv", *(f"{t} zeroinitializer" for t in main_params[2:])]
    return [
        f"@{_ESCAPE}jmp = internal global [64 x i64] zeroinitializer, align 16",
        f"@{_ESCAPE}failed = external global i32",
        "declare i32 @_setjmp(ptr) returns_twice",
        "declare void @longjmp(ptr, i32) noreturn",
        "declare void @llvm.va_start.p0(ptr)",
        "declare void @llvm.va_end.p0(ptr)",
        f"define internal void @{_ESCAPE}check() {{",
        f"  %f = load volatile i32, ptr @{_ESCAPE}failed",
        "  %c = icmp ne i32 %f, 0",
        "  br i1 %c, label %out, label %ok",
        "out:",
        f"  call void @longjmp(ptr @{_ESCAPE}jmp, i32 1)",
        "  unreachable",
        "ok:",
        "  ret void",
        "}",
        f"define i32 @{_ESCAPE}main({params}) {{",
        f"  %j = call i32 @_setjmp(ptr @{_ESCAPE}jmp) returns_twice",
        "  %jumped = icmp ne i32 %j, 0",
        "  br i1 %jumped, label %failed, label %run",
        "run:",
        f"  %r = call i32 @main({', '.join(actual[: max(len(main_params), 0)]) if main_params else ''})",
        "  ret i32 %r",
        "failed:",
        "  ret i32 -1",
        "}",
    ]


class HostProgram:
    """The JIT-compiled host code of one program (compiled on first run, then kept)."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self._engine: Any = None

    def engine(self) -> Any:
        if self._engine is None:
            import llvmlite.binding as llvm

            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _register()
            try:
                module = llvm.parse_assembly(self.text)
                module.verify()
            except RuntimeError as e:
                raise HPVMCError(f"{self.file}: the host code does not verify as LLVM IR: {e}") from None
            machine = llvm.Target.from_default_triple().create_target_machine(jit=True)
            module.triple = llvm.get_process_triple()
            engine = llvm.create_mcjit_compiler(module, machine)
            try:
                engine.finalize_object()
            except RuntimeError as e:
                raise HPVMCError(f"{self.file}: the host code cannot be linked here: {e}") from None
            self._module = module
            self._engine = engine
        return self._engine

    def address(self, name: str) -> int:
        return int(self.engine().get_function_address(name))

    def run_main(
        self,
        argv: Sequence[str],
        structs: dict[int, ArgStruct],
        roots: dict[int, Any],
        target: str | None,
        nargs: int,
    ) -> int:
        """Run ``main(argc, argv)`` (or ``main()``); its exit code."""
        global _current
        main = self.address(_ESCAPE + "main")
        if not main:
            raise HPVMCError(f"{self.file}: no main function; an HPVM-C program's host code starts at main")
        words = [self.file, *argv]
        c_argv = (ctypes.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)
        proto = (
            ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
            if nargs
            else ctypes.CFUNCTYPE(ctypes.c_int)
        )
        fn = proto(main)
        with _LOCK:
            run = HostRun(structs, roots, target)
            _current = run
            result: list[int] = []
            done = threading.Event()

            def go() -> None:
                run.main_thread = threading.get_ident()
                _FAILED.value = 0
                result.append(fn(len(words), ctypes.cast(c_argv, ctypes.c_void_p)) if nargs else fn())
                done.set()

            thread = threading.Thread(target=go, name=f"hpvm-c main of {self.file}", daemon=True)
            thread.start()
            while not done.wait(0.05):
                if run.failed.is_set():
                    thread.join(timeout=1.0)  # main's thread jumps out and ends at once
                    break
            _flush()
            _current = None
        if run.error is not None:
            err = run.error
            if isinstance(err, HPVMError):
                raise type(err)(f"{self.file}: while main ran: {err}") if isinstance(err, HPVMCError) else err
            raise HPVMCError(f"{self.file}: a host call failed: {type(err).__name__}: {err}") from err
        return int(result[0]) & 0xFF


def _flush() -> None:
    """Flush C's stdio buffers, so the program's output is out when run returns."""
    ctypes.CDLL(None).fflush(None)


__all__ = ["HostProgram", "HostRun", "host_text"]
