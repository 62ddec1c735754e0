"""Compiling Python emitted from a leaf IR so that its code carries the leaf's own lines.

Why: a runner of emitted code (the interpreter) reports where a leaf failed, raced or read
out of bounds by the line of the running frame, and tracebacks name it too. Emitted text
has lines of its own; its source map (``pyemit.emit_python``) gives each the leaf's line,
so the text is parsed here — it is our own emitted code, not the user's — and every node
takes its mapped line before it is compiled under the leaf's file name. Python's frames
then report the user's lines, and nothing else needs translating.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .. import pyast


def compile_emitted(
    text: str, lines: tuple[int, ...], filename: str, name: str, namespace: dict[str, Any]
) -> Callable[..., Any]:
    """The function ``name`` that ``text`` defines, compiled with line ``k`` of the text
    numbered ``lines[k - 1]`` (a line mapped to 0 keeps the ``def``'s) and ``filename`` as
    its file, its globals a copy of ``namespace`` (what the text reads)."""
    tree = pyast.parse(text, filename)
    first = lines[0] if lines else 1
    for node in ast.walk(tree):
        start = getattr(node, "lineno", None)
        if start is None:
            continue
        line = lines[start - 1] if 0 < start <= len(lines) and lines[start - 1] else first
        if getattr(node, "end_lineno", start) != start:  # a compound statement: no columns
            node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
        node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
    scope = dict(namespace)
    exec(pyast.compile_tree(tree, filename, "exec"), scope)
    function: Callable[..., Any] = scope[name]
    return function


__all__ = ["compile_emitted"]
