"""Blocks: indexed access to elements in a memory, bounds-checked, aliasing its bytes."""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import svm


def test_block_read_write_and_memory_alias(computer):
    b = svm.Block()
    svm.block_init(b, "RAM", 0x40, 8, np.float32)
    svm.block_write(b, 3, 2.5)
    assert svm.block_read(b, 3) == 2.5
    assert svm.memory_view("RAM", 0x40, 8, np.float32)[3] == 2.5
    raw = svm.Block()
    svm.block_init(raw, "RAM", 0x40 + 12, 1, 4)
    assert raw.capacity == 1 and svm.block_read(raw, 0) == np.float32(2.5).tobytes()


@pytest.mark.parametrize("index", [-1, 8, 100])
def test_block_indices_out_of_bounds_are_errors(computer, index):
    b = svm.Block()
    svm.block_init(b, "RAM", 0, 8, np.int32)
    with pytest.raises(svm.SVMError, match=rf"block_read\(b, {index}\).*holds 8 elements \(indices 0 to 7\)"):
        svm.block_read(b, index)
    with pytest.raises(svm.SVMError, match="index out of bounds"):
        svm.block_write(b, index, 1)


def test_block_errors(computer):
    with pytest.raises(svm.SVMRestrictionError, match="block_read on a block that was never initialised"):
        svm.block_read(svm.Block(), 0)
    with pytest.raises(svm.SVMError, match="expected an svm.Block"):
        svm.block_init(svm.Stream(), "RAM", 0, 1, 4)
    with pytest.raises(svm.SVMError, match="capacity must be a positive"):
        svm.block_init(svm.Block(), "RAM", 0, 0, 4)
    with pytest.raises(svm.SVMError, match="outside memory RAM"):
        svm.block_init(svm.Block(), "RAM", (1 << 30) - 4, 2, 4)


def test_a_block_is_mapped_to_a_memory_only():
    svm.init("pca_tiled")
    with pytest.raises(svm.SVMError, match=r"'FIFO12' is not a memory of machine 'pca_tiled'.*is a FIFO"):
        svm.block_init(svm.Block(), "FIFO12", 0, 4, np.int32)
