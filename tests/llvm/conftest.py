"""The LLVM-leaf tests' fixture (``lowering``: barrier_lowering.py, shared with tests/c)."""

from __future__ import annotations

from barrier_lowering import lowering  # noqa: F401  (the fixture)
