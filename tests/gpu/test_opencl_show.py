"""``hpvm show --kernels``: the OpenCL C of a program's leaves, and leaves that do not translate."""

from pathlib import Path

from hpvm.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BAD_PROGRAM = """
import numpy as np
import hpvm

@hpvm.leaf(ins=("a",), outs=("b",))
def total(a: hpvm.f64[:], b: hpvm.f64[:]):
    b[0] = np.sum(a)

@hpvm.internal
def root(a: hpvm.f64[:], b: hpvm.f64[:]):
    node = hpvm.create_node(total)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)
"""


def test_show_kernels_prints_each_leaf_as_opencl_c(capsys):
    assert main(["show", "--kernels", str(EXAMPLES / "reduction.py")]) == 0
    out = capsys.readouterr().out
    assert "void hpvm_leaf_tree_sum_" in out and "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" in out
    assert "const __global float* data" in out  # only read: const
    assert "leaf 'allocate'" in out and "calls hpvm.malloc: it runs on the host" in out


def test_show_kernels_reports_leaves_that_do_not_translate(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text(BAD_PROGRAM)
    assert main(["show", "--kernels", str(path)]) == 1
    captured = capsys.readouterr()
    assert f"leaf 'total' ({path}:7" in captured.err and "np.sum() is not supported" in captured.err
    assert "// leaf 'total'" in captured.out
