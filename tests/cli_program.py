"""The small program the command-line tests run (``hpvm run`` on ``cpu``, ``interp``,
``dask``...): a replicated ``scale`` and a one-instance ``total``, and its ``--arg`` options."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

PROGRAM = textwrap.dedent(
    """
    import hpvm

    @hpvm.leaf(ins=("a",), outs=("b",))
    def scale(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32) -> None:
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        b[i] = a[i] * k

    @hpvm.leaf()
    def total(n: hpvm.i64, k: hpvm.f32) -> hpvm.f32:
        return n * k

    @hpvm.internal()
    def root(a: hpvm.f32[:], b: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
        s = hpvm.create_node_1d(scale, n)
        hpvm.bind_in(s, 0, 0)
        hpvm.bind_in(s, 1, 1)
        hpvm.bind_in(s, 2, 2)
        t = hpvm.create_node(total)
        hpvm.bind_in(t, 3, 0)
        hpvm.bind_in(t, 2, 1)
        hpvm.bind_out(t, 0, 0)
    """
)


def run_args(tmp_path: Path, a: np.ndarray, k: str) -> list[str]:
    """--arg options for PROGRAM's root: a and a zeroed b as .npy files, k, and n = len(a)."""
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.zeros_like(a))
    values = {"a": tmp_path / "a.npy", "b": tmp_path / "b.npy", "k": k, "n": len(a)}
    return [option for name, value in values.items() for option in ("--arg", f"{name}={value}")]
