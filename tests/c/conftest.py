"""The HPVM-C tests' fixture (helpers are in hpvmc_helpers.py: a module named conftest
would clash with the other test folders' when the whole suite runs)."""

from __future__ import annotations

from hpvmc_helpers import write_c  # noqa: F401  (the fixture)
