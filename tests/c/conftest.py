"""The HPVM-C tests' fixture (helpers are in hpvmc_helpers.py: a module named conftest
would clash with the other test folders' when the whole suite runs)."""

from __future__ import annotations

import sys
from pathlib import Path

from hpvmc_helpers import clean_runtime, full_path, write_c  # noqa: F401  (the fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llvm"))
from barrier_lowering import lowering  # noqa: E402,F401  (the fixture: both barrier lowerings)
