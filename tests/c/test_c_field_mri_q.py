"""Parboil's MRI-Q (ComputeQ) written as HPVM's benchmarks write their kernels
(``programs/mri_q.cc``: one leaf instance per voxel on a 1-D grid rounded up to whole
blocks of 8, the whole body under ``if (t < numX)``, a loop over every k-space sample each
instance runs alike, ``cosf`` and ``sinf`` in it, a ``std::vector`` host checking within
Parboil's tolerance). ``programs/mriq.c`` is the two-leaf C version, which launches
exactly ``numX`` instances; this one rounds the grid up, as a CUDA launch of whole blocks
does, so the guard fails in the last block. On cpu the leaf runs jammed along x (``llvm_native/wijam.py``), and
gives interp's result to the bit; the jam's module, built once, is read back from hpvm's
cache by a later process (``wijam._stored``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import cache_with_the_suites_toolchain, compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu import jam

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "mri_q.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.fixture(autouse=True)
def jam_on(monkeypatch):
    """About jamming: on, even where ``HPVM_CPU_JAM=0``."""
    monkeypatch.setattr(jam.JAM, "enabled", True)


def _inputs(num_x: int, num_k: int) -> list[np.ndarray]:
    """The host's samples and voxels (``main``'s formulas), then Qr and Qi unwritten."""
    k, i = np.arange(num_k), np.arange(num_x)
    samples = [
        (k * 13) % 29 / 29.0 - 0.5,
        (k * 7) % 31 / 31.0 - 0.5,
        (k * 5) % 23 / 23.0 - 0.5,
        (k * 11) % 17 / 17.0,
    ]
    voxels = [(i * 3) % 41 / 8.0, (i * 19) % 43 / 8.0, (i * 23) % 47 / 8.0]
    unwritten = [np.full(num_x, np.nan), np.full(num_x, np.nan)]
    return [a.astype(np.float32) for a in (*samples, *voxels, *unwritten)]


def _q(root, num_x: int, num_k: int, target: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:  # type: ignore[no-untyped-def]
    hpvm.init()
    arrays = _inputs(num_x, num_k)
    for a in arrays:
        hpvm.track_memory(a)
    grid = (num_x + 7) // 8 * 8
    hpvm.wait(hpvm.launch(root, (*(a.view(np.uint8) for a in arrays), num_k, num_x, grid), target=target))
    qr, qi = arrays[-2:]
    hpvm.request_memory(qr)
    hpvm.request_memory(qi)
    return qr, qi, arrays


@pytest.mark.parametrize("size", [[], ["64", "100"], ["5", "3"]])
def test_the_program_runs_and_checks_itself(program, size):
    assert program.run(size) == 0


def test_the_leaf_is_jammed_along_x(program):
    (root,) = program.roots
    assert f"_jam0w{jam.LLVM_WIDTH}(" in "\n".join(get_backend("cpu").prepare(root).gen.sources)


@pytest.mark.parametrize(("num_x", "num_k"), [(61, 37), (64, 100), (3, 5), (17, 0), (9, 1)])
def test_cpu_gives_interps_result_to_the_bit(program, num_x, num_k):
    (root,) = program.roots
    got_r, got_i, arrays = _q(root, num_x, num_k, "cpu")
    want_r, want_i, _ = _q(root, num_x, num_k, "interp")
    np.testing.assert_array_equal(got_r, want_r)
    np.testing.assert_array_equal(got_i, want_i)
    kx, ky, kz, phi, x, y, z = (a.astype(np.float64) for a in arrays[:7])
    arg = 2 * np.pi * (np.outer(x, kx) + np.outer(y, ky) + np.outer(z, kz))
    np.testing.assert_allclose(got_r, (phi * np.cos(arg)).sum(axis=1), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got_i, (phi * np.sin(arg)).sum(axis=1), rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_a_later_process_reads_the_jammed_module_the_first_stored(tmp_path):
    """Two processes with one (empty) hpvm cache: the first builds the jammed module and
    stores it, the second reads it (the file is not written again) and gives the same
    checked result."""
    cache_with_the_suites_toolchain(tmp_path)
    env = {**os.environ, "HPVM_CACHE_DIR": str(tmp_path), "HPVM_CPU_JAM": "1"}
    cli = "import sys; from hpvm.cli import main; sys.exit(main())"  # (the `hpvm` command)
    command = [sys.executable, "-c", cli, "c", "run", str(PROGRAM), "--target", "cpu", "--", "45", "29"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    (stored,) = (tmp_path / "llvm-jam").glob("*.json")
    written = stored.stat().st_ino  # (a file stored again is a new one, renamed over it)
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "45 voxels, 29 samples: 0 wrong" in second.stdout
    assert [p.name for p in (tmp_path / "llvm-jam").iterdir()] == [stored.name]
    assert stored.stat().st_ino == written  # (read, not made and stored again; reading marks it used)
