"""The seed's control example: move data from global memory into a tile, run-length
encode it there, and — only if the result is still too large — compress it again with a
second black box writing over the first one's output; then move the result back.

    python examples/svm/rle_zip.py            # runs both branches and checks them

The machine is the shipped PCA-like tiled machine (``pca_tiled``): DMA1 moves between
GLOBALMEM1 and LOCALMEM1, PROC1 runs the ``rle`` and ``zip`` black boxes.
"""

from __future__ import annotations

import sys
import zlib

import numpy as np

from hpvm import svm

SIZE_THRESHOLD = 64  # elements


def run(data: np.ndarray, threshold: int = SIZE_THRESHOLD) -> tuple[np.ndarray, bool]:
    """Compress ``data`` (int32) as the seed's control code does; returns the int32
    elements written to GLOBALMEM1 at 0x2000 and whether the zip stage ran."""
    svm.init("pca_tiled")
    try:
        s0, s1, s2, s4 = svm.Stream(), svm.Stream(), svm.Stream(), svm.Stream()
        scratch = svm.Block()
        move01, move24 = svm.Move(), svm.Move()
        rle = svm.RLE()

        # "read file into memory location of s0" (not part of the API)
        length1 = len(data)
        svm.memory_view("GLOBALMEM1", 0x1000, length1, np.int32)[:] = data

        svm.stream_init_with_data_ram(s0, "GLOBALMEM1", 0x1000, 1024, 4, length1, 1, svm.STREAM_NEVER_WRAPS)
        svm.stream_init_ram(s1, "LOCALMEM1", 0x0, 256, np.int32, svm.STREAM_UNALIASED_RAM)
        svm.stream_init_ram(s2, "LOCALMEM1", 0x400, 512, np.int32, svm.STREAM_NEVER_WRAPS)
        svm.block_init(scratch, "LOCALMEM1", 0xC00, 32, 1)

        # move from memory (s1 holds 256 elements: the Move and rle overlap through it)
        svm.move_init(move01, "DMA1", s0, s1, svm.STREAM_LENGTH_ALL, True)
        svm.kernel_run(move01.kernel)

        # run rle
        svm.rle_init(rle, "PROC1", scratch, s1, s2)
        svm.kernel_run(rle.kernel)

        # get output length
        svm.kernel_wait(rle.kernel)
        length2 = rle.output_length
        zipped = False

        # if the output is still too large, compress again, overwriting s2 in place
        if length2 > threshold:
            s3 = svm.Stream()
            scratch2 = svm.Block()
            zip_ = svm.Zip()
            svm.stream_init_ram(s3, "LOCALMEM1", 0x400, 512, np.int32, svm.STREAM_NEVER_WRAPS)
            svm.block_init(scratch2, "LOCALMEM1", 0xC00, 32, 1)
            svm.zip_init(zip_, "PROC1", scratch2, s2, s3)
            svm.kernel_run(zip_.kernel)
            svm.kernel_wait(zip_.kernel)
            length2 = zip_.output_length
            zipped = True
            svm.stream_init_with_data_ram(
                s2, "LOCALMEM1", 0x400, 512, np.int32, length2, 1, svm.STREAM_NEVER_WRAPS
            )

        svm.stream_init_ram(s4, "GLOBALMEM1", 0x2000, 1024, 4, svm.STREAM_NEVER_WRAPS)

        # move to memory
        svm.move_init(move24, "DMA1", s2, s4, svm.STREAM_LENGTH_ALL, True)
        svm.kernel_run(move24.kernel)
        svm.kernel_wait(move24.kernel)
        svm.kernel_wait(move01.kernel)

        # "store the result from memory" (not part of the API)
        return svm.memory_view("GLOBALMEM1", 0x2000, length2, np.int32).copy(), zipped
    finally:
        svm.cleanup()


def decode(result: np.ndarray, zipped: bool) -> np.ndarray:
    """Undo the compression (a reference, in plain Python) to check a run."""
    pairs = np.frombuffer(zlib.decompressobj().decompress(result.tobytes()), np.int32) if zipped else result
    return np.repeat(pairs[0::2], pairs[1::2])


def sample(runs: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.repeat(rng.integers(0, 5, runs, dtype=np.int32), rng.integers(1, 6, runs))[:1000]


def main() -> int:
    ok = True
    for runs in (10, 200):
        data = sample(runs)
        result, zipped = run(data)
        good = np.array_equal(decode(result, zipped), data)
        ok &= good
        print(
            f"{len(data)} elements, {runs} runs -> {len(result)} elements (zip stage: {zipped}): {'ok' if good else 'WRONG'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
