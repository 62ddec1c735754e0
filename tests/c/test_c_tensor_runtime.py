"""tensor_runtime.h against HPVM's runtime: struct Tensor's layout, HPVM's files, labels,
accuracy, batch memory and the calls refused. One C program (tensor_rt_probe.c), compiled
once, runs one scenario per test; what it prints is what C sees."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang

import hpvm
from hpvm import c
from hpvm.c import clang
from hpvm.c.tensorrt import TensorStruct

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = needs_clang
PROBE = Path(__file__).with_name("tensor_rt_probe.c")

# struct Tensor of HPVM's tensor.h on LP64 (x86-64, AArch64 Linux): four ints, four cuDNN
# descriptors (pointers), host/gpu/gpu-half pointers, two size_t, then struct Dimension
HPVM_OFFSETS = {
    "data_type": 0,
    "cur_type": 4,
    "data_format": 8,
    "data_placement": 12,
    "tensor_desc": 16,
    "filter_desc": 24,
    "tensor_half_desc": 32,
    "filter_half_desc": 40,
    "host_data": 48,
    "gpu_data": 56,
    "gpu_half_data": 64,
    "num_elems": 72,
    "size_in_bytes": 80,
    "dims": 88,
    "dims.dim_sizes": 96,
    "sizeof": 104,
}
LABELS32 = [1, 0, 2, 0, 0, 0, 2, 1]


@pytest.fixture(scope="module")
def probe() -> c.CProgram:
    return c.compile(PROBE)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The probe's files; the current directory (where final_accuracy goes) is tmp_path."""
    np.arange(32, dtype=np.float32).tofile(tmp_path / "images.bin")  # four 2 x 2 x 2 images
    np.array([7, 8, 9, 250, 1], np.uint8).tofile(tmp_path / "labels8.bin")
    np.array(LABELS32, np.uint32).tofile(tmp_path / "labels32.bin")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    hpvm.cleanup()


def run(probe: c.CProgram, mode: str, folder: Path, capfd: pytest.CaptureFixture[str]) -> list[str]:
    assert probe.run([mode, str(folder)], target="interp") == 0
    out = capfd.readouterr().out
    return out.splitlines()


def test_struct_tensor_has_hpvms_layout(probe, files, capfd):
    lines = run(probe, "layout", files, capfd)
    seen = dict(line.rsplit(" ", 1) for line in lines[: len(HPVM_OFFSETS)])
    assert {k: int(v) for k, v in seen.items()} == HPVM_OFFSETS
    # the runtime's ctypes view of the struct agrees with the header
    for name, offset in HPVM_OFFSETS.items():
        if "." not in name and name != "sizeof":
            assert getattr(TensorStruct, name).offset == offset, name
    assert ctypes.sizeof(TensorStruct) == HPVM_OFFSETS["sizeof"]
    assert lines[len(HPVM_OFFSETS)] == "types 0 1 2 3 4 5 formats 0 1 host 0"  # cuDNN's values, as HPVM's
    assert lines[len(HPVM_OFFSETS) + 1] == "null 1 1 1 1 1 1"
    assert (
        lines[-1] == "zeros: 4 dims 1 2 1 3; 6 elems, 24 bytes, type 0/0, format 0, placement 0: 0 0 0 0 0 0"
    )


def test_input_batches_and_labels_from_hpvms_files(probe, files, capfd):
    batch, labels = run(probe, "files", files, capfd)
    values = " ".join(str(v) for v in range(8, 24))  # images 1 and 2 of 0..31
    assert batch == f"batch: 4 dims 2 2 2 2; 16 elems, 64 bytes, type 0/0, format 0, placement 0: {values}"
    assert labels == "labels 7 8 9 250 | 1 0 2 0 | 0 2"


def test_compute_accuracy3_prints_writes_and_returns(probe, files, capfd):
    """Rows choose 1, 0 (a tie goes to the first), 2, 0; labels 1 0 0 3: 50 %."""
    lines = run(probe, "accuracy", files, capfd)
    assert lines == [
        "batch_dim = 4, num_classes = 3 ",
        "****** Accuracy = 50.000000 ",
        "",
        "returned 50.000000",
        "",
        "",
        " **** Final Accuracy = 50.000000 ",
    ]
    assert (files / "final_accuracy").read_text() == "50.000000"


def test_the_runtime_controller_scores_each_batch_and_averages(probe, files, capfd):
    lines = run(probe, "controller", files, capfd)
    assert [line for line in lines if "Accuracy" in line] == [
        "****** Accuracy = 100.000000 ",
        "****** Accuracy = 50.000000 ",
    ]
    assert lines[-1] == "controller done"
    assert (files / "final_accuracy").read_text() == "75.000000"  # the average so far


def test_batch_memory_and_freed_tensors(probe, files, capfd):
    lines = run(probe, "memory", files, capfd)
    assert lines[0].endswith(": 0 2 0 4")
    assert lines[1] == "after freeBatchMemory: input NULL, result NULL, weights kept"
    assert lines[2].endswith(": 0 2 0 4")  # made before startMemTracking: still usable
    assert lines[3] == "after freeTensor: weights NULL, 4 elems"
    assert lines[4].startswith("after cleanupTensorRt: 4 dims 1 1 2 2;") and lines[4].endswith(": -1 2 -3 4")


def test_a_2d_tensor_is_a_dense_layers_weights(probe, files, capfd):
    w2, x_w2, x_w4 = run(probe, "mul2d", files, capfd)
    assert w2 == "w2: 2 dims 3 2; 6 elems, 24 bytes, type 0/0, format 0, placement 0: 1 0 0 1 1 1"
    assert x_w2.startswith("x w2: 4 dims 2 2 1 1;") and x_w2.endswith(": 4 5 10 11")
    assert x_w4.endswith(": 4 5 10 11")


@pytest.mark.parametrize(
    ("mode", "fragments"),
    [
        ("short_batch", ["readInputBatch(", "images.bin", "holds 32 float32 values, 40 are needed", "NCHW"]),
        ("empty_batch", ["readInputBatch(", "images 3 .. 2", "0 <= start < end"]),
        ("missing_labels", ["readLabels3(", "none.bin", "cannot read the file: No such file"]),
        ("no_labels", ["readLabelsBatch3(", "labels 3 .. 2; give at least one"]),
        ("short_labels", ["readLabelsBatch3(", "holds 8 uint32 values, 10 are needed", "np.uint32"]),
        ("accuracy_shape", ["computeAccuracy3: a result of shape (1, 3, 2, 2)", "(N, classes, 1, 1)"]),
        ("accuracy_null", ["computeAccuracy3: the labels pointer is NULL", "readLabelsBatch3"]),
        ("controller_rows", ["llvm_hpvm_invokeRtControl: labels 0 .. 2 for a result of 4 rows"]),
        ("configuration", ["llvm_hpvm_initializeRuntimeController('tuner_confs.txt')", "not supported"]),
        ("init_size", ["initTensorData: 16 bytes into a tensor of 32", "exactly its size_in_bytes"]),
        ("init_null", ["initTensorData: the data pointer is NULL"]),
        ("extents", ["create4DTensor: extents (2, 0, 1, 1); each must be positive"]),
        ("half", ["create4DTensor: data_type 2", "only float32 NCHW"]),
        ("nhwc", ["create4DTensor: data_type 0, data_format 1", "only float32 NCHW"]),
        ("destination", ["hpvm_request_tensor: destination 2"]),
        ("use_freed", ["__hpvm__launch: the tensor at", "was freed (freeTensor"]),
        ("batch_freed", ["__hpvm__launch: the tensor at", "freeBatchMemory after startMemTracking"]),
        ("2d_as_4d", ["__hpvm__launch: a tensor of shape (2, 2) (create2DTensor)", "a 4-D tensor"]),
    ],
)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_calls_the_runtime_refuses(probe, files, capfd, mode, fragments):
    """Each refused call ends main there. (A failing computeAccuracy3 returns its float
    cleanly: no ctypes conversion error, which pytest reports as an unraisable exception.)"""
    with fails(c.HPVMCError, str(PROBE), "while main ran", *fragments):
        probe.run([mode, str(files)], target="interp")
    assert "not reached" not in capfd.readouterr().out


def test_cpp_sees_hpvms_defaults_and_headers(tmp_path):
    """C++: gpuid defaults to 0, as in HPVM; tensorUtils.h brings the standard headers HPVM's
    programs rely on (std::string, std::ofstream, getopt) and every declaration."""
    path = tmp_path / "use.cpp"
    path.write_text(
        "#include <hpvm.h>\n#include <tensorUtils.h>\n"
        "float use(int argc, char **argv) {\n"
        "  llvm_hpvm_initTensorRt();\n  llvm_hpvm_initApproxhpvmRt();\n"
        '  std::string p = std::string("dir") + "/x.bin";\n'
        '  int flag = getopt(argc, argv, "c:");\n'
        "  std::ofstream out(p.c_str());\n"
        "  struct Tensor *t = readInputBatch(p.c_str(), nchw, 0, 1, 1, 28, 28);\n"
        "  return computeAccuracy3(readLabelsBatch3(p.c_str(), 0, 1), t) + flag;\n}\n"
    )
    text = clang.to_llvm(path)
    assert "call void @llvm_hpvm_initTensorRt(i32 noundef 0)" in text  # extern "C", HPVM's default
    assert "@readInputBatch(" in text and "@computeAccuracy3(" in text
