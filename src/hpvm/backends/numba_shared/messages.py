"""Numba's error messages, turned into ``CompileError``s that name the leaf and the line.

Numba's messages are long (the compiler's passes, the typing context, the offending code
with a caret) and point at files, not leaves. Back ends that compile leaf clones with a
Numba compiler (``cpu``: Numba; ``cuda``: numba-cuda, and Numba to type-check for the
simulator) report what Numba says with one ``describe_numba_error``: the first place in the
message that lies in one of the leaves, the code on that line, and a short summary of what
is wrong.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from ...errors import CompileError
from ...ir.graph import LeafFunction

# Lines of a Numba message that say where or how, not what is wrong.
_NOISE = ("During:", "File ", "^", "Failed in", "Rewrite", "- ", "<source")
# Lines that say what is wrong, preferred after the first one kept.
_PROBLEM = (
    "No implementation",
    "Unknown attribute",
    "Cannot",
    "Invalid use",
    "Untyped",
    "NameError",
    "Use of unsupported",
    "Unsupported",
    "cannot",
    "Compilation is falling",
)


def locate_leaf_line(text: str, leaves: Sequence[LeafFunction]) -> tuple[LeafFunction, int, str] | None:
    """The first place in a Numba message that lies in one of ``leaves``: (leaf, line, the
    line's code). Numba prints paths as given, often relative, hence ``realpath``."""
    for file, line_text in re.findall(r'File "([^"]+)", line (\d+)', text):
        found = leaf_at(file, int(line_text), leaves)
        if found is not None:
            return found
    return None


def leaf_at(file: str, line: int, leaves: Sequence[LeafFunction]) -> tuple[LeafFunction, int, str] | None:
    """The leaf of ``leaves`` whose source holds ``line`` of ``file``: (leaf, line, the line's
    code), or ``None``. Compiled clones carry their leaf's file and the lines of its
    ``source``: for a generated body those are lines of the generated text, which
    ``leaf.where(line)`` maps to the file it was generated from."""
    for leaf in leaves:
        if os.path.realpath(leaf.location.file) != os.path.realpath(file):
            continue
        first = leaf.source_line
        if first <= line <= first + leaf.source.count("\n"):
            return leaf, line, leaf.source.splitlines()[line - first].strip()
    return None


def describe_numba_error(
    error: Exception,
    leaves: Sequence[LeafFunction],
    backend: str,
    compiler: str,
    whole: str,
    node_of: Callable[[LeafFunction], str] | None = None,
) -> CompileError:
    """A ``CompileError`` for what a Numba compiler (``compiler``, e.g. "Numba") said about
    ``leaves`` on the ``backend`` back end: naming the leaf, file, line and code when the
    message points into one of them (and its node, with ``node_of``), else ``whole`` — what
    was being compiled, e.g. "graph 'root'"."""
    text = str(error)
    summary = _summary(text, {line.strip() for leaf in leaves for line in leaf.source.splitlines()})
    found = locate_leaf_line(text, leaves)
    if found is None:
        return CompileError(
            f"the {backend} back end ({compiler}) cannot compile {whole}: {summary} — try target='interp'"
        )
    leaf, line, code = found
    node = f" in node '{node_of(leaf)}'" if node_of is not None else ""
    # ``line`` counts lines of the leaf's source; a generated body (an HBIR block) maps it
    # to the line of the file it was generated from, a Python leaf's is its file's line.
    return CompileError(
        f"leaf '{leaf.name}' ({leaf.where(line)}){node}: the {backend} back end ({compiler}) "
        f"cannot compile `{code}`: {summary} — try target='interp'"
    )


def _summary(text: str, source_lines: set[str]) -> str:
    """The first line of Numba's message that says what is wrong and, if there is one, the
    next that names a problem (not where: the message names that itself)."""
    keep: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line in source_lines or line.startswith(_NOISE):
            continue
        if not keep or line.startswith(_PROBLEM):
            keep.append(line)
        if len(keep) >= 2:
            break
    return " ".join(keep)[:400]
