"""A program written as HPVM's C++ benchmarks write graphs (programs/brighten_returns.cc): a
2-D leaf in the CUDA convention whose instances each ``__hpvm__return`` the bytes they
wrote, bound up through a wrapper node into the packed ``RootIn``'s return struct. Such a
replicated node sends its last instance's value, which the cpu back end runs after the nest;
the nest must stop its innermost (x) loop short instead of testing every instance (the test
kept LLVM from vectorizing: ``benchmarks/memory_bound.py``), and still give the interpreter's
pixels and byte count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm.backends import get_backend

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "brighten_returns.cc"  # (a fixed path: zig's cache finds it)
W, H = 67, 29


program = compiled_program(PROGRAM)


def _run(root, target: str) -> tuple[np.ndarray, int]:
    hpvm.init()
    img = (np.arange(W * H, dtype=np.float32) * 37 % 101) / 8
    out = np.full(W * H, -1.0, np.float32)
    for a in (img, out):
        hpvm.track_memory(a)
    args = (img.view(np.uint8), out.view(np.uint8), np.float32(1.5), np.float32(-2.0), W, H)
    (nbytes,) = hpvm.wait(hpvm.launch(root, args, target=target))
    hpvm.request_memory(out)
    return out.copy(), int(nbytes)


def test_the_program_runs_and_checks_itself(program):
    assert program.run([]) == 0


def test_the_last_instance_is_peeled_without_a_test_in_the_nest(program):
    (root,) = program.roots
    source = "\n".join(get_backend("cpu").prepare(root).gen.sources)
    assert "continue" not in source
    assert " - 1 if " in source  # x's loop ends one short where y is at its last


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_pixels_and_the_returned_size_match_numpy(program, target):
    (root,) = program.roots
    out, nbytes = _run(root, target)
    img = (np.arange(W * H, dtype=np.float32) * 37 % 101) / 8
    np.testing.assert_array_equal(out, np.float32(1.5) * img - np.float32(2.0))
    assert nbytes == 4 * W * H
