"""The seed's examples in ``examples/svm/`` compute what their references compute."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "svm"


def load(name: str) -> ModuleType:
    module_name = f"hpvm_svm_example_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


@pytest.mark.parametrize(("runs", "zipped"), [(10, False), (200, True)])
def test_rle_zip_takes_the_second_stage_only_when_needed(runs, zipped):
    example = load("rle_zip")
    data = example.sample(runs, seed=3)
    result, used_zip = example.run(data)
    assert used_zip is zipped
    assert np.array_equal(example.decode(result, used_zip), data)


def test_rle_zip_threshold_decides():
    example = load("rle_zip")
    data = example.sample(10, seed=1)
    assert example.run(data, threshold=0)[1] is True


def test_amplifier_finite_and_infinite_forms():
    samples = np.linspace(-2, 2, 37, dtype=np.float32)
    finite, infinite = load("amplifier").run(samples, n=5)
    assert np.array_equal(finite, samples * 5) and np.array_equal(infinite, samples * 5)


def test_sum_kernel_reduction_is_read_after_kernel_wait():
    values = np.random.default_rng(4).integers(-1000, 1000, 128, dtype=np.int32)
    assert load("sum_kernel").run(values) == int(values.sum())


def test_two_kernels_joined_by_a_fifo_stream_without_dependences():
    values = np.arange(300, dtype=np.int32) % 11
    result = load("pipeline").run(values)
    assert np.array_equal(result, np.cumsum(values.astype(np.int64) ** 2))


def test_dependent_kernels_rerun_in_a_loop():
    example = load("dependent_loop")
    initial = np.arange(5) - 2
    assert np.array_equal(example.run(initial, 6), example.reference(initial, 6))


@pytest.mark.parametrize("name", ["rle_zip", "amplifier", "sum_kernel", "pipeline", "dependent_loop"])
def test_each_example_main_passes(name, capsys):
    assert load(name).main() == 0
    assert "ok" in capsys.readouterr().out
