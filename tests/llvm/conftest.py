"""The LLVM-leaf tests' fixture (``lowering``: barrier_lowering.py, shared with tests/c)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from barrier_lowering import lowering  # noqa: F401  (the fixture)

from hpvm.ir.llvmcontext import own_context


@pytest.fixture
def parse() -> Iterator[Callable[[str], Any]]:
    """``parse(text)``: an llvmlite module in an LLVM context of the test's own, disposed
    after it (``hpvm/ir/llvmcontext.py``), for the readers that take the parse function of
    the context their modules live in (``extract.read_regions``, ``with_names``)."""
    with own_context() as parse:
        yield parse
