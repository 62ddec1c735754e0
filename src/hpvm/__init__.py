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

# name → the submodule that defines it ("module:" when the name is the submodule)
_PUBLIC = {
    # the Python front end (hpvm.lang.__all__)
    "atomic_add": "lang",
    "atomic_and": "lang",
    "atomic_max": "lang",
    "atomic_min": "lang",
    "atomic_or": "lang",
    "atomic_sub": "lang",
    "atomic_xchg": "lang",
    "atomic_xor": "lang",
    "barrier": "lang",
    "bind_in": "lang",
    "bind_out": "lang",
    "create_node": "lang",
    "create_node_1d": "lang",
    "create_node_2d": "lang",
    "create_node_3d": "lang",
    "create_node_nd": "lang",
    "edge": "lang",
    "get_node": "lang",
    "get_node_instance_id_x": "lang",
    "get_node_instance_id_y": "lang",
    "get_node_instance_id_z": "lang",
    "get_num_dims": "lang",
    "get_num_node_instances_x": "lang",
    "get_num_node_instances_y": "lang",
    "get_num_node_instances_z": "lang",
    "get_parent_node": "lang",
    "internal": "lang",
    "leaf": "lang",
    "malloc": "lang",
    # the IR
    "size_max": "ir.expr",
    "size_min": "ir.expr",
    "ALL_TO_ALL": "ir.graph",
    "CPU_TARGET": "ir.graph",
    "GPU_TARGET": "ir.graph",
    "ONE_TO_ONE": "ir.graph",
    "TENSOR_TARGET": "ir.graph",
    "Layout": "ir.layouts",
    "Array": "ir.types",
    "bool_": "ir.types",
    "f32": "ir.types",
    "f64": "ir.types",
    "i8": "ir.types",
    "i16": "ir.types",
    "i32": "ir.types",
    "i64": "ir.types",
    "node_t": "ir.types",
    "u8": "ir.types",
    "u16": "ir.types",
    "u32": "ir.types",
    "u64": "ir.types",
    "verify": "ir.verify",
    # the host API (the runtime)
    "cleanup": "runtime",
    "init": "runtime",
    "launch": "runtime",
    "mark_host_modified": "runtime",
    "memory_stats": "runtime",
    "pop": "runtime",
    "push": "runtime",
    "request_memory": "runtime",
    "track_memory": "runtime",
    "untrack_memory": "runtime",
    "wait": "runtime",
    # hpvm.tensor.<op> in leaf code (importing it does not import torch)
    "tensor": "tensor:",
}

# front ends and the SVM: hpvm.hbir, hpvm.llvm, hpvm.c, hpvm.svm (not in __all__)
_LAZY_MODULES = {
    "hbir": "the HBIR front end loads lark",
    "llvm": "the LLVM front end loads llvmlite (and Numba to export leaves)",
    "svm": "the Streaming Virtual Machine loads its runtime and, for metadata, pydantic",
    "c": "the HPVM-C front end loads llvmlite (and runs clang when it compiles)",
}

__all__ = [  # the public names (tests/test_public_api.py checks them against _PUBLIC and errors)
    "ALL_TO_ALL",
    "Array",
    "atomic_add",
    "atomic_and",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_sub",
    "atomic_xchg",
    "atomic_xor",
    "BackendUnavailableError",
    "barrier",
    "BarrierError",
    "bind_in",
    "bind_out",
    "bool_",
    "cleanup",
    "ClusterError",
    "CompileError",
    "CPU_TARGET",
    "create_node",
    "create_node_1d",
    "create_node_2d",
    "create_node_3d",
    "create_node_nd",
    "DataRaceError",
    "DeviceLimitError",
    "DisagreementError",
    "edge",
    "f32",
    "f64",
    "get_node",
    "get_node_instance_id_x",
    "get_node_instance_id_y",
    "get_node_instance_id_z",
    "get_num_dims",
    "get_num_node_instances_x",
    "get_num_node_instances_y",
    "get_num_node_instances_z",
    "get_parent_node",
    "GPU_TARGET",
    "HPVMError",
    "HPVMWarning",
    "i16",
    "i32",
    "i64",
    "i8",
    "IllegalWriteError",
    "init",
    "internal",
    "launch",
    "LaunchError",
    "Layout",
    "leaf",
    "malloc",
    "mark_host_modified",
    "memory_stats",
    "MemoryTrackingError",
    "node_t",
    "NodeExecutionError",
    "ONE_TO_ONE",
    "OutOfBoundsError",
    "ParseError",
    "pop",
    "push",
    "request_memory",
    "RuntimeStateError",
    "size_max",
    "size_min",
    "StreamError",
    "tensor",
    "TENSOR_TARGET",
    "TensorShapeError",
    "TracingError",
    "track_memory",
    "TypeAnnotationError",
    "u16",
    "u32",
    "u64",
    "u8",
    "untrack_memory",
    "VerificationError",
    "verify",
    "wait",
]

__getattr__ = lazy_attributes(__name__, {**_PUBLIC, **{name: f"{name}:" for name in _LAZY_MODULES}})

_host.provide_host_from(f"{__name__}.runtime")


def _draw_program(fn: object, path: object) -> object:
    """Node functions' pictures in notebooks (``ir/pictures.py``): ``hpvm show``'s drawing,
    imported on first use (``import hpvm`` loads no plotting library)."""
    from .viz import render

    return render(fn, path, fmt="svg")  # type: ignore[arg-type]


_pictures.draw_program = _draw_program
