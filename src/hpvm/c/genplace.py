"""Where GenHPVM's messages point: the C file and line of an instruction (from the debug
metadata), else of its function, else the program; and a function's C name.

Why a class of its own: every part of the rewrite (the signature, the graph calls, the
returns, the leaf calls) reports its misuses as ``HPVMCError``\\ s at the C line of the
call, the same way.
"""

from __future__ import annotations

from ..ir.debuginfo import DebugInfo
from .errors import HPVMCError
from .module import Function
from .sources import placed


class Locator:
    """``program``: how messages name the program (its file, or its files); ``origins``: the
    file defining each function, for the locations debug metadata does not give."""

    def __init__(self, program: str, origins: dict[str, str], debug: DebugInfo):
        self.program = program
        self.origins = origins
        self.debug = debug

    def at(self, line_text: str, fn: Function | None = None) -> str:
        """``file:line`` of an instruction (else of its function's definition), at the file
        the debug metadata names (and the ``.ll`` it was read from: ``sources.placed``); else
        the function's file, else the program."""
        where = self.debug.where(line_text)
        if where is None and fn is not None:
            where = self.debug.function_where(fn.define)
        origin = self.origins.get(fn.name) if fn is not None else None
        if where is not None:
            return placed(where, origin)
        return origin or self.program

    def fail(self, line_text: str, fn: Function | None, message: str) -> HPVMCError:
        """An ``HPVMCError`` at the C line of ``line_text`` (in ``fn``)."""
        return HPVMCError(f"{self.at(line_text, fn)}: {message}")

    def c(self, name: str) -> str:
        """The C name of the LLVM function ``name`` (a C++ name demangled)."""
        return self.debug.c_name(name)
