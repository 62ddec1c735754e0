"""An LLVM leaf's clone (``native._clone``) is kept in hpvm's cache (``llvm-clone/``,
``stored.py``): a later process launching the same module reads it instead of parsing and
optimizing again — each ``hpvm c run`` of an HPVM-C program is such a process. What is read
is what would have been made (a barrier leaf's work-item loops included), whatever leaf
carries the module; a damaged file is made again; a refused leaf stores nothing and is
refused again, the same, by the next process."""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hpvm
from hpvm import llvm
from hpvm.backends.llvm_native import access, jit, native
from hpvm.backends.llvm_native.native import native_leaf
from hpvm.errors import CompileError
from hpvm.ir.bodies import LLVMBody

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_llvm_jam import BARRIER, GPU_ROOT, _leaf, matmul_text  # noqa: E402
from test_llvm_leaves_run import DECLS, QUERIES  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

BARRIER_ROOT = llvm.from_hpvm_ir(DECLS + matmul_text(True, BARRIER))


def _new_process(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """A new process's state: no clone made in memory, ``cache`` as hpvm's cache."""
    monkeypatch.setenv("HPVM_CACHE_DIR", str(cache))
    monkeypatch.setattr(native, "_CACHE", {})


def _not_cloned(*args: object) -> None:
    raise AssertionError("cloned again although stored")


@pytest.mark.parametrize("root", [GPU_ROOT, BARRIER_ROOT], ids=["plain", "barrier"])
def test_a_clone_is_stored_and_a_later_process_reads_it_without_cloning(monkeypatch, tmp_path, root):
    leaf = _leaf(root)
    _new_process(monkeypatch, tmp_path)
    made = native_leaf(leaf)
    assert len(list((tmp_path / "llvm-clone").glob("*.json"))) == 1
    _new_process(monkeypatch, tmp_path)
    monkeypatch.setattr(native, "_clone", _not_cloned)
    assert native_leaf(leaf) == made
    # another leaf carrying the same module: the same clone, under its own name
    other = copy.copy(leaf)
    other.name = "elsewhere"
    _new_process(monkeypatch, tmp_path)
    assert native_leaf(other) == dataclasses.replace(made, leaf_name="elsewhere")


PROCESS = """
import sys
import numpy as np
import hpvm
from hpvm import llvm
from hpvm.backends.llvm_native import jit, native
from hpvm.backends.llvm_native.native import native_leaf
sys.path.insert(0, sys.argv[1])
from test_llvm_jam import BARRIER, DECLS, _leaf, _matmul, matmul_text

def stored_only(*args):
    raise AssertionError("built again although stored")

if sys.argv[2] == "later":
    native._clone = jit.optimize_module = stored_only
hpvm.init()
root = llvm.from_hpvm_ir(DECLS + matmul_text(True, BARRIER))
assert native_leaf(_leaf(root)).barrier_lowering == "workitem"
for target in ("cpu", "interp"):
    got, want = _matmul(root, True, 6, 9, 5, target)
    np.testing.assert_array_equal(got, want)
print("ran")
"""


def test_a_barrier_leaf_read_from_the_store_runs_as_it_ran_when_made(tmp_path):
    """Its clone and its group runners' machine code (``jit.py``: LLVM's object cache) are
    read back by a later process — one that may neither clone nor optimize — on cpu (the
    runner specialized for its group's extents) and interp. (Both are processes of their
    own: this one may hold the compiled graph in memory and build nothing.)"""
    env = {**os.environ, "HPVM_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    objects = []
    for which in ("first", "later"):
        done = subprocess.run(
            [sys.executable, "-c", PROCESS, str(Path(__file__).parent), which],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and done.stdout.strip() == "ran", done.stderr[-3000:]
        objects.append(sorted((tmp_path / "llvm-object").glob("*.o")))
    assert objects[0] and objects[1] == objects[0]


def test_a_damaged_object_file_is_compiled_again(monkeypatch, tmp_path):
    """Each object file starts with the SHA-1 of the code after it: one that is not the
    bytes written is compiled again and replaced, never loaded (MCJIT would run it)."""
    text = native_leaf(_leaf(GPU_ROOT)).text
    symbol = native_leaf(_leaf(GPU_ROOT)).call_symbol
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    assert jit.jit_symbol(text, symbol)
    (stored,) = (tmp_path / "llvm-object").glob("*.o")
    good = stored.read_bytes()
    for damage in (b"", good[:20], good[:-1], good[:20] + b"\0" + good[21:], b"x" * len(good)):
        stored.write_bytes(damage)
        assert jit.jit_symbol(text, symbol)
        assert stored.read_bytes() == good
    monkeypatch.setattr(jit, "optimize_module", _not_cloned)
    assert jit.jit_symbol(text, symbol)  # (read back whole: not compiled)


@pytest.mark.parametrize("damage", ["", "{not json", '{"text": 3}', "[]", '{"text": "x", "digest": 1}'])
def test_a_damaged_stored_clone_is_made_again_and_replaced(monkeypatch, tmp_path, damage):
    leaf = _leaf(GPU_ROOT)
    _new_process(monkeypatch, tmp_path)
    want = native_leaf(leaf)
    (stored,) = (tmp_path / "llvm-clone").glob("*.json")
    stored.write_text(damage)
    _new_process(monkeypatch, tmp_path)
    assert native_leaf(leaf) == want
    _new_process(monkeypatch, tmp_path)
    monkeypatch.setattr(native, "_clone", _not_cloned)
    assert native_leaf(leaf) == want  # (the file replaced whole)


def test_a_refused_leaf_stores_nothing_and_is_refused_again_the_same(monkeypatch, tmp_path):
    text = DECLS + QUERIES.replace("CREATE", "createNode1D").replace("SIZES", "i64 %a")
    text = text.replace(
        "  %n = call ptr @llvm.hpvm.getNode()",
        "  %fp = select i1 true, ptr @get, ptr @get\n  %n = call ptr %fp()",
    )
    text += "\ndefine ptr @get() {\n  %n = call ptr @llvm.hpvm.getNode()\n  ret ptr %n\n}\n"
    leaf = _leaf(llvm.from_hpvm_ir(text))
    said = []
    for _ in range(2):
        _new_process(monkeypatch, tmp_path)
        with pytest.raises(
            CompileError, match=r"leaf 'where' .*@get .*used other than by a direct call"
        ) as e:
            native_leaf(leaf)
        said.append(str(e.value))
        assert not list((tmp_path / "llvm-clone").glob("*.json"))
    assert said[0] == said[1]
    assert isinstance(e.value, hpvm.HPVMError)


def test_a_printed_node_function_is_stored_and_read_back(monkeypatch, tmp_path):
    """``access.printed_function`` (what the bounds and checked mode read a leaf's module
    from), kept in ``llvm-printed/``; a module without the function stays ``None``."""
    body = _leaf(GPU_ROOT).body
    missing = LLVMBody(body.module, "no_such_function")
    answers = []
    for later in (False, True):
        monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(access, "_PRINTED", {})  # (a new process)
        if later:
            monkeypatch.setattr(access, "_printed", _not_cloned)
        answers.append((access.printed_function(body), access.printed_function(missing)))
    assert answers[0] == answers[1]
    (function, module), nothing = answers[1]
    assert nothing is None
    assert function.startswith("define") and function in module
