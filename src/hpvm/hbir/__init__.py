"""HBIR, the HammerBlade IR (seed 002), as an hpvm front end (docs/hbir.md).

``hbir.parse(text, filename=None)`` → ``HBIRProgram``; ``hbir.load(path)``;
``program.check()``, ``program.to_hpvm()`` (the root node function),
``program.run(inputs, target=None)`` (the device arrays by name), ``program.draw(path)``
(the tile map). Errors: ``HBIRParseError`` and ``HBIRCheckError``, both ``HPVMError``;
``HBIRInputError`` (``run``'s inputs) and ``HBIRDeadlockError`` (groups that wait on each
other forever) are subclasses of ``HBIRCheckError``.

The modules, one job each: ``grammar.lark`` + ``parser.py`` (text → ``ast.py``),
``printer.py`` (tree → text), ``checker.py`` (every problem at once → ``model.py``: the
segments' checkers ``check_target.py``, ``check_data.py``, ``check_code.py`` over one
``checkcontext.py``; ``consteval.py`` constant expressions, ``printf.py`` formats),
``symbols.py`` (names and types in code), ``codegen.py`` (a block → leaf Python with a
source map; ``codeexpr.py`` expressions, ``codeloops.py`` loops), ``waits.py`` (which loops wait for another group), ``ownership.py`` (which
elements each part of a grid owns), ``lower.py`` (model → graph), ``program.py`` (run),
``concurrent.py`` (groups at once, the watchdog), ``draw.py`` (tile map).
"""

from __future__ import annotations

from .checker import HBIRCheckError
from .concurrent import HBIRDeadlockError
from .parser import HBIRParseError
from .program import HBIRInputError, HBIRProgram, load, parse

__all__ = [
    "HBIRCheckError",
    "HBIRDeadlockError",
    "HBIRInputError",
    "HBIRParseError",
    "HBIRProgram",
    "load",
    "parse",
]
