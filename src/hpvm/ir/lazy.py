"""Attributes of a package loaded on first use (PEP 562's module ``__getattr__``): what
``import hpvm`` does not need, a package names in a table instead of importing it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_attributes(package: str, where: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``where`` maps an attribute to the
    submodule (of ``package``) that defines it, imported when the attribute is first asked;
    ``"module:name"`` when the submodule calls it something else, ``"module:"`` when the
    attribute is the submodule itself. The value is then set on the package, so the
    next access is a plain attribute read (hot paths read ``hpvm.x`` too)."""

    def getattr_(name: str) -> object:
        spec = where.get(name)
        if spec is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = spec.partition(":")
        loaded = importlib.import_module(f"{package}.{module}")
        value = loaded if spec.endswith(":") else getattr(loaded, attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return getattr_


__all__ = ["lazy_attributes"]
