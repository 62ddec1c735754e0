"""HBIR, the HammerBlade IR (seed 002), as an hpvm front end (docs/hbir.md).

``hbir.parse(text, filename=None)`` → ``HBIRProgram``; ``hbir.load(path)``;
``program.check()``, ``program.to_hpvm()``, ``program.run(inputs, target=None)``,
``program.draw(path)``. Errors: ``HBIRParseError``, ``HBIRCheckError`` (both ``HPVMError``).
"""

from __future__ import annotations

from .parser import HBIRParseError

__all__ = ["HBIRParseError"]
