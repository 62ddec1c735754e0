"""HPVM-C's argument struct: what ``__hpvm__launch(isStream, root, args)`` and
``__hpvm__push(graph, args)`` hand over, read into hpvm's launch arguments, and where the
root's outputs are written back.

HPVM's convention (its examples declare the struct ``__attribute__((__packed__))``): the
root's LLVM parameters in order, packed, then the root's return struct (its own natural
layout). A ``(pointer, size)`` pair is a byte array: a NumPy ``uint8`` view of the C
memory, no copy, so the graph writes the program's own buffers. A tensor port
(``tensorports.py``) takes a ``struct Tensor *`` of the tensor runtime instead (its size
field is ignored: HPVM's programs pass 0), and a tensor output is written back as a new
``struct Tensor *`` with its size in bytes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.types import ArrayType, PortType
from .errors import HPVMCError
from .tensorports import is_tensor

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


class ArgStruct:
    """The layout of one root's argument struct."""

    def __init__(
        self,
        root_name: str,
        params: list[str],
        outputs: list[str],
        ports: list[PortType],
        out_ports: list[PortType] | None = None,
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
        self.param_offsets, self.params_size, _ = _layout(params, packed=True)
        self.out_offsets, self.out_size, align = _layout(outputs, packed=False)
        self.out_start = self.params_size

    def read(
        self, address: int, view: Any = byte_view, tensor: Callable[[int, int], Any] | None = None
    ) -> tuple[Any, ...]:
        """hpvm's launch arguments from the struct at ``address`` (``view(ptr, size)`` makes
        the array of a pointer and its size, ``tensor(ptr, rank)`` the array of a tensor port)."""
        raw = [CTYPES[t][1].from_address(address + o).value for t, o in zip(self.params, self.param_offsets)]
        values: list[Any] = []
        k = 0
        for port in self.ports:
            if tensor is not None and is_tensor(port):
                values.append(tensor(int(raw[k] or 0), port.rank))  # type: ignore[union-attr]
                k += 2
            elif isinstance(port, ArrayType):
                values.append(view(int(raw[k] or 0), int(raw[k + 1])))
                k += 2
            else:
                values.append(raw[k])
                k += 1
        return tuple(values)

    def write_outputs(
        self, address: int, outputs: tuple[Any, ...], tensor: Callable[[np.ndarray], int] | None = None
    ) -> None:
        """Write the root's outputs into the return struct at ``address`` (``tensor(array)``
        registers a tensor output and gives its ``struct Tensor *``)."""
        flat: list[Any] = []
        for k, value in enumerate(outputs):
            if tensor is not None and k < len(self.out_ports) and is_tensor(self.out_ports[k]):
                array = np.asarray(value)
                flat += [tensor(array), array.nbytes]
            elif isinstance(value, np.ndarray):
                flat += [value.ctypes.data, value.nbytes]
            else:
                flat.append(value.item() if isinstance(value, np.generic) else value)
        for t, o, v in zip(self.outputs, self.out_offsets, flat):
            CTYPES[t][1].from_address(address + o).value = v


__all__ = ["CTYPES", "ArgStruct", "byte_view"]
