"""The tensor runtime of HPVM-C host code (``tensor_runtime.h``), answered in Python.

Why. HPVM's DNN programs make their tensors with HPVM's tensor runtime (``create4DTensor``,
``readTrainedWeights``), pass them to the graph as ``void *``, and read results through
``struct Tensor``. Here a tensor is a NumPy ``float32`` array of shape (N, C, H, W), owned
by this registry, and C sees a ``struct Tensor`` (laid out as ``tensor_runtime.h``
declares it) whose ``host_data`` points at the array's memory and whose ``dims`` holds the
extents. The registry maps the struct's address — the ``void *`` C passes around — to the
array: ``__hpvm__launch`` reads a tensor port's pointer through it, and the tensors a graph
returns are registered here before C sees them. HPVM's tensor runtime manages its own
memory (HPVM-C programs do not call ``llvm_hpvm_track_mem`` on tensors, and read weights
before ``__hpvm__init``), so a tensor is tracked by hpvm's memory tracker when a launch
first passes it, and forgotten by ``__hpvm__cleanup`` as the tracker forgets everything;
its array lives until ``freeTensor`` or the end of the run.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..ir.host import host
from .errors import HPVMCError

FLOAT_TYPE = 0  # HPVM's float_type (cuDNN's CUDNN_DATA_FLOAT)
NCHW = 0  # HPVM's nchw (CUDNN_TENSOR_NCHW)


class Dimension(ctypes.Structure):
    _fields_ = [("num_dims", ctypes.c_int), ("dim_sizes", ctypes.POINTER(ctypes.c_size_t))]


class TensorStruct(ctypes.Structure):
    """``struct Tensor`` of tensor_runtime.h (HPVM's field order; device fields NULL)."""

    _fields_ = [
        ("data_type", ctypes.c_int),
        ("cur_type", ctypes.c_int),
        ("data_format", ctypes.c_int),
        ("data_placement", ctypes.c_int),
        ("host_data", ctypes.c_void_p),
        ("num_elems", ctypes.c_size_t),
        ("gpu_data", ctypes.c_void_p),
        ("gpu_half_data", ctypes.c_void_p),
        ("size_in_bytes", ctypes.c_size_t),
        ("dims", Dimension),
        ("tensor_desc", ctypes.c_void_p),
        ("tensor_half_desc", ctypes.c_void_p),
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

    def register(self, array: np.ndarray) -> int:
        """A new ``struct Tensor`` over ``array`` (made float32, C-contiguous; 4-D as HPVM's
        are: (N, M) is (N, M, 1, 1), (C,) is (1, C, 1, 1)); its address."""
        array = np.ascontiguousarray(array, dtype=np.float32)
        if array.ndim == 2:
            array = array.reshape(*array.shape, 1, 1)
        elif array.ndim == 1:
            array = array.reshape(1, array.shape[0], 1, 1)
        extents = (ctypes.c_size_t * array.ndim)(*array.shape)
        st = TensorStruct()
        st.data_type = st.cur_type = FLOAT_TYPE
        st.data_format = NCHW
        st.host_data = array.ctypes.data if array.size else None
        st.num_elems = array.size
        st.size_in_bytes = array.nbytes
        st.dims.num_dims = array.ndim
        st.dims.dim_sizes = ctypes.cast(extents, ctypes.POINTER(ctypes.c_size_t))
        address = ctypes.addressof(st)
        self.tensors[address] = _Entry(st, extents, array)
        return address

    def entry(self, address: int, api: str) -> _Entry:
        """The tensor at ``address``; ``HPVMCError`` naming ``api`` if there is none."""
        entry = self.tensors.get(address)
        if entry is None:
            raise HPVMCError(
                f"{api}: {address:#x} is not a tensor of the tensor runtime; make tensors with "
                "create4DTensor or readTrainedWeights (tensor_runtime.h)"
            )
        return entry

    def array(self, address: int, api: str) -> np.ndarray:
        return self.entry(address, api).array

    def launch_value(self, address: int, api: str, rank: int = 4) -> np.ndarray:
        """The array a launch passes for the tensor at ``address`` to a port of ``rank``,
        tracked from now on. A rank-1 port (per-channel operands: batchnorm's, a bias added
        to a mul result) takes HPVM's (1, C, 1, 1) tensor as its (C,) view; a rank-2 port
        (mul's weights) HPVM's (1, 1, K, M) as (K, M) (tensorports.py)."""
        entry = self.entry(address, api)
        view = entry.tracked.get(rank)
        if view is not None:
            return view
        array = entry.array
        if rank == 1:
            if array.ndim != 4 or array.shape[0] != 1 or array.shape[2:] != (1, 1):
                raise HPVMCError(
                    f"{api}: a tensor of shape {array.shape} passed where a per-channel operand "
                    "(batchnorm's gamma, beta, mean, variance; a bias added to a mul result) is "
                    "read; pass a (1, C, 1, 1) tensor"
                )
            array = array.reshape(array.shape[1])
        elif rank == 2:
            if array.ndim != 4 or array.shape[:2] != (1, 1):
                raise HPVMCError(
                    f"{api}: a tensor of shape {array.shape} passed as the weights of "
                    "__hpvm__tensor_mul; pass a (1, 1, K, M) tensor, as HPVM does"
                )
            array = array.reshape(array.shape[2:])
        host().track_memory(array)
        entry.tracked[rank] = array
        return array

    def forget_tracking(self) -> None:
        """``__hpvm__cleanup`` made the tracker forget every array."""
        for entry in self.tensors.values():
            entry.tracked.clear()

    # -- the host calls --------------------------------------------------------------
    def create(self, data_type: int, data_format: int, dims: tuple[int, ...]) -> int:
        _check_kind("create4DTensor", data_type, data_format)
        return self.register(np.zeros(_shape("create4DTensor", dims), np.float32))

    def read_weights(self, path: str, data_type: int, dims: tuple[int, ...]) -> int:
        _check_kind("readTrainedWeights", data_type, NCHW)
        shape = _shape("readTrainedWeights", dims)
        count = int(np.prod(shape))
        try:
            data = np.fromfile(Path(path), dtype=np.float32, count=count)
        except OSError as e:
            raise HPVMCError(f"readTrainedWeights({path!r}): cannot read the file: {e}") from None
        if data.size != count:
            raise HPVMCError(
                f"readTrainedWeights({path!r}, {', '.join(map(str, shape))}): the file holds {data.size} "
                f"float32 values, {count} are needed; write the weights as raw float32 (numpy: "
                "a.astype(np.float32).tofile(path))"
            )
        return self.register(data.reshape(shape))

    def init_data(self, address: int, data: int, size: int) -> None:
        array = self.array(address, "initTensorData")
        if size > array.nbytes:
            raise HPVMCError(
                f"initTensorData: {size} bytes into a tensor of {array.nbytes}; copy at most its "
                "size_in_bytes"
            )
        ctypes.memmove(array.ctypes.data, data, size)

    def request(self, address: int, destination: int) -> None:
        entry = self.entry(address, "hpvm_request_tensor")
        for view in entry.tracked.values():
            host().request_memory(view)

    def free(self, address: int) -> None:
        entry = self.entry(address, "freeTensor")
        del self.tensors[address]
        for view in entry.tracked.values():
            host().untrack_memory(view)

    def clear(self) -> None:
        """Release every tensor (``llvm_hpvm_cleanupTensorRt``)."""
        for address in list(self.tensors):
            self.free(address)


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


__all__ = ["TensorRuntime", "TensorStruct"]
