"""A lattice Boltzmann fluid (D3Q19) in a lid-driven cavity, written as parboil's LBM is for
HPVM (``programs/lbm``: the graph and the host in main.cpp, the lattice's host routines in
lbm.cpp, the layout and access macros in layout_config.h and lbm_macros.h). What its style
has that the other field programs do not: three levels under the root (``lbmLvl3`` creates
``lbmLvl2`` once, which replicates ``lbmLvl1`` over the rows and planes, which replicates the
``hpvm::DEVICE`` leaf over a row as a 2-D node one instance high); a leaf that finds its cell
from its own instance id and its parent's two; tracked memory that begins ``MARGIN`` floats
before the grid, the leaf moving its pointers forward and then reading at negative offsets;
a struct-of-arrays grid indexed through ``CALC_INDEX``; each cell's flags kept in the float
array and read back as bits through a pointer cast; one launch per time step with the host
swapping the grids; parboil's ``-i`` / ``-o`` and timers.

The result file is checked against a NumPy D3Q19 step written here from the physics (gather,
bounce-back walls, BGK collision, the lid's imposed velocity): the program as it is, at its
default box on cpu, to float32's tolerance; and a smaller box built with ``-D``, and with
clang's contraction into fused multiply-adds turned off, on cpu and interp to the bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "lbm"  # (fixed paths: zig's cache finds them)
SOURCES = [FOLDER / "main.cpp", FOLDER / "lbm.cpp"]
DEFAULT_BOX = (16, 12, 10)  # layout_config.h's SIZE_X, SIZE_Y, SIZE_Z
SMALL_BOX = (6, 5, 5)  # small enough for the interpreter (150 leaf instances a step)

# The program's constants (lbm_macros.h), as the float32 values C gives them.
F = np.float32
OMEGA = F(1.85)
LID = (F(0.01), F(0.004), F(0.0))
# Each direction of D3Q19, in the program's entry order: its name, velocity and weight.
DIRECTIONS = [
    ("C", (0, 0, 0), F(1) / F(3)),
    ("N", (0, 1, 0), F(1) / F(18)),
    ("S", (0, -1, 0), F(1) / F(18)),
    ("E", (1, 0, 0), F(1) / F(18)),
    ("W", (-1, 0, 0), F(1) / F(18)),
    ("T", (0, 0, 1), F(1) / F(18)),
    ("B", (0, 0, -1), F(1) / F(18)),
    ("NE", (1, 1, 0), F(1) / F(36)),
    ("NW", (-1, 1, 0), F(1) / F(36)),
    ("SE", (1, -1, 0), F(1) / F(36)),
    ("SW", (-1, -1, 0), F(1) / F(36)),
    ("NT", (0, 1, 1), F(1) / F(36)),
    ("NB", (0, 1, -1), F(1) / F(36)),
    ("ST", (0, -1, 1), F(1) / F(36)),
    ("SB", (0, -1, -1), F(1) / F(36)),
    ("ET", (1, 0, 1), F(1) / F(36)),
    ("EB", (1, 0, -1), F(1) / F(36)),
    ("WT", (-1, 0, 1), F(1) / F(36)),
    ("WB", (-1, 0, -1), F(1) / F(36)),
]
VELOCITY = {name: v for name, v, _ in DIRECTIONS}
OPPOSITE = {a: b for a, va, _ in DIRECTIONS for b, vb, _ in DIRECTIONS if va == tuple(-k for k in vb)}


@pytest.fixture(scope="module")
def program():
    """The program as it is: clang contracts a * b + c into fused multiply-adds."""
    return c.compile(SOURCES)


@pytest.fixture(scope="module")
def small():
    """A smaller box (the sizes as -D), each multiply and add rounded on its own, as NumPy's."""
    defines = [f"{axis}={n}" for axis, n in zip(("SIZE_X", "SIZE_Y", "SIZE_Z"), SMALL_BOX, strict=True)]
    return c.compile(SOURCES, defines=defines, flags=["-ffp-contract=off"])


# --- the reference: a D3Q19 lid-driven cavity in NumPy, arrays indexed [z, y, x] ---------


def cell_kinds(box: tuple[int, int, int], obstacles: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The walls (the box's faces and the obstacle file's cells) and the lid (the plane under
    the top, inside the faces, where no obstacle is)."""
    nx, ny, nz = box
    z, y, x = np.indices((nz, ny, nx))
    faces = (x == 0) | (y == 0) | (z == 0) | (x == nx - 1) | (y == ny - 1) | (z == nz - 1)
    walls = faces | (obstacles if obstacles is not None else False)
    return walls, (z == nz - 2) & ~walls


def moments(f: dict[str, np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """A cell's density and velocity from its nineteen distributions, each sum taken in the
    program's order of directions (float32 addition is not associative)."""
    rho = f["C"]
    for d, _, _ in DIRECTIONS[1:]:
        rho = rho + f[d]
    u = []
    for axis in range(3):
        total = np.zeros_like(rho)  # 0 + a is a: the first term is exact
        for d, v, _ in DIRECTIONS:
            if v[axis]:
                total = total + f[d] if v[axis] > 0 else total - f[d]
        u.append(total / rho)
    return rho, u


def reference_step(f: dict[str, np.ndarray], walls: np.ndarray, lid: np.ndarray) -> dict[str, np.ndarray]:
    """One step in the gather form: each cell takes direction d from the neighbour behind it
    along d (np.roll wraps at the box's edge, as the program's flat index reaches other rows
    and padding there: only wall cells read those, and a wall hands a fluid neighbour back
    nothing but what that neighbour sent it), then walls bounce every direction back and
    fluid relaxes toward the equilibrium of its density and velocity (the lid's imposed)."""
    g = {d: np.roll(f[d], shift=(dz, dy, dx), axis=(0, 1, 2)) for d, (dx, dy, dz) in VELOCITY.items()}
    rho, u = moments(g)
    u = [np.where(lid, LID[axis], u[axis]) for axis in range(3)]
    ux, uy, uz = u
    usq = F(1.5) * (ux * ux + uy * uy + uz * uz)
    out = {}
    for d, (dx, dy, dz), weight in DIRECTIONS:
        eu = sum((s * comp for s, comp in zip((dx, dy, dz), u, strict=True) if s), start=np.zeros_like(ux))
        relaxed = (F(1) - OMEGA) * g[d] + OMEGA * weight * rho * (F(1) + F(3) * eu + F(4.5) * eu * eu - usq)
        out[d] = np.where(walls, g[OPPOSITE[d]], relaxed)
    return out


def reference_result(box: tuple[int, int, int], steps: int, obstacles: np.ndarray | None) -> np.ndarray:
    """What the program's result file holds: per cell (z, y, x) its density and velocity,
    zeros in a wall."""
    walls, lid = cell_kinds(box, obstacles)
    shape = walls.shape
    f = {d: np.full(shape, weight, dtype=np.float32) for d, _, weight in DIRECTIONS}
    for _ in range(steps):
        f = reference_step(f, walls, lid)
    rho, u = moments(f)
    result = np.stack([rho, *u], axis=-1)
    result[walls] = 0.0
    return result


# --- files --------------------------------------------------------------------------------


def obstacle_text(walls: np.ndarray) -> str:
    """parboil's obstacle file: each plane's rows ('.' fluid, '#' a wall), a newline after
    each row and after each plane."""
    return "".join(
        "".join("".join(".#"[int(w)] for w in row) + "\n" for row in plane) + "\n" for plane in walls
    )


def some_obstacles(box: tuple[int, int, int], seed: int) -> np.ndarray:
    nx, ny, nz = box
    return np.random.default_rng(seed).random((nz, ny, nx)) < 0.15


def read_result(path: Path, box: tuple[int, int, int]) -> np.ndarray:
    nx, ny, nz = box
    return np.fromfile(path, dtype="<f4").reshape((nz, ny, nx, 4))


# --- tests --------------------------------------------------------------------------------


def test_the_graph_is_read_as_hpvm_writes_it(program):
    (root,) = program.roots
    (box,) = root.graph.nodes
    (row,) = box.function.graph.nodes
    (leaf,) = row.function.graph.nodes
    assert [f.name for f in (root, box.function, row.function, leaf.function)] == [
        "lbmLvl3",
        "lbmLvl2",
        "lbmLvl1",
        "performStreamCollide_kernel",
    ]
    # created once; replicated over (rows, planes); the leaf over a row, one instance high
    assert (box.dims, row.dims, leaf.dims) == (0, 2, 2)
    assert [p.name for p in row.sizes] == ["dim_X2", "dim_Y2"]
    assert leaf.sizes[0].name == "dim_X1" and leaf.sizes[1].value == 1
    # each (pointer, bytes) pair is one array port; each level binds only what its child takes
    assert [p.name for p in root.params] == ["srcG", "dstG", "dim_X1", "dim_X2", "dim_Y2"]
    assert [p.name for p in row.function.params] == ["srcG", "dstG", "dim_X1"]
    assert [p.name for p in leaf.function.params] == ["srcG", "dstG"]
    assert (leaf.function.ins, leaf.function.outs) == (("srcG", "dstG"), ("dstG",))
    # CPU_TARGET on the root and the box, hpvm::DEVICE (the GPU) on the row and the leaf
    assert [f.hint for f in (root, box.function, row.function, leaf.function)] == ["cpu", "cpu", "gpu", "gpu"]


def statistics_line(box: tuple[int, int, int], obstacles: np.ndarray | None) -> str:
    walls, lid = cell_kinds(box, obstacles)
    fluid = walls.size - walls.sum() - lid.sum()
    return f"LBM_showGridStatistics: {walls.sum()} wall, {lid.sum()} lid, {fluid} fluid cells; density "


# The tolerance float32 needs: the program and the reference do the same operations in the
# same order (with contraction off they agree to the bit, below), but clang contracts
# a * b + c into one fused multiply-add (its default, -ffp-contract=on), which rounds once
# where NumPy rounds twice. One step still agrees to the bit; after three, densities (near
# 1) differ by at most one unit in the last place, 1.2e-7, and velocities by 7.5e-9 (by ten
# steps: 6e-7 and 1e-7, as the relaxation carries the differences on).
RTOL, ATOL = 1e-5, 1e-7


def run_and_read(program, box, tmp_path, capfd, target, steps, seed):
    """Run the program for ``steps`` (with an obstacle file from ``seed``, or none), check
    what it printed, and return its result file and the reference's."""
    argv = ["-o", str(tmp_path / "result"), str(steps)]
    obstacles = None
    if seed is not None:
        obstacles = some_obstacles(box, seed)
        (tmp_path / "obstacles").write_text(obstacle_text(obstacles))
        argv = ["-i", str(tmp_path / "obstacles"), *argv]
    assert program.run(argv, target=target) == 0
    out = capfd.readouterr().out
    nx, ny, nz = box
    assert out.startswith(f"lbm: {nx}x{ny}x{nz} cells, {steps} time steps, lid-driven cavity, "), out
    assert out.count(statistics_line(box, obstacles)) == 2, out  # before and after
    assert "Kernel" in out and "Timer Wall Time: " in out, out
    want = reference_result(box, steps, obstacles)
    assert np.abs(want[..., 1:]).max() > 1e-3  # the lid has set the fluid moving
    return read_result(tmp_path / "result", box), want


@pytest.mark.parametrize(("steps", "seed"), [(3, None), (2, 7)])  # the empty cavity; walls inside it too
def test_the_result_file_matches_numpy(program, tmp_path, capfd, steps, seed):
    got, want = run_and_read(program, DEFAULT_BOX, tmp_path, capfd, "cpu", steps, seed)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("target", "steps"), [("cpu", 3), ("interp", 2)])
def test_without_contraction_the_result_is_numpys_to_the_bit(small, tmp_path, capfd, target, steps):
    got, want = run_and_read(small, SMALL_BOX, tmp_path, capfd, target, steps, seed=3)
    np.testing.assert_array_equal(got, want)


USAGE = "Usage: lbm [-i OBSTACLES] -o RESULT STEPS\n"


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["-o", "RESULT"], "give the number of time steps"),
        (["-o", "RESULT", "0"], "the number of time steps must be at least 1"),
        (["2"], "no result file: name one with -o"),
        (["-i", "A,B", "-o", "RESULT", "2"], "one obstacle file at most after -i"),
        (["-x", "-o", "RESULT", "2"], "bad options"),
    ],
)
def test_bad_command_lines_are_refused(small, tmp_path, capfd, argv, why):
    argv = [str(tmp_path / "result") if a == "RESULT" else a for a in argv]
    assert small.run(argv, target="cpu") == 1
    err = capfd.readouterr().err
    assert err.endswith(f"lbm: {why}\n{USAGE}"), err
    assert not (tmp_path / "result").exists()


def test_bad_obstacle_files_are_refused(small, tmp_path, capfd):
    good = obstacle_text(some_obstacles(SMALL_BOX, 1))
    nx, ny, nz = SMALL_BOX
    need = nx * ny * nz + (ny + 1) * nz
    path = tmp_path / "obstacles"
    result = tmp_path / "result"
    cases = [
        (None, f"lbm: cannot open the obstacle file '{path}'\n"),
        (good[:-1], f"lbm: obstacle file '{path}' has {need - 1} bytes; a {nx}x{ny}x{nz} box needs {need}\n"),
        # the size is right, but a newline moved one cell: row 2 is short, row 3 long
        (
            good[: nx + 1 + nx - 1] + "\n." + good[2 * nx + 2 :],
            f"lbm: obstacle file '{path}', line 2: not a row of {nx} cells\n",
        ),
        # a plane's empty line turned into a cell
        (
            good[: (nx + 1) * ny] + "." + good[(nx + 1) * ny + 1 :],
            f"lbm: obstacle file '{path}', line {ny + 1}: not the empty line after a plane\n",
        ),
    ]
    for text, message in cases:
        if text is not None:
            assert len(text) == need or "bytes" in message
            path.write_text(text)
        assert small.run(["-i", str(path), "-o", str(result), "1"], target="cpu") == 1
        captured = capfd.readouterr()
        assert captured.err == message, captured.err
        assert not result.exists()


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_launch_over_more_planes_than_the_grid_holds_is_refused(tmp_path, target):
    """Built with -D LAUNCH_PLANES (main.cpp's knob) to launch the box node over 40 planes
    more than the grid holds: the leaf's reads, at its own x and its parent's y and z in
    the struct-of-arrays grid after ``srcG += MARGIN``, would leave the tracked memory (the
    process died with "double free or corruption"). The bounds pre-check raises
    OutOfBoundsError instead, before any leaf runs: the node, the array, the C line of the
    farthest read, the bytes over the launch's instances and the grid's length."""
    nx, ny, nz = SMALL_BOX
    planes = nz + 40
    defines = [f"{axis}={n}" for axis, n in zip(("SIZE_X", "SIZE_Y", "SIZE_Z"), SMALL_BOX, strict=True)]
    program = c.compile(SOURCES, defines=[*defines, f"LAUNCH_PLANES={planes}"])
    px, py, pz = nx + 3, ny + 2, nz + 4  # layout_config.h's padding
    total = px * py * pz * 20 * 4  # twenty floats a padded cell
    margin = 2 * px * py * 4
    flags = (19 * px * py * pz) * 4  # the FLAGS entry of the first cell, past MARGIN
    source = (FOLDER / "main.cpp").read_text().splitlines()
    line = next(k for k, text in enumerate(source, 1) if "FLAG_BITS(srcG, x, y, z);" in text)
    highest = margin + flags + 4 * ((nx - 1) + px * (ny - 1) + px * py * (planes - 1)) + 3
    with fails(
        hpvm.OutOfBoundsError,
        "node 'lbm_node' (",
        "every instance of leaf 'performStreamCollide_kernel' accesses bytes "
        f"4*x + {4 * px}*parent.x + {4 * px * py}*parent.y + {margin} to ",
        f"of 'srcG' (input of 'lbmLvl1', {total} bytes long) (",
        f"lbm/main.cpp:{line}); over this launch's instances (x < {nx}, parent.x < {ny}, parent.y < {planes})",
        f"that is bytes {margin} to {highest}: some instances would index past its end",
    ):
        program.run(["-o", str(tmp_path / "result"), "1"], target=target)
    assert not (tmp_path / "result").exists()
