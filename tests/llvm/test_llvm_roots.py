"""Which function is the root: HPVM launches leaves as roots too (its BuildDFG accepts a
leaf root; seed 000 launches internal nodes), and a module may launch several graphs.
``from_hpvm_ir(text, root=NAME)`` picks one; a launched leaf is the one node of a graph
binding every input and output to it (``importer.leaf_graph``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.cli import main
from markers import fails, needs_backend

TEXT = (Path(__file__).parent / "hpvm9" / "launched_leaf.ll").read_text()


def test_several_launches_need_a_root_named():
    with fails(llvm.LLVMImportError, "launches several graphs", "root='Scale_cloned'"):
        llvm.from_hpvm_ir(TEXT)


def test_an_unknown_root_is_refused():
    with fails(llvm.LLVMImportError, "@Nope: the module defines no such function"):
        llvm.from_hpvm_ir(TEXT, root="Nope")


@pytest.mark.parametrize("target", [pytest.param("cpu", marks=needs_backend("cpu")), "interp"])
def test_a_launched_leaf_runs_as_a_graph_of_itself(target):
    root = llvm.from_hpvm_ir(TEXT, root="Scale_cloned")
    assert root.name == "Scale_cloned_root"
    assert [n.function.name for n in root.graph.nodes] == ["Scale_cloned"]
    x, y = np.array([14], np.int32).view(np.uint8), np.zeros(1, np.int32).view(np.uint8)  # (u8[*] ports)
    hpvm.init()
    try:
        for a in (x, y):
            hpvm.track_memory(a)
        (out,) = hpvm.wait(hpvm.launch(root, (x, y), target=target))
        hpvm.request_memory(y)
        y = y.view(np.int32)
    finally:
        hpvm.cleanup()
    assert y[0] == 42 and out.ctypes.data == y.ctypes.data


@pytest.mark.parametrize("target", [pytest.param("cpu", marks=needs_backend("cpu")), "interp"])
def test_the_other_launched_graph(target):
    root = llvm.from_hpvm_ir(TEXT, root="Pair_cloned")
    hpvm.init()
    try:
        assert hpvm.wait(hpvm.launch(root, (np.int32(2), np.int32(40)), target=target)) == (42,)
    finally:
        hpvm.cleanup()


def test_the_cli_names_the_root(tmp_path, capsys):
    path = tmp_path / "launched_leaf.ll"
    path.write_text(TEXT)
    assert main(["llvm", "import", str(path)]) == 1
    assert "root='Scale_cloned'" in capsys.readouterr().err
    assert main(["llvm", "import", str(path), "--root", "Scale_cloned"]) == 0
    assert "internal @Scale_cloned_root(In: u8[*], Out: u8[*])" in capsys.readouterr().out
