"""Checked mode on hand-written LLVM leaves (``llvm_native/checked.py``): seed 000's
``llvm.hpvm.atomic.*`` calls and pointers chosen by a ``select`` or a ``phi`` are checked
against the one array they point into; a ``select`` between two arrays cannot be, and the
leaf says so once. Each leaf indexes with values read from an index array (what the bounds
pre-check cannot follow)."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
import hpvm.backends.cpu as cpu
from hpvm import llvm
from markers import fails

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

DECLS = """
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare i32 @llvm.hpvm.atomic.add(ptr, i32)
declare void @llvm.hpvm.barrier()
"""

#: ``count``: acc[idx[i]] += 1 by llvm.hpvm.atomic.add; ``pick``: the pointer to acc[idx[i]]
#: or acc[idx[i] + 1] by a select, then through a phi, stored to; ``mix``: a select between
#: the two arrays; ``swap``: acc[idx[i]] = acc[i] + i after a barrier (a barrier leaf).
LEAVES = """
define {} @count(ptr "in" %idx, i64 %bytes_idx, ptr "in" "out" %acc, i64 %bytes_acc) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %at = getelementptr i64, ptr %idx, i64 %i
  %k = load i64, ptr %at
  %p = getelementptr i32, ptr %acc, i64 %k
  %old = call i32 @llvm.hpvm.atomic.add(ptr %p, i32 1)
  ret {} zeroinitializer
}

define {} @pick(ptr "in" %idx, i64 %bytes_idx, ptr "in" "out" %acc, i64 %bytes_acc) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %at = getelementptr i64, ptr %idx, i64 %i
  %k = load i64, ptr %at
  %p = getelementptr i32, ptr %acc, i64 %k
  %q = getelementptr i32, ptr %p, i64 1
  %odd = trunc i64 %i to i1
  %s = select i1 %odd, ptr %q, ptr %p
  br i1 %odd, label %one, label %two
one:
  br label %done
two:
  br label %done
done:
  %r = phi ptr [ %s, %one ], [ %p, %two ]
  %v = trunc i64 %i to i32
  store i32 %v, ptr %r
  ret {} zeroinitializer
}

define {} @swap(ptr "in" %idx, i64 %bytes_idx, ptr "in" "out" %acc, i64 %bytes_acc) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %p = getelementptr i32, ptr %acc, i64 %i
  %w = load i32, ptr %p
  call void @llvm.hpvm.barrier()
  %at = getelementptr i64, ptr %idx, i64 %i
  %k = load i64, ptr %at
  %q = getelementptr i32, ptr %acc, i64 %k
  %v = trunc i64 %i to i32
  %u = add i32 %w, %v
  store i32 %u, ptr %q
  ret {} zeroinitializer
}

define {} @mix(ptr "in" %idx, i64 %bytes_idx, ptr "in" "out" %acc, i64 %bytes_acc) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %odd = trunc i64 %i to i1
  %s = select i1 %odd, ptr %idx, ptr %acc
  store i32 7, ptr %s
  ret {} zeroinitializer
}
"""


def _root(leaf: str):  # type: ignore[no-untyped-def]
    return llvm.from_hpvm_ir(
        DECLS
        + LEAVES
        + f"""
define {{}} @root(ptr %idx, i64 %bytes_idx, ptr %acc, i64 %bytes_acc, i64 %n) {{
entry:
  %h = call ptr @llvm.hpvm.createNode1D(ptr @{leaf}, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %h, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %h, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %h, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %h, i32 3, i32 3, i1 false)
  ret {{}} undef
}}
"""
    )


def _run(leaf: str, idx: list[int]) -> np.ndarray:
    index = np.array(idx, dtype=np.int64)
    acc = np.zeros(8, dtype=np.int32)
    for a in (index, acc):
        hpvm.track_memory(a)
    try:
        hpvm.wait(
            hpvm.launch(_root(leaf), (index.view(np.uint8), acc.view(np.uint8), len(idx)), target="cpu")
        )
        hpvm.request_memory(acc)
    finally:
        for a in (index, acc):
            hpvm.untrack_memory(a)
    return acc


@pytest.mark.parametrize("leaf", ["count", "pick", "swap"])
def test_checked_and_unchecked_give_the_same_result(leaf: str) -> None:
    idx = [0, 3, 3, 6, 2, 0] if leaf != "swap" else [5, 4, 3, 2, 1, 0]
    unchecked = _run(leaf, idx)
    previous = cpu.configure(checked=True)
    try:
        checked = _run(leaf, idx)
    finally:
        cpu.configure(**previous)
    np.testing.assert_array_equal(checked, unchecked)
    assert unchecked.any()


@pytest.mark.parametrize(
    ("leaf", "idx", "what", "element"),
    [
        ("count", [0, 9], "an atomic update of 4 bytes", 9),
        ("count", [-1, 0], "an atomic update of 4 bytes", -1),
        ("pick", [0, 7], "a write of 4 bytes", 8),  # (the select's + 1: past the end)
        ("count", [0, 1, 2, 8], "node root/h[3] (", 8),
        ("swap", [0, 1, 2, 8, 4], "a write of 4 bytes at the LLVM instruction 'store i32 %u", 8),
        ("swap", [0, 1, 2, 8, 4], "node root/h[3] (", 8),
    ],
)
def test_an_index_past_the_array_names_the_node_and_port(
    checked, leaf: str, idx: list[int], what: str, element: int
) -> None:  # type: ignore[no-untyped-def]
    """``element``: the i32 the failing access reached; the message says its byte offset
    from acc's start and acc's bytes (8 of them: 32)."""
    where = f"falls outside 'acc': at byte offset {4 * element} of its 32 bytes (checked mode)"
    with fails(hpvm.OutOfBoundsError, "node root/h", f"(leaf '{leaf}'", what, where):
        _run(leaf, idx)


def test_a_select_between_two_arrays_is_named_as_unchecked(checked) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(
        hpvm.HPVMWarning, match=r"leaf 'mix'.*cannot check 1 of its memory accesses.*'acc' or 'idx'"
    ):
        _run("mix", [0])


LATER = """
import sys
import hpvm
import hpvm.backends.cpu as cpu
from hpvm.backends.llvm_native import checked
sys.path.insert(0, sys.argv[1])
from test_llvm_checked import _run

def stored_only(*args):
    raise AssertionError("checked again although stored")

if sys.argv[2] == "later":
    checked._check = stored_only
hpvm.init()
cpu.configure(checked=True)
for leaf in ("count", "swap"):
    try:
        _run(leaf, [0, 1, 2, 8, 4])
    except hpvm.OutOfBoundsError as e:
        print(e)
    else:
        print("no error")
"""


def test_a_later_process_names_the_failing_access_of_a_stored_checked_module(tmp_path) -> None:
    """The checked module is read back from ``llvm-checked/`` by a later process that
    checks nothing itself: its failing access is named as in the first (the stored codes
    name their accesses), not raised as a bare ``IndexError(code)``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "HPVM_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    said = []
    for which in ("first", "later"):
        done = subprocess.run(
            [sys.executable, "-c", LATER, str(Path(__file__).parent), which],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        said.append(done.stdout)
    assert said[0] == said[1]
    count, swap = said[1].splitlines()
    assert "node root/h[3] (leaf 'count'" in count and "an atomic update of 4 bytes" in count
    assert "falls outside 'acc': at byte offset 32 of its 32 bytes (checked mode)" in swap
    assert "(leaf 'swap'" in swap


@pytest.mark.parametrize("accesses", ['[["x"]]', "[[1, 2]]", '["code"]'])
def test_a_stored_checked_module_with_damaged_accesses_is_checked_again(
    monkeypatch, tmp_path, accesses
) -> None:  # type: ignore[no-untyped-def]
    """A file in ``llvm-checked/`` whose accesses cannot be read is checked again (which
    names the accesses), never an error."""
    import json

    from hpvm.backends.llvm_native import checked as llvm_checked
    from hpvm.ir.graph import LeafFunction, functions

    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    leaf = next(f for f in functions(_root("count")) if isinstance(f, LeafFunction) and f.name == "count")
    ports = tuple(f"{p.name}:{p.type}" for p in leaf.params)
    want = llvm_checked._stored_check(leaf, leaf.body, ports)
    (stored,) = (tmp_path / "llvm-checked").glob("*.json")
    found = json.loads(stored.read_text())
    (code, *_), *_ = found["accesses"]
    named = llvm_checked.ACCESSES[code]
    stored.write_text(json.dumps({**found, "accesses": json.loads(accesses)}))
    monkeypatch.setattr(llvm_checked, "ACCESSES", {})
    assert llvm_checked._stored_check(leaf, leaf.body, ports) == want
    assert llvm_checked.ACCESSES.get(code) == named
