"""A program of several files, as a C compiler builds one: each source compiled on its own
(clang, C or C++ by its suffix; a ``.ll`` source read as LLVM text), then the modules
linked into one (llvmlite's ``link_in``, LLVM's own linker).

Why link LLVM modules rather than object files: the rewrite (``genhpvm.py``) and the
importer need the whole program as one module — a root in ``main.cc`` builds nodes whose
functions may live in ``kernels.cc`` — and LLVM's linker resolves the files' symbols as
``ld`` would (a ``static`` function of each file stays its own, renamed if two collide).
Two files defining the same external symbol is an ``HPVMCError`` naming both files and
lines (LLVM's linker would only say "symbol multiply defined"). The files compile in
parallel, one clang process each; zig caches every compilation, so an unchanged file is
not compiled again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..ir.debuginfo import DebugInfo
from ..ir.llvmcontext import own_context
from . import clang
from .errors import HPVMCError

#: Linkages under which a definition is the program's one definition of its name.
_STRONG = frozenset({"external"})


@dataclass
class Linked:
    """The program's sources linked: one LLVM text, and where its functions come from."""

    sources: list[Path]
    text: str
    origins: dict[str, str]  # defined function → the source file defining it
    cxx: bool  # some source is C++ (its host code links the C++ library)

    @property
    def label(self) -> str:
        """How messages name the program: its file, or its files."""
        return ", ".join(str(p) for p in self.sources)


def paths(sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The source paths of ``compile``'s first argument (one path or several), checked."""
    if isinstance(sources, (str, os.PathLike)):
        found = [Path(sources)]
    else:
        found = [Path(s) for s in sources]
    if not found:
        raise HPVMCError("no source files given; name the program's .c, .cc, .cpp, .cxx or .ll files")
    seen: set[Path] = set()
    for p in found:
        clang.check_source(p)
        if p.resolve() in seen:
            raise HPVMCError(f"{p}: given twice; name each source file once")
        seen.add(p.resolve())
    return found


def translate(path: Path, defines: Sequence[str], include_dirs: Sequence[str], flags: Sequence[str]) -> str:
    """The LLVM text of one source: clang's for C and C++, the file itself for ``.ll``."""
    if path.suffix in clang.LL_SUFFIXES:
        return clang.ll_to_llvm(path)
    return clang.to_llvm(path, defines, include_dirs, flags)


def load(
    sources: list[Path],
    defines: Sequence[str] = (),
    include_dirs: Sequence[str] = (),
    flags: Sequence[str] = (),
) -> Linked:
    """Compile every source and link them into one program."""
    workers = max(1, min(len(sources), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(translate, p, defines, include_dirs, flags) for p in sources]
        texts = [f.result() for f in futures]  # (the first failing file, in order, is reported)
    cxx = any(clang.is_cxx(p) for p in sources) or any(_uses_cxx(t) for t in texts)
    origins: dict[str, str] = {}
    for path, text in zip(sources, texts):
        origins.update({name: str(path) for name in _defines(text) if name not in origins})
    return Linked(sources, texts[0] if len(texts) == 1 else link(sources, texts), origins, cxx)


def placed(where: str, origin: str | None) -> str:
    """``where`` (``file:line`` from the debug metadata) naming the ``.ll`` source the code
    was read from, when that is not the file the metadata names (an ``.ll`` compiled from
    ``prog.c`` locates a line of ``prog.c``: ``prog.c:9 (in prog.ll)``)."""
    if origin and Path(origin).suffix in clang.LL_SUFFIXES and not where.startswith(f"{origin}:"):
        return f"{where} (in {origin})"
    return where


def _uses_cxx(text: str) -> bool:
    """A ``.ll`` source compiled from C++ (it needs the C++ library): it names C++ symbols."""
    return "@__gxx_personality_v0" in text or "@_ZNSt3__1" in text or "@_Znwm" in text


def link(sources: list[Path], texts: list[str]) -> str:
    """The modules linked into one text; ``HPVMCError`` naming the files on a clash."""
    with own_context() as parse:  # (types keep their names: llvmcontext.py)
        modules = []
        for path, text in zip(sources, texts):
            try:
                modules.append(parse(text))
            except RuntimeError as e:
                raise HPVMCError(f"{path}: the text is not valid LLVM IR: {e}") from None
        _check_duplicates(sources, texts, modules)
        linked = modules[0]
        for path, module in zip(sources[1:], modules[1:]):
            try:
                linked.link_in(module)
            except RuntimeError as e:
                raise HPVMCError(
                    f"{path}: cannot be linked with {', '.join(str(p) for p in sources[: sources.index(path)])}: {e}"
                ) from None
        return str(linked)


def _check_duplicates(sources: list[Path], texts: list[str], modules: list[object]) -> None:
    """Every external symbol defined by one file only (as ``ld`` requires)."""
    defined: dict[str, list[int]] = {}
    for k, module in enumerate(modules):
        for value in [*module.functions, *module.global_variables]:  # type: ignore[attr-defined]
            if not value.is_declaration and value.linkage.name in _STRONG:
                defined.setdefault(value.name, []).append(k)
    for name, files in defined.items():
        if len(files) > 1:
            debugs = [DebugInfo(texts[k]) for k in files]
            places = [
                d.function_where(_defines(texts[k]).get(name, "")) or str(sources[k])
                for k, d in zip(files, debugs)
            ]
            raise HPVMCError(
                f"{' and '.join(places)}: {debugs[0].c_name(name)} is defined in "
                f"{' and '.join(str(sources[k]) for k in files)}; a program defines each function "
                "and global once: remove one, or make it static"
            )


def _defines(text: str) -> dict[str, str]:
    """Every function the text defines → its ``define`` line."""
    return {
        ln.split("@", 1)[1].split("(", 1)[0].strip('"'): ln
        for ln in text.splitlines()
        if ln.startswith("define")
    }


__all__ = ["Linked", "link", "load", "paths", "placed"]
