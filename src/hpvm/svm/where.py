"""Where in the user's program an SVM call was made, and what the user called an object.

Messages name "the control-code line" and the user's variable (``s1``, ``amp``): both are
found by walking the stack to the first frames outside the ``hpvm`` package.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType

_HPVM_DIR = str(Path(__file__).resolve().parents[1])
# Library frames (pytest, pluggy, the standard library) may recur legitimately.
_LIBRARY_DIRS = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


def _user_frames(limit: int) -> list[FrameType]:
    frames: list[FrameType] = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < limit:
        if not frame.f_code.co_filename.startswith(_HPVM_DIR):
            frames.append(frame)
        frame = frame.f_back
    return frames


def caller_line() -> str:
    """``file:line`` of the nearest caller outside hpvm (``<unknown>`` if none)."""
    frames = _user_frames(1)
    if not frames:
        return "<unknown>"
    return f"{frames[0].f_code.co_filename}:{frames[0].f_lineno}"


def user_name(obj: object, default: str) -> str:
    """The name the user's code gives ``obj``: the outermost of the nearest three user
    frames that binds a local or global name to it (control code's variable rather than an
    init function's parameter); ``default`` if none does."""
    found = None
    for frame in _user_frames(3):
        for name, value in frame.f_locals.items():
            if value is obj and not name.startswith("_"):
                found = name
                break
    return found or default


def recursive_user_function() -> str | None:
    """Restriction B6: the name of a user function that appears twice on the current
    stack (called recursively), or None."""
    seen: set[object] = set()
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        file = code.co_filename
        is_library = file.startswith(_LIBRARY_DIRS) or "site-packages" in file or file.startswith("<")
        if not file.startswith(_HPVM_DIR) and not is_library and code.co_name != "<module>":
            if code in seen:
                return f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
            seen.add(code)
        frame = frame.f_back
    return None
