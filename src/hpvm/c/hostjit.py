"""Running an HPVM-C program's host code: its ``main``, in a shared library built from the
program (``hostlib.py``, ``hosttext.py``), with the HPVM-C host calls answered by hpvm's
runtime.

Each host call (``__hpvm__init``, ``__hpvm__launch``, ``llvm_hpvm_track_mem``, the tensor
runtime's...) is a ctypes callback made for one run, whose address goes into the
library's function pointer ``__hpvm_py.<name>``; the library defines ``<name>`` with the
signature the program declared, calling through it — so the program's own machine code
calls into the runtime (``hpvm.ir.host``: this front end sits below the runtime and
reaches it through that interface). ``CALLBACKS`` gathers every host call's spec, ``name:
(ctypes.CFUNCTYPE(...), body(run, *args))``, in one place (the tensor runtime's come from
``tensor_callbacks()``).

**A run is a process of its own.** Each run loads its own instance of the library (fresh
globals, its own callbacks), runs ``main`` on a thread of its own, and gets a fresh hpvm
runtime (``new_host()``: its own memory tracker, workers and handles, cleaned up when
``main`` is done), which every callback installs for its thread (``using_host``) — so the
tensor runtime and every ``host()`` call answer the run's own runtime. Two programs (or
two runs of one) in one process run one after the other or at the same time; nothing is
global, and no lock orders them.

**A failing host call** (an untracked array, an error in a node surfacing at
``__hpvm__wait``) cannot raise through C frames: its callback records the error, sets the
library's failure flag and returns; the library jumps out of ``main`` (hosttext.py) and
``run`` raises the error. A failure in a host call made on another thread than ``main``'s
(a program's own pthread) cannot jump there: that thread is parked for good, and the
library stays loaded (its code is still on that thread's stack).
"""

from __future__ import annotations

import ctypes
import functools
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HPVMError
from ..ir.host import host, new_host, using_host
from .argstruct import ArgStruct, byte_view
from .crashreport import reporting
from .errors import HPVMCError
from .hostlib import LoadedLibrary, build
from .hosttext import FAILED, MAIN, PY, ROOTS, UNCAUGHT, HostCall, host_module
from .tensorrt import TensorRuntime, tensor_callbacks

_VOIDP = ctypes.c_void_p
_KEPT: list[Any] = []  # libraries (and their callbacks) a thread may still be running in


@dataclass
class _Launch:
    """One ``__hpvm__launch``: the runtime's handle, the argument struct and its layout."""

    struct: ArgStruct
    handle: Any
    args_address: int
    stream: bool
    popped: list[Any] = field(default_factory=list)  # buffers pop returned: alive until run ends


class HostRun:
    """The state of one run of ``main``: its runtime, tracked views, launches, the first
    error."""

    main_thread: int | None = None  # the thread running main (a failure there jumps out)

    def __init__(self, structs: dict[int, ArgStruct], roots: dict[int, Any], target: str | None):
        self.structs = structs  # root function address → its argument struct
        self.roots = roots  # root function address → hpvm root node function
        self.target = target
        self.host = new_host()  # this run's runtime (host() answers it in the callbacks)
        self.views: dict[int, np.ndarray] = {}
        # How many llvm_hpvm_track_mem calls each tracked address has had: each untrack pairs
        # with one, so a program tracking one pointer twice (two empty std::vectors: NULL) and
        # untracking it twice is right, and the memory stays tracked until the last untrack.
        self.track_counts: dict[int, int] = {}
        self.untracked: set[int] = set()  # (addresses untracked before: the message says so)
        self.launches: dict[int, _Launch] = {}
        self.tensors = TensorRuntime()  # tensor_runtime.h's tensors
        self.error: BaseException | None = None
        self.failed = threading.Event()
        self.parked = 0  # threads of the program's own parked by a failure (see the docstring)
        self.flag: Any = None  # the library's failure flag (a ctypes int over its memory)

    def fail(self, error: BaseException) -> None:
        """Keep the first error for ``run``; tell the library to jump out of ``main``."""
        if self.error is None:
            self.error = error
        self.failed.set()
        if self.flag is not None:
            self.flag.value = 1

    def uncaught(self, type_name: bytes | None, what: bytes | None) -> None:
        """An exception left ``main`` (or a static constructor): C++ would terminate."""
        shown = (type_name or b"?").decode(errors="replace")
        said = f": {what.decode(errors='replace')}" if what is not None else ""
        raise HPVMCError(
            f"main ended with an uncaught C++ exception {shown}{said} (C++ would call std::terminate "
            "and end the process); catch it in main, or return an exit code"
        )

    def callbacks(self) -> dict[str, Any]:
        """This run's callback of every host call (kept alive by the caller while the library
        may call them)."""
        return {name: proto(_guard(self, body)) for name, (proto, body) in CALLBACKS.items()}

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
        self.track_counts.clear()
        self.tensors.forget_tracking()

    def track(self, address: int, size: int) -> None:
        known = self.views.get(address)
        arr = known if known is not None and known.nbytes >= size else byte_view(address, size)
        self.views[address] = arr
        self.track_counts[address] = self.track_counts.get(address, 0) + 1
        host().track_memory(arr)  # (again: harmless; a larger extent replaces the smaller)

    def untrack(self, address: int) -> None:
        count = self.track_counts.get(address, 0)
        if count == 0:
            raise HPVMCError(
                f"llvm_hpvm_untrack_mem({address:#x}): that pointer is not tracked"
                + (
                    " (any more: each llvm_hpvm_track_mem pairs with one untrack)"
                    if address in self.untracked
                    else ""
                )
                + "; track it with llvm_hpvm_track_mem(ptr, bytes) first"
            )
        if count > 1:  # (tracked more than once: tracked until its last untrack)
            self.track_counts[address] = count - 1
            return
        del self.track_counts[address]
        self.untracked.add(address)
        host().untrack_memory(self.views.pop(address))

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


def _guard(run: HostRun, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A callback body for ``run``: the run's runtime is ``host()`` while it runs; an error is
    kept for ``run`` and the flag set, so the caller's definition jumps out of ``main`` (on
    another thread, while main runs: parked; see the module docstring)."""

    def call(*args: Any) -> Any:
        try:
            with using_host(run.host):
                return fn(run, *args)
        except BaseException as e:  # noqa: BLE001 - C frames cannot unwind: hand it to run()
            run.fail(e)
            if threading.get_ident() != run.main_thread and run.main_thread is not None:
                run.parked += 1
                threading.Event().wait()  # not main's thread: nowhere to jump to
            return None

    return call


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


def host_callbacks() -> dict[str, tuple[Any, Callable[..., Any]]]:
    """hpvm.h's host calls: init and cleanup, memory tracking, launch, wait, push, pop (and
    ``UNCAUGHT``, which the library's wrapper of ``main`` calls; no program declares it)."""
    return {
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
        UNCAUGHT: (ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p), lambda r, t, w: r.uncaught(t, w)),
    }  # fmt: skip


#: Every host call Python answers: ``name → (ctypes.CFUNCTYPE(...), body(run, *args))``.
CALLBACKS: dict[str, tuple[Any, Callable[..., Any]]] = {**host_callbacks(), **tensor_callbacks()}


@functools.cache
def host_calls() -> dict[str, HostCall]:
    """The C signature of every host call, as LLVM types (what ``hosttext.py`` defines)."""
    return {
        name: HostCall(_LLVM_TYPES[proto._restype_], tuple(_LLVM_TYPES[t] for t in proto._argtypes_))
        for name, (proto, _) in CALLBACKS.items()
    }


class HostProgram:
    """The host code of one program: its module, built into a library on first run (then
    kept, and cached across processes by ``hostlib.py``)."""

    def __init__(self, text: str, node_functions: set[str], roots: list[str], cxx: bool, label: str):
        module = host_module(text, node_functions, roots, host_calls(), cxx)
        self.text = module.text
        self.main_params = module.main_params
        self.roots = roots
        self.cxx = cxx
        self.label = label
        self._path: Any = None
        self._lock = threading.Lock()

    def library(self) -> Any:
        """The path of the built library."""
        with self._lock:
            if self._path is None or not self._path.is_file():  # (built, or pruned since)
                self._path = build(self.text, self.cxx, self.label)
            return self._path

    def run_main(
        self,
        argv: Sequence[str],
        structs: dict[str, ArgStruct],
        roots: dict[str, Any],
        target: str | None,
        program: str,
    ) -> int:
        """Run ``main(argc, argv)`` (or ``main()``) in a fresh instance of the library; its
        exit code. ``structs`` / ``roots``: each root's argument struct and hpvm root, by
        symbol; ``program``: ``argv[0]``."""
        if self.main_params is None:
            raise HPVMCError(
                f"{self.label}: no main function in the program; an HPVM-C program's host code "
                "starts at main (give the file that defines it)"
            )
        lib = LoadedLibrary(self.library())
        table = lib.address(ROOTS)
        addresses = list((ctypes.c_uint64 * len(self.roots)).from_address(table)) if self.roots else []
        run = HostRun(
            {a: structs[n] for a, n in zip(addresses, self.roots)},
            {a: roots[n] for a, n in zip(addresses, self.roots)},
            target,
        )
        run.flag = lib.variable(ctypes.c_int, FAILED)
        callbacks = run.callbacks()
        for name, cb in callbacks.items():
            lib.variable(_VOIDP, PY + name).value = ctypes.cast(cb, _VOIDP).value
        words = [program, *argv]
        c_argv = (ctypes.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)
        nargs = len(self.main_params)
        proto = (
            ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, _VOIDP) if nargs else ctypes.CFUNCTYPE(ctypes.c_int)
        )
        fn = proto(lib.address(MAIN))
        result: list[int] = []
        done = threading.Event()

        def go() -> None:
            run.main_thread = threading.get_ident()
            result.append(fn(len(words), ctypes.cast(c_argv, _VOIDP)) if nargs else fn())
            done.set()

        thread = threading.Thread(target=go, name=f"hpvm-c main of {program}", daemon=True)
        with reporting(self.label):  # a crash names its C function (crash_report.c)
            try:
                thread.start()
                while not done.wait(0.05):
                    if run.failed.is_set():
                        thread.join(timeout=1.0)  # main's thread jumps out and ends at once
                        break
                else:
                    thread.join()  # main returned: its thread ends now
            finally:  # (also when the wait is interrupted: Ctrl-C)
                _flush()
                if thread.is_alive() or run.parked:
                    _KEPT.append((lib, callbacks))  # its code is still on a thread's stack: never unloaded
                else:
                    lib.close()
        self._finish(run)
        return int(result[0]) & 0xFF

    def _finish(self, run: HostRun) -> None:
        """The run's runtime cleaned up (as the end of a process would); the run's error raised."""
        cleanup_error: BaseException | None = None
        if run.host is not host():
            try:
                run.host.cleanup()
            except HPVMError as e:
                cleanup_error = e
        err = run.error or cleanup_error
        if err is None:
            return
        if isinstance(err, HPVMCError):  # (its precise class kept: CMemoryTrackingError...)
            raise type(err)(f"{self.label}: while main ran: {err}")
        if isinstance(err, HPVMError):
            raise in_c_terms(err, self.label) from None
        raise HPVMCError(f"{self.label}: a host call failed: {type(err).__name__}: {err}") from err


#: The Python API's names in the runtime's messages → the HPVM-C calls a C program made.
C_API = {
    "hpvm.track_memory": "llvm_hpvm_track_mem",
    "hpvm.untrack_memory": "llvm_hpvm_untrack_mem",
    "hpvm.request_memory": "llvm_hpvm_request_mem",
    "hpvm.launch": "__hpvm__launch",
    "hpvm.wait": "__hpvm__wait",
    "hpvm.push": "__hpvm__push",
    "hpvm.pop": "__hpvm__pop",
    "hpvm.init": "__hpvm__init",
    "hpvm.cleanup": "__hpvm__cleanup",
    "stream=True": "__hpvm__launch(1, ...)",
}
_PY_NAMES = re.compile("|".join(re.escape(k) for k in sorted(C_API, key=len, reverse=True)))


def in_c_terms(err: HPVMError, label: str) -> HPVMError:
    """The runtime's error, of the same class, as a C program should read it: its host calls'
    C names (``llvm_hpvm_track_mem``, not ``hpvm.track_memory``) and the program's files."""
    message = _PY_NAMES.sub(lambda m: C_API[m.group(0)], str(err))
    try:
        made = type(err)(f"{label}: while main ran: {message}")
    except TypeError:  # an error class with other constructor arguments: keep it as it is
        return err
    made.__cause__ = err.__cause__
    return made


def _flush() -> None:
    """Flush C's stdio buffers, so the program's output is out when run returns."""
    ctypes.CDLL(None).fflush(None)


__all__ = ["CALLBACKS", "HostProgram", "HostRun", "host_callbacks", "host_calls", "tensor_callbacks"]
