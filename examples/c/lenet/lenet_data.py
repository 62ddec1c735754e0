"""Weights, images and labels for ``lenet.cpp``, in HPVM's file format, from PyTorch.

The network is ``hpvm.tensor.models.lenet`` (the layers of HPVM's ``lenet_mnist``: conv 5×5
→ tanh → max pool, twice; dense → tanh, twice; softmax) with weights drawn from a fixed
seed, and the images are random 1 × 28 × 28 "digits" (seeded; nothing is downloaded). Each
file is what HPVM's tools write for ``readTrainedWeights``, ``readInputBatch`` and
``readLabelsBatch3``: raw values in native byte order, no header —

=================== ==================== ===================================================
file                extents (C reads)    from PyTorch
=================== ==================== ===================================================
conv2d_1_w.bin      32 × 1 × 5 × 5       ``Conv2d.weight`` as it is (O, I, kh, kw)
conv2d_1_b.bin      1 × 32 × 1 × 1       ``Conv2d.bias``
conv2d_2_w.bin      64 × 32 × 5 × 5
conv2d_2_b.bin      1 × 64 × 1 × 1
dense_1_w.bin       1 × 1 × 3136 × 1024  ``Linear.weight`` transposed: (in, out), row-major
dense_1_b.bin       1 × 1024 × 1 × 1     ``Linear.bias``
dense_2_w.bin       1 × 1 × 1024 × 10
dense_2_b.bin       1 × 10 × 1 × 1
test_input.bin      N × 1 × 28 × 28      the images, float32, NCHW
test_labels.bin     N                    uint32 labels
=================== ==================== ===================================================

The labels are PyTorch's own classes for the images, except at the indices in ``wrong``,
which get the next class: the accuracy the program reports is then known in advance
(by default 16 images, 6 wrong: 87.5 % on the first batch of 8, 37.5 % on the second,
62.5 % in all).

Run: ``python examples/c/lenet/lenet_data.py DIR`` then ``hpvm c run examples/c/lenet/lenet.cpp
-- DIR [OUT]`` (OUT: the program writes its probabilities there, float32 N × 10).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WRONG = (3, 9, 10, 12, 13, 15)  # images whose label is not PyTorch's class


@dataclass
class LeNetData:
    """What was written, and what PyTorch computes from it."""

    probabilities: np.ndarray  # (N, 10): PyTorch's output for the images
    labels: np.ndarray  # (N,) uint32, as written


def parameters(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    """The model's weights as HPVM's files hold them (see the table above)."""
    convs = [model.features[0], model.features[3]]
    denses = [model.classifier[1], model.classifier[3]]
    files: dict[str, np.ndarray] = {}
    for k, conv in enumerate(convs, 1):
        files[f"conv2d_{k}_w"] = conv.weight.detach().numpy()
        files[f"conv2d_{k}_b"] = conv.bias.detach().numpy().reshape(1, -1, 1, 1)
    for k, dense in enumerate(denses, 1):
        weight = dense.weight.detach().numpy().T  # (in, out)
        files[f"dense_{k}_w"] = weight.reshape(1, 1, *weight.shape)
        files[f"dense_{k}_b"] = dense.bias.detach().numpy().reshape(1, -1, 1, 1)
    return files


def write(folder: Path, images: int = 16, seed: int = 0, wrong: tuple[int, ...] = WRONG) -> LeNetData:
    """Write every file of the table into ``folder``; PyTorch's probabilities and the labels."""
    import torch

    import hpvm.tensor.models

    model = hpvm.tensor.models.lenet(seed=seed).eval()
    x = model.example_input(images, seed=seed + 1)
    with torch.inference_mode():
        probabilities = model(x).numpy()
    labels = probabilities.argmax(axis=1).astype(np.uint32)
    for i in wrong:
        if i < images:
            labels[i] = (labels[i] + 1) % probabilities.shape[1]
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in parameters(model).items():
        np.ascontiguousarray(array, dtype=np.float32).tofile(folder / f"{name}.bin")
    x.numpy().astype(np.float32).tofile(folder / "test_input.bin")
    labels.tofile(folder / "test_labels.bin")
    return LeNetData(probabilities, labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where to write the files")
    parser.add_argument("--images", type=int, default=16, help="how many images (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and images")
    args = parser.parse_args(argv)
    if args.images < 1:
        parser.error(f"--images must be at least 1, not {args.images}")
    data = write(args.folder, args.images, args.seed)
    right = int(np.count_nonzero(data.probabilities.argmax(axis=1) == data.labels))
    print(f"wrote {args.folder}: {args.images} images, {right} labelled as PyTorch classifies them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
