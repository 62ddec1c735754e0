"""The pydantic schema of the TOML machine metadata (imported only when a file is loaded).

Kept apart from ``machine.py`` so that ``import hpvm.svm`` does not import pydantic: the
schema checks the *shape* of each entry (types, required keys, no unknown keys); the
cross-references between entries (a master that names a processor, a link end that names
a resource) are checked by ``machine.py`` afterwards.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(value: object) -> object:
    """``4096``, ``"64K"``, ``"16M"``, ``"1G"`` (binary multiples) → bytes; other values are
    left for pydantic to reject with its own message."""
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match is None:
            raise ValueError(
                f"{value!r} is not a size: write a byte count or a string like '64K', '16M', '1G'"
            )
        return int(match.group(1)) * _SUFFIXES[match.group(2).upper()]
    return value


Size = Annotated[int, BeforeValidator(parse_size), Field(gt=0)]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)

    description: str = ""
    cost: float = Field(default=1.0, ge=0.0)


class MemorySpec(_Entry):
    size: Size
    width: Size = 4


class FifoSpec(_Entry):
    depth: int = Field(gt=0)
    element_size: Size


class ProcessorSpec(_Entry):
    master: str | list[str]
    supported_kernels: list[str] = Field(default_factory=list)
    dma: bool = False
    max_concurrent_kernels: int = Field(default=1, gt=0)

    @model_validator(mode="after")
    def _concurrency_only_for_dma(self) -> ProcessorSpec:
        if not self.dma and self.max_concurrent_kernels != 1:
            raise ValueError(
                "max_concurrent_kernels is for DMA processors only (restriction A4: one "
                "user-defined kernel per stream processor); set dma = true or remove it"
            )
        return self


class LinkSpec(_Entry):
    ends: list[str] = Field(min_length=2)


class MachineInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""


class MachineSpec(BaseModel):
    """The whole file: ``[machine]``, then tables of named entries."""

    model_config = ConfigDict(extra="forbid")

    machine: MachineInfo
    processors: dict[str, ProcessorSpec] = Field(min_length=1)
    memories: dict[str, MemorySpec] = Field(default_factory=dict)
    fifos: dict[str, FifoSpec] = Field(default_factory=dict)
    links: dict[str, LinkSpec] = Field(default_factory=dict)
