"""Python's ``ast`` from several threads: one lock around building and compiling trees.

CPython 3.11 tracks the depth of its AST conversions (``ast.parse`` building Python nodes,
``compile`` of a tree reading them) in state shared by every thread; when two threads
convert at once (streaming stages compiling their leaves on first use), one of them fails
with ``SystemError: AST constructor recursion depth mismatch`` (CPython issue gh-106905,
fixed in later releases). hpvm parses and compiles leaf code on the threads that run
graphs, so every such call goes through ``parse`` and ``compile_tree`` here, which hold
one process-wide lock for the conversion (microseconds to milliseconds, once per leaf).
Also the one walk of a leaf's own code that the analyses share (``walk_own``).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.RLock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename, mode)


def compile_tree(tree: ast.AST, filename: str, mode: str = "exec") -> Any:
    """``compile`` of a syntax tree, one thread at a time."""
    with _LOCK:
        return compile(tree, filename, mode)


def compile_source(source: str, filename: str, mode: str = "exec") -> Any:
    """``compile`` of generated source text, one thread at a time."""
    with _LOCK:
        return compile(source, filename, mode)


__all__ = ["compile_source", "compile_tree", "parse"]


def walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, lambdas or classes (their code is
    not the leaf's own: it runs when called, with names of its own)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if n is node or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))
