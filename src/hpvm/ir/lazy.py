"""Attributes of a package loaded on first use (PEP 562's module ``__getattr__``): what
``import hpvm`` does not need, a package names in a table instead of importing it."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_attributes(package: str, where: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``where`` maps an attribute to the
    submodule (of ``package``) that defines it, imported when the attribute is first asked."""

    def getattr_(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return getattr_


__all__ = ["lazy_attributes"]
