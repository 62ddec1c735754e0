"""The cutoff Coulombic potential, written in the shape of parboil's cutcp for HPVM
(``programs/cutcp``: four files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, the PQR atom file, the binning and the lattice file in atoms.cc, the
declarations in include/cutcp.h). The host bins the atoms into cubes of 8 lattice spacings
(8 slots each, the rest in an overflow list) and lists the bin offsets within the cutoff;
the graph is an internal root and two leaves replicated 3-D over the lattice in the GPU
convention (x the fastest index; each instance keeps 4 points along z in a local array),
joined one-to-one: the first sums ``q / r * (1 - r^2 / c^2)^2`` over the atoms of the
neighbouring bins within the cutoff and counts them, the second adds the overflow atoms.

The tests write the PQR file from NumPy and check every lattice point against a NumPy sum
over all atoms (no bins), in float64: the counts exactly; a point with no atom within the
cutoff exactly 0; the potentials to 1e-5 of the point's bare Coulomb sum, sum |q| / r over
its atoms within the cutoff. Why that bound: the program computes in float32 — a point's
position ``lo + h * i`` and so r^2 to about 1e-6 relatively, which ``1 - r^2 / c^2`` turns
into an error of about 1e-6 * |q| / r per atom (near the cutoff the term itself is tiny
and its relative error large: a bound relative to the terms' own sizes fails there), and it adds
the terms bin by bin in neighbour-list order, then the overflow atoms, where NumPy adds in
atom order. Seen: at most 2e-6 of the bare sum. Atoms within a hair of the cutoff from a
point (|r^2 - c^2| < 2e-4, where float32's r^2 and float64's may fall on two sides of it)
or on a point are left out of the generated files, so the counts are exact by
construction, not by luck."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

import hpvm.backends.cpu as cpu
from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "cutcp"  # (fixed paths: zig's cache finds them)
SOURCES = ("main.cc", "kernel.cc", "atoms.cc")
BIN_POINTS, BIN_DEPTH = 8, 8  # include/cutcp.h
BORDER = 2e-4  # |r^2 - c^2| an atom keeps from every point (see above)


@pytest.fixture(scope="module")
def program():
    return c.compile([FOLDER / s for s in SOURCES], include_dirs=[str(FOLDER / "include")])


def atoms_for(
    count: int, box: tuple[float, float, float], cluster: int, cavity: float, seed: int
) -> np.ndarray:
    """About ``count`` atoms (x, y, z, q) spread over ``box`` (water's density, about 0.1 per
    A^3), less those within ``cavity`` of a spot at 0.65 of the box (points there have no atom
    within the cutoff), and ``cluster`` more packed within 0.2 A of a spot at 0.3 (they
    overflow their bin); positions to 3 decimals and charges to 4, as the file holds them."""
    rng = np.random.default_rng(seed)
    spread = rng.uniform(0, 1, (count, 3)) * np.array(box)
    spread = spread[np.linalg.norm(spread - np.array(box) * 0.65, axis=1) > cavity]
    packed = np.array(box) * 0.3 + rng.uniform(-0.2, 0.2, (cluster, 3))
    xyz = np.round(np.concatenate([spread, packed]), 3)
    q = np.round(rng.uniform(-1, 1, len(xyz)), 4)
    return np.column_stack([xyz, q]).astype(np.float32)


def write_pqr(path: Path, atoms: np.ndarray) -> str:
    """A PQR file: a remark, ATOM records (every third a HETATM, some with a chain id)
    ending with x y z charge radius, TER and END."""
    lines = ["REMARK   a box of atoms for cutcp"]
    for k, (x, y, z, q) in enumerate(atoms.tolist()):
        record, chain = ("HETATM", "") if k % 3 == 2 else ("ATOM", " A" if k % 2 else "")
        lines.append(
            f"{record:<6}{k + 1:>5}  O   HOH{chain} {k // 3 + 1:>4}    {x:.3f} {y:.3f} {z:.3f} {q:.4f} 1.5200"
        )
    lines += ["TER", "END"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def lattice_of(atoms: np.ndarray, h: float) -> tuple[np.ndarray, tuple[int, int, int]]:
    """The lattice's corner and its points per axis, as the host computes them (float32)."""
    lo, hi = atoms[:, :3].min(axis=0), atoms[:, :3].max(axis=0)
    dims = np.floor((hi - lo) / np.float32(h)).astype(int) + 1
    return lo, (int(dims[0]), int(dims[1]), int(dims[2]))


def points_of(lo: np.ndarray, dims: tuple[int, int, int], h: float) -> np.ndarray:
    """Every lattice point's position, x fastest, in float64."""
    z, y, x = np.meshgrid(*(np.arange(n) for n in reversed(dims)), indexing="ij")
    index = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    return lo.astype(np.float64) + float(np.float32(h)) * index


def squared_distances(atoms: np.ndarray, h: float) -> np.ndarray:
    lo, dims = lattice_of(atoms, h)
    d = points_of(lo, dims, h)[:, None, :] - atoms[None, :, :3].astype(np.float64)
    return (d**2).sum(axis=2)


def clear_of_the_border(atoms: np.ndarray, h: float, cutoff: float) -> np.ndarray:
    """``atoms`` less those within BORDER of the cutoff, or on, a lattice point. (Leaving an
    atom out can change the extent: repeat until none is left out.)"""
    while True:
        r2 = squared_distances(atoms, h)
        bad = ((np.abs(r2 - cutoff**2) < BORDER) | (r2 < 1e-4)).any(axis=0)
        if not bad.any():
            return atoms
        atoms = atoms[~bad]


def expected(atoms: np.ndarray, h: float, cutoff: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each point's potential, its bare Coulomb sum (|q| / r over the same atoms) and its
    atoms within the cutoff: the formula over every atom, apart from the program's bins."""
    r2 = squared_distances(atoms, h)
    within = r2 < cutoff**2
    q = atoms[:, 3].astype(np.float64)[None, :]
    coulomb = np.where(within, q / np.sqrt(np.where(within, r2, 1.0)), 0.0)
    return (coulomb * (1 - r2 / cutoff**2) ** 2).sum(axis=1), np.abs(coulomb).sum(axis=1), within.sum(axis=1)


def read_lattice(path: Path) -> tuple[tuple[int, int, int], np.ndarray, np.ndarray]:
    raw = path.read_bytes()
    dims = tuple(int(v) for v in np.frombuffer(raw[:12], dtype=np.int32))
    n = dims[0] * dims[1] * dims[2]
    assert len(raw) == 12 + 8 * n
    return (
        dims,
        np.frombuffer(raw[12 : 12 + 4 * n], dtype=np.float32),
        np.frombuffer(raw[12 + 4 * n :], dtype=np.int32),
    )  # type: ignore[return-value]


def overflowing(atoms: np.ndarray, h: float) -> int:
    """The atoms no bin slot takes: past BIN_DEPTH in their bin of BIN_POINTS spacings."""
    lo, dims = lattice_of(atoms, h)
    core = [(n + BIN_POINTS - 1) // BIN_POINTS for n in dims]
    side = BIN_POINTS * np.float64(np.float32(h))
    bins = [
        tuple(min(max(int(np.floor((a[d] - lo[d]) / side)), 0), core[d] - 1) for d in range(3)) for a in atoms
    ]
    counts: dict[tuple[int, ...], int] = {}
    for b in bins:
        counts[b] = counts.get(b, 0) + 1
    return sum(max(k - BIN_DEPTH, 0) for k in counts.values())


def neighbour_offsets(h: float, cutoff: float) -> int:
    """Bin offsets whose nearest point is closer than the cutoff (|d| - 1 bins on each axis)."""
    side = BIN_POINTS * float(np.float32(h))
    pad = int(np.ceil(cutoff / side))
    d = np.arange(-pad, pad + 1)
    gap = np.maximum(np.abs(d) - 1, 0) * side
    g2 = gap[:, None, None] ** 2 + gap[None, :, None] ** 2 + gap[None, None, :] ** 2
    return int((g2 < np.float32(cutoff) ** 2).sum())


def test_the_graph_is_two_lattice_leaves_joined_one_to_one(program):
    (root,) = program.roots
    binned, extra = root.graph.nodes
    assert [n.function.name for n in (binned, extra)] == ["cutcp_lattice", "cutcp_overflow"]
    assert [n.dims for n in (binned, extra)] == [3, 3]
    assert [str(s) for s in binned.sizes] == ["nx", "ny", "(nz + 3) // 4"]
    assert extra.sizes == binned.sizes
    # the bins and the neighbour list are read-only arrays; the lattice and the counts are
    # written: pointer-only ports whose sizes travel by the edges
    assert [(p.name, str(p.type)) for p in binned.function.params[:7]] == [
        ("slots", "u8[:]"),
        ("counts", "u8[:]"),
        ("offsets", "u8[:]"),
        ("lattice", "u8[*]"),
        ("bytes_lattice", "i64"),
        ("near", "u8[*]"),
        ("bytes_near", "i64"),
    ]
    edges = [(e.src.name, e.sp, e.dst.name, e.dp, e.repl) for e in root.graph.edges]
    assert edges == [("binned", 0, "extra", 2, 0), ("binned", 1, "extra", 4, 0)]  # one-to-one
    assert binned.function.outs == ("lattice", "near") == extra.function.outs


@pytest.mark.parametrize(
    ("count", "box", "cluster", "h", "cutoff", "target", "checked"),
    [
        (300, (16.3, 14.2, 12.1), 14, 0.5, 5.0, "cpu", False),  # 25 z points: the last block of 4 has 1
        (50, (8.6, 7.7, 7.1), 11, 0.5, 2.5, "cpu", True),  # cpu's checked mode (27 offsets)
        (160, (13.7, 11.4, 10.6), 10, 0.4, 4.5, "cpu", False),  # 4.5 A cutoff, 3.2 A bins: corners trimmed
        (40, (8.1, 7.3, 6.9), 9, 0.5, 3.0, "interp", False),
    ],
)
def test_the_program_writes_every_points_potential(
    program, tmp_path, capfd, count, box, cluster, h, cutoff, target, checked
):
    atoms = atoms_for(count, box, cluster, cavity=cutoff + 0.8, seed=count + cluster)
    atoms = clear_of_the_border(atoms, h, cutoff)
    pqr = write_pqr(tmp_path / "atoms.pqr", atoms)
    out = tmp_path / "lattice.bin"
    previous = cpu.configure(checked=checked)
    try:
        argv = ["-i", pqr, "-o", str(out), "-c", str(cutoff), "-s", str(h)]
        assert program.run(argv, target=target) == 0
    finally:
        cpu.configure(**previous)
    dims, potential, near = read_lattice(out)
    assert dims == lattice_of(atoms, h)[1]
    want, bare, want_near = expected(atoms, h, cutoff)
    np.testing.assert_array_equal(near, want_near)
    assert (potential[want_near == 0] == 0).all()
    assert (np.abs(potential - want) <= 1e-5 * bare).all(), (np.abs(potential - want) / bare).max()
    assert (want_near == 0).any() and want_near.max() > BIN_DEPTH  # points with none, with many
    spilled = overflowing(atoms, h)
    assert spilled > 0  # the cluster overflows its bin: the second leaf has atoms to add
    printed = capfd.readouterr().out
    line = (
        f"cutcp {len(atoms)} atoms ({spilled} in no bin slot), {dims[0]}x{dims[1]}x{dims[2]} lattice, "
        f"cutoff {cutoff:g}: {neighbour_offsets(h, cutoff)} bin offsets"
    )
    assert line in printed, printed


def test_a_file_that_is_not_a_pqr_file_is_refused(program, tmp_path, capfd):
    out = tmp_path / "lattice.bin"
    bad = tmp_path / "bad.pqr"
    bad.write_text("REMARK two atoms\nATOM      1  O   HOH     1    1.000 2.000 3.000 -0.8340 1.5200\n"
                   "ATOM      2  H1  HOH     1    1.500 2.x00 3.000 0.4170 1.2000\nEND\n")  # fmt: skip
    assert program.run(["-i", str(bad), "-o", str(out)]) == 1
    assert (
        f"cutcp: {bad}:3: '2.x00' is not a number (an ATOM or HETATM record ends with x y z charge radius)"
        in capfd.readouterr().err
    )
    bad.write_text("HETATM    7  NA\n")
    assert program.run(["-i", str(bad), "-o", str(out)]) == 1
    assert f"cutcp: {bad}:1: HETATM record without its x y z charge radius" in capfd.readouterr().err
    bad.write_text("REMARK nothing\nEND\n")
    assert program.run(["-i", str(bad), "-o", str(out)]) == 1
    assert f"cutcp: {bad}: no ATOM or HETATM record" in capfd.readouterr().err
    assert program.run(["-i", str(tmp_path / "none.pqr"), "-o", str(out)]) == 1
    assert f"cutcp: cannot open {tmp_path / 'none.pqr'}" in capfd.readouterr().err
    assert program.run(["-i", str(bad), "-o", str(out), "-c", "0"]) == 1
    assert "usage: cutcp -i atoms.pqr -o lattice.bin" in capfd.readouterr().err
    assert not out.exists()


def edited_program(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """The program copied with ``old`` in kernel.cc replaced by ``new``: the kernel's path
    and the line of the change."""
    folder = tmp_path / "cutcp"
    shutil.copytree(FOLDER, folder)
    kernel = folder / "kernel.cc"
    text = kernel.read_text()
    assert text.count(old) == 1
    kernel.write_text(text.replace(old, new))
    return kernel, text[: text.index(old)].count("\n") + 1


def compile_copy(kernel: Path) -> c.CProgram:
    """The copy's kernel.cc alone (the graph is all it holds; the host files would only
    compile again, uncached, at the copy's path)."""
    return c.compile([kernel], include_dirs=[str(kernel.parent / "include")])


def test_an_edge_from_an_output_the_leaf_does_not_return_names_kernel_cc_and_its_line(tmp_path):
    # (the counts' size is the leaf's second output, index 1: 2 is one past it)
    kernel, line = edited_program(
        tmp_path, "__hpvm__edge(binned, extra, 0, 1, 5, 0);", "__hpvm__edge(binned, extra, 0, 2, 5, 0);"
    )
    with pytest.raises(c.HPVMCError) as info:
        compile_copy(kernel)
    message = str(info.value)
    assert message.startswith(f"{kernel}:{line}: __hpvm__edge(binned, extra, 0, 2, 5, 0) in cutcp_root: "), (
        message
    )
    assert "index 2 is no output of cutcp_lattice, which has indices 0..1" in message


def test_a_block_count_folding_negative_is_refused_at_compile_time(tmp_path):
    old = "void *binned = __hpvm__createNodeND(3, cutcp_lattice, nx, ny, (nz + POINTS_Z - 1) / POINTS_Z);"
    new = "void *binned = __hpvm__createNodeND(3, cutcp_lattice, nx, ny, (POINTS_Z - BIN_POINTS) / 2);"
    kernel, line = edited_program(tmp_path, old, new)
    with pytest.raises(c.HPVMCError) as info:
        compile_copy(kernel)
    message = str(info.value)
    assert message.startswith(
        f"{kernel}:{line}: __hpvm__createNodeND(3, cutcp_lattice, nx, ny, (POINTS_Z - BIN_POINTS) / 2) in cutcp_root: "
        "size 3 of 3 is -2: a node of cutcp_lattice cannot have a negative number of instances"
    ), message
