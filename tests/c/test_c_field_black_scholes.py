"""European options priced with Black-Scholes, as the CUDA SDK's BlackScholes sample and
HPVM's ports of such kernels write it (``programs/black_scholes/``: the packed ``PricingIn``
and ``BLOCK`` in ``options.h``, the graph in ``kernels.cc``, a ``std::vector`` host in
``main.cc``). One 1-D leaf instance per option, the grid whole blocks of 64 under the guard
``if (opt < count)``, the cumulative normal distribution an inline helper the leaf calls
(``expf``, ``sqrtf``, ``logf``, ``fabsf``), the leaf inside an internal node inside the root.
The host launches the graph once per day with that day's volatility and checks every price
against the formula in double precision; the tests check the sums it prints against NumPy's.

Two processes compiling the program at once, each from a working folder of its own, share
one hpvm cache whose clang output folders are pruned on every new one
(``ir/cache.locked_folder``): both run it right.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.ir.cache import cache_root

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "black_scholes"  # (a fixed path: zig's cache finds it)
SOURCES = [FOLDER / "kernels.cc", FOLDER / "main.cc"]
SAID = re.compile(r"black_scholes (\d+) options, (\d+) days: calls (\S+) puts (\S+), (\d+) wrong")


@pytest.fixture(scope="module")
def program():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES)


def _cnd(d: np.ndarray) -> np.ndarray:
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    c = 0.39894228040143267794 * np.exp(-0.5 * d * d) * poly
    return np.where(d > 0, 1.0 - c, c)


def _sums(count: int, days: int) -> tuple[float, float]:
    """The calls' and puts' sums over every day, in float64 from the host's inputs (its
    float32 values)."""
    i = np.arange(count)
    f32 = np.float32
    s = (f32(5) + f32(25) * (((i * 37 + 11) % 1000).astype(f32) / f32(999))).astype(np.float64)
    x = (f32(1) + f32(99) * (((i * 91 + 7) % 1000).astype(f32) / f32(999))).astype(np.float64)
    t = (f32(0.25) + f32(9.75) * (((i * 53 + 3) % 1000).astype(f32) / f32(999))).astype(np.float64)
    r = float(f32(0.02))
    calls = puts = 0.0
    for day in range(days):
        v = float(f32(0.30) + f32(0.05) * f32(day))
        d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
        d2 = d1 - v * np.sqrt(t)
        discount = x * np.exp(-r * t)
        call = s * _cnd(d1) - discount * _cnd(d2)
        put = discount * (1 - _cnd(d2)) - s * (1 - _cnd(d1))
        assert np.allclose(call - put, s - discount)  # (put-call parity: the reference is right)
        calls, puts = calls + call.sum(), puts + put.sum()
    return calls, puts


def _check(out: str, count: int, days: int) -> None:
    said = SAID.search(out)
    assert said is not None, out
    assert said.group(1, 2, 5) == (str(count), str(days), "0")
    calls, puts = _sums(count, days)
    assert float(said.group(3)) == pytest.approx(calls, rel=1e-5)
    assert float(said.group(4)) == pytest.approx(puts, rel=1e-5)


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("count", "days"), [(1000, 3), (1, 1), (64, 2), (129, 1)])
def test_the_program_prices_every_option_on_every_day(program, capfd, target, count, days):
    if target == "interp" and count > 200:
        count = 200  # (the interpreter runs each instance in Python)
    assert program.run([str(count), str(days)], target=target) == 0
    _check(capfd.readouterr().out, count, days)


def test_checked_mode_prices_them_the_same(program, capfd):
    import hpvm.backends.cpu as cpu

    cpu.configure(checked=True)
    try:
        assert program.run(["300", "2"]) == 0
    finally:
        cpu.configure(checked=False)
    _check(capfd.readouterr().out, 300, 2)


_AT_ONCE = """
import sys
from hpvm.ir import cache
cache.FOLDER_KEEP, cache.FOLDER_SLACK = 0, 0  # (every new clang output folder prunes the rest)
from hpvm import c
for _ in range(2):
    assert c.compile(sys.argv[1:3]).run(["500", "2"]) == 0
"""


def test_two_processes_compile_it_at_once_while_their_clang_folders_are_pruned(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("c-host", "zig"):  # (the suite's linked libraries and zig cache; c-ir/ its own)
        if (cache_root() / shared).is_dir():
            (cache / shared).symlink_to(cache_root() / shared, target_is_directory=True)
    env = {**os.environ, "HPVM_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = []
    for k in range(2):
        folder = tmp_path / f"folder{k}"  # (another working folder: other clang folders)
        folder.mkdir()
        named = [os.path.relpath(p, folder) for p in SOURCES]
        runs.append(
            subprocess.Popen(
                [sys.executable, "-c", _AT_ONCE, *named],
                cwd=folder,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-3000:]
        said = SAID.findall(out)
        assert len(said) == 2 and set(said) == {("500", "2", *said[0][2:4], "0")}
        _check(out, 500, 2)
    assert len(list((cache / "c-ir").iterdir())) <= 2  # (pruned: at most one held by each)
