"""``target="dask"`` with the default local cluster, from a plain script.

A script without ``if __name__ == "__main__":`` used to fail: ``LocalCluster`` starts its
workers with multiprocessing's *spawn*, which runs the script again in each worker (three
tracebacks, then ``ClusterError: ... Nanny failed to start``). The workers are now programs
of their own (``cluster.start_local_cluster``), and the cluster is closed at exit, client
first, so the script also ends quietly when it keeps data on the workers and never calls
``hpvm.cleanup()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from markers import needs_backend

pytestmark = [needs_backend("dask"), pytest.mark.slow]

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import hpvm

    @hpvm.leaf(ins=("x", "y"), outs=("y",), layouts={"x": "strided", "y": "strided"})
    def step(x: hpvm.f64[:], y: hpvm.f64[:]):
        node = hpvm.get_node()
        i = hpvm.get_node_instance_id_x(node)
        g = hpvm.get_num_node_instances_x(node)
        for k in range(i, y.shape[0], g):
            y[k] = 2.0 * x[k] + y[k]

    @hpvm.internal
    def root(x: hpvm.f64[:], y: hpvm.f64[:]):
        n = hpvm.create_node_1d(step, 4)
        hpvm.bind_in(n, 0, 0)
        hpvm.bind_in(n, 1, 1)

    x = np.arange(64, dtype=np.float64)
    y = np.zeros_like(x)
    hpvm.init()
    hpvm.track_memory(x)
    hpvm.track_memory(y)
    for _ in range(3):  # the pieces stay on the workers between launches
        hpvm.wait(hpvm.launch(root, (x, y), target="dask"))
    hpvm.request_memory(y)
    print("sum", int(y.sum()))
    # no hpvm.cleanup(): the cluster is closed at exit
    """
)


def test_a_plain_script_runs_on_the_default_cluster_and_ends_quietly(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "HPVM_DASK_SCHEDULER"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["sum", str(3 * 2 * sum(range(64)))]
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert all(ln.startswith("hpvm: Dask dashboard at http://127.0.0.1:") for ln in lines), done.stderr
