"""Predefined kernels (Move, strided and indexed scatter / gather) and black boxes."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from hpvm import svm


def stream(address: int, capacity: int, dtype=np.int32, data=None, eos=True) -> svm.Stream:
    s = svm.Stream()
    if data is None:
        svm.stream_init_ram(s, "RAM", address, capacity, dtype)
    else:
        svm.memory_view("RAM", address, len(data), dtype)[:] = data
        svm.stream_init_with_data_ram(s, "RAM", address, capacity, dtype, len(data), eos)
    return s


def block(address: int, data, dtype=np.int32) -> svm.Block:
    b = svm.Block()
    svm.block_init(b, "RAM", address, len(data), dtype)
    b.data[:] = data
    return b


def run(k) -> None:
    svm.kernel_run(k)
    svm.kernel_wait(k)


def test_move_all_through_a_small_stream_while_control_reads(computer):
    n = 1 << 12
    src = stream(0, n, data=np.arange(n))
    mid = stream(1 << 20, 4)
    move = svm.Move()
    svm.move_init(move, "DMA", src, mid, svm.STREAM_LENGTH_ALL, True)
    assert move.kernel is move
    svm.kernel_run(move)
    out = svm.stream_pop_many(mid, svm.STREAM_LENGTH_ALL)  # the Move refills it as control drains it
    svm.kernel_wait(move)
    assert np.array_equal(out, np.arange(n))


def test_move_a_length_without_eos_and_with_eos(computer):
    src = stream(0, 16, data=np.arange(10))
    dst = stream(256, 16)
    move = svm.Move()
    svm.move_init(move, "DMA", src, dst, 3, False)
    run(move)
    assert len(dst) == 3 and not any(svm.stream_peek_eos(dst, i) for i in range(3))
    svm.move_init(move, "DMA", src, dst, 2, True)
    run(move)
    assert svm.stream_peek_eos(dst, 4) and svm.stream_pop_many(dst, 5).tolist() == [0, 1, 2, 3, 4]


def test_move_between_element_sizes_is_an_error_at_kernel_wait(computer):
    move = svm.Move()
    svm.move_init(move, "DMA", stream(0, 4, data=[1]), stream(64, 4, np.float64), 1, False)
    svm.kernel_run(move)
    with pytest.raises(svm.SVMError, match=r"kernel move .*4-byte elements, .* 8-byte ones"):
        svm.kernel_wait(move)


def test_predefined_init_arguments_are_checked(computer):
    s, b = stream(0, 4), block(64, [0, 0])
    with pytest.raises(svm.SVMError, match="length must be >= 0 or STREAM_LENGTH_ALL"):
        svm.move_init(svm.Move(), "DMA", s, s, -5, False)
    with pytest.raises(svm.SVMError, match="src_str must be an svm.Stream"):
        svm.move_init(svm.Move(), "DMA", b, s, 1, False)
    with pytest.raises(svm.SVMError, match="dest_block must be an svm.Block"):
        svm.strided_scatter_init(svm.StridedScatter(), "DMA", s, s, 1, 1, 1, False)
    with pytest.raises(svm.SVMError, match="elements_per_stride must be a positive"):
        svm.strided_gather_init(svm.StridedGather(), "DMA", b, s, 1, 1, 0, False)
    with pytest.raises(svm.SVMError, match="reach index 8, outside block b"):
        svm.strided_gather_init(svm.StridedGather(), "DMA", b, s, 3, 4, 1, False)
    with pytest.raises(
        svm.SVMError, match="strided_scatter_init: 2 elements in runs of 1, 3 apart, reach index 3"
    ):
        svm.strided_scatter_init(svm.StridedScatter(), "DMA", s, b, 2, 3, 1, False)
    with pytest.raises(svm.SVMError, match="elements_per_index must be a positive"):
        svm.indexed_gather_init(svm.IndexedGather(), "DMA", b, s, s, 1, 0, False)


def test_strided_gather_to_the_end_of_the_block(computer):
    src = block(0, np.arange(15))
    dst = stream(256, 16)
    g = svm.StridedGather()
    svm.strided_gather_init(g, "DMA", src, dst, svm.STREAM_LENGTH_ALL, 4, 2, True)
    run(g)
    assert svm.stream_pop_many(dst, svm.STREAM_LENGTH_ALL).tolist() == [0, 1, 4, 5, 8, 9, 12, 13]


def test_strided_gather_a_length_through_a_small_stream(computer):
    src = block(0, np.arange(40))
    dst = stream(512, 3)
    g = svm.StridedGather()
    svm.strided_gather_init(g, "DMA", src, dst, 9, 10, 3, False)
    svm.kernel_run(g)
    out = svm.stream_pop_many(dst, 9)
    svm.kernel_wait(g)
    assert out.tolist() == [0, 1, 2, 10, 11, 12, 20, 21, 22]


def test_strided_scatter(computer):
    src = stream(0, 8, data=[1, 2, 3, 4, 5, 6])
    dst = block(256, np.zeros(12))
    sc = svm.StridedScatter()
    svm.strided_scatter_init(sc, "DMA", src, dst, svm.STREAM_LENGTH_ALL, 5, 2, False)
    run(sc)
    assert dst.data.tolist() == [1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 5, 6]


def test_strided_scatter_past_the_block_fails_naming_the_kernel(computer):
    src = stream(0, 8, data=[1, 2, 3])
    dst = block(256, np.zeros(4))
    sc = svm.StridedScatter()
    svm.strided_scatter_init(sc, "DMA", src, dst, svm.STREAM_LENGTH_ALL, 3, 1, False)
    svm.kernel_run(sc)
    with pytest.raises(svm.SVMError, match="StridedScatter sc: element 2 goes to index 6, outside block b"):
        svm.kernel_wait(sc)


def test_indexed_gather_and_scatter(computer):
    table = block(0, np.arange(100, 110))
    idx = stream(256, 8, data=[3, 0, 8])
    out = stream(512, 8)
    g = svm.IndexedGather()
    svm.indexed_gather_init(g, "DMA", table, idx, out, svm.STREAM_LENGTH_ALL, 2, True)
    run(g)
    assert svm.stream_peek_eos(out, 5)
    gathered = svm.stream_pop_many(out, svm.STREAM_LENGTH_ALL)
    assert gathered.tolist() == [103, 104, 100, 101, 108, 109]

    target = block(1024, np.zeros(10))
    idx2 = stream(256, 8, data=[6, 1])
    src = stream(2048, 8, data=[7, 8, 9, 10])
    sc = svm.IndexedScatter()
    svm.indexed_scatter_init(sc, "DMA", src, idx2, target, 4, 2, False)
    run(sc)
    assert target.data.tolist() == [0, 9, 10, 0, 0, 0, 7, 8, 0, 0]


def test_indexed_gather_of_a_length(computer):
    table = block(0, np.arange(10))
    idx = stream(256, 8, data=[5, 2, 7], eos=False)
    out = stream(512, 8)
    g = svm.IndexedGather()
    svm.indexed_gather_init(g, "DMA", table, idx, out, 5, 2, True)
    run(g)
    assert svm.stream_pop_many(out, svm.STREAM_LENGTH_ALL).tolist() == [5, 6, 2, 3, 7]
    assert len(idx) == 0  # three indices cover the five elements


def test_indexed_kernel_errors_name_the_kernel(computer):
    table = block(0, np.arange(10))
    bad = svm.IndexedGather()
    svm.indexed_gather_init(
        bad, "DMA", table, stream(256, 4, data=[9]), stream(512, 8), svm.STREAM_LENGTH_ALL, 2, False
    )
    svm.kernel_run(bad)
    with pytest.raises(
        svm.SVMError,
        match=r"IndexedGather bad: index 9 \(a record of 2 elements\) is outside block b \(capacity 10\)",
    ):
        svm.kernel_wait(bad)
    floats = svm.IndexedScatter()
    svm.indexed_scatter_init(
        floats, "DMA", stream(1024, 4, data=[1]), stream(2048, 4, np.float32, data=[1.0]), table, 1, 1, False
    )
    svm.kernel_run(floats)
    with pytest.raises(svm.SVMError, match="index stream .* must hold integers"):
        svm.kernel_wait(floats)


def test_rle_and_zip_black_boxes(tiled):
    data = np.repeat(np.array([5, 1, 9], np.int32), [4, 1, 3])
    svm.memory_view("LOCALMEM1", 0, len(data), np.int32)[:] = data
    s1, s2, s3 = svm.Stream(), svm.Stream(), svm.Stream()
    svm.stream_init_with_data_ram(s1, "LOCALMEM1", 0, 16, np.int32, len(data), True)
    svm.stream_init_ram(s2, "LOCALMEM1", 1024, 16, np.int32)
    rle = svm.black_box("rle")
    svm.black_box_init(rle, "PROC1", None, s1, s2)
    run(rle)
    assert rle.output_length == 6
    assert svm.memory_view("LOCALMEM1", 1024, 6, np.int32).tolist() == [5, 4, 1, 1, 9, 3]
    svm.stream_init_ram(s3, "LOCALMEM1", 4096, 64, np.int32)
    z = svm.Zip()
    svm.zip_init(z, "PROC1", None, s2, s3)
    run(z)
    packed = svm.memory_view("LOCALMEM1", 4096, z.compressed_bytes, np.uint8).tobytes()
    assert np.frombuffer(zlib.decompress(packed), np.int32).tolist() == [5, 4, 1, 1, 9, 3]
    assert z.output_length == -(-z.compressed_bytes // 4)


def test_black_box_registry(computer):
    class Negate(svm.Kernel):
        def setup(self, in_, out):
            self.in_, self.out = in_, out

        def work(self):
            svm.stream_push_many(self.out, -svm.stream_pop_many(self.in_, svm.STREAM_LENGTH_ALL), eos=True)

    svm.register_black_box("negate", Negate)
    assert "negate" in svm.black_boxes() and {"rle", "zip"} <= set(svm.black_boxes())
    svm.cleanup()
    svm.init(svm.this_computer(cores=1))  # this computer's processors do not list "negate"
    k = svm.black_box("negate")
    with pytest.raises(svm.SVMError, match="processor PROC0 does not support kernel negate"):
        svm.black_box_init(k, "PROC0", None, stream(0, 4), stream(64, 4))
    with pytest.raises(svm.SVMError, match="no black-box kernel 'nope'.*register one"):
        svm.black_box("nope")
    with pytest.raises(svm.SVMError, match="is not an svm.Kernel subclass"):
        svm.register_black_box("x", int)
    with pytest.raises(svm.SVMError, match="has no setup"):
        svm.register_black_box("x", type("NoSetup", (svm.Kernel,), {"work": lambda self: None}))
    with pytest.raises(svm.SVMError, match="is not a registered black box"):
        svm.black_box_init(svm.Move(), "DMA", None)


def test_rle_needs_integers(computer):
    s1 = stream(0, 4, np.float32, data=[1.0])
    rle = svm.RLE()
    svm.rle_init(rle, "PROC0", None, s1, stream(64, 4, np.float32))
    svm.kernel_run(rle)
    with pytest.raises(svm.SVMError, match=r"kernel rle \(on PROC0.*rle: stream s must hold integers"):
        svm.kernel_wait(rle)
