"""The stencil rows compare hpvm and hand-written Numba on the same arrays: two pairs made
alike ran the same compiled step up to 1.24× apart in one process (the allocator's
placement), which a row with a pair per implementation read as hpvm against Numba."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import baselines  # noqa: E402 — benchmarks/, found through the line above
import kernels  # noqa: E402
import layout  # noqa: E402
import run  # noqa: E402

from markers import needs_backend  # noqa: E402

pytestmark = [pytest.mark.usefixtures("hpvm_runtime"), needs_backend("cpu")]


def _recording(monkeypatch) -> dict[str, set[tuple[int, ...]]]:
    """The ids of the arrays each side's stencil runs were given."""
    seen: dict[str, set[tuple[int, ...]]] = {"hpvm": set(), "Numba": set()}
    hpvm_stencil, numba_run = kernels.stencil, baselines.stencil_run

    def hpvm_side(src, dst, *rest):
        seen["hpvm"].add(tuple(sorted((id(src), id(dst)))))
        return hpvm_stencil(src, dst, *rest)

    def numba_side(step, src, dst, *rest):
        if step is baselines.stencil_step:
            seen["Numba"].add(tuple(sorted((id(src), id(dst)))))
        return numba_run(step, src, dst, *rest)

    monkeypatch.setattr(kernels, "stencil", hpvm_side)
    monkeypatch.setattr(baselines, "stencil_run", numba_side)
    return seen


def test_the_stencil_row_runs_hpvm_and_numba_on_one_pair(monkeypatch, tmp_path):
    seen = _recording(monkeypatch)
    ctx = run.Bench(run.PRESETS["tiny"], ["cpu"], 2, tmp_path, Console(file=None, quiet=True))
    (row,) = run.bench_stencil(ctx)
    assert row.verdict in ("PASS", "MISS")  # (measured, and checked against Numba first)
    assert len(seen["hpvm"]) == 1
    assert seen["hpvm"] == seen["Numba"]


def test_a_device_back_end_and_the_peers_write_arrays_of_their_own():
    src = kernels.np.zeros((4, 4), dtype=kernels.np.float32)
    out = layout.outputs(run, ["cpu", "interp", "cuda"], src)
    host = {id(out[name]) for name in ("cpu", "interp", run.NUMBA, "NumPy")}
    assert len(host) == 1
    others = [out["cuda"], *(out[p] for p in run.PEERS)]
    assert len({id(a) for a in others} | host) == len(others) + 1
