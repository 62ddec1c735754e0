"""hpvm — the Heterogeneous Parallel Virtual Machine in Python.

One portable program representation, a hierarchical dataflow graph with shared memory,
written once and run on several back ends. The names below are the fixed public API of
DESIGN.md (the HPVM-C API in snake_case); see docs/api.md.

``import hpvm`` loads the error classes only; every other name is loaded on its first use
(PEP 562's module ``__getattr__``): the Python front end and the IR load NumPy, the runtime
its back ends, the front ends lark, llvmlite or pydantic. A script, the CLI, a worker
process or a test pays for what it uses. The runtime is wired in here (``provide_host_from``)
and imported when a program first needs it.
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
    OptionError,
    OutOfBoundsError,
    ParseError,
    RuntimeStateError,
    StreamError,
    TensorShapeError,
    TracingError,
    TypeAnnotationError,
    VerificationError,
)
from .ir import host as _host
from .ir import pictures as _pictures
from .ir.lazy import lazy_attributes

__version__ = "0.1.0"

# the public names by the submodule that defines each, loaded on first use ("module:" when the
# name is the submodule itself)
_NAMES_FROM = {
    "lang": (  # the Python front end: hpvm.lang.__all__ (tests/test_package.py checks it)
        "atomic_add",
        "atomic_and",
        "atomic_max",
        "atomic_min",
        "atomic_or",
        "atomic_sub",
        "atomic_xchg",
        "atomic_xor",
        "barrier",
        "bind_in",
        "bind_out",
        "create_node",
        "create_node_1d",
        "create_node_2d",
        "create_node_3d",
        "create_node_nd",
        "edge",
        "get_node",
        "get_node_instance_id_x",
        "get_node_instance_id_y",
        "get_node_instance_id_z",
        "get_num_dims",
        "get_num_node_instances_x",
        "get_num_node_instances_y",
        "get_num_node_instances_z",
        "get_parent_node",
        "internal",
        "leaf",
        "malloc",
    ),
    "ir.expr": (
        "size_max",
        "size_min",
    ),
    "ir.graph": (
        "ALL_TO_ALL",
        "CPU_TARGET",
        "GPU_TARGET",
        "ONE_TO_ONE",
        "TENSOR_TARGET",
    ),
    "ir.layouts": ("Layout",),
    "ir.types": (
        "Array",
        "bool_",
        "f32",
        "f64",
        "i8",
        "i16",
        "i32",
        "i64",
        "node_t",
        "u8",
        "u16",
        "u32",
        "u64",
    ),
    "ir.verify": ("verify",),
    "runtime": (  # the host API
        "cleanup",
        "init",
        "launch",
        "mark_host_modified",
        "memory_stats",
        "pop",
        "push",
        "request_memory",
        "track_memory",
        "untrack_memory",
        "wait",
    ),
    "tensor:": ("tensor",),  # hpvm.tensor.<op> in leaf code (importing it does not import torch)
}
_PUBLIC = {name: module for module, names in _NAMES_FROM.items() for name in names}

# front ends and the SVM: hpvm.hbir, hpvm.llvm, hpvm.c, hpvm.svm (not in __all__)
_LAZY_MODULES = {
    "hbir": "the HBIR front end loads lark",
    "llvm": "the LLVM front end loads llvmlite (and Numba to export leaves)",
    "svm": "the Streaming Virtual Machine loads its runtime and, for metadata, pydantic",
    "c": "the HPVM-C front end loads llvmlite (and runs clang when it compiles)",
}

__all__ = [  # the error classes (imported above), then every lazily loaded name
    "BackendUnavailableError",
    "BarrierError",
    "ClusterError",
    "CompileError",
    "DataRaceError",
    "DeviceLimitError",
    "DisagreementError",
    "HPVMError",
    "HPVMWarning",
    "IllegalWriteError",
    "LaunchError",
    "MemoryTrackingError",
    "NodeExecutionError",
    "OptionError",
    "OutOfBoundsError",
    "ParseError",
    "RuntimeStateError",
    "StreamError",
    "TensorShapeError",
    "TracingError",
    "TypeAnnotationError",
    "VerificationError",
]
__all__ += sorted(_PUBLIC)

__getattr__ = lazy_attributes(__name__, {**_PUBLIC, **{name: f"{name}:" for name in _LAZY_MODULES}})

_host.provide_host_from(f"{__name__}.runtime")


def _draw_program(fn: object, path: object) -> object:
    """Node functions' pictures in notebooks (``ir/pictures.py``): ``hpvm show``'s drawing,
    imported on first use (``import hpvm`` loads no plotting library)."""
    from .viz import render

    return render(fn, path, fmt="svg")  # type: ignore[arg-type]


_pictures.draw_program = _draw_program
