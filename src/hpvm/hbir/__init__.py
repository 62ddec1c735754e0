"""HBIR, the HammerBlade IR (seed 002), as an hpvm front end (docs/hbir.md)."""

from __future__ import annotations

from .checker import HBIRCheckError
from .parser import HBIRParseError


def parse(text: str, filename: str | None = None):  # replaced by HBIRProgram in the next step
    from . import checker, parser

    tree = parser.parse(text, filename)

    class _Checked:
        def check(self):
            return checker.check(tree)

    return _Checked()


def load(path):
    from pathlib import Path

    return parse(Path(path).read_text(), str(path))


__all__ = ["HBIRCheckError", "HBIRParseError", "load", "parse"]
