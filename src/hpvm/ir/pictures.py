"""Pictures in notebooks: ``_repr_svg_`` for what users draw on the command line.

Jupyter shows an object as a picture when it has ``_repr_svg_``. The objects live in the
layers below the drawing code (node functions in ``ir``; machines and mappings in ``svm``,
which draws them itself; HBIR programs in ``hbir``), so each asks for its picture through
``svg_text``: a drawing function that writes an SVG file, run into a temporary folder.
Node functions are drawn by ``hpvm.viz``, which ``ir`` may not import: the root package
installs the drawing function here (``draw_program``) when ``hpvm`` is imported.

A picture that cannot be made (a program that does not verify, matplotlib missing) is
``None``: the notebook then shows the object's text ``repr``, and the reason goes to a
warning, never a traceback in the middle of a notebook's output.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: How a node function is drawn (``hpvm.viz.render`` into an ``.svg`` path); set by ``hpvm``.
draw_program: Callable[[Any, Path], object] | None = None


def svg_text(draw: Callable[[Path], object], what: str) -> str | None:
    """The SVG ``draw(path)`` writes, or ``None`` (with a warning saying why) when it fails."""
    with tempfile.TemporaryDirectory(prefix="hpvm-picture-") as folder:
        path = Path(folder) / "picture.svg"
        try:
            draw(path)
            return path.read_text(encoding="utf-8")
        except Exception as e:  # noqa: BLE001 - a notebook falls back to the text repr
            warnings.warn(f"no picture of {what}: {type(e).__name__}: {e}", stacklevel=3)
            return None


def program_svg(fn: Any) -> str | None:
    """The picture of the program under node function ``fn`` (``hpvm show``'s)."""
    draw = draw_program
    if draw is None:
        return None
    return svg_text(lambda path: draw(fn, path), f"'{fn.name}'")


__all__ = ["draw_program", "program_svg", "svg_text"]
