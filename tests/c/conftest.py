"""The HPVM-C tests' fixture (helpers are in hpvmc_helpers.py: a module named conftest
would clash with the other test folders' when the whole suite runs)."""

from __future__ import annotations

import pytest
from hpvmc_helpers import write_c  # noqa: F401  (the fixture)

# The first C++ program compiled with a cold zig cache waits for zig to build libc++,
# libc++abi and libunwind (158 s alone on the 2-core machine, several minutes while the other
# test worker runs; docs/hpvm-c.md): the hang guard of these tests is wider than the suite's
# 300 s, still finite.
COLD_CXX_TIMEOUT = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.timeout(COLD_CXX_TIMEOUT))
