"""``hpvm run --target dask --timings`` says how the back end ran the graph."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hpvm
from cli_program import PROGRAM, run_args
from hpvm.cli import main
from markers import needs_backend

pytestmark = needs_backend("dask")


def test_timings_print_how_the_graph_was_split(tmp_path: Path, dask_client, monkeypatch, capsys):
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", dask_client.scheduler.address)  # the in-process cluster
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    a = np.arange(6, dtype=np.float32)
    args = run_args(tmp_path, a, "2")
    out_dir = tmp_path / "out"
    assert (
        main(["run", str(program), "--target", "dask", *args, "--timings", "--save-dir", str(out_dir)]) == 0
    )
    captured = capsys.readouterr()
    assert "output 0: 12.0" in captured.out
    np.testing.assert_array_equal(np.load(out_dir / "b.npy"), a * 2)
    assert re.search(r"load \d+\.\d+ s, compile \d+\.\d+ s, run \d+\.\d+ s", captured.err)
    assert "dask: node 'scale' of 'root[scale]' split into 2 chunk(s) of rows [0, 3), [3, 6)" in captured.err
    assert "dask: 'root[total]' ran whole on one worker: node 'total' has one instance" in captured.err
    assert "dask: 'root' ran as 2 concurrent groups of children: root[scale]; root[total]" in captured.err


@pytest.fixture(autouse=True)
def _stopped():
    yield
    hpvm.cleanup()
