"""The host code runs: main JIT-compiled, its output, argv and exit code; the host calls
reach the runtime with the argument struct unpacked, and outputs written back.

The launches here go to a recording host (``hpvm.ir.host``'s interface) that computes the
graph's result with NumPy, so the host path is checked on its own; test_c_examples.py runs
the same programs on hpvm's back ends."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, needs_clang

from hpvm import c
from hpvm.c.argstruct import ArgStruct
from hpvm.ir import host as host_module
from hpvm.ir.types import ArrayType, ScalarType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402


class RecordingHost:
    """A host API that records calls and runs graphs with a Python function."""

    def __init__(self, compute):
        self.compute = compute
        self.calls: list[str] = []
        self.tracked: list[np.ndarray] = []
        self.pending: list[tuple] = []

    def init(self):
        self.calls.append("init")

    def cleanup(self):
        self.calls.append("cleanup")

    def track_memory(self, a):
        self.calls.append(f"track {a.nbytes}")
        self.tracked.append(a)

    def untrack_memory(self, a):
        self.calls.append(f"untrack {a.nbytes}")

    def request_memory(self, a):
        self.calls.append(f"request {a.nbytes}")
        return a

    def launch(self, root, args, stream=False, target=None):
        self.calls.append(f"launch {root.name} stream={stream} target={target}")
        if not stream:
            self.pending.append(args)
        return object()

    def wait(self, handle):
        self.calls.append("wait")
        return self.compute(*self.pending.pop(0)) if self.pending else None

    def push(self, handle, args):
        self.calls.append("push")
        self.pending.append(args)

    def pop(self, handle, timeout=None):
        self.calls.append("pop")
        return self.compute(*self.pending.pop(0))


@pytest.fixture
def recording():
    previous = host_module.provided()
    made: list[RecordingHost] = []

    def install(compute):
        made.append(RecordingHost(compute))
        host_module.provide_host(made[-1])  # (no factory: every run answers this host)
        return made[-1]

    yield install
    host_module.provide_host(*previous)


def test_arg_struct_is_packed_with_outputs_after():
    class In(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("p", ctypes.c_void_p), ("n", ctypes.c_size_t), ("k", ctypes.c_int), ("f", ctypes.c_float),
                    ("out_i", ctypes.c_int), ("out_pad", ctypes.c_int), ("out_d", ctypes.c_double)]  # fmt: skip

    data = (ctypes.c_uint8 * 8)(*range(8))
    s = In(ctypes.addressof(data), 8, -3, 1.5)
    struct = ArgStruct("r", ["ptr", "i64", "i32", "float"], ["i32", "double"],
                       [ArrayType(ScalarType("u8"), 1), ScalarType("i32"), ScalarType("f32")])  # fmt: skip
    arr, k, f = struct.read(ctypes.addressof(s))
    assert list(arr) == list(range(8)) and k == -3 and f == 1.5
    # (scalars as their ports' NumPy types, as a Python host passes them to i32 and f32 ports)
    assert type(k) is np.int32 and type(f) is np.float32
    arr[0] = 99  # a view of the C memory, not a copy
    assert data[0] == 99
    assert struct.out_start == In.out_i.offset and struct.out_offsets == [0, 8]  # natural layout inside
    struct.write_outputs(ctypes.addressof(s) + struct.out_start, (np.int32(7), 2.25))
    assert s.out_i == 7 and s.out_d == 2.25


def test_a_pointer_port_is_the_same_array_each_time_its_region_is_the_same():
    """A pointer-only port's array is its tracked region's from the pointer on: the region's
    own array at its start, one slice per interior pointer — the same objects on every read
    (a launch whose arrays are new objects is never replayed), new ones for a region tracked
    anew."""
    data = (ctypes.c_uint8 * 16)(*range(16))
    start = ctypes.addressof(data)
    region = np.ctypeslib.as_array(data)
    struct = ArgStruct("r", ["ptr"], [], [ArrayType(ScalarType("u8"), 1, sized=False)])
    pointer = ctypes.c_uint64(start)
    read = lambda regions: struct.read(ctypes.addressof(pointer), regions=regions)[0]  # noqa: E731
    assert read({start: region}) is region
    pointer.value = start + 4
    inner = read({start: region})
    assert list(inner) == list(range(4, 16)) and read({start: region}) is inner
    again = region[:]  # (the region tracked anew: another array)
    other = read({start: again})
    assert other is not inner and list(other) == list(range(4, 16)) and other.base is not None


@needs_clang
def test_main_output_argv_and_exit_code(write_c, capfd):
    source = """#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(int argc, char **argv) {
  printf("argc=%d last=%s\\n", argc, argv[argc - 1]);
  fprintf(stderr, "to stderr\\n");
  return atoi(argv[argc - 1]);
}
"""
    program = c.compile(write_c(source))
    assert program.run(["x", "7"]) == 7
    out, err = capfd.readouterr()
    assert out == "argc=3 last=7\n" and "to stderr" in err
    assert program.run(["0"]) == 0


@needs_clang
def test_asserts_are_on(write_c):
    source = """#include <assert.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(void) { int ok = 0; assert(ok == 0); return 5; }
"""
    assert c.compile(write_c(source)).run() == 5


@needs_clang
def test_launch_unpacks_args_and_wait_writes_outputs(recording, capfd):
    def vector_add(a, b, c_):
        c_.view(np.float32)[:] = a.view(np.float32) + b.view(np.float32)
        return (c_.nbytes,)

    rec = recording(vector_add)
    program = c.compile(EXAMPLES / "vector_add.c")
    assert program.run(["37"]) == 0  # main compared with its own loop, and checked out.bytes_c
    assert "37 elements, 0 wrong" in capfd.readouterr().out
    bytes_ = 37 * 4
    assert rec.calls == ["init", *[f"track {bytes_}"] * 3, "launch root stream=False target=cpu", "wait",
                         f"request {bytes_}", *[f"untrack {bytes_}"] * 3, "cleanup"]  # fmt: skip


@needs_clang
def test_a_wrong_result_is_the_programs_exit_code(recording, capfd):
    rec = recording(lambda a, b, c_: (c_.nbytes,))  # "computes" nothing
    assert c.compile(EXAMPLES / "vector_add.c").run(["8"]) == 1
    assert "8 elements, 8 wrong" in capfd.readouterr().out
    assert rec.calls[0] == "init"


@needs_clang
def test_scalars_in_the_packed_struct(recording):
    seen = {}

    def sgemm(a, b, c_, m, n, k, alpha, beta, bytes_tile):
        seen.update(m=m, n=n, k=k, alpha=alpha, beta=beta, bytes_tile=bytes_tile)
        A = a.view(np.float32).reshape(m, k)
        B = b.view(np.float32).reshape(k, n)
        C = c_.view(np.float32).reshape(m, n)
        C[:] = alpha * (A @ B) + beta * C
        return ()

    recording(sgemm)
    assert c.compile(EXAMPLES / "sgemm.c").run(["16", "8", "5"]) == 0
    assert seen == dict(m=16, n=8, k=5, alpha=2.0, beta=0.5, bytes_tile=256)


@needs_clang
def test_streaming_push_and_pop(recording, capfd):
    rec = recording(lambda frame, scale: (float(frame.view(np.float32).sum(dtype=np.float64)) * scale,))
    assert c.compile(EXAMPLES / "pipeline.c").run() == 0
    assert "frame 5:" in capfd.readouterr().out
    assert rec.calls[1] == "launch pipeline stream=True target=cpu"
    assert rec.calls.count("push") == 6 and rec.calls.count("pop") == 6


@needs_clang
def test_gpu_hint_runs_on_cpu_with_a_note(write_c, recording, capfd):
    source = """#include "hpvm.h"
void leaf(int x) { __hpvm__hint(GPU_TARGET); }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
typedef struct __attribute__((__packed__)) { int x; } In;
int main(void) { In in = {4}; __hpvm__init(); __hpvm__wait(__hpvm__launch(0, root, &in)); __hpvm__cleanup(); return 0; }
"""
    rec = recording(lambda x: ())
    assert c.compile(write_c(source)).run() == 0
    err = capfd.readouterr().err
    assert "node function leaf is hinted gpu; the program's leaves are LLVM code" in err
    assert "launch root stream=False target=cpu" in rec.calls


@needs_clang
def test_a_failing_host_call_is_raised_by_run(write_c):
    source = """#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(void) { int *p = malloc(16); __hpvm__init(); llvm_hpvm_untrack_mem(p); return 0; }
"""
    with fails(c.HPVMCError, "while main ran", "llvm_hpvm_untrack_mem", "is not tracked"):
        c.compile(write_c(source)).run()


@needs_clang
def test_a_failing_host_call_ends_mains_thread_and_runs_nothing_after_it(write_c, capfd):
    """The failing call jumps out of main (setjmp/longjmp around it): the printf after it never
    runs, and no thread of the program is left behind."""
    import threading

    source = """#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(void) {
  int *p = malloc(16); __hpvm__init(); llvm_hpvm_untrack_mem(p);
  printf("after the failing call\\n"); fflush(stdout); return 0;
}
"""
    program = c.compile(write_c(source))
    for _ in range(2):  # and the next run starts clean
        with fails(c.HPVMCError, "while main ran", "llvm_hpvm_untrack_mem"):
            program.run()
    assert "after the failing call" not in capfd.readouterr().out
    assert not [t for t in threading.enumerate() if t.name.startswith("hpvm-c main")]


@needs_clang
def test_a_pointer_tracked_twice_is_untracked_twice(write_c, capfd):
    """Two empty std::vectors both hold NULL: tracking both and untracking both is a right
    program (each untrack pairs with a track; the memory stays tracked until the last one),
    and a launch between the two untracks still finds the other buffer tracked."""
    source = """#include <cstdio>
#include <vector>
#include "hpvm.h"
void leaf(float *a, size_t bytes_a) { __hpvm__attributes(1, a, 1, a); if (bytes_a) a[0] += 1.0f; }
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
}
struct __attribute__((__packed__)) In { float *a; size_t bytes_a; };
int main() {
  std::vector<float> empty, none, data(4, 1.0f);
  __hpvm__init();
  llvm_hpvm_track_mem(empty.data(), 0);
  llvm_hpvm_track_mem(none.data(), 0);
  llvm_hpvm_track_mem(data.data(), 16);
  llvm_hpvm_track_mem(data.data(), 16);
  llvm_hpvm_untrack_mem(empty.data());
  llvm_hpvm_untrack_mem(data.data());
  In in = {data.data(), 16};
  __hpvm__wait(__hpvm__launch(0, root, &in));  // still tracked: one track is left
  llvm_hpvm_request_mem(data.data(), 16);
  llvm_hpvm_untrack_mem(none.data());
  llvm_hpvm_untrack_mem(data.data());
  __hpvm__cleanup();
  printf("a[0] = %g\\n", data[0]);
  return 0;
}
"""
    assert c.compile(write_c(source, "prog.cc")).run() == 0
    assert capfd.readouterr().out.strip() == "a[0] = 2"


@needs_clang
def test_an_untrack_past_the_last_track_says_so(write_c):
    source = """#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(void) {
  int *p = malloc(16); __hpvm__init();
  llvm_hpvm_track_mem(p, 16); llvm_hpvm_track_mem(p, 16);
  llvm_hpvm_untrack_mem(p); llvm_hpvm_untrack_mem(p); llvm_hpvm_untrack_mem(p);
  return 0;
}
"""
    with fails(
        c.HPVMCError,
        "llvm_hpvm_untrack_mem",
        "that pointer is not tracked (any more: each llvm_hpvm_track_mem pairs with one untrack)",
    ):
        c.compile(write_c(source)).run()


@needs_clang
def test_request_of_untracked_memory(write_c):
    source = """#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
int main(void) { int *p = malloc(16); __hpvm__init(); llvm_hpvm_request_mem(p, 16); return 0; }
"""
    with fails(c.HPVMCError, "llvm_hpvm_request_mem", "is not tracked"):
        c.compile(write_c(source)).run()


@needs_clang
def test_runtime_errors_keep_their_type(write_c):
    from hpvm.errors import MemoryTrackingError

    source = """#include <stdlib.h>
#include "hpvm.h"
void leaf(int *a, size_t n) { __hpvm__attributes(0, 1, a); a[0] = 1; }
void root(int *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
typedef struct __attribute__((__packed__)) { int *a; size_t n; } In;
int main(void) {
  In in = {malloc(16), 16};
  __hpvm__init();
  __hpvm__wait(__hpvm__launch(0, root, &in));  /* a is not tracked */
  return 0;
}
"""
    import hpvm

    program = c.compile(write_c(source))
    with pytest.raises(
        MemoryTrackingError, match=r"field 0 of root's argument struct \(root parameter a, 16 bytes\)"
    ) as info:
        program.run()
    assert "llvm_hpvm_track_mem(ptr, bytes)" in str(info.value)  # C's API, not hpvm.track_memory
    assert "prog.c: while main ran: __hpvm__launch" in str(info.value)
    hpvm.cleanup()


@needs_clang
def test_no_main(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
"""
    with fails(c.HPVMCError, "no main function"):
        c.compile(write_c(source)).run()


XTORS = """#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
void leaf(int x) { }
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
static int stray[4];
__attribute__((constructor)) static void early(void) {
  printf("constructor\\n");
  __hpvm__init();
#ifdef FAIL_EARLY
  llvm_hpvm_untrack_mem(stray);
#endif
}
__attribute__((destructor)) static void late(void) {
#ifdef FAIL_LATE
  llvm_hpvm_untrack_mem(stray);
#endif
  __hpvm__cleanup();
  printf("destructor\\n");
}
static void bye(void) { printf("atexit\\n"); }
int main(void) { atexit(bye); printf("main\\n"); return 4; }
"""


@needs_clang
def test_constructors_and_destructors_make_host_calls(write_c, recording, capfd):
    """A C constructor runs before main with the host calls in place, atexit handlers and
    destructors after it, as exit runs them."""
    rec = recording(lambda x: ())
    assert c.compile(write_c(XTORS)).run() == 4
    assert capfd.readouterr().out == "constructor\nmain\natexit\ndestructor\n"
    assert rec.calls == ["init", "cleanup"]


@needs_clang
def test_a_failing_host_call_in_a_constructor_or_destructor(write_c, capfd):
    early = c.compile(write_c(XTORS), defines=["FAIL_EARLY"])
    with fails(c.HPVMCError, "while main ran", "llvm_hpvm_untrack_mem", "is not tracked"):
        early.run()
    assert capfd.readouterr().out == "constructor\ndestructor\n"  # main never ran; destructors do, as at exit
    late = c.compile(write_c(XTORS), defines=["FAIL_LATE"])
    with fails(c.HPVMCError, "while main ran", "llvm_hpvm_untrack_mem", "is not tracked"):
        late.run()
    assert capfd.readouterr().out == "constructor\nmain\natexit\ndestructor\n"  # nowhere to jump: it goes on


@needs_clang
def test_a_damaged_library_in_the_cache(write_c, tmp_path, monkeypatch):
    """A cached library that is not one (a disk error, a hand edit): the loader's error."""
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path / "cache"))
    source = '#include "hpvm.h"\nvoid leaf(int x) { }\n' + (
        "void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }\n"
        "int main(void) { return 0; }\n"
    )
    program = c.compile(write_c(source))
    library = program._host.library()
    assert library.parent == tmp_path / "cache" / "c-host"
    library.write_bytes(b"not a shared library")
    with fails(c.HPVMCError, "the host library cannot be loaded", "c-host"):
        program.run()
