"""LeNet imported from PyTorch: one node per tensor operation, fused, run, checked.

What ``hpvm.tensor.from_torch`` does with a ``torch.nn.Module``::

    LeNet (torch.nn.Module)             15 TENSOR_TARGET leaves            5 fused leaves
    Conv2d → Tanh → MaxPool2d     ─►    conv, add, tanh, pool_max    ─►    conv→add→tanh→pool_max
    Conv2d → Tanh → MaxPool2d           conv, add, tanh, pool_max          conv→add→tanh→pool_max
    Flatten → Linear → Tanh             mul, add, tanh                     mul→add→tanh
    Linear → Tanh → Softmax             mul, add, tanh, softmax            mul→add→tanh, softmax

torch.fx traces the model; each layer becomes one leaf node per tensor operation (a Conv2d
with a bias is a convolution and an add, a Linear a mul by the transposed weight and an add;
Flatten disappears into the mul, which flattens its input), the weights become array
parameters of the root bound into the nodes that use them, and FuseHPVMTensorNodes merges
the chains matching seed 001's patterns. The program supplies its weights itself:
``program(x)`` is ``init``, ``track_memory``, ``launch``, ``wait``.

The weights are random (seeded, no download), so the "digits" are meaningless; what this
shows is that HPVM computes exactly what PyTorch computes.

Run it: ``python examples/lenet_from_torch.py [--batch 8] [--target tensor|interp]``;
``--save lenet.hpvm`` also writes the program (then ``hpvm show lenet.hpvm -o lenet.svg``).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm.tensor


def run(
    batch: int = 8, seed: int = 0, target: str | None = None
) -> tuple[np.ndarray, np.ndarray, hpvm.tensor.TensorProgram]:
    """Import LeNet, run it on HPVM; return (HPVM output, PyTorch output, the program)."""
    import torch

    model = hpvm.tensor.models.lenet(seed=seed)
    x = model.example_input(batch, seed=seed + 1)
    program = hpvm.tensor.from_torch(model, x)
    result = program(x, target=target)
    with torch.inference_mode():
        reference = model(x).numpy()
    return result, reference, program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8, help="images per batch (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the input")
    parser.add_argument(
        "--target", default=None, help="back end to force (default: the leaves' hint, the tensor back end)"
    )
    parser.add_argument("--save", metavar="FILE.hpvm", help="also save the fused program (and FILE.npz)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error(f"--batch must be at least 1, not {args.batch}")

    start = time.perf_counter()
    result, reference, program = run(args.batch, args.seed, args.target)
    elapsed = time.perf_counter() - start
    print(
        f"imported {program.model_name}: {program.unfused_node_count} nodes, fused into {program.node_count}:"
    )
    for ops in program.operations():
        print(f"  {' -> '.join(ops)}")
    if args.save:
        npz = program.save(args.save)
        print(f"saved {args.save} and {npz}")
    scale = float(np.abs(reference).max())
    error = float(np.abs(result - reference).max()) / scale
    if not error <= 1e-4:
        print(f"lenet_from_torch: MISMATCH against PyTorch (relative error {error:.2e})", file=sys.stderr)
        return 1
    classes = ", ".join(str(c) for c in result.argmax(axis=1))
    print(
        f"lenet_from_torch: batch {args.batch}: matches PyTorch (relative error {error:.1e}, {elapsed:.2f} s)"
    )
    print(f"  predicted classes: {classes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
