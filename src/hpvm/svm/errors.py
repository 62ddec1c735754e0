"""The SVM's errors: every misuse of the Streaming Virtual Machine is an ``SVMError``.

``SVMRestrictionError`` is raised only in the assertion mode (``svm.init(check=True)``)
when the program breaks one of the seed's restrictions A1–A9 / B1–B6; ``restriction``
names it (``"A7"``) so tests and tools can tell them apart.
"""

from __future__ import annotations

from ..errors import HPVMError


class SVMError(HPVMError):
    """A Streaming Virtual Machine program or machine description is wrong: bad metadata,
    an unknown location, an access out of bounds, a stream that can never be filled."""


class SVMRestrictionError(SVMError):
    """The program breaks restriction ``restriction`` of the seed (checked in assertion mode)."""

    def __init__(self, restriction: str, message: str):
        self.restriction = restriction
        super().__init__(f"{restriction}: {message}")
