"""``compile(sources)`` → ``CProgram``: an HPVM-C program, its graphs and its host code.

The pipeline: clang on each source, the modules linked (``sources.py``) → GenHPVM's
rewrite (``genhpvm.py``) → hpvm's LLVM importer (``hpvm.llvm.from_hpvm_ir``, HPVM's
BuildDFG) per root; ``run`` builds the host code into a shared library (``hostjit.py``,
``hostlib.py``) and runs ``main``, whose launches run the graphs on hpvm's back ends.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..ir.bodies import TensorBody
from ..ir.debuginfo import DebugInfo
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction
from ..llvm import GraphCallError, LLVMImportError, from_hpvm_ir
from ..llvm.tensorports import type_tensor_ports
from . import sources as sources_
from .argstruct import ArgStruct
from .errors import HPVMCError
from .genhpvm import Rewritten, rewrite
from .grapherrors import c_graph_error
from .hostjit import HostProgram
from .targets import choose_target


class CProgram:
    """A compiled HPVM-C program. ``roots``: the root node function of each graph its host
    code launches, in launch order (hpvm's graph, printable and runnable like any other);
    ``sources``: its files (``path``: the first, ``argv[0]`` of ``main``)."""

    def __init__(self, linked: sources_.Linked, rewritten: Rewritten, roots: list[InternalFunction]):
        self.sources = linked.sources
        self.path = linked.sources[0]
        self.label = linked.label  # how messages name it: its file, or its files
        self.llvm_text = linked.text
        self.rewritten = rewritten
        self.roots = roots
        self._host = HostProgram(
            linked.text, rewritten.node_functions, rewritten.roots, linked.cxx, linked.label
        )

    def hints(self) -> list[tuple[str, str]]:
        """(node function, hint) of every hinted node function that is not a CPU one."""
        found: list[tuple[str, str]] = []
        seen: set[int] = set()

        def visit(f: NodeFunction) -> None:
            if id(f) in seen:
                return
            seen.add(id(f))
            if f.hint not in (None, "cpu"):
                found.append((f.name, f.hint))
            if isinstance(f, InternalFunction):
                for n in f.graph.nodes:
                    visit(n.function)

        for r in self.roots:
            visit(r)
        return found

    def run(self, argv: Sequence[str] = (), target: str | None = None) -> int:
        """Run ``main`` with ``argv`` (after the program's name); its exit code. The graphs
        run on ``target``: ``None`` is cpu for LLVM leaves (GPU and tensor hints fall back
        to it, with a note on stderr) and ``tensor`` for graphs of tensor leaves (``interp``
        without PyTorch); ``"interp"`` runs every leaf instance by instance."""
        target = choose_target(self.label, self.roots, self.hints(), target)
        structs: dict[str, ArgStruct] = {}
        roots: dict[str, Any] = {}
        for name, root in zip(self.rewritten.roots, self.roots):
            sig = self.rewritten.signatures[name]
            structs[name] = ArgStruct(self.rewritten.c_names.get(name, name), sig.params, sig.outputs,
                                      [p.type for p in root.params], list(root.out_types),
                                      [p.name for p in root.params])  # fmt: skip
            roots[name] = root
        return self._host.run_main(list(argv), structs, roots, target, str(self.path))


def compile(
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    defines: Sequence[str] = (),
    include_dirs: Sequence[str] = (),
    flags: Sequence[str] = (),
) -> CProgram:
    """Compile an HPVM-C program — one source path or a list of them (C ``.c``; C++ ``.cc``,
    ``.cpp``, ``.cxx``; LLVM text ``.ll``, LLVM 9 text included), each compiled on its own
    and linked — into a ``CProgram``; ``HPVMCError`` (with ``file:line``) if clang rejects
    a file, two files define one symbol, or the program misuses HPVM-C."""
    linked = sources_.load(sources_.paths(sources), defines, include_dirs, flags)
    text = linked.text
    debug = DebugInfo(text)
    rewritten = rewrite(text, linked.label, linked.origins, debug)
    roots: list[InternalFunction] = []
    for name in rewritten.roots:
        where = _Where(debug, linked, rewritten.node_texts[name], name)
        try:
            root = from_hpvm_ir(rewritten.node_texts[name], file=where.file, root=name, tensor_ports=False)
        except LLVMImportError as e:
            raise where.located(e, rewritten.c_names) from None
        _relocate(root, where, rewritten.c_names)
        type_tensor_ports(root, where.locator, HPVMCError)
        roots.append(root)
    return CProgram(linked, rewritten, roots)


class _Where:
    """Locations in one root's node text: the source file and line of an instruction or a
    function (from the debug metadata; else the file defining the function)."""

    def __init__(self, debug: DebugInfo, linked: sources_.Linked, text: str, root: str):
        self.debug = debug
        self.linked = linked
        self.text = text
        self.lines = text.splitlines()
        self.defines = {
            ln.split("@", 1)[1].split("(", 1)[0].strip('"'): ln
            for ln in self.lines
            if ln.startswith("define")
        }
        #: the file name the importer gives its locations (lines of ``text``: ``text_line``)
        self.file = self.function_file(root)

    def source_line(self, k: int) -> tuple[str, int] | None:
        """The source file and line of line ``k`` of the node text (an instruction, such as a
        node's ``createNode`` call, or a function's ``define``), if the metadata says."""
        if not 0 < k <= len(self.lines):
            return None
        at = self.lines[k - 1]
        if at.startswith("define"):
            return self.definition(at.split("@", 1)[1].split("(", 1)[0].strip('"'))
        found = self.debug.where(at)
        if found is None:
            return None
        file, _, line = found.rpartition(":")
        return file, int(line)

    def text_line(self, k: int) -> str | None:
        """``file:line`` in the sources of line ``k`` of the node text, for a message (naming
        the ``.ll`` it was read from: ``sources.placed``), if the metadata says."""
        if not 0 < k <= len(self.lines):
            return None
        at = self.lines[k - 1]
        if at.startswith("define"):
            return self.function(at.split("@", 1)[1].split("(", 1)[0].strip('"'))
        symbol = next(
            (
                ln.split("@", 1)[1].split("(", 1)[0].strip('"')
                for ln in reversed(self.lines[:k])
                if ln.startswith("define")
            ),
            "",
        )
        found = self.debug.where(at)
        return sources_.placed(found, self.linked.origins.get(symbol)) if found else None

    def c_lines(self, message: str) -> tuple[str, list[str]]:
        """``message`` with each ``file:N`` the importer wrote (a line of the node text) as
        the source place it came from (the file alone when there is none); those places."""
        found: list[str] = []

        def place(m: re.Match[str]) -> str:
            at = self.text_line(int(m.group(1)))
            if at is None:
                return self.file
            found.append(at)
            return at

        return re.sub(re.escape(self.file) + r":(\d+)", place, message), found

    def function_file(self, symbol: str) -> str:
        found = self.debug.function_file(self.defines.get(symbol, ""))
        return found or self.linked.origins.get(symbol, self.linked.label)

    def definition(self, symbol: str) -> tuple[str, int] | None:
        """The file and line of the definition of ``symbol``, if the metadata says."""
        define = self.defines.get(symbol, "")
        file, line = self.debug.function_file(define), self.debug.function_line(define)
        return (file, line) if file and line else None

    def function(self, symbol: str) -> str | None:
        """``file:line`` of the definition of ``symbol`` for a message, if the metadata says."""
        found = self.definition(symbol)
        return sources_.placed(f"{found[0]}:{found[1]}", self.linked.origins.get(symbol)) if found else None

    def instruction(
        self, matches: Callable[[str], bool], function: str | None = None, nth: int = 0
    ) -> str | None:
        """``file:line`` of the first instruction ``matches`` accepts (in ``function`` only,
        and the ``nth`` such there, when given), if the metadata says."""
        return self._placed(self._instruction(matches, function, nth))

    def _placed(self, found: tuple[str, str] | None) -> str | None:
        """``file:line`` of an instruction ``_instruction`` found, if the metadata says."""
        if found is None:
            return None
        symbol, line = found
        at = self.debug.where(line)
        return sources_.placed(at, self.linked.origins.get(symbol)) if at else None

    def _instruction(
        self, matches: Callable[[str], bool], function: str | None, nth: int
    ) -> tuple[str, str] | None:
        """(its function, the line) of the instruction ``instruction`` locates."""
        symbol = ""
        for line in self.lines:
            if line.startswith("define"):
                symbol = line.split("@", 1)[1].split("(", 1)[0].strip('"')
            elif (function is None or symbol == function) and matches(line):
                if nth == 0:
                    return symbol, line
                nth -= 1
        return None

    def locator(self, call: str, node: str, other: str | None) -> str:
        """``file:line`` of the first ``llvm.hpvm.<call>`` on a node (see ``tensorports.Locate``)."""
        head = f"@llvm.hpvm.{call}(ptr %{node}" + (f", ptr %{other}" if other else "")
        return self.instruction(lambda line: head in line) or self.linked.label

    def call_source(
        self, instruction: str, function: str | None = None, nth: int = 0
    ) -> tuple[str | None, tuple[str, int, int | None] | None]:
        """``file:line`` (for a message) and (file, line, column) of the instruction of our
        text that llvmlite printed as ``instruction`` (llvmlite renumbers metadata: the
        instruction is found in our text for its ``!dbg``) — in ``function`` and the
        ``nth`` of those that read alike there, when given — if the metadata says."""
        head = instruction.split(", !")[0].strip()

        def matches(line: str) -> bool:
            return line.strip().startswith(head)

        located = self._instruction(matches, function, nth)
        if located is None and function is not None:  # (not in its function's text: the first anywhere)
            located = self._instruction(matches, None, 0)
        where = self._placed(located)
        ours = located[1] if located else ""
        found = self.debug.where(ours) if ours else None
        if found is None:
            return where, None
        file, _, line = found.rpartition(":")
        return where, (file, int(line), self.debug.column_of(ours))

    def located(self, e: LLVMImportError, c_names: dict[str, str]) -> HPVMCError:
        """The importer's error at the C line of the instruction it quotes (or of the function,
        or of the first node or function it names by a line of the node text); a refused
        graph call said in C's terms (``grapherrors.py``). ``c_names``: symbol → C name."""
        if isinstance(e, GraphCallError):  # (the call in its function: another may read alike)
            where, source = self.call_source(e.call.instruction, e.call.function, e.call.alike)
            return c_graph_error(e, where or self.linked.label, source, c_names)
        message, named = self.c_lines(str(e))
        where = None
        quoted = re.search(r": '(.+?)(?:, !dbg !\d+.*?)?'", message)
        if quoted:
            where = self.call_source(quoted.group(1))[0]
        if where is None and named:
            where = named[0]
        if where is None:
            m = re.search(r"@([-\w.$]+)", message)
            if m:
                where = self.function(m.group(1)) or self.linked.origins.get(m.group(1))
        return HPVMCError(f"{where or self.linked.label}: {message}")


def _relocate(root: InternalFunction, where: _Where, c_names: dict[str, str]) -> None:
    """Node functions located at their C definition (not the line of the LLVM text);
    ``c_names``: symbol → C (C++) name, to find a mangled internal function's symbol."""
    from ..errors import SourceLocation

    symbols = {name: symbol for symbol, name in c_names.items()}
    seen: set[int] = set()

    def visit(f: NodeFunction) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        body = getattr(f, "body", None)
        symbol = getattr(body, "function", None) if isinstance(f, LeafFunction) else None
        for sym in (symbol, symbols.get(f.name), f.name):
            found = where.definition(sym or "")
            if found:
                f.location = SourceLocation(*found)
                break
        if isinstance(f, LeafFunction) and isinstance(body, TensorBody):
            f.body = _relocated_calls(body, where, f.location.file)
        if isinstance(f, InternalFunction):
            graph = f.graph
            for item in [*graph.nodes, *graph.edges, *graph.in_binds, *graph.out_binds]:
                found = where.source_line(item.location.line) if item.location.file == where.file else None
                if found:  # its createNode / edge / bind call, at its C line
                    item.location = SourceLocation(*found)
            for n in graph.nodes:
                visit(n.function)

    visit(root)


def _relocated_calls(body: TensorBody, where: _Where, file: str) -> TensorBody:
    """``body`` with each operation's line the C line of its ``__hpvm__tensor_*`` call (the
    importer gave the line of the LLVM text); 0 where the metadata does not say, or says
    another file than the leaf's."""

    def line(k: int) -> int:
        found = where.source_line(k)
        return found[1] if found is not None and found[0] == file else 0

    calls = tuple(dataclasses.replace(call, line=line(call.line)) for call in body.calls)
    return dataclasses.replace(body, calls=calls)


__all__ = ["CProgram", "compile"]
