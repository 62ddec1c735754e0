"""The tensor runtime of HPVM-C host code (``tensor_runtime.h``), answered in Python.

Why. HPVM's DNN programs make their tensors with HPVM's tensor runtime (``create4DTensor``,
``readTrainedWeights``, ``readInputBatch``), pass them to the graph as ``void *``, read
results through ``struct Tensor`` and score them (``computeAccuracy3``). Here a tensor is a
NumPy ``float32`` array owned by this registry, and C sees a ``struct Tensor`` (HPVM's
layout, as ``tensor_runtime.h`` declares it) whose ``host_data`` points at the array's
memory and whose ``dims`` holds the extents. The registry maps the struct's address — the
``void *`` C passes around — to the array: ``__hpvm__launch`` reads a tensor port's pointer
through it, and the tensors a graph returns are registered here before C sees them.

Memory follows HPVM's runtime. Every tensor made is remembered until ``startMemTracking``
forgets the list; ``freeBatchMemory`` frees the tensors on it (a batch's input and
results). ``freeTensor`` frees a tensor's data and leaves its struct readable with
``host_data`` NULL (here every struct stays allocated until the run ends, so a program
reading a freed tensor's fields reads NULL rather than freed memory). HPVM-C programs do not
call ``llvm_hpvm_track_mem`` on tensors, and read weights before ``__hpvm__init``, so a tensor
is tracked by hpvm's memory tracker when a launch first passes it, untracked when freed, and
forgotten by ``__hpvm__cleanup`` as the tracker forgets everything.

``tensor_callbacks`` gives the host calls in the form ``hostjit`` registers: name →
(C signature as a ctypes function type, body taking the run and the C arguments).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.host import host
from .errors import HPVMCError
from .tensoraccuracy import RunningAccuracy, report_batch, report_final, write_final
from .tensorfiles import c_copy, c_values, read_values

FLOAT_TYPE = 0  # HPVM's float_type (cuDNN's CUDNN_DATA_FLOAT)
NCHW = 0  # HPVM's nchw (CUDNN_TENSOR_NCHW)
HOST = 0  # HPVM's data_location_t HOST


class Dimension(ctypes.Structure):
    _fields_ = [("num_dims", ctypes.c_int), ("dim_sizes", ctypes.POINTER(ctypes.c_size_t))]


class TensorStruct(ctypes.Structure):
    """``struct Tensor`` of HPVM's tensor.h, field by field (cuDNN descriptors and device
    pointers are pointers, NULL here)."""

    _fields_ = [
        ("data_type", ctypes.c_int),
        ("cur_type", ctypes.c_int),
        ("data_format", ctypes.c_int),
        ("data_placement", ctypes.c_int),  # enum data_location_t
        ("tensor_desc", ctypes.c_void_p),
        ("filter_desc", ctypes.c_void_p),
        ("tensor_half_desc", ctypes.c_void_p),
        ("filter_half_desc", ctypes.c_void_p),
        ("host_data", ctypes.c_void_p),
        ("gpu_data", ctypes.c_void_p),
        ("gpu_half_data", ctypes.c_void_p),
        ("num_elems", ctypes.c_size_t),
        ("size_in_bytes", ctypes.c_size_t),
        ("dims", Dimension),
    ]


@dataclass
class _Entry:
    """A registered tensor: its C struct, its extents' C array and its data."""

    struct: TensorStruct
    extents: ctypes.Array  # type: ignore[type-arg]
    array: np.ndarray
    tracked: dict[int, np.ndarray] = field(default_factory=dict)  # rank → the tracked view


class TensorRuntime:
    """The tensors of one run of ``main``, by the address of their ``struct Tensor``."""

    def __init__(self) -> None:
        self.tensors: dict[int, _Entry] = {}
        self.freed: dict[int, _Entry] = {}  # structs of freed tensors: readable until the run ends
        self.made: list[int] = []  # made since startMemTracking / freeBatchMemory (HPVM's obj_ptr)
        self.running = RunningAccuracy()  # the runtime controller's average accuracy

    def register(self, array: np.ndarray) -> int:
        """A new ``struct Tensor`` over ``array`` (made float32, C-contiguous; 4-D as HPVM's
        results are: (N, M) is (N, M, 1, 1), (C,) is (1, C, 1, 1)); its address."""
        array = np.asarray(array)
        if array.ndim == 2:
            array = array.reshape(*array.shape, 1, 1)
        elif array.ndim == 1:
            array = array.reshape(1, array.shape[0], 1, 1)
        return self._add(array)

    def _add(self, array: np.ndarray) -> int:
        """A new ``struct Tensor`` over ``array`` with its extents as they are."""
        array = np.ascontiguousarray(array, dtype=np.float32)
        extents = (ctypes.c_size_t * array.ndim)(*array.shape)
        st = TensorStruct()
        st.data_type = st.cur_type = FLOAT_TYPE
        st.data_format = NCHW
        st.data_placement = HOST
        st.host_data = array.ctypes.data if array.size else None
        st.num_elems = array.size
        st.size_in_bytes = array.nbytes
        st.dims.num_dims = array.ndim
        st.dims.dim_sizes = ctypes.cast(extents, ctypes.POINTER(ctypes.c_size_t))
        address = ctypes.addressof(st)
        self.tensors[address] = _Entry(st, extents, array)
        self.made.append(address)
        return address

    def entry(self, address: int, api: str) -> _Entry:
        """The tensor at ``address``; ``HPVMCError`` naming ``api`` if there is none."""
        entry = self.tensors.get(address)
        if entry is not None:
            return entry
        if address in self.freed:
            raise HPVMCError(
                f"{api}: the tensor at {address:#x} was freed (freeTensor, or freeBatchMemory after "
                "startMemTracking); free a tensor after its last use"
            )
        raise HPVMCError(
            f"{api}: {address:#x} is not a tensor of the tensor runtime; make tensors with "
            "create4DTensor, readTrainedWeights or readInputBatch (tensor_runtime.h)"
        )

    def array(self, address: int, api: str) -> np.ndarray:
        return self.entry(address, api).array

    def launch_value(self, address: int, api: str, rank: int = 4) -> np.ndarray:
        """The array a launch passes for the tensor at ``address`` to a port of ``rank``,
        tracked from now on. A rank-1 port (per-channel operands: batchnorm's, a bias added
        to a mul result) takes HPVM's (1, C, 1, 1) tensor as its (C,) view; a rank-2 port
        (mul's weights) HPVM's (1, 1, K, M) as (K, M), or a (K, M) tensor of create2DTensor
        as it is (tensorports.py)."""
        entry = self.entry(address, api)
        view = entry.tracked.get(rank)
        if view is not None:
            return view
        array = _port_view(api, entry.array, rank)
        host().track_memory(array)
        entry.tracked[rank] = array
        return array

    def forget_tracking(self) -> None:
        """``__hpvm__cleanup`` made the tracker forget every array."""
        for entry in self.tensors.values():
            entry.tracked.clear()

    # -- making tensors --------------------------------------------------------------------
    def create(self, data_type: int, data_format: int, dims: tuple[int, ...]) -> int:
        _check_kind("create4DTensor", data_type, data_format)
        return self._add(np.zeros(_shape("create4DTensor", dims), np.float32))

    def create_2d(self, data_type: int, dims: tuple[int, int]) -> int:
        _check_kind("create2DTensor", data_type, NCHW)
        return self._add(np.zeros(_shape("create2DTensor", dims), np.float32))

    def read_weights(self, path: str, data_type: int, dims: tuple[int, ...]) -> int:
        api = "readTrainedWeights"
        _check_kind(api, data_type, NCHW)
        shape = _shape(api, dims)
        return self._add(read_values(api, path, "float32", 0, int(np.prod(shape))).reshape(shape))

    def read_input_batch(self, path: str, data_type: int, start: int, end: int, dims: tuple[int, ...]) -> int:
        api = "readInputBatch"
        _check_kind(api, data_type, NCHW)
        if not 0 <= start < end:
            raise HPVMCError(f"{api}({path!r}): images {start} .. {end - 1}; give 0 <= start < end")
        shape = _shape(api, (end - start, *dims))
        image = int(np.prod(shape[1:]))
        return self._add(read_values(api, path, "float32", start * image, int(np.prod(shape))).reshape(shape))

    def init_data(self, address: int, data: int, size: int) -> None:
        array = self.array(address, "initTensorData")
        if size != array.nbytes:
            raise HPVMCError(
                f"initTensorData: {size} bytes into a tensor of {array.nbytes}; copy exactly its "
                "size_in_bytes, as HPVM's runtime requires"
            )
        if size and not data:
            raise HPVMCError("initTensorData: the data pointer is NULL")
        ctypes.memmove(array.ctypes.data, data, size)

    # -- memory ----------------------------------------------------------------------------
    def request(self, address: int, destination: int) -> None:
        entry = self.entry(address, "hpvm_request_tensor")
        if destination not in (0, 1):
            raise HPVMCError(
                f"hpvm_request_tensor: destination {destination}; 0 is the host (1, HPVM's GPU, is the "
                "host too here)"
            )
        for view in entry.tracked.values():
            host().request_memory(view)

    def free(self, address: int) -> None:
        """``freeTensor``: the data released, the struct kept with ``host_data`` NULL (freeing
        a freed tensor does nothing, as HPVM's ``free(NULL)``)."""
        if address in self.freed:
            return
        entry = self.entry(address, "freeTensor")
        del self.tensors[address]
        for view in entry.tracked.values():
            host().untrack_memory(view)
        entry.tracked.clear()
        entry.struct.host_data = None
        entry.array = np.empty(0, np.float32)
        self.freed[address] = entry

    def start_tracking(self) -> None:
        """``startMemTracking``: tensors made so far are no batch's."""
        self.made.clear()

    def free_batch(self) -> None:
        """``freeBatchMemory``: free every tensor made since ``startMemTracking``."""
        made, self.made = self.made, []
        for address in made:
            self.free(address)

    # -- labels and accuracy ------------------------------------------------------------------
    def read_labels(self, api: str, path: str, dtype: str, start: int, count: int) -> int:
        if not 0 <= start or count <= 0:
            raise HPVMCError(f"{api}({path!r}): labels {start} .. {start + count - 1}; give at least one")
        return c_copy(read_values(api, path, dtype, start, count))

    def accuracy(self, labels: int, result: int) -> float:
        """``computeAccuracy3``: printed, written to final_accuracy, returned."""
        api = "computeAccuracy3"
        scores = _class_scores(api, self.array(result, api))
        if not labels:
            raise HPVMCError(f"{api}: the labels pointer is NULL; read labels with readLabelsBatch3")
        accuracy = report_batch(scores, c_values(labels, "uint32", scores.shape[0]))
        write_final(accuracy)
        return float(accuracy)

    def invoke_rt_control(self, result: int, path: str, start: int, end: int) -> None:
        """``llvm_hpvm_invokeRtControl`` without approximation configurations: the batch's
        accuracy printed, the average over the batches so far written to final_accuracy."""
        api = "llvm_hpvm_invokeRtControl"
        scores = _class_scores(api, self.array(result, api))
        if end - start != scores.shape[0] or start < 0:
            raise HPVMCError(
                f"{api}: labels {start} .. {end - 1} for a result of {scores.shape[0]} rows; pass the "
                "batch's start and end"
            )
        accuracy = report_batch(scores, read_values(api, path, "uint32", start, end - start))
        write_final(self.running.add(accuracy))


def _port_view(api: str, array: np.ndarray, rank: int) -> np.ndarray:
    """``array`` (a tensor as C made it) as a port of ``rank`` takes it; ``HPVMCError`` if it
    does not fit."""
    if rank == 2 and array.ndim == 2:
        return array
    if array.ndim != 4:
        raise HPVMCError(
            f"{api}: a tensor of shape {array.shape} (create2DTensor) passed where "
            f"{'a 4-D tensor' if rank == 4 else 'a (1, C, 1, 1) tensor'} is read; "
            "a 2-D tensor is only a fully connected layer's weights (__hpvm__tensor_mul)"
        )
    if rank == 1:
        if array.shape[0] != 1 or array.shape[2:] != (1, 1):
            raise HPVMCError(
                f"{api}: a tensor of shape {array.shape} passed where a per-channel operand "
                "(batchnorm's gamma, beta, mean, variance; a bias added to a mul result) is "
                "read; pass a (1, C, 1, 1) tensor"
            )
        return array.reshape(array.shape[1])
    if rank == 2:
        if array.shape[:2] != (1, 1):
            raise HPVMCError(
                f"{api}: a tensor of shape {array.shape} passed as the weights of "
                "__hpvm__tensor_mul; pass a (1, 1, K, M) tensor, as HPVM does"
            )
        return array.reshape(array.shape[2:])
    return array


def _class_scores(api: str, array: np.ndarray) -> np.ndarray:
    """A result's (N, classes) scores: from an (N, classes) or (N, classes, 1, 1) tensor."""
    if array.ndim not in (2, 4) or array.shape[2:] not in ((), (1, 1)):
        raise HPVMCError(
            f"{api}: a result of shape {array.shape}; accuracy is read from an (N, classes, 1, 1) "
            "tensor (a softmax or mul result)"
        )
    return array.reshape(array.shape[0], array.shape[1])


def _check_kind(api: str, data_type: int, data_format: int) -> None:
    if data_type != FLOAT_TYPE or data_format != NCHW:
        raise HPVMCError(
            f"{api}: data_type {data_type}, data_format {data_format}: only float32 NCHW tensors "
            "exist here (float_type = 0, nchw = 0)"
        )


def _shape(api: str, dims: tuple[int, ...]) -> tuple[int, ...]:
    if any(d <= 0 or d >= 2**40 for d in dims):
        raise HPVMCError(f"{api}: extents {dims}; each must be positive")
    return tuple(int(d) for d in dims)


def _refuse_configurations(path: str) -> None:
    raise HPVMCError(
        f"llvm_hpvm_initializeRuntimeController({path!r}): HPVM's approximation configurations "
        "are not supported here (every tensor operation runs exactly, in float32); run the "
        "program without a configuration file"
    )


def _float_result(*argtypes: Any) -> Any:
    """A ctypes function type returning C ``float`` whose callbacks return 0.0 when their
    body gives ``None`` (hostjit's guard does when the call failed; main jumps out before
    reading it), where plain ctypes would print a conversion error."""
    base = ctypes.CFUNCTYPE(ctypes.c_float, *argtypes)

    class FloatResult(base):  # type: ignore[misc, valid-type]
        _flags_ = base._flags_
        _restype_ = base._restype_
        _argtypes_ = base._argtypes_

        def __new__(cls, body: Callable[..., Any]) -> Any:
            def call(*args: Any) -> float:
                value = body(*args)
                return 0.0 if value is None else value

            return super().__new__(cls, call)

        def __init__(self, body: Callable[..., Any]) -> None:  # the callback was set by __new__
            pass

    return FloatResult


def tensor_callbacks() -> dict[str, tuple[Any, Callable[..., Any]]]:
    """tensor_runtime.h's host calls: name → (C signature, body(run, *C arguments))."""
    size, long_, int_, voidp = ctypes.c_size_t, ctypes.c_long, ctypes.c_int, ctypes.c_void_p
    text, fn = ctypes.c_char_p, ctypes.CFUNCTYPE

    def s(p: bytes | None) -> str:
        return (p or b"").decode(errors="replace")

    nothing: Callable[..., None] = lambda *_: None  # noqa: E731
    return {
        "create2DTensor": (fn(voidp, int_, size, size), lambda r, t, a, b: r.tensors.create_2d(t, (a, b))),
        "create4DTensor": (
            fn(voidp, int_, int_, size, size, size, size),
            lambda r, t, f, a, b, c, d: r.tensors.create(t, f, (a, b, c, d)),
        ),
        "readTrainedWeights": (
            fn(voidp, text, int_, long_, long_, long_, long_),
            lambda r, p, t, a, b, c, d: r.tensors.read_weights(s(p), t, (a, b, c, d)),
        ),
        "readInputBatch": (
            fn(voidp, text, long_, long_, long_, long_, long_, long_),
            lambda r, p, t, i, j, c, h, w: r.tensors.read_input_batch(s(p), t, i, j, (c, h, w)),
        ),
        "initTensorData": (fn(None, voidp, voidp, size), lambda r, t, p, n: r.tensors.init_data(t or 0, p or 0, n)),
        "hpvm_request_tensor": (fn(None, voidp, int_), lambda r, t, d: r.tensors.request(t or 0, d)),
        "freeTensor": (fn(None, voidp), lambda r, t: r.tensors.free(t or 0)),
        "startMemTracking": (fn(None), lambda r: r.tensors.start_tracking()),
        "freeBatchMemory": (fn(None), lambda r: r.tensors.free_batch()),
        "readLabels": (fn(voidp, text, int_), lambda r, p, n: r.tensors.read_labels("readLabels", s(p), "uint8", 0, n)),
        "readLabels3": (fn(voidp, text, int_), lambda r, p, n: r.tensors.read_labels("readLabels3", s(p), "uint32", 0, n)),
        "readLabelsBatch3": (
            fn(voidp, text, int_, int_),
            lambda r, p, i, j: r.tensors.read_labels("readLabelsBatch3", s(p), "uint32", i, j - i),
        ),
        "computeAccuracy3": (_float_result(voidp, voidp), lambda r, lab, t: r.tensors.accuracy(lab or 0, t or 0)),
        "dumpFinalAccuracy": (fn(None, ctypes.c_float), lambda r, a: report_final(a)),
        "llvm_hpvm_initTensorRt": (fn(None, int_), nothing),
        "llvm_hpvm_cleanupTensorRt": (fn(None), nothing),
        "llvm_hpvm_initApproxhpvmRt": (fn(None, int_), nothing),
        "llvm_hpvm_cleanupApproxhpvmRt": (fn(None), nothing),
        "llvm_hpvm_initializeRuntimeController": (fn(None, text), lambda r, p: _refuse_configurations(s(p))),
        "llvm_hpvm_invokeRtControl": (
            fn(None, voidp, text, int_, int_),
            lambda r, t, p, i, j: r.tensors.invoke_rt_control(t or 0, s(p), i, j),
        ),
    }  # fmt: skip


__all__ = ["TensorRuntime", "TensorStruct", "tensor_callbacks"]
