"""Shared by the HPVM-C tests (imported by path: tests/c is on sys.path): skip without clang (the ziglang package), write C sources,
find the line of a ``// @marker`` comment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "c"


def _clang_reason() -> str | None:
    from hpvm.c import unavailable_reason

    return unavailable_reason()


def _llvm_leaves_reason() -> str | None:
    from hpvm.backends import get_backend

    if "llvm" not in get_backend("cpu").accepts:
        return "the cpu back end does not run LLVM leaves in this build"
    return None


needs_clang = pytest.mark.skipif(_clang_reason() is not None, reason=f"HPVM-C needs clang: {_clang_reason()}")
needs_llvm_leaves = pytest.mark.skipif(_llvm_leaves_reason() is not None, reason=str(_llvm_leaves_reason()))


@pytest.fixture
def clean_runtime():  # type: ignore[no-untyped-def]
    """The runtime cleaned up after the test (modules take it with ``usefixtures``): a test that
    launches leaves no tracked arrays, workers or streams to the next."""
    yield
    import hpvm

    hpvm.cleanup()


def compiled_program(path: Path):  # type: ignore[no-untyped-def]
    """A module-scoped fixture: ``c.compile(path)`` once for the module's tests."""

    @pytest.fixture(scope="module")
    def program():  # type: ignore[no-untyped-def]
        from hpvm import c

        return c.compile(path)

    return program


def write_tensor_files(folder: Path, arrays: dict) -> dict:  # type: ignore[type-arg]
    """Each array as float32 in ``folder/<name>.bin``, the raw files HPVM's
    ``readTrainedWeights`` and ``readInputBatch`` read; the float32 arrays, by name."""
    import numpy as np

    out = {name: np.asarray(a).astype(np.float32) for name, a in arrays.items()}
    for name, a in out.items():
        a.tofile(folder / f"{name}.bin")
    return out


def line_of(source: str, marker: str) -> int:
    """The 1-based line of ``source`` that ends with ``// @marker``."""
    hits = [k for k, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


def group_hierarchy(root, names: tuple[str, str, str]) -> tuple:  # type: ignore[no-untyped-def]
    """The (group node, leaf node) of a GPU-convention HPVM-C graph as Parboil's and Rodinia's
    ports write it — a CPU root replicating a GPU wrapper 1-D over ``groups``, which
    replicates a GPU leaf 1-D —, asserting that shape and the three functions' ``names``."""
    (group,) = root.graph.nodes
    (leaf,) = group.function.graph.nodes
    functions = (root, group.function, leaf.function)
    assert [f.name for f in functions] == list(names)
    assert [f.hint for f in functions] == ["cpu", "gpu", "gpu"]
    assert (group.dims, leaf.dims) == (1, 1)
    assert [p.name for p in group.sizes] == ["groups"]
    assert str(root.params[-1].type) == "i64"  # groups: a size_t
    return group, leaf


#: A 1-D leaf whose instance sums its row of ``src`` in a loop of ``w`` turns (a scalar: the
#: host bounds it) and stores the sum at ``dst[y]``, with no guard: programs append a root
#: (``test_c_quick.py``: runs inside launch; ``test_c_bounds.py``: the store checked).
ROW_SUM_LEAF = """
#include "hpvm.h"

void row_sum(float *src, size_t bytes_src, float *dst, size_t bytes_dst, int w) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  long y = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  float s = 0.0f;
  for (int k = 0; k < w; k++)
    s += src[y * w + k];
  dst[y] = s;
}
"""


@pytest.fixture
def full_path(monkeypatch):
    """How many launches took the full path; every run quick (``running.full_path_launches``)."""
    from running import full_path_launches

    return full_path_launches(monkeypatch)


@pytest.fixture
def write_c(tmp_path: Path):
    """``write_c(source, name="prog.c")`` → the path of a file holding ``source``."""

    def write(source: str, name: str = "prog.c") -> Path:
        path = tmp_path / name
        path.write_text(source)
        return path

    return write


def heap_reuse_blocks(root, target: str, blocks: int = 300):  # type: ignore[no-untyped-def]
    """Launch a program of ``programs/heap_reuse.c``'s shape (each block records its buffer's
    address and the nonzero bytes it found in it, then dirties it) over ``blocks`` blocks of
    200 bytes: (each block's buffer address, the nonzero bytes it found)."""
    import numpy as np

    import hpvm

    addr, dirty = np.zeros(blocks, np.int64), np.full(blocks, -1, np.int64)
    hpvm.init()
    for a in (addr, dirty):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, (addr.view(np.uint8), dirty.view(np.uint8), 200, blocks), target=target))
    for a in (addr, dirty):
        hpvm.request_memory(a)
        hpvm.untrack_memory(a)
    return addr, dirty


def run_apart(script: str, *args: str, timeout: float = 600) -> str:
    """``script`` run by this Python in a process of its own, with ``args`` and this
    process's import path, for a program whose unchecked run could corrupt the process; its
    standard output (it must exit normally)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def cache_with_the_suites_toolchain(folder: Path) -> Path:
    """``folder`` made an hpvm cache whose clang and zig output (``c-ir``, ``c-host``,
    ``zig``) are the suite's own, linked: a test of what hpvm stores from the modules' text
    starts from nothing there, without compiling and linking the program from nothing too."""
    from hpvm.ir.cache import cache_root

    folder.mkdir(parents=True, exist_ok=True)
    for shared in ("c-ir", "c-host", "zig"):
        if (cache_root() / shared).is_dir():
            (folder / shared).symlink_to(cache_root() / shared, target_is_directory=True)
    return folder


#: A process that runs an HPVM-C program unchecked, then checked (``argv``: ``first`` or
#: ``later``, the number of sources, the sources, main's arguments); ``later``: one whose
#: builders from the modules' text all raise, so it runs only from what hpvm stored.
_STORED_RUNS = """
import sys
from numba.core import event
from hpvm import c
from hpvm.backends.llvm_native import access, checked, jit, native, wijam
from hpvm.ir import llvmbounded
import hpvm.backends.cpu as cpu

def built_again(*args):
    raise AssertionError("built again although stored")

class Compiled(event.Listener):
    graphs = []
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        if func.__module__.startswith("hpvm_generated."):
            self.graphs.append(func.__qualname__)
    def on_end(self, ev):
        pass

event.register("numba:compile", Compiled())
which, count = sys.argv[1], int(sys.argv[2])
if which == "later":
    native._clone = jit.optimize_module = checked._check = built_again
    llvmbounded._analysed = access._printed = wijam._build = built_again
program = c.compile(sys.argv[3 : 3 + count])
assert program.run(sys.argv[3 + count :]) == 0
cpu.configure(checked=True)
assert program.run(sys.argv[3 + count :]) == 0
assert which == "first" or not Compiled.graphs, f"graph code compiled again: {Compiled.graphs}"
"""


def stored_runs(
    which: str, sources: list[Path], argv: list[str], cache: Path, cwd: Path | None = None
) -> str:
    """What the program printed, run unchecked then checked in a process of its own with
    ``cache`` as hpvm's cache; ``which`` ``later``: nothing may be built again from the
    modules' text there, nor the graph's code compiled again (``_STORED_RUNS``). ``cwd``:
    the folder it runs in, given the sources by paths relative to it."""
    env = {**os.environ, "HPVM_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    named = [os.path.relpath(p, cwd) for p in sources] if cwd is not None else list(map(str, sources))
    command = [sys.executable, "-c", _STORED_RUNS, which, str(len(sources)), *named, *argv]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


#: What LLVM leaves' preparation keeps in hpvm's cache (``ir/cache.stored_json``, ``jit.py``).
STORED_FOLDERS = ("llvm-clone", "llvm-checked", "llvm-bounded", "llvm-printed", "llvm-object")


def named_file(path: Path) -> str:
    """A regex of ``path`` as a message names a C file: by its absolute path
    (``c.clang.absolute_files``)."""
    return re.escape(os.path.abspath(path))


def assert_refused_at_the_global_index(
    unguarded: dict[str, str], node: str, leaf: str, array: str, root: str, graph: Path, line: str
) -> None:
    """Every run of ``unguarded`` (target → the message it raised) refused a launch of 2
    groups of 64 whose instances index a 400-byte ``array`` (a regex) of ``root`` at the
    CUDA convention's global index, before the leaf ran, naming ``node`` (its name and
    location, a regex), ``leaf`` and the access's ``line`` (a regex) of ``graph``: Rodinia's
    and Parboil's forgotten edge guards, refused by the bounds pre-check on every target."""
    assert set(unguarded) == {"interp", "interp with races", "cpu checked", "cpu"}, unguarded
    said = (
        rf"node {node}: every instance of leaf '{leaf}' accesses bytes "
        r"4\*\(parent\.x\*instances\.x \+ x\) to 4\*\(parent\.x\*instances\.x \+ x\) \+ 3 of "
        rf"'{array}' \(input of '{root}', 400 bytes long\) \({named_file(graph)}:{line}\); "
        r"over this launch's instances \(\(parent\.x\*instances\.x \+ x\) < 128\) that is bytes 0 to 511: "
        r"some instances would index past its end"
    )
    for message in unguarded.values():
        assert message.startswith("OutOfBoundsError: "), message
        assert re.search(said, message), message
