"""``benchmarks/hbir.py``'s ``sample_rounds``: hbir and its anchor in rotated rounds of
their own, the sides kept for the record (NumPy's BLAS, whose threads spin after a call)
after them — in one fixed order hbir always ran right after BLAS (issue 24: the 512³
matmul row read 1.45× Numba at ``c049e7b``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import hbir as hbir_bench  # noqa: E402 — benchmarks/hbir.py, found through the line above


def test_the_compared_pair_never_follows_blas_and_alternates():
    calls: list[str] = []

    def run(name: str):
        return lambda: calls.append(name)

    compared = {"hbir": run("hbir"), "Numba": run("Numba")}
    record = {"naive": run("naive"), "NumPy": run("NumPy")}
    times = hbir_bench.sample_rounds([compared, record], 6)
    assert {k: len(v) for k, v in times.items()} == {"hbir": 6, "Numba": 6, "naive": 6, "NumPy": 6}
    pair, rest = calls[:12], calls[12:]
    assert sorted(set(pair)) == ["Numba", "hbir"] and sorted(set(rest)) == ["NumPy", "naive"]
    firsts = [pair[i] for i in range(0, 12, 2)]
    assert firsts.count("hbir") == firsts.count("Numba") == 3  # each leads every other round
