"""Running a graph the way most tests do: track the array arguments, launch, wait."""

from __future__ import annotations

from typing import Any

import numpy as np

import hpvm


def run_tracked(root: Any, args: tuple, target: str) -> tuple:
    """Launch ``root`` with ``args`` on ``target`` (its array arguments tracked first) and
    return what ``wait`` returns. Needs an initialised runtime (the ``hpvm_runtime``
    fixture)."""
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    return hpvm.wait(hpvm.launch(root, args, target=target))
