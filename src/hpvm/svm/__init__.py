"""The Streaming Virtual Machine (seed 003): machines described by TOML metadata.

``import hpvm.svm`` imports only NumPy and the standard library; pydantic is imported when
a machine file is loaded.
"""

from .errors import SVMError, SVMRestrictionError
from .machine import (
    PREDEFINED_KERNELS,
    USER_DEFINED_KERNEL,
    Fifo,
    Link,
    Machine,
    Memory,
    Processor,
    load_machine,
    shipped_machines,
    this_computer,
)

__all__ = [
    "PREDEFINED_KERNELS",
    "USER_DEFINED_KERNEL",
    "Fifo",
    "Link",
    "Machine",
    "Memory",
    "Processor",
    "SVMError",
    "SVMRestrictionError",
    "load_machine",
    "shipped_machines",
    "this_computer",
]
