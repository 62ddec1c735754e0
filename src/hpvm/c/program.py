"""``compile(path)`` → ``CProgram``: an HPVM-C program, its graphs and its host code.

The pipeline: clang (``clang.py``) → GenHPVM's rewrite (``genhpvm.py``) → hpvm's LLVM
importer (``hpvm.llvm.from_hpvm_ir``, HPVM's BuildDFG) per root; ``run`` JIT-compiles the
host code (``hostjit.py``) and runs ``main``, whose launches run the graphs on hpvm's back
ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..ir.graph import InternalFunction, LeafFunction, NodeFunction
from ..llvm import LLVMImportError, from_hpvm_ir
from . import clang
from .argstruct import ArgStruct
from .debuginfo import DebugInfo
from .errors import HPVMCError
from .genhpvm import Rewritten, rewrite
from .hostjit import HostProgram, host_text
from .targets import choose_target
from .tensorports import type_tensor_ports


class CProgram:
    """A compiled HPVM-C program. ``roots``: the root node function of each graph its host
    code launches, in launch order (hpvm's graph, printable and runnable like any other)."""

    def __init__(self, path: Path, text: str, rewritten: Rewritten, roots: list[InternalFunction]):
        self.path = path
        self.llvm_text = text
        self.rewritten = rewritten
        self.roots = roots
        self._host = HostProgram(host_text(text, rewritten.node_functions), str(path))

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
        target = choose_target(self.path, self.roots, self.hints(), target)
        structs: dict[int, ArgStruct] = {}
        roots: dict[int, Any] = {}
        for name, root in zip(self.rewritten.roots, self.roots):
            address = self._host.address(name)
            sig = self.rewritten.signatures[name]
            structs[address] = ArgStruct(self.rewritten.c_names.get(name, name), sig.params, sig.outputs,
                                         [p.type for p in root.params], list(root.out_types),
                                         [p.name for p in root.params])  # fmt: skip
            roots[address] = root
        module = self._host
        nargs = _main_arity(self.llvm_text)
        return module.run_main(list(argv), structs, roots, target, nargs)


def _main_arity(text: str) -> int:
    m = re.search(r"^define\b[^@\n]*@main\(([^)]*)\)", text, re.M)
    return 0 if m is None or not m.group(1).strip() else 2


def compile(
    path: str | Path,
    defines: Sequence[str] = (),
    include_dirs: Sequence[str] = (),
    flags: Sequence[str] = (),
) -> CProgram:
    """Compile an HPVM-C program (C, or C++ by its suffix) into a ``CProgram``;
    ``HPVMCError`` (with ``file:line``) if clang rejects it or it misuses HPVM-C."""
    path = Path(path)
    text = clang.to_llvm(path, defines, include_dirs, flags)
    rewritten = rewrite(text, str(path))
    debug = DebugInfo(text)
    roots: list[InternalFunction] = []
    for name in rewritten.roots:
        try:
            root = from_hpvm_ir(rewritten.node_texts[name], file=str(path))
        except LLVMImportError as e:
            raise _located(e, debug, path, rewritten.node_texts[name]) from None
        _relocate(root, debug, rewritten.node_texts[name], path, rewritten.c_names)
        type_tensor_ports(root, _locator(debug, path, rewritten.node_texts[name]))
        roots.append(root)
    return CProgram(path, text, rewritten, roots)


def _locator(debug: DebugInfo, path: Path, text: str) -> Callable[[str, str, str | None], str]:
    """``file:line`` of the first ``llvm.hpvm.<call>`` on a node (see ``tensorports.Locate``)."""

    def locate(call: str, node: str, other: str | None) -> str:
        head = f"@llvm.hpvm.{call}(ptr %{node}" + (f", ptr %{other}" if other else "")
        found = next((ln for ln in text.splitlines() if head in ln), None)
        line = debug.line_of(found) if found else None
        return f"{path}:{line}" if line else str(path)

    return locate


def _located(e: LLVMImportError, debug: DebugInfo, path: Path, text: str) -> HPVMCError:
    """The importer's error at the C line of the instruction it quotes (or of the function,
    or of the first node or function it names)."""
    message, named = _c_lines(str(e), debug, path, text)
    line = None
    quoted = re.search(r": '(.+?)(?:, !dbg !\d+.*?)?'", message)
    if quoted:  # (llvmlite renumbers metadata: find the instruction in our text for its !dbg)
        head = quoted.group(1).split(", !")[0].strip()
        found = next((ln for ln in text.splitlines() if ln.strip().startswith(head)), None)
        line = debug.line_of(found) if found else None
    if line is None and named:
        line = named[0]
    if line is None:
        m = re.search(r"@([-\w.$]+)", message)
        if m:
            define = next(
                (ln for ln in text.splitlines() if ln.startswith("define") and f"@{m.group(1)}(" in ln), ""
            )
            line = debug.function_line(define)
    where = f"{path}:{line}" if line else str(path)
    return HPVMCError(f"{where}: {message}")


def _c_lines(message: str, debug: DebugInfo, path: Path, text: str) -> tuple[str, list[int]]:
    """``message`` with each ``path:N`` (a line of the importer's text ``text``: a node's
    ``createNode`` call, a function's ``define``) turned into the C line it came from (just
    ``path`` when there is none); and those C lines, in order."""
    lines = text.splitlines()
    found: list[int] = []

    def c_line(m: re.Match[str]) -> str:
        k = int(m.group(1))
        at = lines[k - 1] if 0 < k <= len(lines) else ""
        line = debug.function_line(at) if at.startswith("define") else debug.line_of(at)
        if not line:
            return str(path)
        found.append(line)
        return f"{path}:{line}"

    return re.sub(re.escape(str(path)) + r":(\d+)", c_line, message), found


def _relocate(
    root: InternalFunction, debug: DebugInfo, text: str, path: Path, c_names: dict[str, str]
) -> None:
    """Node functions located at their C definition (not the line of the LLVM text);
    ``c_names``: symbol → C (C++) name, to find a mangled internal function's symbol."""
    from ..errors import SourceLocation

    defines = {
        ln.split("@", 1)[1].split("(", 1)[0]: ln for ln in text.splitlines() if ln.startswith("define")
    }
    symbols = {name: symbol for symbol, name in c_names.items()}
    seen: set[int] = set()

    def visit(f: NodeFunction) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        body = getattr(f, "body", None)
        symbol = getattr(body, "function", None) if isinstance(f, LeafFunction) else None
        for sym in (symbol, symbols.get(f.name), f.name):
            line = debug.function_line(defines.get(sym or "", ""))
            if line:
                f.location = SourceLocation(str(path), line)
                break
        if isinstance(f, InternalFunction):
            for n in f.graph.nodes:
                visit(n.function)

    visit(root)


__all__ = ["CProgram", "compile"]
