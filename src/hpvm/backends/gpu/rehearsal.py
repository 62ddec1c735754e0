"""The device as ``Plan.compile`` sees it (``plan.py``): a rehearsal of a run that builds
every kernel where the run would launch it, and moves no data.

Apart from ``plan.py`` so that the run's code stays one path: the rehearsal is the same
``_Execution`` on this device, which stops (``Unknown``) only where a step would need a value
that no kernel computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .device import GPUDevice
from .spec import Geometry, KernelSpec


class Unknown(Exception):
    """A rehearsal needs a value no kernel computed (see ``Plan.compile``)."""


class Rehearsal(GPUDevice):
    """The device as ``Plan.compile`` sees it: launching a kernel builds it (``prepare``)
    instead, no data moves (arrays are allocated, not copied), and reading a device value
    back raises ``Unknown``: no kernel computed it."""

    def __init__(self, device: GPUDevice):
        self.device = device
        self.name, self.backend = device.name, device.backend
        self.max_group_size = device.max_group_size
        self.preferred_group_size = device.preferred_group_size
        self.shared_memory_bytes = device.shared_memory_bytes

    def to_device(self, host: np.ndarray) -> Any:
        return self.device.empty(host.shape, host.dtype)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.device.empty(shape, dtype)

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        raise Unknown

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        pass

    def compile(self, spec: KernelSpec) -> Any:
        return self.device.compile(spec)

    def prepare(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> int:
        return self.device.prepare(kernel, spec, geometry, table, sizes, args)

    def launch(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> None:
        self.device.prepare(kernel, spec, geometry, table, sizes, args)
