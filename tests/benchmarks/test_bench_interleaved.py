"""``Bench.interleaved`` (``benchmarks/run.py``), with a fake clock: its samples are taken
round-robin, and with ``steady`` each sample is a loop of one run's calls after an untimed
one, so what the previous run left behind is paid outside the sample (the launch row's
vadd ratio, ``_launch_vadd``)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import orders as bench_orders  # noqa: E402 — benchmarks/orders.py
import run  # noqa: E402 — benchmarks/run.py, found through the line above

COST = {"hpvm": 3.0, "numba": 2.0}  # seconds a call takes in a loop of its own calls
SWITCH = 10.0  # more for the first call after the other run's: its leftovers


def _fake(monkeypatch: pytest.MonkeyPatch) -> tuple[dict, list[str]]:
    clock = [0.0]
    calls: list[str] = []
    monkeypatch.setattr(run.time, "perf_counter", lambda: clock[0])

    def call(name: str):
        def fn() -> None:
            clock[0] += COST[name] + (SWITCH if calls and calls[-1] != name else 0.0)
            calls.append(name)

        return fn

    return {name: call(name) for name in COST}, calls


def _bench() -> run.Bench:
    return run.Bench(SimpleNamespace(min_sample_s=1.0), ["cpu"], 5, Path("."), None)  # type: ignore[arg-type]


@pytest.mark.parametrize("steady", [1, 4])
def test_steady_samples_time_a_loop_of_one_run_after_an_untimed_call(monkeypatch, steady):
    runs, calls = _fake(monkeypatch)
    medians = _bench().interleaved(runs, {name: 1.0 for name in runs}, steady=steady)
    assert medians == COST  # the switch is never in a sample
    samples = len(calls) // (2 * (steady + 1))
    assert samples >= 5 and len(calls) == samples * 2 * (steady + 1)
    for i in range(0, len(calls), steady + 1):  # each sample: one run's calls in a row
        assert len(set(calls[i : i + steady + 1])) == 1


def test_one_call_samples_pay_the_other_runs_leftovers(monkeypatch):
    runs, calls = _fake(monkeypatch)
    medians = _bench().interleaved(runs, {name: 1.0 for name in runs})
    assert len(calls) == 2 * _bench().samples_for(1.0)
    assert any(medians[name] > COST[name] for name in COST)  # (why the launch row uses steady)


def test_extras_do_not_set_the_rounds_and_take_their_own_samples_among_them(monkeypatch):
    clock = [0.0]
    calls: list[str] = []
    monkeypatch.setattr(run.time, "perf_counter", lambda: clock[0])
    cost = {"cpu": 0.02, "numba": 0.02, "numpy": 0.25}  # the stencil row's 100 launches, NumPy's

    def call(name: str):
        def fn() -> None:
            clock[0] += cost[name]
            calls.append(name)

        return fn

    bench = _bench()
    runs = {name: call(name) for name in cost}
    medians = bench.interleaved(runs, dict(cost), extras=("numpy",))
    rounds = bench.samples_for(0.02)
    assert calls.count("cpu") == calls.count("numba") == rounds == 50  # min_sample_s / 0.02
    assert calls.count("numpy") == bench.samples_for(0.25) == 5  # its own count (repeat)
    assert medians == pytest.approx(cost)
    # spread over the rounds (one every tenth round), not bunched at the start
    positions = [calls[: i + 1].count("cpu") for i, name in enumerate(calls) if name == "numpy"]
    assert all(b - a >= rounds // 5 - 1 for a, b in zip(positions, positions[1:], strict=False))
    # without extras the slowest run decides, as before
    calls.clear()
    bench.interleaved(runs, dict(cost))
    assert calls.count("cpu") == calls.count("numpy") == 5


@pytest.mark.parametrize(("count", "rounds"), [(1, 1), (1, 9), (5, 50), (7, 7), (3, 10)])
def test_sample_rounds_are_distinct_within_range_and_start_at_the_first(count, rounds):
    picked = run.sample_rounds(count, rounds)
    assert len(picked) == count and 0 in picked and max(picked) < rounds


@pytest.mark.parametrize("count", range(1, 7))
def test_balanced_rows_put_every_run_after_every_other_equally_often(count):
    rows = bench_orders.balanced_rows(count)
    assert all(sorted(row) == list(range(count)) for row in rows)
    after = Counter((a, b) for row in rows for a, b in zip(row, row[1:]))
    assert set(after) == {(a, b) for a in range(count) for b in range(count) if a != b}
    assert len(set(after.values())) <= 1
    assert len(set(Counter(row[0] for row in rows).values())) == 1  # each first as often


@pytest.mark.parametrize(("count", "rounds"), [(2, 4), (3, 12), (4, 8), (3, 7)])
def test_interleaved_times_take_each_run_once_a_round_each_after_every_other(monkeypatch, count, rounds):
    """Each run is called once per round and timed alone (a fake clock: run i takes i + 1
    seconds); over whole cycles of the design each follows each other equally often."""
    clock = [0.0]
    calls: list[int] = []
    monkeypatch.setattr(bench_orders.time, "perf_counter", lambda: clock[0])

    def call(i: int):
        def fn() -> None:
            clock[0] += i + 1
            calls.append(i)

        return fn

    times = bench_orders.interleaved_times({f"run{i}": call(i) for i in range(count)}, rounds)
    assert times == {f"run{i}": [float(i + 1)] * rounds for i in range(count)}
    assert all(sorted(calls[r * count : (r + 1) * count]) == list(range(count)) for r in range(rounds))
    cycle = len(bench_orders.balanced_rows(count))
    whole = calls[: (rounds // cycle) * cycle * count]
    within = Counter(
        (a, b)
        for r in range(len(whole) // count)
        for a, b in zip(whole[r * count : (r + 1) * count], whole[r * count + 1 : (r + 1) * count])
    )
    if whole:
        assert set(within) == {(a, b) for a in range(count) for b in range(count) if a != b}
        assert len(set(within.values())) == 1


def _followers(orders: list[list[str]]) -> Counter:
    sequence = [name for order in orders for name in order]
    return Counter(zip(sequence, sequence[1:]))


@pytest.mark.parametrize(("extra_samples", "rounds"), [(50, 50), (25, 50), (5, 50), (7, 41), (1, 9)])
def test_the_run_after_an_extra_is_each_measured_run_as_often(extra_samples, rounds):
    """The block reduction's row: [hpvm, Numba] measured, NumPy (it evicts the input from the
    caches) an extra. Rotating [hpvm, Numba, NumPy] put hpvm after NumPy twice as often as
    Numba; now every predecessor is shared out evenly between the two."""
    due = {"numpy": run.sample_rounds(extra_samples, rounds)}
    orders = list(run.round_orders(["cpu", "numba"], due, rounds))
    assert [order.count("cpu") for order in orders] == [1] * rounds
    assert sum(order.count("numpy") for order in orders) == extra_samples
    follows = _followers(orders)
    swap = {"cpu": "numba", "numba": "cpu", "numpy": "numpy"}
    for (before, after), count in follows.items():  # the same with the two runs' names swapped
        assert abs(count - follows[swap[before], swap[after]]) <= 1, (before, after)
    assert follows["numpy", "cpu"] + follows["numpy", "numba"] == extra_samples


def test_three_measured_runs_follow_each_other_and_the_extras_in_turn():
    measured = ["cpu", "opencl", "numba"]
    plain = list(run.round_orders(measured, {}, 12))  # two cycles of the six rows
    within = Counter(pair for order in plain for pair in zip(order, order[1:]))
    assert len(within) == 6 and set(within.values()) == {4}
    due = {"taichi": run.sample_rounds(9, 42), "warp": run.sample_rounds(20, 42)}
    orders = list(run.round_orders(measured, due, 42))
    assert all(sorted(order[-3:]) == sorted(measured) for order in orders)
    for extras in ({"taichi", "warp"}, {"warp"}, set()):  # the run right after each set of extras
        firsts = Counter(order[-3] for order in orders if set(order[:-3]) == extras)
        assert max(firsts.values()) - min(firsts.values()) <= 1 and len(firsts) == 3, extras


def test_a_round_ratio_pairs_the_samples_of_each_round():
    times = {"hpvm": [4.0, 3.0, 1.0], "numba": [1.0, 3.0, 2.0]}
    assert bench_orders.round_ratio(times, "hpvm", "numba") == 1.0  # median of 4, 1, 0.5
    # (the ratio of the two medians would be 3.0 / 2.0)


def test_a_round_ratio_is_unmoved_by_a_host_slowing_down_between_rounds():
    slow = [1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 3.0]  # the host's speed, round by round
    times = {
        "hpvm": [s * c for s, c in zip(slow, [1.0, 1.1, 1.0, 1.1, 1.0, 1.1, 1.0], strict=True)],
        "numba": [s * c for s, c in zip(slow, [1.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1], strict=True)],
    }
    assert bench_orders.round_ratio(times, "hpvm", "numba") == pytest.approx(1.0)


def test_a_round_ratio_refuses_samples_of_different_rounds():
    with pytest.raises(ValueError):
        bench_orders.round_ratio({"a": [1.0, 2.0], "b": [1.0]}, "a", "b")
