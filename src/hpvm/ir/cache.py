"""Where hpvm keeps what it builds for later processes: ``$HPVM_CACHE_DIR``, else
``~/.cache/hpvm``.

One place for every layer that caches on disk (the ``cpu`` back end's generated graph
code, HPVM-C's host libraries under ``c-host/``), so one variable moves them all.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """hpvm's cache folder (not created here)."""
    return Path(os.environ.get("HPVM_CACHE_DIR") or Path.home() / ".cache" / "hpvm")


__all__ = ["cache_root"]
