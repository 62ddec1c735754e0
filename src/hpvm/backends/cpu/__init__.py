"""The ``cpu`` back end: Numba-compiled, parallel, with atomics and barriers (docs/backends/cpu.md)."""

from .backend import CPUBackend

__all__ = ["CPUBackend"]
