"""The tensor rows' physical limit (issue 24, item 8): a model's floating-point operations
per batch, counted on its eager run, and the machine's BLAS rate beside them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the tensor rows need PyTorch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import tensor  # noqa: E402 — benchmarks/tensor.py, found through the line above


class _Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, kernel_size=(3, 2), stride=1, groups=2)
        self.dense = torch.nn.Linear(6 * 3 * 4, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.dense(y.flatten(1))


def test_model_flops_counts_two_per_multiply_add_of_convolutions_and_dense_layers() -> None:
    model = _Small()
    x = torch.randn(7, 4, 5, 5)
    # conv: each of 7·6·3·4 outputs sums (4/2 channels)·3·2 products; dense: each of 7·5
    # outputs sums 72 products
    conv = 7 * 6 * (5 - 3 + 1) * (5 - 2 + 1) * (4 // 2) * 3 * 2
    dense = 7 * 5 * 72
    assert tensor.model_flops(model, x) == 2 * (conv + dense)
    assert not model.conv._forward_hooks and not model.dense._forward_hooks  # hooks removed


def test_blas_rate_is_a_positive_rate_and_the_limit_cell_shows_each_side() -> None:
    rate = tensor.blas_rate(size=64, repeat=2)
    assert rate > 0
    r = tensor.Result("m", 1, (1,), (2, 1), 0.002, 0.003, 0.004, 8e9, 0.0)
    assert r.rate(r.fused_s) == pytest.approx(4000.0)
    assert tensor.limit_cell(r, 1234.4) == "4000 / 2000 (1234)"
