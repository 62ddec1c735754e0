"""A second process with the same caches compiles nothing (issue 24: cold compile, warm start).

Generated graph code is written to content-addressed files and compiled with Numba's disk
cache, so a new process should load every function instead of compiling it. Anything that
makes the generated text, a module name or a signature differ between processes (an id,
an address, dict order, a closure compiled without the cache) would make every warm start
pay a full compile again without any test failing: the results stay right, only slower.
Here two new processes share one temporary cache and report Numba's ``numba:compile``
events: the second must have none. The first must compile no function twice: the chunk
function of a parallel loop was once typed with an ``int64`` and then a ``float64`` bound
(the parfor pass types a ``prange`` index as ``uint64``; see ``chunks.chunk_bounds``), a second
compile of the loop body in every cold start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from hpvm.runtime import fastpath

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = """
import json, sys
from numba.core import event

compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        compiled.append([func.__module__, func.__qualname__, str(ev.data["args"])])

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())

import numpy as np
import hpvm


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + b[i]


@hpvm.internal()
def root(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    node = hpvm.create_node_1d(add, a.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


a = np.arange(64, dtype=np.float32)
b = np.ones(64, np.float32)
c = np.zeros(64, np.float32)
hpvm.init()
for array in (a, b, c):
    hpvm.track_memory(array)
hpvm.wait(hpvm.launch(root, (a, b, c), target="cpu"))
hpvm.request_memory(c)
hpvm.cleanup()
assert (c == a + b).all(), c
print(json.dumps(compiled))
"""


def _run(script: Path, env: dict[str, str]) -> list[list[str]]:
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_with_the_same_caches_compiles_nothing(tmp_path: Path) -> None:
    script = tmp_path / "tiny_graph.py"  # a real file: leaves in it are cached on disk
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), HPVM_CACHE_DIR=str(tmp_path / "hpvm"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))

    cold = _run(script, env)
    generated = Counter(qualname for module, qualname, _ in cold if module.startswith("hpvm_generated."))
    assert any(name.endswith("_par") for name in generated), cold  # it did compile the graph
    twice = {name: n for name, n in generated.items() if n > 1}
    assert not twice, f"compiled more than once in one process: {twice}\n{cold}"

    warm = _run(script, env)
    assert warm == [], f"a warm start compiled again (not loaded from the caches): {warm}"


@pytest.mark.skipif(not fastpath.built(), reason=fastpath.REASON or "the extension is not built")
def test_a_hot_loops_native_calls_are_loaded_from_the_cache_by_a_second_process(tmp_path: Path) -> None:
    """A host loop long enough for its record to get native calls (``plan.HOT_REPLAYS``:
    the entry and the function for one thread as C functions, ``backends/cpu/native.py``):
    the second process finds both wrappers in Numba's cache (a ``cfunc`` reports no compile
    event, so its cache hits are counted instead) and compiles nothing else."""
    script = tmp_path / "hot_loop.py"
    launch = 'hpvm.wait(hpvm.launch(root, (a, b, c), target="cpu"))'
    assert launch in SCRIPT
    hot = SCRIPT.replace(
        launch,
        "from hpvm.runtime import plan\n"
        "from hpvm.backends import get_backend\n"
        "for _ in range(plan.HOT_REPLAYS + 20):\n"
        f"    {launch}\n"
        "natives = get_backend('cpu').prepare(root).natives\n"
        "hits = sorted(native.cache_hits for native in natives.values() if native is not None)\n",
    ).replace("print(json.dumps(compiled))", "print(json.dumps([compiled, hits]))")
    script.write_text(textwrap.dedent(hot))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), HPVM_CACHE_DIR=str(tmp_path / "hpvm"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.pop("HPVM_PURE_PYTHON", None)
    (_, cold_hits), (warm, warm_hits) = _run(script, env), _run(script, env)
    assert cold_hits and cold_hits == [0] * len(cold_hits), cold_hits  # (made: the loop was hot)
    assert warm_hits == [1] * len(cold_hits), warm_hits
    assert warm == [], f"a warm start compiled again (not loaded from the caches): {warm}"
