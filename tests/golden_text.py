"""Golden text files: a test's output compared with a reviewed file, the repo's usual way
(``tests/passes/test_golden.py``): after an intended change, regenerate them with
``HPVM_UPDATE_GOLDEN=1 pytest <tests>`` and read the diff."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from hpvm.ir.leafir import LeafIR

UPDATE = os.environ.get("HPVM_UPDATE_GOLDEN") == "1"
ROOT = Path(__file__).parents[1]


def check_golden(path: Path, text: str) -> None:
    """``text`` is the content of ``path`` (written there first under HPVM_UPDATE_GOLDEN=1)."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden {path.name}: run with HPVM_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text()


def relative(ir: LeafIR) -> LeafIR:
    """``ir`` with its file named relative to the repository (golden files do not hold the
    checkout's path)."""
    path = Path(ir.file)
    return replace(ir, file=str(path.relative_to(ROOT))) if path.is_absolute() else ir
