"""A run on one thread calls the root's graph function without parallel loops
(``Compiler.single``): the shared program suite gives the interpreter's results through it,
its errors read as on all threads, and a program whose function does not compile runs its
parallel entry on one thread instead.

Why it exists: Numba runs a ``prange`` on one thread through its threading layer all the
same, and a run capped at one thread gets and sets the thread count around it; a tiny
graph's one-thread run (``quick.Runs.threads`` picks it where it measured faster) was
mostly those (docs/backends/cpu-performance.md, "One thread without the team").
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu import compiler as cpu_compiler
from hpvm.errors import NodeExecutionError
from programs import PROGRAMS, check_against_interp
from raising_leaves import picky_root

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


def _one_thread_runs(monkeypatch) -> list[int | None]:
    """Every cpu run is given one thread (as ``Runs.threads`` gives a tiny graph's): the
    thread counts the runner was called with."""
    backend = get_backend("cpu")
    counts: list[int | None] = []
    make = type(backend).runner

    def runner(self, root):
        run = make(self, root)

        def on_one_thread(args, threads):
            counts.append(threads)
            return run(args, 1)

        return on_one_thread

    monkeypatch.setattr(type(backend), "runner", runner)
    monkeypatch.setattr(type(backend), "runs_quick_on_launch", False)  # (every launch through run)
    return counts


def _numba_thread_count_untouched(monkeypatch) -> list[int]:
    """Calls of the thread-count setter the runner uses (there must be none on one thread
    where the single function compiled)."""
    from hpvm.backends.cpu import backend as cpu_backend

    get, put = cpu_backend._thread_count()
    calls: list[int] = []

    def counted(n: int) -> None:
        calls.append(n)
        put(n)

    monkeypatch.setattr(cpu_backend, "_thread_count", lambda: (get, counted))
    return calls


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_on_one_thread_matches_interp_and_reference(program, monkeypatch):
    counts = _one_thread_runs(monkeypatch)
    set_calls = _numba_thread_count_untouched(monkeypatch)
    check_against_interp(program, "cpu")
    assert counts, "the cpu back end's runner was not called"
    backend = get_backend("cpu")
    program_cpu = backend.prepare(program.root)
    if backend._entry_call(program_cpu) is not None:
        # (a run that is one call of the entry gets the function without parallel loops,
        # compiled, and never sets the thread count)
        assert program_cpu.single not in (None, False)
        assert set_calls == []


def _error_of(root, args) -> BaseException:
    for array in args:
        hpvm.track_memory(array)
    try:
        with pytest.raises(NodeExecutionError) as caught:
            hpvm.wait(hpvm.launch(root, args, target="cpu"))
    finally:
        for array in args:
            hpvm.untrack_memory(array)
    return caught.value


def test_an_error_on_one_thread_reads_as_on_all_threads(monkeypatch):
    a = np.arange(40, dtype=np.int64) - 30  # (instances 0..29 raise: the first one is named)
    on_all = _error_of(picky_root, (a,))
    _one_thread_runs(monkeypatch)
    on_one = _error_of(picky_root, (a,))
    assert get_backend("cpu").prepare(picky_root).single not in (None, False)
    assert str(on_one) == str(on_all)
    assert type(on_one.__cause__) is type(on_all.__cause__) is ValueError
    assert "negative input" in str(on_one) and "picky" in str(on_one)


@hpvm.leaf(ins=("a",), outs=("a",))
def doubled(a: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = a[i] * 2


@hpvm.internal()
def doubled_root(a: hpvm.f32[:]):
    node = hpvm.create_node_1d(doubled, a.shape[0])
    hpvm.bind_in(node, 0, 0)


def test_a_function_that_does_not_compile_leaves_the_parallel_entry_on_one_thread(monkeypatch):
    """``Compiler.single`` gives ``None`` where the function without parallel loops does not
    compile: the run on one thread then caps the thread count around the parallel entry, as
    before, and the program is never asked again."""
    asked: list[int] = []

    def refused(self, program):
        asked.append(1)
        return None

    monkeypatch.setattr(cpu_compiler.Compiler, "_single", refused)
    _one_thread_runs(monkeypatch)
    set_calls = _numba_thread_count_untouched(monkeypatch)
    a = np.arange(16, dtype=np.float32)
    hpvm.track_memory(a)
    for _ in range(3):
        hpvm.wait(hpvm.launch(doubled_root, (a,), target="cpu"))
    hpvm.untrack_memory(a)
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32) * 8)
    assert get_backend("cpu").prepare(doubled_root).single is False
    assert asked == [1]
    assert set_calls[::2] == [1, 1, 1]  # (capped to one thread, then set back, each run)
