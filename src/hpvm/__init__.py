"""hpvm — the Heterogeneous Parallel Virtual Machine in Python.

One portable program representation, a hierarchical dataflow graph with shared memory,
written once and run on several back ends. The names below are the fixed public API of
DESIGN.md (the HPVM-C API in snake_case); see docs/api.md.
"""

from .errors import (
    BackendUnavailableError,
    BarrierError,
    CompileError,
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
    TracingError,
    TypeAnnotationError,
    VerificationError,
)
from .ir.expr import size_max, size_min
from .ir.graph import ALL_TO_ALL, CPU_TARGET, GPU_TARGET, ONE_TO_ONE, TENSOR_TARGET
from .ir.types import Array, bool_, f32, f64, i8, i16, i32, i64, node_t, u8, u16, u32, u64
from .ir.verify import verify
from .lang import *  # noqa: F403 — the frontend's names are the public API
from .lang import __all__ as _lang_all

__version__ = "0.1.0"
from .runtime import cleanup, init, launch, pop, push, request_memory, track_memory, untrack_memory, wait

__all__ = [
    *_lang_all,
    "ALL_TO_ALL",
    "Array",
    "BackendUnavailableError",
    "BarrierError",
    "CPU_TARGET",
    "CompileError",
    "DisagreementError",
    "GPU_TARGET",
    "HPVMError",
    "HPVMWarning",
    "IllegalWriteError",
    "LaunchError",
    "MemoryTrackingError",
    "NodeExecutionError",
    "ONE_TO_ONE",
    "OutOfBoundsError",
    "ParseError",
    "RuntimeStateError",
    "StreamError",
    "TENSOR_TARGET",
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
    "node_t",
    "pop",
    "push",
    "request_memory",
    "size_max",
    "size_min",
    "track_memory",
    "u8",
    "u16",
    "u32",
    "u64",
    "untrack_memory",
    "verify",
    "wait",
]
