"""Build, once per machine, what zig links into every HPVM-C host library: the C runtime
pieces and libc++, libc++abi and libunwind (about two minutes of CPU for libc++, kept in
zig's own cache). ``make install`` runs it so that the first C++ program a user compiles,
and the first C++ test, link in seconds. Best effort: without ziglang it says so and
succeeds (the C front end then reports itself unavailable)."""

from __future__ import annotations

import sys
import time

TINY_MODULE = "define i32 @hpvm_warm_toolchain() {\n  ret i32 0\n}\n"


def main() -> int:
    try:
        from hpvm.c import clang
        from hpvm.c.hostlib import build
    except ImportError as e:  # pragma: no cover - an install without the C extra
        print(f"note: the HPVM-C toolchain was not warmed ({e})")
        return 0
    reason = clang.unavailable_reason()
    if reason:
        print(f"note: the HPVM-C toolchain was not warmed: {reason}")
        return 0
    start = time.perf_counter()
    for cxx in (False, True):
        build(TINY_MODULE, cxx=cxx, label="the toolchain warm-up")
    print(f"HPVM-C toolchain ready (zig's C and C++ runtime libraries, {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
