"""Whether values fit an element type, as C's conversions define "fits": an integer within
the type's range, a float whose integer part is (C truncates toward zero; NaN and
infinities never fit an integer), a finite number that does not round to infinity in a
narrower float. NumPy wraps or overflows silently when it casts arrays; the HBIR front end
(inputs) and the SVM (stream and block elements) refuse such values by name instead, with
this one rule."""

from __future__ import annotations

import numpy as np


def range_text(dtype: np.dtype) -> str:
    """What numeric ``dtype`` holds, for messages."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return f"{info.min} to {info.max}"
    if dtype.kind == "f":
        return f"magnitudes below {float(np.finfo(dtype).max):.7g}, infinities and NaN"
    return "one of its members is out of its type's range"


def first_misfit(values: np.ndarray, dtype: np.dtype) -> int | None:
    """The flat (row-major) index of the first of numeric ``values`` that does not fit an
    element of numeric ``dtype``, or ``None`` (also for what is not a number: left to
    NumPy's conversion). Booleans fit every type."""
    if dtype.kind not in "iuf" or values.dtype.kind not in "iuf" or np.can_cast(values.dtype, dtype, "safe"):
        return None
    flat = values.reshape(-1)
    if dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            bad = np.isinf(flat.astype(dtype)) & np.isfinite(flat)
    elif values.dtype.kind == "f":
        info = np.iinfo(dtype)
        with np.errstate(invalid="ignore"):
            whole = np.trunc(flat)
            bad = ~np.isfinite(flat) | (whole < float(info.min)) | (whole >= float(info.max) + 1.0)
    else:
        info = np.iinfo(dtype)
        bad = (flat < info.min) | (flat > info.max)
    found = np.flatnonzero(bad)
    return int(found[0]) if len(found) else None


__all__ = ["first_misfit", "range_text"]
