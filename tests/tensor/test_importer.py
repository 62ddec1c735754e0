"""``hpvm.tensor.from_torch``: each supported layer and functional form, the graph it makes,
the program it returns, saving, and an error for each unsupported layer, function and argument.

Small models (a few channels, 8 × 8 images) run on both ``interp`` (the NumPy reference
operations) and the ``tensor`` back end and must match eager PyTorch to 1e-5 relative.
"""

from __future__ import annotations

import operator
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import hpvm  # noqa: E402
import hpvm.tensor  # noqa: E402
from example_modules import EXAMPLES, load  # noqa: E402
from hpvm.ir.bodies import OpCall, Operand, TensorBody  # noqa: E402
from hpvm.ir.graph import functions  # noqa: E402
from hpvm.ir.printer import print_program  # noqa: E402
from hpvm.tensor import ModelImportError, TensorProgram, UnsupportedLayerError  # noqa: E402

IMAGE = (2, 4, 8, 8)


def _seeded(model: nn.Module, seed: int = 0) -> nn.Module:
    """``model`` in eval mode with every parameter and buffer redrawn from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            if t.is_floating_point():
                values = torch.rand(t.shape, generator=generator)
                t.copy_(values + 0.5 if "var" in name else values - 0.5)
    return model.eval()


def _image(shape=IMAGE, seed: int = 1) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def _relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    assert result.shape == reference.shape
    return float(np.abs(result - reference).max() / max(np.abs(reference).max(), 1e-30))


def _check(model: nn.Module, x: torch.Tensor, targets=("interp", "tensor")) -> TensorProgram:
    program = hpvm.tensor.from_torch(model, x)
    with torch.inference_mode():
        reference = model(x).numpy()
    for target in targets:
        assert _relative_error(program(x, target=target), reference) < 1e-5, target
    return program


class Seq(nn.Module):
    """A Sequential whose forward is a plain function of its layers (so fx names them)."""

    def __init__(self, *layers: nn.Module):
        super().__init__()
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class Lambda(nn.Module):
    """forward(x) = fn(self, x): for the functional forms."""

    def __init__(self, fn, **modules: nn.Module):
        super().__init__()
        self.fn = fn
        for name, m in modules.items():
            self.add_module(name, m)

    def forward(self, x):
        return self.fn(self, x)


# ---------------------------------------------------------------------------------------
# Every supported layer and form against eager PyTorch

LAYERS = {
    "conv": lambda: Seq(nn.Conv2d(4, 6, 3, padding=1)),
    "conv_stride_pad_no_bias": lambda: Seq(
        nn.Conv2d(4, 6, (3, 5), stride=(2, 1), padding=(0, 2), bias=False)
    ),
    "conv_same": lambda: Seq(nn.Conv2d(4, 6, 3, padding="same")),
    "group_conv": lambda: Seq(nn.Conv2d(4, 8, 3, padding=1, groups=2)),
    "depthwise": lambda: Seq(nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)),
    "batchnorm": lambda: Seq(nn.BatchNorm2d(4)),
    "batchnorm_no_affine": lambda: Seq(nn.BatchNorm2d(4, affine=False, eps=1e-3)),
    "relu_relu6_hardtanh": lambda: Seq(nn.ReLU(), nn.ReLU6(), nn.Hardtanh(-0.5, 0.25)),
    "tanh_sigmoid": lambda: Seq(nn.Tanh(), nn.Sigmoid()),
    "maxpool": lambda: Seq(nn.MaxPool2d(3, stride=2, padding=1)),
    "avgpool": lambda: Seq(nn.AvgPool2d((2, 4), stride=(2, 2), padding=(1, 0))),
    "adaptive_avgpool": lambda: Seq(nn.AdaptiveAvgPool2d((2, 4))),
    "flatten_linear_softmax": lambda: Seq(nn.Flatten(), nn.Linear(256, 5), nn.Softmax(dim=1)),
    "dropout_identity": lambda: Seq(nn.Dropout(0.5), nn.Identity(), nn.Tanh(), nn.Dropout2d(0.1)),
    "linear_2d": lambda: Seq(nn.Flatten(), nn.Linear(256, 7), nn.ReLU(), nn.Linear(7, 3, bias=False)),
    "functional_a": lambda: Lambda(
        lambda self, x: F.softmax(
            self.fc(torch.flatten(F.hardtanh(F.avg_pool2d(torch.sigmoid(self.conv(x)), 2), 0.0, 0.5), 1)),
            dim=1,
        ),
        conv=nn.Conv2d(4, 3, 3),
        fc=nn.Linear(27, 4),
    ),
    "functional_b": lambda: Lambda(
        lambda self, x: torch.softmax(
            self.fc(F.relu6(F.max_pool2d(torch.tanh(F.relu(torch.relu(self.conv(x)))), 2)).flatten(1)), 1
        ),
        conv=nn.Conv2d(4, 3, 3),
        fc=nn.Linear(27, 4),
    ),
    "methods": lambda: Lambda(
        lambda self, x: self.fc(self.conv(x).relu().tanh().sigmoid().view(x.size(0), -1)).softmax(1),
        conv=nn.Conv2d(4, 2, 1),
        fc=nn.Linear(128, 3),
    ),
    "residual": lambda: Lambda(
        lambda self, x: F.relu(self.b(F.relu(self.a(x))) + x) + torch.add(x, self.a(x)),
        a=nn.Conv2d(4, 4, 3, padding=1),
        b=nn.Conv2d(4, 4, 3, padding=1),
    ),
    "dropout_functional_add_method": lambda: Lambda(
        lambda self, x: F.dropout(self.conv(x), 0.3, self.training).add(x.contiguous()),
        conv=nn.Conv2d(4, 4, 1, padding="valid"),
    ),
    "adaptive_and_reshape": lambda: Lambda(
        lambda self, x: self.fc(F.adaptive_avg_pool2d(x, 1).reshape(x.shape[0], 4)),
        fc=nn.Linear(4, 2),
    ),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_pytorch(name):
    _check(_seeded(LAYERS[name]()), _image())


def test_conv_bias_is_an_add_node_and_fuses():
    program = _check(_seeded(Seq(nn.Conv2d(4, 6, 3), nn.ReLU(), nn.MaxPool2d(2))), _image())
    assert program.operations(fused=False) == [["convolution"], ["add"], ["relu"], ["pool_max"]]
    assert program.operations() == [["convolution", "add", "relu", "pool_max"]]


def test_linear_is_mul_by_the_transposed_weight_then_add():
    model = _seeded(Seq(nn.Flatten(), nn.Linear(256, 5)))
    program = hpvm.tensor.from_torch(model, _image())
    assert program.operations(fused=False) == [["mul"], ["add"]]  # Flatten: absorbed into mul
    np.testing.assert_array_equal(program.weights[0], model.layers[1].weight.detach().numpy().T)
    assert program.weights[0].flags.c_contiguous


def test_group_conv_and_batchnorm_operations():
    model = _seeded(Seq(nn.Conv2d(4, 4, 3, groups=4, bias=False), nn.BatchNorm2d(4), nn.ReLU6()))
    program = hpvm.tensor.from_torch(model, _image(), fuse=False)
    assert program.operations(fused=False) == [["group_convolution"], ["batchnorm"], ["clipped_relu"]]
    source = program.unfused_root.graph.nodes[0].function.source
    assert "hpvm.tensor.group_convolution(x, w, 0, 0, 1, 1, 4)" in source
    assert program.root is program.unfused_root


def test_a_different_batch_size_runs():
    model = _seeded(Seq(nn.Conv2d(4, 2, 3), nn.Flatten(), nn.Linear(72, 3)))
    program = hpvm.tensor.from_torch(model, _image())
    x = _image((5, 4, 8, 8), seed=3)
    with torch.inference_mode():
        reference = model(x).numpy()
    assert _relative_error(program(x.numpy(), target="tensor"), reference) < 1e-5


# ---------------------------------------------------------------------------------------
# The graph: leaves with real source, weights as root parameters, fan-out, dead code


def test_graph_structure_and_text():
    model = _seeded(Seq(nn.Conv2d(4, 2, 3), nn.Tanh()))
    program = hpvm.tensor.from_torch(model, _image(), name="tiny")
    root = program.unfused_root
    assert root.name == "tiny"
    assert [p.name for p in root.params] == ["x", "layers_0_w", "layers_0_b"]
    assert [str(p.type) for p in root.params] == ["f32[:, :, :, :]", "f32[:, :, :, :]", "f32[:]"]
    assert [n.name for n in root.graph.nodes] == ["layers_0_conv", "layers_0_add", "layers_1_tanh"]
    leaves = [fn for fn in functions(root) if fn is not root]
    assert all(fn.hint == hpvm.TENSOR_TARGET for fn in leaves)
    assert leaves[0].ins == ("x", "w")
    # the operations themselves, no Python rendered and re-parsed (a tensor body)
    p, c = (lambda i: Operand("param", i)), (lambda v: Operand("const", v))
    assert leaves[0].body == TensorBody(
        (OpCall("convolution", (p(0), p(1), c(0), c(0), c(1), c(1))),), (Operand("local", 0),)
    )
    assert "t0 = hpvm.tensor.convolution(x, w, 0, 0, 1, 1)" in leaves[0].source  # its Python rendering
    assert "layer 'layers.0'" in leaves[0].__doc__ and "torch.nn.Conv2d" in leaves[0].__doc__
    text = print_program(root)
    assert (
        "leaf @layers_0_conv(x: f32[:, :, :, :], w: f32[:, :, :, :]) -> (f32[:, :, :, :]) hint(tensor)"
        in text
    )
    hpvm.verify(root)
    hpvm.verify(program.root)


def test_a_value_used_twice_leaves_by_two_output_ports():
    model = _seeded(LAYERS["residual"]())
    program = _check(model, _image())
    root = program.unfused_root
    relu = root.graph.node("relu_relu")  # F.relu(self.a(x)) feeds conv b only: one port
    assert len(relu.function.out_types) == 1
    conv_a = root.graph.node("a_add")  # self.a(x) is called twice: two separate nodes
    assert len(conv_a.function.out_types) == 1
    sources = [(e.src.name, e.sp) for e in root.graph.edges]
    assert len(sources) == len(set(sources))
    # The input x feeds four nodes, through input binds of root input 0.
    assert sum(1 for b in root.graph.in_binds if b.ip == 0) == 4
    # The reused conv 'a' has one pair of weights.
    assert [p.name for p in root.params].count("a_w") == 1


def test_fan_out_node_returns_its_result_once_per_user():
    model = _seeded(
        Lambda(lambda self, x: torch.tanh(self.c(x)) + torch.sigmoid(self.c(x).relu()), c=nn.Conv2d(4, 4, 1))
    )
    shared = _seeded(
        Lambda(
            lambda self, x: (lambda y: torch.tanh(y) + torch.sigmoid(y))(F.relu(self.c(x))),
            c=nn.Conv2d(4, 4, 1),
        )
    )
    _check(model, _image(), targets=("tensor",))
    program = _check(shared, _image())
    relu = program.unfused_root.graph.node("relu_relu")
    assert len(relu.function.out_types) == 2
    assert relu.function.body.returns == (Operand("local", 0), Operand("local", 0))  # one value, twice


def test_dead_layers_are_dropped():
    model = _seeded(Lambda(lambda self, x: (self.unused(x), torch.tanh(x))[1], unused=nn.Conv2d(4, 4, 1)))
    program = hpvm.tensor.from_torch(model, _image())
    assert program.operations(fused=False) == [["tanh"]]
    assert program.weights == []


# ---------------------------------------------------------------------------------------
# The program object


def test_program_checks_its_input():
    program = hpvm.tensor.from_torch(_seeded(Seq(nn.Tanh())), _image())
    with pytest.raises(hpvm.LaunchError, match=r"input has shape \(2, 3, 8, 8\); it takes \(N, 4, 8, 8\)"):
        program(np.zeros((2, 3, 8, 8), np.float32))
    with pytest.raises(hpvm.LaunchError, match="float64.*astype"):
        program(np.zeros(IMAGE))
    with pytest.raises(hpvm.LaunchError, match="NumPy array or torch tensor, not list"):
        program([[1.0]])


def test_program_does_not_keep_inputs_tracked():
    program = hpvm.tensor.from_torch(_seeded(Seq(nn.Tanh())), _image())
    x = _image().numpy()
    out = program(x, target="interp")
    hpvm.init()
    with pytest.raises(hpvm.MemoryTrackingError):
        hpvm.untrack_memory(x)  # the program ran on its own copy, and untracked it
    np.testing.assert_allclose(out, np.tanh(x), rtol=1e-6)


def test_runs_unfused_and_fused_alike():
    model = _seeded(Seq(nn.Conv2d(4, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(108, 4), nn.Sigmoid()))
    program = hpvm.tensor.from_torch(model, _image())
    x = _image(seed=7)
    np.testing.assert_allclose(program(x, fused=False), program(x), rtol=1e-6, atol=1e-7)


def test_save_load_and_hpvm_run(tmp_path, capsys):
    model = _seeded(Seq(nn.Conv2d(4, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(108, 4)))
    x = _image()
    program = hpvm.tensor.from_torch(model, x)
    path = tmp_path / "tiny.hpvm"
    npz = program.save(path)
    assert npz == tmp_path / "tiny.npz" and npz.exists()
    loaded = TensorProgram.load(path)
    np.testing.assert_allclose(loaded(x, target="interp"), program(x, target="interp"), rtol=1e-6)
    from hpvm.cli import main as cli

    capsys.readouterr()
    assert cli(["run", str(path), "--target", "interp"]) == 0
    assert "seq: output (2, 4), first row [" in capsys.readouterr().out
    assert cli(["verify", str(path)]) == 0
    assert "OK — root 'seq'" in capsys.readouterr().out
    assert cli(["show", str(path)]) == 0
    assert "digraph" in capsys.readouterr().out


def test_load_without_weights_names_the_npz(tmp_path):
    program = hpvm.tensor.from_torch(_seeded(Seq(nn.Tanh())), _image())
    path = tmp_path / "t.hpvm"
    program.save(path).unlink()
    with pytest.raises(ModelImportError, match=r"t\.npz: cannot read the weights"):
        TensorProgram.load(path)


# ---------------------------------------------------------------------------------------
# Errors: unsupported layers, functions and arguments


def _import_error(model: nn.Module, x=None, cls=UnsupportedLayerError) -> str:
    with pytest.raises(cls) as info:
        hpvm.tensor.from_torch(model.eval(), _image() if x is None else x)
    return str(info.value)


def test_unsupported_layer_is_named():
    message = _import_error(Seq(nn.Conv2d(4, 4, 1), nn.LeakyReLU()))
    assert "layer 'layers.1' (fx node 'layers_1', torch.nn.LeakyReLU) is not supported" in message
    assert "supported layers: Conv2d" in message


def test_unsupported_function_is_named():
    message = _import_error(Lambda(lambda self, x: torch.cat([x, x], 1)))
    assert "fx node 'cat' (function torch.cat) is not supported" in message
    message = _import_error(Lambda(lambda self, x: x.permute(0, 1, 3, 2)))
    assert "fx node 'permute' (method Tensor.permute) is not supported" in message
    message = _import_error(Lambda(lambda self, x: operator.mul(x, x)))
    assert "function operator.mul" in message


@pytest.mark.parametrize(
    "model, argument",
    [
        (Seq(nn.Conv2d(4, 4, 3, dilation=2)), "argument dilation=(2, 2)"),
        (Seq(nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")), "argument padding_mode='reflect'"),
        (Seq(nn.Conv2d(4, 4, 2, padding="same")), "argument padding='same' with the even kernel"),
        (Seq(nn.MaxPool2d(3, ceil_mode=True)), "argument ceil_mode=True"),
        (Seq(nn.MaxPool2d(2, dilation=2)), "argument dilation=2"),
        (Seq(nn.AvgPool2d(3, padding=1, count_include_pad=False)), "argument count_include_pad=False"),
        (Seq(nn.AvgPool2d(2, divisor_override=3)), "argument divisor_override=3"),
        (Seq(nn.AdaptiveAvgPool2d(3)), "argument output_size=3 does not divide"),
        (Seq(nn.BatchNorm2d(4, track_running_stats=False)), "argument track_running_stats=False"),
        (Seq(nn.Flatten(), nn.Linear(256, 4), nn.Softmax(dim=0)), "argument dim=0"),
        (Seq(nn.Flatten(2), nn.Softmax(dim=1)), "arguments start_dim=2"),
        (Lambda(lambda self, x: torch.add(x, x, alpha=2)), "argument alpha=2"),
        (Lambda(lambda self, x: x + 1), "argument other is the constant 1"),
        (Lambda(lambda self, x: F.dropout(x, 0.5, True)), "argument training=True"),
        (
            Lambda(lambda self, x: F.softmax(x.flatten(1), dim=1, dtype=torch.float64)),
            "argument dtype=torch.float64",
        ),
        (Lambda(lambda self, x: F.relu(x, inplace=True) + x), "argument inplace=True overwrites 'x'"),
        (Lambda(lambda self, x: x + x[:, :1]), "fx node 'getitem'"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_unsupported_argument_is_named(model, argument):
    assert argument in _import_error(model)


def test_flatten_must_feed_a_linear():
    message = _import_error(Seq(nn.Flatten(), nn.ReLU()))
    assert "the Flatten at fx node 'layers_0' feeds fx node 'layers_1'" in message
    assert "only as the input of a Linear layer" in message
    message = _import_error(Seq(nn.Conv2d(4, 4, 1), nn.Flatten()))
    assert "feeds the model's output" in message
    message = _import_error(Lambda(lambda self, x: torch.flatten(x, 1).softmax(1)))
    assert "the Flatten at fx node 'flatten'" in message


def test_linear_on_an_unflattened_image_is_refused():
    message = _import_error(Seq(nn.Linear(8, 3)))
    assert (
        "layer 'layers.0' (fx node 'layers_0', torch.nn.Linear): its input has shape (2, 4, 8, 8)" in message
    )


def test_tensor_attributes_are_refused():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x + self.scale

    assert "reads the model's tensor 'scale' directly" in _import_error(Scale())


@pytest.mark.parametrize(
    "model, x, message",
    [
        (Lambda(lambda self, x: (x.tanh(), x.relu())), None, "returns tuple"),
        (Lambda(lambda self, x: x), None, "returns its input unchanged"),
        (Lambda(lambda self, x: x.tanh() if x.sum() > 0 else x), None, "torch.fx cannot trace Lambda"),
        (Seq(nn.Conv2d(4, 4, 1).double()), None, "'layers.0.weight' is torch.float64"),
        (Seq(nn.Tanh()), [[1.0]], "example_input must be a torch.Tensor or NumPy array"),
        (Seq(nn.Tanh()), torch.zeros(IMAGE, dtype=torch.float64), "example_input is torch.float64"),
        (Seq(nn.Tanh()), torch.zeros(3), "example_input has shape (3,)"),
        (Seq(nn.Conv2d(3, 4, 1)), None, "running Seq on the example input of shape (2, 4, 8, 8) failed"),
    ],
    ids=["tuple", "identity", "branch", "float64", "not-a-tensor", "float64-input", "no-batch", "bad-input"],
)
def test_models_that_cannot_be_imported(model, x, message):
    assert message in _import_error(model, x, cls=ModelImportError)


def test_two_inputs_are_refused():
    class Two(nn.Module):
        def forward(self, x, y):
            return x + y

    assert "takes 2 inputs (x, y)" in _import_error(Two(), cls=ModelImportError)


def test_not_a_module():
    with pytest.raises(ModelImportError, match="imports a torch.nn.Module, not function"):
        hpvm.tensor.from_torch(lambda x: x, _image())


def test_import_leaves_the_training_flag_alone():
    model = Seq(nn.Dropout(0.5), nn.Tanh()).train()
    hpvm.tensor.from_torch(model, _image())
    assert model.training


def test_errors_are_hpvm_errors():
    assert issubclass(UnsupportedLayerError, ModelImportError)
    assert issubclass(ModelImportError, hpvm.HPVMError)


# ---------------------------------------------------------------------------------------
# The example


def test_lenet_example(capsys):
    assert load("lenet_from_torch").main(["--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "imported LeNet: 15 nodes, fused into 5" in out
    assert "convolution -> add -> tanh -> pool_max" in out
    assert "matches PyTorch" in out


def test_lenet_example_notices_a_mismatch(monkeypatch, capsys):
    module = load("lenet_from_torch")
    real_run = module.run

    def wrong_run(*args, **kwargs):
        result, reference, program = real_run(*args, **kwargs)
        return result + 1e-2, reference, program

    monkeypatch.setattr(module, "run", wrong_run)
    assert module.main(["--batch", "1"]) == 1
    assert "MISMATCH" in capsys.readouterr().err


def test_lenet_example_script(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "lenet_from_torch.py"),
            "--batch",
            "1",
            "--save",
            str(tmp_path / "l.hpvm"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "matches PyTorch" in done.stdout and (tmp_path / "l.npz").exists()
