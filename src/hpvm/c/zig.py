"""How hpvm runs zig (the ``ziglang`` package: clang and a linker with its own C and C++
runtime libraries), in one place.

Zig keeps what it builds — clang's outputs, and libc++, libc++abi and libunwind, about two
minutes of CPU on a 2-core machine — in a global cache, ``~/.cache/zig`` unless
``ZIG_GLOBAL_CACHE_DIR`` says otherwise. Its libc++ entry holds one build per set of
options, and every ``ziglang`` installation on a machine (one per virtual environment:
a fresh clone's ``make install`` makes one) rebuilt it for itself and took the entry
over, so two environments used in turn each paid the two minutes again. hpvm gives each
installation a cache of its own, under hpvm's (``ir/cache.py``), keyed by where the
package lives and its version; a ``ZIG_GLOBAL_CACHE_DIR`` the user set is left alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from ..ir.cache import cache_folder

CACHE_VARIABLE = "ZIG_GLOBAL_CACHE_DIR"


def zig_version() -> str:
    """The installed ``ziglang`` package's version (``unknown`` without one)."""
    try:
        return version("ziglang")
    except PackageNotFoundError:
        return "unknown"


def installation_cache() -> str:
    """The zig cache of this ``ziglang`` installation, created (see the module docstring)."""
    spec = importlib.util.find_spec("ziglang")
    where = str(spec.origin if spec is not None else sys.prefix)
    key = hashlib.sha256(f"{where}\0{zig_version()}".encode()).hexdigest()[:16]
    folder = cache_folder("zig") / key
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def command(tool: str, args: Sequence[str]) -> list[str]:
    """The command line running zig's ``tool`` (``cc``, ``c++``) with ``args``."""
    return [sys.executable, "-m", "ziglang", tool, *args]


def environment() -> dict[str, str]:
    """The environment zig runs in: this process's, with the installation's cache unless
    the user chose one."""
    env = dict(os.environ)
    if not env.get(CACHE_VARIABLE):
        env[CACHE_VARIABLE] = installation_cache()
    return env


__all__ = ["CACHE_VARIABLE", "command", "environment", "installation_cache", "zig_version"]
