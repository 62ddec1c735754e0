"""Helpers for error-message tests: source lines found by marker comments, exact error types.

Tests never write line numbers down: a line ends with ``# @name`` and ``line_of("name")``
finds it, so moving code keeps the tests right.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


class SourceMarkers:
    """The ``# @marker`` comments of one test file."""

    def __init__(self, file: str):
        self.file = file
        self._lines = Path(file).read_text().splitlines()

    def line_of(self, marker: str) -> int:
        """The line of the file that ends with the comment ``# @marker``."""
        hits = [i for i, text in enumerate(self._lines, 1) if text.rstrip().endswith(f"# @{marker}")]
        assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
        return hits[0]

    def at(self, marker: str) -> str:
        """``file:line`` of a marker, as error messages write locations."""
        return f"{self.file}:{self.line_of(marker)}"


@contextmanager
def fails(cls: type[Exception], *fragments: str) -> Iterator[pytest.ExceptionInfo]:
    """Expect exactly ``cls`` (not a subclass) with every fragment in its message."""
    with pytest.raises(cls) as info:
        yield info
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in message:\n{message}"


def needs_backend(name: str) -> pytest.MarkDecorator:
    """Skip unless back end ``name`` can run here, giving the registry's reason (no device,
    a package missing, a device whose compiler cannot build for this machine)."""
    from hpvm.backends import unavailable_reason

    reason = unavailable_reason(name)
    return pytest.mark.skipif(reason is not None, reason=f"the {name} back end cannot run here: {reason}")
