"""Errors of the LLVM front end: what is wrong with an exported program or an imported text.

Both are ``HPVMError`` subclasses; an import error names the LLVM function and the
instruction (its text) at fault, an export error the node function.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HPVMError, SourceLocation


class LLVMError(HPVMError):
    """Base of the LLVM front end's errors."""


class LLVMImportError(LLVMError):
    """LLVM IR that is not HPVM IR in the form seed 000 describes (or does not parse)."""


class GraphCallError(LLVMImportError):
    """A graph intrinsic call (``createNode*``, ``createEdge``, ``bind.input``,
    ``bind.output``) the importer refuses, or an instruction of a graph-building function
    that is none of them nor a replication size's arithmetic. The message names the function and the call's
    text as for every import error; its parts are kept too, because a front end that wrote
    the call for its own source words it in that source's terms (HPVM-C quotes the C call
    at its line and says how to fix it there: ``hpvm/c/grapherrors.py``). ``kind``: what is
    wrong, one of ``GRAPH_ERROR_KINDS``."""

    def __init__(self, call: GraphCall, kind: str, problem: str):
        assert kind in GRAPH_ERROR_KINDS, kind
        self.call = call
        self.kind = kind
        self.problem = problem
        super().__init__(f"{call}: {problem}")


#: What a ``GraphCallError`` says is wrong: a port index no port has (``input`` of a node,
#: ``output`` of a node), a node operand this function did not create (``node``), an
#: operand that must be a constant (``constant``), ends of two types (``type``), parts of an
#: array port crossed (``part``) or a size or extent connected without its pointer
#: (``companion``), a node of no function (``function``: not a function, not defined, or
#: the builder itself), a replication size that is no integer arithmetic of the ports
#: (``size``), a size that reads no port and folds to a negative constant (``negative``),
#: an instruction that is neither a graph call nor a size's arithmetic (``computation``).
GRAPH_ERROR_KINDS = frozenset(
    {
        "input",
        "output",
        "node",
        "constant",
        "type",
        "part",
        "companion",
        "function",
        "size",
        "negative",
        "computation",
    }
)


@dataclass(frozen=True)
class GraphCall:
    """A graph intrinsic call (or another instruction) in a function that builds a graph,
    for messages: ``@f: '<its text>'``."""

    function: str
    instruction: str
    #: how many instructions of ``function`` before this one read alike but for their
    #: ``!dbg`` (which of those lines this one is, for a front end that locates it)
    alike: int = 0
    #: the call's line in the module's text (``None``: not known), named in messages — the
    #: text quoted is the call as llvmlite reads it (an LLVM 9 file's typed pointers upgraded
    #: to ``ptr``), so the line is what finds it in the file
    at: SourceLocation | None = None

    def __str__(self) -> str:
        where = f" ({self.at})" if self.at is not None else ""
        return f"@{self.function}{where}: '{self.instruction}'"

    def error(self, kind: str, problem: str) -> GraphCallError:
        return GraphCallError(self, kind, problem)


class LLVMExportError(LLVMError):
    """A program that cannot be written as HPVM IR in LLVM form (a leaf Numba cannot
    compile, an intrinsic without an LLVM form yet)."""


class LLVMExtractError(LLVMImportError):
    """LLVM IR whose directive regions (seed 004) do not map onto a dataflow graph: EXTRACT
    names the function and the instruction, and says what it reads instead."""


__all__ = [
    "GRAPH_ERROR_KINDS",
    "GraphCall",
    "GraphCallError",
    "LLVMError",
    "LLVMExportError",
    "LLVMExtractError",
    "LLVMImportError",
]
