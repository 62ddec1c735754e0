"""The HPVM DNN benchmark models, defined in PyTorch with seeded random weights.

HPVM's benchmark suite compiles six classic image classifiers through its tensor path.
They are rebuilt here as ``torch.nn.Module`` factories so that the importer
(``hpvm.tensor.from_torch``), the tests and ``benchmarks/tensor.py`` share one definition:

========== ================ ======================================================
factory    input (C, H, W)  layers
========== ================ ======================================================
lenet      1 × 28 × 28      2 × (conv 5×5 + tanh + max pool), 2 × (linear + tanh), softmax
alexnet    3 × 32 × 32      5 conv (11×11, 5×5, 3 × 3×3) + tanh, 3 max pools, linear
alexnet2   3 × 32 × 32      6 conv 3×3 + tanh, 3 max pools (+ dropout), linear, softmax
vgg16      3 × 32 × 32      13 conv 3×3 + relu, 5 max pools, 2 linear
resnet18   3 × 32 × 32      conv + batchnorm + relu, 8 basic blocks (residual adds), avg pool, linear
mobilenet  3 × 32 × 32      conv, 13 depthwise-separable blocks (group conv + batchnorm + relu6), avg pool, linear
========== ================ ======================================================

Only layers the importer supports are used. Weights are not trained — there is nothing to
download and nothing to learn for a compiler benchmark — but they are drawn with scales
that keep activations of order one through every layer (He / LeCun uniform bounds), and
batchnorm gets non-trivial running statistics, so that comparing HPVM's output with eager
PyTorch's is a meaningful test. The weights come from a ``torch.Generator`` seeded by the
factory's ``seed``: the same seed gives the same model on every machine, and building a
model leaves PyTorch's global random state untouched.

Importing this module imports torch (the ``tensor`` extra); ``hpvm.tensor`` does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

__all__ = [
    "MODELS",
    "BenchmarkModel",
    "alexnet",
    "alexnet2",
    "lenet",
    "mobilenet",
    "resnet18",
    "vgg16",
]


class BenchmarkModel(nn.Module):
    """A benchmark classifier: its input shape and a way to make example inputs."""

    input_shape: tuple[int, int, int] = (3, 32, 32)  # (C, H, W) of one image

    def example_input(self, batch: int = 1, seed: int = 0) -> torch.Tensor:
        """A float32 batch of ``batch`` random images, in [0, 1) like normalized pixels."""
        generator = torch.Generator().manual_seed(seed)
        return torch.rand((batch, *self.input_shape), generator=generator, dtype=torch.float32)


# ---------------------------------------------------------------------------------------
# The models


class LeNet(BenchmarkModel):
    """LeNet for MNIST (HPVM's ``lenet_mnist``), input 1 × 28 × 28, output 10 probabilities.

    Layers::

        Conv2d(1, 32, 5, padding=2)  → Tanh → MaxPool2d(2)     # 32 × 14 × 14
        Conv2d(32, 64, 5, padding=2) → Tanh → MaxPool2d(2)     # 64 × 7 × 7
        Flatten → Linear(3136, 1024) → Tanh
        Linear(1024, 10) → Tanh → Softmax(dim=1)

    Imported: 15 single-operation nodes, fused into 5 (conv→add→tanh→pool twice,
    mul→add→tanh twice, softmax).
    """

    input_shape = (1, 28, 28)

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2),
            nn.Tanh(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(7 * 7 * 64, 1024),
            nn.Tanh(),
            nn.Linear(1024, 10),
            nn.Tanh(),
            nn.Softmax(dim=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class AlexNet(BenchmarkModel):
    """AlexNet for CIFAR-10 (HPVM's ``alexnet_cifar10``), input 3 × 32 × 32, output 10 logits.

    Layers::

        Conv2d(3, 64, 11, padding=5)    → Tanh → MaxPool2d(2)   # 64 × 16 × 16
        Conv2d(64, 192, 5, padding=2)   → Tanh → MaxPool2d(2)   # 192 × 8 × 8
        Conv2d(192, 384, 3, padding=1)  → Tanh
        Conv2d(384, 256, 3, padding=1)  → Tanh
        Conv2d(256, 256, 3, padding=1)  → Tanh → MaxPool2d(2)   # 256 × 4 × 4
        Flatten → Linear(4096, 10)

    Imported: 20 nodes, fused into 6 (five conv groups, one mul→add).
    """

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            *_conv_tanh(3, 64, 11, 5, pool=True),
            *_conv_tanh(64, 192, 5, 2, pool=True),
            *_conv_tanh(192, 384, 3, 1),
            *_conv_tanh(384, 256, 3, 1),
            *_conv_tanh(256, 256, 3, 1, pool=True),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(4096, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class AlexNet2(BenchmarkModel):
    """AlexNet2 for CIFAR-10 (HPVM's ``alexnet2_cifar10``), input 3 × 32 × 32, output 10 probabilities.

    Layers (Dropout is the identity in eval mode: the importer drops it)::

        Conv2d(3, 32, 3, padding=1)    → Tanh
        Conv2d(32, 32, 3, padding=1)   → Tanh → MaxPool2d(2) → Dropout(0.2)   # 32 × 16 × 16
        Conv2d(32, 64, 3, padding=1)   → Tanh
        Conv2d(64, 64, 3, padding=1)   → Tanh → MaxPool2d(2) → Dropout(0.3)   # 64 × 8 × 8
        Conv2d(64, 128, 3, padding=1)  → Tanh
        Conv2d(128, 128, 3, padding=1) → Tanh → MaxPool2d(2) → Dropout(0.4)   # 128 × 4 × 4
        Flatten → Linear(2048, 10) → Softmax(dim=1)

    Imported: 24 nodes, fused into 8 (six conv groups, one mul→add, softmax).
    """

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            *_conv_tanh(3, 32, 3, 1),
            *_conv_tanh(32, 32, 3, 1, pool=True),
            nn.Dropout(0.2),
            *_conv_tanh(32, 64, 3, 1),
            *_conv_tanh(64, 64, 3, 1, pool=True),
            nn.Dropout(0.3),
            *_conv_tanh(64, 128, 3, 1),
            *_conv_tanh(128, 128, 3, 1, pool=True),
            nn.Dropout(0.4),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(2048, 10), nn.Softmax(dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


VGG16_CHANNELS: tuple[int | str, ...] = (
    64, 64, "pool", 128, 128, "pool", 256, 256, 256, "pool", 512, 512, 512, "pool", 512, 512, 512, "pool",
)  # fmt: skip


class VGG16(BenchmarkModel):
    """VGG-16 for CIFAR-10 (HPVM's ``vgg16_cifar10``), input 3 × 32 × 32, output 10 logits.

    Layers: 13 × (Conv2d(3×3, padding=1) → ReLU) with channels
    64, 64 | 128, 128 | 256, 256, 256 | 512, 512, 512 | 512, 512, 512, a MaxPool2d(2) after
    each group (``|``; 32 → 1 pixels), then ``Flatten → Linear(512, 512) → ReLU →
    Linear(512, 10)``.

    Imported: 49 nodes, fused into 15 (13 conv groups — 5 of them with their pool — and
    two linear groups).
    """

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for item in VGG16_CHANNELS:
            if item == "pool":
                layers.append(nn.MaxPool2d(2))
            else:
                assert isinstance(item, int)
                layers += [nn.Conv2d(channels, item, 3, padding=1), nn.ReLU()]
                channels = item
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3×3 convs with batchnorm, plus the input (a residual add).

    ``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``; the shortcut is the identity,
    or a strided 1×1 conv + batchnorm when the block changes the size or the channels.
    """

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu2 = nn.ReLU()
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu2(out + self.shortcut(x))


class ResNet18(BenchmarkModel):
    """ResNet-18 for CIFAR-10, input 3 × 32 × 32, output 10 logits.

    Layers: ``Conv2d(3, 64, 3, padding=1, bias=False) → BatchNorm2d → ReLU``, then four
    stages of two ``BasicBlock``s (64, 128, 256, 512 channels; the first block of stages
    2–4 halves the size with stride 2 and a 1×1 conv + batchnorm shortcut), then
    ``AvgPool2d(4) → Flatten → Linear(512, 10)``. 20 convolutions (three of them
    1×1 shortcuts), 20 batchnorms, 8 residual adds.

    Imported: 68 nodes, fused into 67: convolutions without a bias are followed by
    batchnorm, not by an add, so no convolution pattern of FuseHPVMTensorNodes applies
    (HPVM fuses conv→add…); only the final mul→add fuses.
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        blocks: list[nn.Module] = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AvgPool2d(4)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(512, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layers(self.relu(self.bn1(self.conv1(x))))
        return self.fc(self.flatten(self.pool(out)))


MOBILENET_BLOCKS: tuple[tuple[int, int], ...] = (
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)  # fmt: skip


class MobileNet(BenchmarkModel):
    """MobileNet (v1) for CIFAR-10 (HPVM's ``mobilenet_cifar10``), input 3 × 32 × 32, output 10 logits.

    Layers: ``Conv2d(3, 32, 3, padding=1, bias=False) → BatchNorm2d → ReLU6``, then 13
    depthwise-separable blocks, each ``Conv2d(c, c, 3, stride, padding=1, groups=c)`` (a
    depthwise group convolution) ``→ BatchNorm2d → ReLU6 → Conv2d(c, c', 1)`` (pointwise)
    ``→ BatchNorm2d → ReLU6``, with output channels and strides
    64, 128/2, 128, 256/2, 256, 512/2, 5 × 512, 1024/2, 1024 (32 → 2 pixels), then
    ``AvgPool2d(2) → Flatten → Linear(1024, 10)``. ReLU6 is HPVM's clipped relu.

    Imported: 84 nodes, fused into 83 (only the final mul→add fuses, as in ResNet-18).
    """

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for cout, stride in MOBILENET_BLOCKS:
            layers += [
                nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False),
                nn.BatchNorm2d(cin),
                nn.ReLU6(),
                nn.Conv2d(cin, cout, 1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU6(),
            ]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.AvgPool2d(2), nn.Flatten(), nn.Linear(1024, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def _conv_tanh(cin: int, cout: int, kernel: int, padding: int, pool: bool = False) -> list[nn.Module]:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, padding=padding), nn.Tanh()]
    return layers + [nn.MaxPool2d(2)] if pool else layers


# ---------------------------------------------------------------------------------------
# Seeded weights


def _build(cls: type[BenchmarkModel], seed: int) -> BenchmarkModel:
    """``cls()`` with every parameter and buffer drawn from a generator seeded with ``seed``.

    The model is built on the ``meta`` device (no memory, no use of the global random
    state) and then materialized and initialized here, in module order, so a seed always
    gives the same weights. ReLU-family networks get He-uniform weights (variance
    2 / fan_in), tanh networks LeCun-uniform ones (1 / fan_in): activations keep their scale
    through deep stacks instead of vanishing to the bias.
    """
    with torch.device("meta"):
        model = cls()
    model = model.to_empty(device="cpu")
    generator = torch.Generator().manual_seed(seed)
    gain = 1.0 if any(isinstance(m, nn.Tanh) for m in model.modules()) else 2.0

    def uniform(t: torch.Tensor, low: float, high: float) -> None:
        t.copy_(torch.rand(t.shape, generator=generator) * (high - low) + low)

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                fan_in = module.weight[0].numel()
                bound = math.sqrt(3.0 * gain / fan_in)
                uniform(module.weight, -bound, bound)
                if module.bias is not None:
                    uniform(module.bias, -0.1, 0.1)
            elif isinstance(module, nn.BatchNorm2d):
                uniform(module.weight, 0.5, 1.5)
                uniform(module.bias, -0.1, 0.1)
                uniform(module.running_mean, -0.1, 0.1)
                uniform(module.running_var, 0.5, 1.5)
                module.num_batches_tracked.zero_()
    return model.eval()


def lenet(seed: int = 0) -> BenchmarkModel:
    """LeNet for MNIST (1 × 28 × 28) in eval mode, weights seeded by ``seed``; see ``LeNet``."""
    return _build(LeNet, seed)


def alexnet(seed: int = 0) -> BenchmarkModel:
    """AlexNet for CIFAR-10 (3 × 32 × 32) in eval mode, weights seeded by ``seed``; see ``AlexNet``."""
    return _build(AlexNet, seed)


def alexnet2(seed: int = 0) -> BenchmarkModel:
    """AlexNet2 for CIFAR-10 (3 × 32 × 32) in eval mode, weights seeded by ``seed``; see ``AlexNet2``."""
    return _build(AlexNet2, seed)


def vgg16(seed: int = 0) -> BenchmarkModel:
    """VGG-16 for CIFAR-10 (3 × 32 × 32) in eval mode, weights seeded by ``seed``; see ``VGG16``."""
    return _build(VGG16, seed)


def resnet18(seed: int = 0) -> BenchmarkModel:
    """ResNet-18 for CIFAR-10 (3 × 32 × 32) in eval mode, weights seeded by ``seed``; see ``ResNet18``."""
    return _build(ResNet18, seed)


def mobilenet(seed: int = 0) -> BenchmarkModel:
    """MobileNet for CIFAR-10 (3 × 32 × 32) in eval mode, weights seeded by ``seed``; see ``MobileNet``."""
    return _build(MobileNet, seed)


MODELS: dict[str, Callable[[int], BenchmarkModel]] = {
    "lenet": lenet,
    "alexnet": alexnet,
    "alexnet2": alexnet2,
    "vgg16": vgg16,
    "resnet18": resnet18,
    "mobilenet": mobilenet,
}
