"""HPVM-C's argument struct: what ``__hpvm__launch(isStream, root, args)`` and
``__hpvm__push(graph, args)`` hand over, read into hpvm's launch arguments, and where the
root's outputs are written back.

HPVM's convention (its examples declare the struct ``__attribute__((__packed__))``): the
root's LLVM parameters in order, packed, then the root's return struct (its own natural
layout). A ``(pointer, size)`` pair that is one port (``u8[:]``) is a byte array: a NumPy
``uint8`` view of the C memory, no copy, so the graph writes the program's own buffers. A
pointer that is a port of its own (``u8[*]``: its size, if any, travels separately) is the
memory the program tracked around it, from the pointer to the end of that tracked region
(``llvm_hpvm_track_mem``): the only extent the runtime knows. A tensor port
(``tensorports.py``) takes a ``struct Tensor *`` of the tensor runtime instead (its size
field is ignored: HPVM's programs pass 0), and a tensor output is written back as a new
``struct Tensor *`` with its size in bytes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..ir.types import ArrayType, PortType, ScalarType
from ..llvm.tensorports import is_tensor
from .errors import CMemoryTrackingError, HPVMCError

#: LLVM type → (size in bytes, ctypes type).
CTYPES: dict[str, tuple[int, Any]] = {
    "ptr": (8, ctypes.c_uint64),
    "i64": (8, ctypes.c_int64),
    "i32": (4, ctypes.c_int32),
    "i16": (2, ctypes.c_int16),
    "i8": (1, ctypes.c_int8),
    "i1": (1, ctypes.c_uint8),
    "float": (4, ctypes.c_float),
    "double": (8, ctypes.c_double),
}


def _layout(types: list[str], packed: bool) -> tuple[list[int], int, int]:
    """Field offsets, total size and alignment of a struct of ``types``."""
    offsets, off, align = [], 0, 1
    for t in types:
        size = CTYPES[t][0]
        if not packed:
            off = (off + size - 1) // size * size
            align = max(align, size)
        offsets.append(off)
        off += size
    if not packed:
        off = (off + align - 1) // align * align
    return offsets, off, align


def byte_view(address: int, size: int) -> np.ndarray:
    """The ``size`` bytes at ``address`` as a writeable ``uint8`` array (no copy)."""
    if size == 0:
        return np.zeros(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


#: Slices of tracked regions an ``ArgStruct`` keeps (``region``; all dropped beyond this).
_INNER_SLICES = 16


class ArgStruct:
    """The layout of one root's argument struct."""

    def __init__(
        self,
        root_name: str,
        params: list[str],
        outputs: list[str],
        ports: list[PortType],
        out_ports: list[PortType] | None = None,
        names: list[str] | None = None,
    ):
        for t in [*params, *outputs]:
            if t not in CTYPES:
                raise HPVMCError(
                    f"root {root_name}: a parameter or output of LLVM type {t} cannot travel in "
                    "HPVM-C's argument struct (pointers with sizes, integers, float and double can)"
                )
        self.root_name = root_name
        self.params = params
        self.outputs = outputs
        self.ports = ports
        self.out_ports = out_ports or []
        self.names = names or [f"#{k}" for k in range(len(ports))]
        self.param_offsets, self.params_size, _ = _layout(params, packed=True)
        self.out_offsets, self.out_size, align = _layout(outputs, packed=False)
        self.out_start = self.params_size
        #: ``region``'s arrays of pointers into a tracked region past its start, by the
        #: region's address and the offset: each with the region's array it was cut from
        self._inner: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def read(
        self,
        address: int,
        view: Any = byte_view,
        tensor: Callable[[int, int], Any] | None = None,
        regions: Mapping[int, np.ndarray] | None = None,
        api: str = "__hpvm__launch",
    ) -> tuple[Any, ...]:
        """hpvm's launch arguments from the struct at ``address`` (``view(ptr, size)`` makes
        the array of a pointer and its size, ``tensor(ptr, rank)`` the array of a tensor port;
        ``regions``: the tracked memory by address, where a pointer-only port's array is found)."""
        raw = [CTYPES[t][1].from_address(address + o).value for t, o in zip(self.params, self.param_offsets)]
        values: list[Any] = []
        k = 0
        for n, port in enumerate(self.ports):
            if tensor is not None and is_tensor(port):
                values.append(tensor(int(raw[k] or 0), port.rank))  # type: ignore[union-attr]
                k += 2
            elif isinstance(port, ArrayType) and not port.sized:
                values.append(self.region(int(raw[k] or 0), regions or {}, k, n, api))
                k += 1
            elif isinstance(port, ArrayType):
                pointer, size = int(raw[k] or 0), int(raw[k + 1])
                if regions is not None and size > 0:
                    self.region(pointer, regions, k, n, api, size)  # tracked, all of it (else C's error)
                values.append(view(pointer, size))
                k += 2
            else:  # (a scalar as its port's NumPy type, as a Python host passes an i32 or f32:
                # a C ``int`` as Python's int is Numba's i64, which the launch converted every
                # time, and a replay could not call the compiled entry directly)
                values.append(port.dtype.type(raw[k]) if isinstance(port, ScalarType) else raw[k])
                k += 1
        return tuple(values)

    def region(
        self,
        pointer: int,
        regions: Mapping[int, np.ndarray],
        field: int,
        port: int,
        api: str,
        size: int | None = None,
    ) -> np.ndarray:
        """The tracked memory from ``pointer`` to the end of the tracked region holding it;
        with ``size``, that region must hold all ``size`` bytes. Otherwise an ``HPVMCError``
        in C's terms (the struct field, ``llvm_hpvm_track_mem``), not the Python API's.

        The same array object for the same pointer while its region is the same: the region's
        own tracked array for its start, else the slice cut the first time. A launch whose
        arrays are new objects is never replayed (``plan.record_replay``: a new view each
        time), and a new slice per launch sent every step of SRAD's host loop
        (``tests/c/programs/srad``) down the full path."""
        for start, arr in regions.items():
            if start <= pointer < start + arr.nbytes and (
                size is None or pointer + size <= start + arr.nbytes
            ):
                if pointer == start:
                    return arr
                cut = self._inner.get((start, pointer))
                if cut is None or cut[0] is not arr:
                    if len(self._inner) >= _INNER_SLICES:
                        self._inner.clear()
                    cut = self._inner[start, pointer] = (arr, arr[pointer - start :])
                return cut[1]
        what = "a pointer passed without its size" if size is None else f"{size} bytes"
        raise CMemoryTrackingError(
            f"{api}: field {field} of {self.root_name}'s argument struct (root parameter "
            f"{self.names[port]}, {what}) is {pointer:#x}, which points into no tracked memory"
            + ("" if size is None else " (or runs past the end of the tracked buffer)")
            + "; call llvm_hpvm_track_mem(ptr, bytes) on the buffer it points into before the launch"
        )

    def write_outputs(
        self, address: int, outputs: tuple[Any, ...], tensor: Callable[[np.ndarray], int] | None = None
    ) -> None:
        """Write the root's outputs into the return struct at ``address`` (``tensor(array)``
        registers a tensor output and gives its ``struct Tensor *``)."""
        flat: list[Any] = []
        for k, value in enumerate(outputs):
            port = self.out_ports[k] if k < len(self.out_ports) else None
            if tensor is not None and port is not None and is_tensor(port):
                array = np.asarray(value)
                flat += [tensor(array), array.nbytes]
            elif isinstance(port, ArrayType) and not port.sized:
                flat.append(value.ctypes.data)  # (a pointer output alone: its address)
            elif isinstance(value, np.ndarray):
                flat += [value.ctypes.data, value.nbytes]
            else:
                flat.append(value.item() if isinstance(value, np.generic) else value)
        for t, o, v in zip(self.outputs, self.out_offsets, flat):
            CTYPES[t][1].from_address(address + o).value = v


__all__ = ["CTYPES", "ArgStruct", "byte_view"]
