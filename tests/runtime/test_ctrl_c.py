"""Ctrl-C always works: SIGINT while the host waits for a launch, pops a stream, or runs
``hpvm run`` raises ``KeyboardInterrupt`` (exit status 130 from the CLI) within a second,
on every back end, and ``cleanup()`` afterwards returns at once.

Before: on ``cpu``, ``wait`` ran the compiled graph on the calling (main) thread, where
Python delivers signals only between bytecodes, so Ctrl-C waited for the leaf to end;
``interp`` turned it into ``NodeExecutionError: running 'root' raised KeyboardInterrupt``.
Each case runs in a child process (``ctrl_c/interrupt_me.py``) that the test interrupts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from markers import needs_backend

HERE = Path(__file__).parent / "ctrl_c"
#: Spin counts that keep each back end busy for far longer than the test waits (minutes).
#: (``dask``: the default local cluster, worker processes of their own; a small launch's
#: tasks go straight to them, ``backends/dask/direct.py``)
LONG = {"cpu": 10**12, "interp": 10**10, "opencl": 10**12, "cuda": 10**10, "dask": 10**12}


def _interrupt(command: list[str], after: float = 0.3) -> tuple[list[str], float, int, str]:
    """Run ``command``, send SIGINT once it prints ``ready`` (and ``after`` seconds more);
    its output lines, how long it took to end after the signal (the interpreter's own exit,
    about a second of garbage collection here, included), its exit status, its stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.strip() == "ready", first + child.stderr.read()  # type: ignore[union-attr]
        time.sleep(after)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        return out.split("\n"), time.monotonic() - sent, child.returncode, err
    finally:
        if child.poll() is None:
            child.kill()


def _interrupted_promptly(target: str, how: str) -> None:
    """``interrupt_me.py`` on ``target`` doing ``how``: Ctrl-C ends the wait within 1.5 s,
    cleanup within 1 s, and the child exits 0."""
    command = [sys.executable, str(HERE / "interrupt_me.py"), target, how, str(LONG[target])]
    lines, took, status, _ = _interrupt(command)
    words = dict(line.split() for line in lines if line.strip())
    assert "interrupted" in words, lines
    assert float(words["interrupted"]) < 1.5
    assert float(words["cleanup"]) < 1.0
    assert status == 0 and took < 10


@pytest.mark.slow
@pytest.mark.parametrize("how", ["wait", "pop"])
@pytest.mark.parametrize(
    "target",
    [pytest.param(t, marks=needs_backend(t)) for t in ("cpu", "interp", "opencl", "cuda", "dask")],
)
def test_ctrl_c_interrupts_the_host_and_cleanup_returns(target, how):
    _interrupted_promptly(target, how)


@pytest.mark.slow
@needs_backend("cpu")
def test_ctrl_c_interrupts_a_pop_from_stages_run_as_one():
    """A pipeline of replicated stages that ``cpu`` runs as one stage thread
    (``streaming.one_stage``): the host's pop is interrupted as with a thread per stage."""
    _interrupted_promptly("cpu", "pop-stages")


@pytest.mark.slow
@needs_backend("cpu")
def test_ctrl_c_interrupts_a_pop_while_replicas_run_items():
    """Two long items of one stage running at once (the stage's thread and a replica,
    ``runtime/replicas.py``): the host's pop is interrupted, and cleanup returns at once."""
    _interrupted_promptly("cpu", "pop-replicas")


@pytest.mark.slow
@needs_backend("cpu")
def test_ctrl_c_ends_hpvm_run_with_status_130(tmp_path):
    import numpy as np

    np.save(tmp_path / "x.npy", np.zeros(2))
    command = [
        sys.executable,
        "-c",
        "import sys; from hpvm.cli import main; print('ready', flush=True); sys.exit(main())",
    ]
    command += ["run", str(HERE / "spin_program.py"), "--root", "root", "--target", "cpu"]
    command += ["--arg", f"x={tmp_path / 'x.npy'}"]
    warm = subprocess.run([*command, "--arg", "n=10"], capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr  # compiled now, and in Numba's cache for the next run
    lines, took, status, err = _interrupt([*command, "--arg", f"n={LONG['cpu']}"], after=3.0)
    assert status == 130 and err.strip() == "interrupted" and took < 10
