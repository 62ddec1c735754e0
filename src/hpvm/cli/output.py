"""What the subcommands write: pictures and text files the user named, graphs drawn, LLVM
IR printed or written, counts in words.

Why a module of its own: a missing folder, a read-only file or a picture format the
drawing cannot write is said the same way by every subcommand that writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .loading import CLIError


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Writing an output the user named: a missing folder, a read-only file or a full disk is
    an error naming the path (the libraries that write it would raise their own)."""
    try:
        yield
    except OSError as e:
        folder = path.parent
        why = f"the folder {folder} does not exist" if not folder.exists() else (e.strerror or str(e))
        raise CLIError(f"{path}: cannot be written: {why}") from None


def picture(output: str) -> Path:
    """The path of a picture to write: its suffix must name a format the drawing writes."""
    path = Path(output)
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise CLIError(f"{output}: cannot draw a picture in that format; name a .svg, .png or .pdf file")
    return path


def emit_llvm(text: str, output: str | None) -> bool:
    """Print ``text``, or write it to ``output`` (True then)."""
    if output is None:
        print(text, end="")
        return False
    try:
        Path(output).write_text(text)
    except OSError as e:
        raise CLIError(f"{output}: cannot write the LLVM IR: {e.strerror or e}") from None
    return True


def draw_graph(root: Any, output: str | None, engine: str) -> int:
    """Graphviz text on stdout (no output) or in a ``.dot`` file, else a picture."""
    from ..viz import render, to_dot

    if output is None or output.endswith(".dot"):
        text = to_dot(root)
        if output is None:
            print(text)
        else:
            with writing(Path(output)):
                Path(output).write_text(text, encoding="utf-8")
            print(f"wrote {output}")
        return 0
    with writing(Path(output)):
        render(root, output, engine=engine)
    print(f"wrote {output}")
    return 0


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
