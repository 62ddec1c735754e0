"""The HPVM DNN benchmark models: seeded weights, import, fusion, and HPVM against PyTorch.

Every model is imported at batch 2, its fused graph is checked against the fusion patterns
of seed 001 (which chains became one node), and its output on the ``tensor`` back end must
match eager PyTorch within 1e-4 relative error in float32 (``interp`` too, at batch 1).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hpvm  # noqa: E402
import hpvm.tensor  # noqa: E402
from hpvm.tensor import models  # noqa: E402

CONV_TANH = ("convolution", "add", "tanh")
CONV_TANH_POOL = (*CONV_TANH, "pool_max")
CONV_RELU = ("convolution", "add", "relu")
CONV_RELU_POOL = (*CONV_RELU, "pool_max")

# model -> (nodes as imported, the fused graph's nodes as a multiset of operation chains)
EXPECTED = {
    "lenet": (15, {CONV_TANH_POOL: 2, ("mul", "add", "tanh"): 2, ("softmax",): 1}),
    "alexnet": (20, {CONV_TANH_POOL: 3, CONV_TANH: 2, ("mul", "add"): 1}),
    "alexnet2": (24, {CONV_TANH_POOL: 3, CONV_TANH: 3, ("mul", "add"): 1, ("softmax",): 1}),
    "vgg16": (49, {CONV_RELU_POOL: 5, CONV_RELU: 8, ("mul", "add", "relu"): 1, ("mul", "add"): 1}),
    # Bias-free convolutions are followed by batchnorm: no conv pattern applies, mul→add fuses.
    "resnet18": (
        68,
        {
            ("convolution",): 20,
            ("batchnorm",): 20,
            ("relu",): 17,
            ("add",): 8,
            ("pool_mean",): 1,
            ("mul", "add"): 1,
        },
    ),
    "mobilenet": (
        84,
        {
            ("convolution",): 14,
            ("group_convolution",): 13,
            ("batchnorm",): 27,
            ("clipped_relu",): 27,
            ("pool_mean",): 1,
            ("mul", "add"): 1,
        },
    ),
}
INPUT_SHAPES = {"lenet": (1, 28, 28)} | dict.fromkeys(
    ("alexnet", "alexnet2", "vgg16", "resnet18", "mobilenet"), (3, 32, 32)
)


def _relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    assert result.shape == reference.shape
    return float(np.abs(result - reference).max() / np.abs(reference).max())


@pytest.fixture(scope="module")
def imported():
    """Each model, its batch-2 example input and its program (imported once per module)."""
    cache = {}

    def get(name):
        if name not in cache:
            model = models.MODELS[name]()
            x = model.example_input(2)
            cache[name] = (model, x, hpvm.tensor.from_torch(model, x))
        return cache[name]

    return get


def test_the_model_list():
    assert sorted(models.MODELS) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_model_imports_and_fuses(name, imported):
    model, x, program = imported(name)
    unfused, chains = EXPECTED[name]
    assert program.unfused_node_count == unfused
    assert Counter(tuple(ops) for ops in program.operations()) == Counter(chains)
    assert program.node_count == sum(chains.values())
    assert program.input_shape == (2, *INPUT_SHAPES[name])
    assert program.output_shape == (2, 10)
    hpvm.verify(program.root)
    # Every weight of the model is one root parameter (Linear's transposed).
    assert sum(w.size for w in program.weights) == sum(
        t.numel() for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_model_matches_pytorch_on_the_tensor_back_end(name, imported):
    model, x, program = imported(name)
    with torch.inference_mode():
        reference = model(x).numpy()
    assert _relative_error(program(x, target="tensor"), reference) < 1e-4
    assert _relative_error(program(x), reference) < 1e-4  # the hint selects the tensor back end


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_model_matches_pytorch_on_interp(name):
    model = models.MODELS[name]()
    x = model.example_input(1, seed=5)
    program = hpvm.tensor.from_torch(model, x)
    with torch.inference_mode():
        reference = model(x).numpy()
    assert _relative_error(program(x, target="interp"), reference) < 1e-4


def test_lenet_unfused_on_interp_matches_too(imported):
    model, x, program = imported("lenet")
    with torch.inference_mode():
        reference = model(x).numpy()
    assert _relative_error(program(x, target="interp", fused=False), reference) < 1e-4


# ---------------------------------------------------------------------------------------
# The models themselves


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_models_are_seeded_and_leave_the_global_generator_alone(name):
    state = torch.random.get_rng_state()
    a, b, c = models.MODELS[name](0), models.MODELS[name](0), models.MODELS[name](1)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert not a.training
    for (key, ta), tb, tc in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert torch.equal(ta, tb), key
        if ta.is_floating_point():
            assert not torch.equal(ta, tc), key


def test_example_inputs():
    model = models.lenet()
    x = model.example_input(3, seed=2)
    assert x.shape == (3, 1, 28, 28) and x.dtype == torch.float32
    assert torch.equal(x, model.example_input(3, seed=2))
    assert not torch.equal(x, model.example_input(3, seed=3))
    assert models.resnet18().example_input(1).shape == (1, 3, 32, 32)


def test_outputs_are_not_degenerate():
    """Weight scales keep activations alive: different images give clearly different outputs."""
    for name in ("vgg16", "resnet18", "mobilenet"):
        model = models.MODELS[name]()
        with torch.inference_mode():
            out = model(model.example_input(2))
        assert float((out[0] - out[1]).abs().max()) > 1e-3 * float(out.abs().max()), name


def test_importing_hpvm_tensor_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, hpvm.tensor; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
