"""``benchmarks/peers.py``: the verdict of a row with peers (hpvm ahead of every installed
peer and ≤ 1.10× Numba), and its matmul graph computing a product."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import peers  # noqa: E402 — benchmarks/peers.py, found through the line above
import run  # noqa: E402

import hpvm  # noqa: E402


def _row(ratio: float, per_numba: dict[str, float]) -> run.Row:
    row = run.Row("peers: k", "n")
    row.measure = f"cpu/Numba {ratio:.2f}×"
    row.data = {"ratio": ratio, **{p + "_per_cpu": v / ratio for p, v in per_numba.items()}}
    row.peers = {p: "1 ms" for p in per_numba}
    return row


@pytest.fixture
def both_installed(monkeypatch):
    monkeypatch.setattr(peers, "_PEERS", {"Taichi": object(), "Warp": object()})


@pytest.mark.usefixtures("both_installed")
@pytest.mark.parametrize(
    ("ratio", "per_numba", "verdict"),
    [
        (1.0, {"Taichi": 2.0, "Warp": 1.5}, "PASS"),  # both peers slower than hpvm
        (1.0, {"Taichi": 2.0, "Warp": 0.9}, "MISS"),  # Warp ahead of hpvm
        (1.2, {"Taichi": 2.0, "Warp": 2.0}, "MISS"),  # ahead of both, but 1.2x Numba
    ],
)
def test_a_row_passes_only_ahead_of_every_peer_and_near_numba(ratio, per_numba, verdict):
    row = _row(ratio, per_numba)
    peers.peer_verdict(row, run)
    assert row.verdict == verdict
    for name, value in per_numba.items():  # each peer's time over hpvm's
        assert row.data["peer_over_hpvm"][name] == pytest.approx(value / ratio)
        assert f"{name} {value / ratio:.2f}× hpvm cpu's time" in row.measure


def test_a_missing_peer_is_named_and_does_not_decide(monkeypatch):
    monkeypatch.setattr(peers, "_PEERS", {"Taichi": None, "Warp": object()})
    row = _row(1.0, {"Warp": 1.5})
    peers.peer_verdict(row, run)
    assert row.peers["Taichi"] == "not installed"
    assert row.verdict == "PASS"


@pytest.mark.usefixtures("hpvm_runtime")
def test_the_matmul_graph_computes_the_product():
    rng = np.random.default_rng(1)
    a = rng.random((9, 7), dtype=np.float32)
    b = rng.random((7, 5), dtype=np.float32)
    c = np.zeros((9, 5), dtype=np.float32)
    numba_c = np.zeros_like(c)
    for array in (a, b, c):
        hpvm.track_memory(array)
    hpvm.wait(hpvm.launch(peers.matmul_root, (a, b, c), target="cpu"))
    peers.matmul_numba(a, b, numba_c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    np.testing.assert_allclose(numba_c, a @ b, rtol=1e-5)
