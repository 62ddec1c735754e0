"""hpvm — the Heterogeneous Parallel Virtual Machine in Python.

One portable program representation, a hierarchical dataflow graph with shared memory,
written once and run on several back ends. The names below are the fixed public API of
DESIGN.md (the HPVM-C API in snake_case); see docs/api.md.
"""

from .errors import (
    BackendUnavailableError,
    BarrierError,
    ClusterError,
    CompileError,
    DataRaceError,
    DeviceLimitError,
    DisagreementError,
    HPVMError,
    HPVMWarning,
    IllegalWriteError,
    LaunchError,
    MemoryTrackingError,
    NodeExecutionError,
    OutOfBoundsError,
    ParseError,
    RuntimeStateError,
    StreamError,
    TensorShapeError,
    TracingError,
    TypeAnnotationError,
    VerificationError,
)
from .ir import pictures as _pictures
from .ir.expr import size_max, size_min
from .ir.graph import ALL_TO_ALL, CPU_TARGET, GPU_TARGET, ONE_TO_ONE, TENSOR_TARGET
from .ir.layouts import Layout
from .ir.types import Array, bool_, f32, f64, i8, i16, i32, i64, node_t, u8, u16, u32, u64
from .ir.verify import verify
from .lang import *  # noqa: F403 — the frontend's names are the public API
from .lang import __all__ as _lang_all

__version__ = "0.1.0"

from . import tensor  # hpvm.tensor.<op> in leaf code (importing it does not import torch)
from .runtime import (
    cleanup,
    init,
    launch,
    mark_host_modified,
    memory_stats,
    pop,
    push,
    request_memory,
    track_memory,
    untrack_memory,
    wait,
)

__all__ = [
    *_lang_all,
    "ALL_TO_ALL",
    "Array",
    "BackendUnavailableError",
    "BarrierError",
    "ClusterError",
    "CPU_TARGET",
    "CompileError",
    "DataRaceError",
    "DeviceLimitError",
    "DisagreementError",
    "GPU_TARGET",
    "HPVMError",
    "HPVMWarning",
    "IllegalWriteError",
    "LaunchError",
    "Layout",
    "MemoryTrackingError",
    "NodeExecutionError",
    "ONE_TO_ONE",
    "OutOfBoundsError",
    "ParseError",
    "RuntimeStateError",
    "StreamError",
    "TENSOR_TARGET",
    "TensorShapeError",
    "TracingError",
    "TypeAnnotationError",
    "VerificationError",
    "bool_",
    "cleanup",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "init",
    "launch",
    "mark_host_modified",
    "memory_stats",
    "node_t",
    "pop",
    "push",
    "request_memory",
    "size_max",
    "size_min",
    "tensor",
    "track_memory",
    "u8",
    "u16",
    "u32",
    "u64",
    "untrack_memory",
    "verify",
    "wait",
]


_LAZY_MODULES = {
    "hbir": "the HBIR front end loads lark",
    "llvm": "the LLVM front end loads llvmlite (and Numba to export leaves)",
    "svm": "the Streaming Virtual Machine loads its runtime and, for metadata, pydantic",
    "c": "the HPVM-C front end loads llvmlite (and runs clang when it compiles)",
}


def __getattr__(name: str) -> object:
    """``hpvm.hbir``, ``hpvm.llvm``, ``hpvm.c`` and ``hpvm.svm`` are imported on first use, so that ``import hpvm`` stays
    cheap (see ``_LAZY_MODULES`` for what each would load); ``from hpvm import svm`` works
    as usual."""
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _draw_program(fn: object, path: object) -> object:
    """Node functions' pictures in notebooks (``ir/pictures.py``): ``hpvm show``'s drawing,
    imported on first use (``import hpvm`` loads no plotting library)."""
    from .viz import render

    return render(fn, path, fmt="svg")  # type: ignore[arg-type]


_pictures.draw_program = _draw_program
