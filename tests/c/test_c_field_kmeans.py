"""Rodinia's k-means, written as HPVM's ports of Rodinia write it (``programs/kmeans``: the
graph in kmeans_graph.cpp, the packed ``RootIn`` and the return struct in kmeans.h, the
host's clustering loop in cluster.cpp, the driver in main.cpp with ``std::map``,
``std::vector`` and ``std::string`` options). The host draws points around four centers
from an LCG, takes the first ``k`` points as the first centroids, and runs Rodinia's loop:
one ``__hpvm__launch`` + ``__hpvm__wait`` per iteration with the same argument struct over
the same tracked memory, the memberships and change flags requested back, the centroids
recomputed as the means of their points and written into their tracked buffer after
``llvm_hpvm_request_mem``, until an iteration changes at most ``-t`` memberships or after
``-m`` iterations.

The graph: the root replicates a ``hpvm::DEVICE`` wrapper over the groups, which
replicates the ``hpvm::DEVICE`` leaf ``find_nearest`` over 64 points; the leaf tests its
place against ``npoints``, loops over every centroid (``nclusters``) and every feature
(``nfeatures``) — bounds that are scalar ports —, and writes its own membership and change
slots, returning membership's byte count, bound out to ``RootIn.out``.

Replays. Since ``ir/llvmbounded.py`` counts a loop that exits on host-determined values
(scalars, instance ids, constants) as bounded, the leaf is, and the program's launches
after a key's first two (timed, then recorded) are replayed on the launching thread: the
tests count the full-path launches (2) over many iterations.

The reference: the same points, the same loop in NumPy; the memberships exactly (the
reference checks that no point's nearest centroid is within float rounding of another, so
clang's fused ``dist += d * d`` cannot choose differently), the centroids to the bit (the
host sums and divides in float as NumPy does here).

A forgotten edge guard (the leaf built with ``-DKMEANS_FORGET_GUARD``): the last group's
instances past ``npoints`` would read ``points`` and write their slots past the arrays'
ends. The slots are stored at the global index ``gx * gridx + lx`` after the loops, which
the bounds pre-check reads (``affine.GLOBAL``): every target, unchecked ``cpu`` included,
refuses the launch before the node runs, naming the node, the leaf, the array, the form
and kmeans_graph.cpp's line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import (
    assert_refused_at_the_global_index,
    group_hierarchy,
    line_of,
    needs_clang,
    needs_llvm_leaves,
    run_apart,
)

from hpvm import c
from hpvm.runtime import quick

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "kmeans"  # (fixed paths: zig's cache finds them)
SOURCES = [FOLDER / "main.cpp", FOLDER / "cluster.cpp", FOLDER / "kmeans_graph.cpp"]
GRAPH = (FOLDER / "kmeans_graph.cpp").read_text()
GROUP, TRUE_CENTERS, SEED = 64, 4, 1701


@pytest.fixture(scope="module")
def program():
    return c.compile(SOURCES)


# --- the reference: the program's points and Rodinia's loop in NumPy -----------------------


def random_points(npoints: int, nfeatures: int) -> np.ndarray:
    """main.cpp's ``random_points``: its LCG from seed 1701, centers in [0, 10), each point
    within 4 of one of them in each feature, in float32 as the host computes them."""
    seed = SEED

    def draw() -> int:
        nonlocal seed
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        return seed >> 16

    hundred = np.float32(100)
    centers = np.array([np.float32(draw() % 1000) / hundred for _ in range(TRUE_CENTERS * nfeatures)])
    centers = centers.reshape(TRUE_CENTERS, nfeatures)
    points = np.empty((npoints, nfeatures), dtype=np.float32)
    for p in range(npoints):
        t = draw() % TRUE_CENTERS
        for f in range(nfeatures):
            points[p, f] = centers[t, f] + np.float32(draw() % 801 - 400) / hundred
    return points


def kmeans(points: np.ndarray, nclusters: int, max_iterations: int, threshold: int) -> dict:
    """cluster.cpp's loop: each iteration's changes, the last memberships and centroids."""
    npoints, nfeatures = points.shape
    centroids = points[:nclusters].copy()
    membership = np.full(npoints, -1)
    changes = []
    while True:
        # the squared distances in the leaf's order: feature after feature, in float32
        dist = np.zeros((npoints, nclusters), dtype=np.float32)
        for f in range(nfeatures):
            d = points[:, None, f] - centroids[None, :, f]
            dist += d * d
        nearest = np.argmin(dist, axis=1)  # (the first one of equals, as the leaf's `<`)
        # no other centroid within float rounding (clang fuses `dist += d * d`): the leaf
        # finds the same nearest one
        ordered = np.sort(dist, axis=1)
        if nclusters > 1:
            assert np.all(ordered[:, 1] - ordered[:, 0] > 1e-5 * ordered[:, 1] + 1e-30), "a near tie"
        changes.append(int(np.count_nonzero(nearest != membership)))
        membership = nearest
        for k in range(nclusters):
            mine = points[membership == k]
            if len(mine):  # (the host sums point after point: cumsum's order, not np.sum's)
                centroids[k] = np.cumsum(mine, axis=0, dtype=np.float32)[-1] / np.float32(len(mine))
        if not (changes[-1] > threshold and len(changes) < max_iterations):
            break
    return {"iterations": len(changes), "changes": changes, "membership": membership, "centroids": centroids}


def parse(out: str, nclusters: int) -> dict:
    """The program's output, line by line (its format is checked as it is read)."""
    lines = out.splitlines()
    head = re.fullmatch(r"kmeans (\d+) points, (\d+) features, (\d+) clusters", lines[0])
    assert head is not None, out
    iterations = re.fullmatch(r"iterations: (\d+)", lines[1])
    assert (
        iterations is not None and lines[2].startswith("changes:") and lines[3].startswith("membership:")
    ), out
    centroids = []
    for k, line in enumerate(lines[4 : 4 + nclusters]):
        assert line.startswith(f"centroid {k}:"), out
        centroids.append([np.float32(w) for w in line.split(":")[1].split()])
    assert lines[4 + nclusters : -1] == ["wrong returns: 0"], out
    assert re.fullmatch(r"time: [\d.]+ ms", lines[-1]), out
    return {
        "sizes": tuple(int(w) for w in head.groups()),
        "iterations": int(iterations[1]),
        "changes": [int(w) for w in lines[2].split()[1:]],
        "membership": np.array([int(w) for w in lines[3].split()[1:]]),
        "centroids": np.array(centroids, dtype=np.float32),
    }


def run_kmeans(
    program, capfd, npoints, nfeatures, nclusters, target, max_iterations=500, threshold=0
) -> dict:
    """Run the program; check its output against the reference; what it printed."""
    argv = ["-n", npoints, "-f", nfeatures, "-k", nclusters, "-m", max_iterations, "-t", threshold]
    assert program.run([str(w) for w in argv], target=target) == 0
    got = parse(capfd.readouterr().out, nclusters)
    want = kmeans(random_points(npoints, nfeatures), nclusters, max_iterations, threshold)
    assert got["sizes"] == (npoints, nfeatures, nclusters)
    assert got["iterations"] == want["iterations"] == len(got["changes"])
    assert got["changes"] == want["changes"]
    np.testing.assert_array_equal(got["membership"], want["membership"])
    assert got["centroids"].shape == (nclusters, nfeatures)
    np.testing.assert_array_equal(got["centroids"], want["centroids"])  # (the same float sums)
    return got


# --- tests --------------------------------------------------------------------------------


def test_the_graph_is_read_as_written(program):
    (root,) = program.roots
    group, point = group_hierarchy(root, ("kmeansRoot", "kmeansLvl1", "find_nearest"))
    functions = (root, group.function, point.function)
    # each (pointer, bytes) pair is one array port; the sizes and loop bounds int scalars
    assert [(p.name, str(p.type)) for p in point.function.params] == [
        ("points", "u8[:]"),
        ("centroids", "u8[:]"),
        ("membership", "u8[:]"),
        ("changed", "u8[:]"),
        ("npoints", "i32"),
        ("nclusters", "i32"),
        ("nfeatures", "i32"),
    ]
    ins, outs = ("points", "centroids", "membership"), ("membership", "changed")
    for f in functions:
        assert (f.ins, f.outs) == (ins, outs), f.name
    assert [str(p.type) for p in root.params][4:] == ["i32", "i32", "i32", "i64"]
    # membership's byte count, returned by the leaf and bound out through both levels
    assert [str(t) for t in point.function.out_types] == ["i64"]
    assert [(b.src, b.oc, b.op) for b in group.function.graph.out_binds] == [(point, 0, 0)]
    assert [(b.src, b.oc, b.op) for b in root.graph.out_binds] == [(group, 0, 0)]


def test_the_leaf_loops_count_as_bounded(program):
    """Both loops leave on a scalar port (``c < nclusters``, ``f < nfeatures``): bounded."""
    (root,) = program.roots
    assert quick.bounded_graph(root) is None


@pytest.mark.parametrize(
    ("npoints", "nfeatures", "nclusters", "target"),
    [
        (1000, 4, 5, "cpu"),  # 16 groups, the last one 40 points: 22 iterations to converge
        (128, 3, 6, "cpu"),  # two whole groups, more clusters than centers
        (77, 5, 4, "interp"),  # 13 points past a group: the guard
        (9, 2, 1, "interp"),  # one cluster: every point's mean
    ],
)
def test_the_clustering_is_numpys(program, capfd, npoints, nfeatures, nclusters, target):
    got = run_kmeans(program, capfd, npoints, nfeatures, nclusters, target)
    assert got["changes"][0] == npoints and got["changes"][-1] == 0  # (all from -1; converged)


def test_checked_mode_changes_no_clustering(program, checked, capfd):
    run_kmeans(program, capfd, 200, 3, 7, "cpu")


def test_launches_after_the_first_two_are_replayed(program, full_path, capfd):
    """Fourteen iterations with the same key (threshold -1: no convergence stops them):
    launch 1 is timed, 2 recorded, 3 to 14 replayed on the launching thread."""
    got = run_kmeans(program, capfd, 1000, 4, 5, "cpu", max_iterations=14, threshold=-1)
    assert got["iterations"] == 14
    assert full_path[0] == 2


def test_converged_launches_are_replayed_too(program, full_path, capfd):
    got = run_kmeans(program, capfd, 300, 3, 6, "cpu")
    assert got["iterations"] >= 10
    assert full_path[0] == 2


# --- a forgotten guard ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unguarded():
    """What the program built with ``-DKMEANS_FORGET_GUARD`` raises, 100 points (two groups
    of 64: the second's instances 36 to 63 are points 100 to 127), on ``interp`` without
    race detection, with it (its default), on ``cpu`` checked and on ``cpu`` unchecked — in
    a process of its own, as a write the checks missed would corrupt it (unchecked ``cpu``
    did, until the bounds pre-check read the stores after the loops and the global index
    ``gx * gridx + lx``): each one's exception class and message."""
    script = (
        "import sys, hpvm, hpvm.backends.cpu as cpu, hpvm.backends.interp as interp\n"
        "from hpvm import c\n"
        "program = c.compile(sys.argv[1:], defines=['KMEANS_FORGET_GUARD'])\n"
        "for name, target, races, checked in [('interp', 'interp', False, False),\n"
        "        ('interp with races', 'interp', True, False), ('cpu checked', 'cpu', True, True),\n"
        "        ('cpu', 'cpu', True, False)]:\n"
        "    interp.configure(races=races)\n"
        "    cpu.configure(checked=checked)\n"
        "    try:\n"
        "        print(name, 'returned', program.run(['-n', '100', '-f', '3', '-k', '4'], target=target))\n"
        "    except hpvm.HPVMError as e:\n"
        "        print(name, 'raised', type(e).__name__ + ':', str(e).replace(chr(10), ' '))\n"
    )
    out = run_apart(script, *map(str, SOURCES), timeout=300)
    return dict(re.findall(r"^(.+?) raised (\w+: .*)$", out, flags=re.M))


def test_a_forgotten_guard_is_refused_before_the_leaf_runs_naming_the_node_the_leaf_and_the_slots(unguarded):
    """Every instance stores its membership and change slots at the global index ``gx *
    gridx + lx`` (the parent's id times the group's instances plus its own), after its
    loops: the pre-check sees that 2 groups of 64 reach byte 511 of a 400-byte array and
    refuses the launch before the node runs, on every target, unchecked ``cpu`` included,
    naming the node, the leaf, the array, the form and the ``.cpp`` line."""
    slots = line_of(GRAPH, "slots")
    assert_refused_at_the_global_index(
        unguarded, r"'pointNode' \(.*\)", "find_nearest", "(membership|changed)", "kmeansLvl1", SOURCES[2],
        f"({slots}|{slots + 1})",
    )  # fmt: skip


def test_bad_command_lines_are_refused(program, capfd):
    for argv in (
        ["-n"],
        ["-x", "3"],
        ["-n", "3x"],
        ["-n", "2", "-k", "3"],
        ["-f", "0"],
        ["-m", "0"],
        ["-k", ""],
    ):
        assert program.run(argv, target="cpu") == 1, argv
        assert capfd.readouterr().err.startswith("Usage: kmeans [-n points] "), argv
