"""Importing the scripts in ``examples/`` as modules (they are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as module ``hpvm_example_<name>`` (once); ``name`` may
    hold folders (``c/lenet/lenet_data``: their ``/`` become ``_``)."""
    module_name = f"hpvm_example_{name.replace('/', '_')}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module
