"""Build, once per machine, what zig links into every HPVM-C host library: the C runtime
pieces and libc++, libc++abi and libunwind (about two minutes of CPU for libc++, kept in
the zig cache hpvm gives each ``ziglang`` installation, ``hpvm/c/zig.py``: a fresh
environment's zig builds them again, and no longer takes another environment's build over).
``make install`` runs it so that the first C++ program a user compiles, and the first C++
test, link in seconds. It links with zig directly: through hpvm's library cache (keyed by
the module text and zig's version, shared by every environment) the tiny module was found
already built, zig never ran, and the first real C++ program paid libc++'s build (90-100 s
in the first C++ test of every fresh clone). Best effort: without ziglang it says so and
succeeds (the C front end then reports itself unavailable)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

# A program as small as a user's, compiled by the same clang, so that its module carries
# the target triple and data layout a real one does (a bare module without them made zig
# build libc++ again on every link, never finding its cached build).
TINY_SOURCES = {
    "warm.c": "int hpvm_warm_toolchain(void) { return 0; }\n",
    "warm.cpp": (
        "#include <string>\n#include <vector>\n"
        'extern "C" int hpvm_warm_toolchain() { std::vector<std::string> v{"hpvm"}; return (int)v.size(); }\n'
    ),
}


def main() -> int:
    try:
        from hpvm.c import clang
        from hpvm.c.hostlib import link
    except ImportError as e:  # pragma: no cover - an install without the C extra
        print(f"note: the HPVM-C toolchain was not warmed ({e})")
        return 0
    reason = clang.unavailable_reason()
    if reason:
        print(f"note: the HPVM-C toolchain was not warmed: {reason}")
        return 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hpvm-warm-") as tmp:
        for name, text in TINY_SOURCES.items():
            source = Path(tmp) / name
            source.write_text(text)
            module = clang.to_llvm(source)
            link(module, cxx=clang.is_cxx(source), label="the toolchain warm-up", folder=Path(tmp))
    print(f"HPVM-C toolchain ready (zig's C and C++ runtime libraries, {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
