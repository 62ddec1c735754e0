"""The benchmarked programs as HPVM graphs, and the host code that launches them.

Where an example already is the benchmark's kernel, it is imported from ``examples/``
(vector add, the two-level tiled sgemm, the histogram with atomics, the block reduction
with an allocation node and barriers, the streaming edge-detection pipeline). New here:

- ``stencil_root``: Parboil's stencil, a 7-point 3-D Jacobi step as one leaf replicated
  3-D over the interior of the grid; the host launches it once per iteration and swaps
  the input and output arrays (Parboil's host loop);
- ``sgemm_wrapper_root``, ``stencil_wrapper_root``: the sgemm and stencil graphs one level
  down, under a one-instance internal node — how HPVM-C programs are written (every Parboil
  port wraps its leaves this way), so the parallel level is not the root's child;
- ``edge_sequential_root``: the six edge-detection leaves in a *non-streaming* graph, so
  one launch runs one frame through the stages one after the other — the "sequential
  stages" the streaming pipeline is compared with;
- ``noop_root``: a leaf that does nothing, replicated ``n`` times, and ``write_id_root``:
  the smallest leaf that cannot be optimised away (each instance writes its id) — launch
  overhead against the number of instances; ``one_instance``: a one-instance graph
  (launch latency).

Every driver takes the ``target`` to force and expects the runtime to be initialised and
its arrays tracked (``hpvm.init()``, ``hpvm.track_memory``), as ``run.py`` does once.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

import hpvm
from hpvm.ir.graph import InternalFunction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import edge_detection as edge_example  # noqa: E402
import histogram as histogram_example  # noqa: E402
import reduction as reduction_example  # noqa: E402
import sgemm as sgemm_example  # noqa: E402
import vector_add as vector_add_example  # noqa: E402

SGEMM_TILE = sgemm_example.DEFAULT_TILE
REDUCTION_BLOCK = 256
STENCIL_C0 = np.float32(1.0 / 6.0)  # Parboil's coefficients
STENCIL_C1 = np.float32(1.0 / 6.0 / 6.0)


# ---------------------------------------------------------------------------------------
# Single launches


def vector_add(a: np.ndarray, b: np.ndarray, c: np.ndarray, target: str) -> None:
    """c = a + b: one leaf replicated over the vector (``examples/vector_add.py``)."""
    hpvm.wait(hpvm.launch(vector_add_example.root, (a, b, c, a.shape[0]), target=target))


def sgemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    alpha: np.float32,
    beta: np.float32,
    target: str,
    root: InternalFunction = sgemm_example.root,
) -> None:
    """C = alpha A B + beta C: tiles of SGEMM_TILE² element instances (``examples/sgemm.py``;
    ``root``: that graph or ``sgemm_wrapper_root``)."""
    hpvm.wait(hpvm.launch(root, (a, b, c, alpha, beta, SGEMM_TILE), target=target))


@hpvm.internal()
def sgemm_wrapper_root(
    a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], alpha: hpvm.f32, beta: hpvm.f32, tile: hpvm.i64
):
    """``examples/sgemm.py``'s graph under a one-instance internal node (HPVM-C's shape)."""
    node = hpvm.create_node(sgemm_example.root)
    for port in range(6):
        hpvm.bind_in(node, port, port)


def histogram(values: np.ndarray, bins: np.ndarray, target: str) -> None:
    """Add the histogram of ``values`` into ``bins`` with ``hpvm.atomic_add`` (``examples/histogram.py``)."""
    hpvm.wait(hpvm.launch(histogram_example.root, (values, bins), target=target))


def block_sum(data: np.ndarray, block: int, partials: np.ndarray, target: str) -> None:
    """Block-wise tree sums: allocation node + malloc + barriers (``examples/reduction.py``)."""
    hpvm.wait(hpvm.launch(reduction_example.root, (data, block, partials), target=target))


# ---------------------------------------------------------------------------------------
# Parboil stencil: 7-point 3-D


@hpvm.leaf(ins=("src",), outs=("dst",))
def stencil_point(src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], c0: hpvm.f32, c1: hpvm.f32):
    """One interior point: the six neighbours times c1 minus the point times c0 (Parboil)."""
    node = hpvm.get_node()
    k = hpvm.get_node_instance_id_x(node) + 1  # the grid covers the interior only
    j = hpvm.get_node_instance_id_y(node) + 1
    i = hpvm.get_node_instance_id_z(node) + 1
    dst[k, j, i] = (
        src[k + 1, j, i]
        + src[k - 1, j, i]
        + src[k, j + 1, i]
        + src[k, j - 1, i]
        + src[k, j, i + 1]
        + src[k, j, i - 1]
    ) * c1 - src[k, j, i] * c0


@hpvm.internal()
def stencil_root(src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], c0: hpvm.f32, c1: hpvm.f32):
    """The leaf replicated 3-D over the interior: (nz-2) x (ny-2) x (nx-2) instances."""
    step = hpvm.create_node_3d(stencil_point, src.shape[0] - 2, src.shape[1] - 2, src.shape[2] - 2)
    for port in range(4):
        hpvm.bind_in(step, port, port)


@hpvm.internal()
def stencil_wrapper_root(src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], c0: hpvm.f32, c1: hpvm.f32):
    """``stencil_root`` under a one-instance internal node (HPVM-C's shape)."""
    node = hpvm.create_node(stencil_root)
    for port in range(4):
        hpvm.bind_in(node, port, port)


def stencil(
    src: np.ndarray,
    dst: np.ndarray,
    iterations: int,
    target: str,
    root: InternalFunction = stencil_root,
) -> np.ndarray:
    """``iterations`` launches of ``root`` (``stencil_root`` or ``stencil_wrapper_root``),
    swapping input and output; returns the array holding the result.

    Both arrays must hold the same boundary (only the interior is written).
    """
    for _ in range(iterations):
        hpvm.wait(hpvm.launch(root, (src, dst, STENCIL_C0, STENCIL_C1), target=target))
        src, dst = dst, src
    return src


# ---------------------------------------------------------------------------------------
# Edge detection: the streaming pipeline, and the same leaves one after the other


@hpvm.internal()
def edge_sequential_root(
    image: hpvm.f32[:, :],
    kernel: hpvm.f32[:, :],
    smoothed: hpvm.f32[:, :],
    laplacian: hpvm.f32[:, :],
    crossings: hpvm.f32[:, :],
    grad: hpvm.f32[:, :],
    max_grad: hpvm.f32[:],
    edges: hpvm.f32[:, :],
    theta: hpvm.f32,
):
    """``examples/edge_detection.py``'s graph with ordinary (non-streaming) edges and binds."""
    edge_example.build_stages(image, stream=False)


class EdgePipeline:
    """Buffers for frames in flight (``examples/edge_detection.py``'s slots), tracked once.

    ``stream`` pushes every frame through the streaming graph, keeping at most ``in_flight``
    frames in the pipeline (a slot is reused only after its frame is popped); ``sequential``
    launches the non-streaming graph once per frame. Both return the edge maps.
    """

    def __init__(self, rows: int, cols: int, in_flight: int, theta: float = edge_example.DEFAULT_THETA):
        self.kernel = edge_example.gaussian_kernel()
        self.theta = np.float32(theta)
        self.slots = [edge_example.Slot.allocate(rows, cols) for _ in range(in_flight)]
        hpvm.track_memory(self.kernel)
        for slot in self.slots:
            for array in slot.arrays():
                hpvm.track_memory(array)

    def _load(self, slot: edge_example.Slot, frame: np.ndarray) -> tuple:
        slot.image[...] = frame
        slot.max_grad[0] = 0.0  # the identity of the max (gradients are >= 0)
        return slot.args(self.kernel, self.theta)

    def stream(self, frames: list[np.ndarray], target: str) -> np.ndarray:
        results = np.empty((len(frames), *frames[0].shape), dtype=np.float32)
        depth = len(self.slots)
        handle = hpvm.launch(edge_example.root, None, stream=True, target=target)

        def collect(k: int) -> None:
            (edges,) = hpvm.pop(handle)
            results[k] = edges

        for k, frame in enumerate(frames):
            if k >= depth:
                collect(k - depth)  # frees the slot frame k reuses
            hpvm.push(handle, self._load(self.slots[k % depth], frame))
        for k in range(max(0, len(frames) - depth), len(frames)):
            collect(k)
        hpvm.wait(handle)
        return results

    def sequential(self, frames: list[np.ndarray], target: str) -> np.ndarray:
        results = np.empty((len(frames), *frames[0].shape), dtype=np.float32)
        slot = self.slots[0]
        for k, frame in enumerate(frames):
            (edges,) = hpvm.wait(hpvm.launch(edge_sequential_root, self._load(slot, frame), target=target))
            results[k] = edges
        return results

    def frames_on_threads(self, frames: list[np.ndarray], target: str, threads: int = 2) -> np.ndarray:
        """The sequential launches spread over ``threads`` host threads, thread t launching
        frames t, t + threads... in slot t: every frame runs whole on one thread, with no
        hand-off between stages — what ``threads`` cores give the stages in turn at best,
        the limit a pipeline of them is measured against (``pipeline1``)."""
        import threading

        results = np.empty((len(frames), *frames[0].shape), dtype=np.float32)
        failures: list[BaseException] = []

        def run(t: int) -> None:
            try:
                for k in range(t, len(frames), threads):
                    args = self._load(self.slots[t], frames[k])
                    (edges,) = hpvm.wait(hpvm.launch(edge_sequential_root, args, target=target))
                    results[k] = edges
            except BaseException as e:  # re-raised on the calling thread
                failures.append(e)

        workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if failures:
            raise failures[0]
        return results


def synthetic_frames(count: int, size: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` size x size frames of the edge-detection example's synthetic video."""
    return list(edge_example.synthetic_frames(count, size, size, seed))


# ---------------------------------------------------------------------------------------
# Launch overhead


@hpvm.leaf()
def noop(n: hpvm.i64):
    """Nothing at all: what remains is the cost of launching and scheduling instances."""


@hpvm.internal()
def noop_root(n: hpvm.i64):
    """``noop`` replicated n times."""
    node = hpvm.create_node_1d(noop, n)
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf(outs=("out",))
def write_id(out: hpvm.i64[:]):
    """Each instance writes its own id: a leaf with almost no work that must still run."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = i


@hpvm.internal()
def write_id_root(out: hpvm.i64[:]):
    """``write_id`` replicated over ``out``."""
    node = hpvm.create_node_1d(write_id, out.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf()
def increment(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.internal()
def one_instance(x: hpvm.i64):
    """A single leaf instance with one input and one output."""
    node = hpvm.create_node(increment)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def launch_noop(n: int, target: str) -> None:
    hpvm.wait(hpvm.launch(noop_root, (n,), target=target))


def launch_write_id(out: np.ndarray, target: str) -> None:
    hpvm.wait(hpvm.launch(write_id_root, (out,), target=target))


#: GenHPVM's form of a saxpy (LLVM 9 text, hpvm's own test program): a 1-D leaf whose
#: instance loops over four elements, the root binding its last element and Z's byte size
#: as outputs — the shape of the field's IR files (the launch row).
GENHPVM_SAXPY = Path(__file__).resolve().parents[1] / "tests" / "llvm" / "hpvm9" / "saxpy_two_level.ll"


@functools.cache
def genhpvm_saxpy_root() -> InternalFunction:
    from hpvm import llvm

    return llvm.from_hpvm_ir(GENHPVM_SAXPY.read_text(), file=str(GENHPVM_SAXPY))


def genhpvm_saxpy(views: tuple, a: np.float32, instances: np.int64, target: str) -> tuple:
    """``genhpvm_saxpy_root`` over ``views`` (byte views of x, y and z, made once, as HPVM-C
    passes tracked memory), ``instances`` of four elements each: its two outputs."""
    return hpvm.wait(hpvm.launch(genhpvm_saxpy_root(), (*views, a, instances), target=target))


def launch_one(target: str) -> int:
    (result,) = hpvm.wait(hpvm.launch(one_instance, (41,), target=target))
    return int(result)
