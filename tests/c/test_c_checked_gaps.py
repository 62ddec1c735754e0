"""Checked mode on the accesses its first version left unchecked (``llvm_native/checked.py``,
``checked_roots.py``, ``checked_inline.py``): ``programs/checked_gaps.c``'s leaves reach
their arrays through a pointer ``phi``, ``llvm.memcpy``/``llvm.memset``, a callee LLVM did
not inline and a pointer kept in a volatile local. Valid launches give the unchecked
results; three rows too many raise ``OutOfBoundsError`` naming the node, the leaf, the
array and the C line. A recursive callee cannot be inlined: the leaf says so once."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "checked_gaps.c"
SOURCE = PROGRAM.read_text()
WHERE = "programs/checked_gaps.c"
IMAGE = np.arange(24, dtype=np.float64)
#: leaf -> (its number in main, what a valid launch leaves in ``out``, the array it fails on first)
CASES = {
    "walk": (0, IMAGE * 2, "in_"),
    "copy": (1, IMAGE, "out"),
    "clear": (2, np.zeros(24), "out"),
    "helper": (3, IMAGE + 1, "in_"),
    "stash": (4, np.where(np.arange(24) % 6 == 5, np.arange(24) // 6, -1), "out"),
}
MARKERS = {"helper": "put_row"}
#: leaves whose failing access LLVM inlined from a callee: the leaf's line of the call first
CALLS = {"helper": "put_row_call"}

program = compiled_program(PROGRAM)


def _out(capfd) -> list[float]:  # type: ignore[no-untyped-def]
    return [float(v) for v in capfd.readouterr().out.split()]


@pytest.mark.parametrize("leaf", sorted(CASES))
def test_checked_and_unchecked_give_the_same_result(program, capfd, leaf) -> None:  # type: ignore[no-untyped-def]
    number, expected, _ = CASES[leaf]
    assert program.run([str(number), "4"], target="cpu") == 0
    unchecked = _out(capfd)
    previous = cpu.configure(checked=True)
    try:
        assert program.run([str(number), "4"], target="cpu") == 0
    finally:
        cpu.configure(**previous)
    assert _out(capfd) == unchecked == list(expected)


@pytest.mark.parametrize("leaf", sorted(CASES))
def test_rows_past_the_image_name_the_node_array_and_c_line(program, checked, leaf) -> None:  # type: ignore[no-untyped-def]
    number, _, array = CASES[leaf]
    line = line_of(SOURCE, MARKERS.get(leaf, leaf))
    expected = [f"{WHERE}:{line} falls outside '{array}'"]
    if leaf in CALLS:  # at checked_gaps.c:58 (in tests/c/programs/checked_gaps.c:51, inlined)
        call = line_of(SOURCE, CALLS[leaf])
        expected = [f"{WHERE}:{call} (in ", f"{WHERE}:{line}, inlined) falls outside '{array}'"]
    with fails(hpvm.OutOfBoundsError, f"node root_{leaf}/node[", f"] (leaf '{leaf}'", *expected):
        program.run([str(number), "7"], target="cpu")


def test_the_error_names_a_failing_instance(program, checked) -> None:  # type: ignore[no-untyped-def]
    """Rows 4 to 6 fail; the first one a thread reported is named."""
    with pytest.raises(
        hpvm.OutOfBoundsError, match=r"node root_\w+/node\[[456]\] \(leaf .*falls outside 'in_'"
    ):
        program.run(["0", "7"], target="cpu")


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("number", "call"), [("1", "memcpy"), ("2", "memset")])
def test_memcpy_and_memset_failures_say_which_operand_and_where_they_start(
    program, checked, target: str, number: str, call: str
) -> None:  # type: ignore[no-untyped-def]
    """The call's run-time length is not in the message: it says where the range starts
    (row ``r`` of the 4 x 6 floats: byte 24 r) and the array's 96 bytes."""
    with pytest.raises(hpvm.OutOfBoundsError) as raised:
        program.run([number, "7"], target=target)
    message = str(raised.value)
    row = re.search(r"node root_\w+/node\[(\d)\]", message)
    assert row is not None and int(row.group(1)) in (4, 5, 6), message
    assert f"llvm.{call}'s write at " in message, message
    assert f"falls outside 'out': from byte offset {24 * int(row.group(1))} of its 96 bytes" in message


def test_a_recursive_callee_is_named_as_unchecked(program, capfd, checked) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(hpvm.HPVMWarning) as caught:
        assert program.run(["5", "4"], target="cpu") == 0
    (warning,) = [w for w in caught if "checked mode cannot check" in str(w.message)]
    assert "leaf 'recurse'" in str(warning.message)
    assert "the pointer into 'out' passed to @fill, not inlined" in str(warning.message)
    assert f"{WHERE}:{line_of(SOURCE, 'recurse_call')}" in str(warning.message)
    assert _out(capfd) == [3.0] * 24


def test_a_later_process_reads_the_checked_modules_and_warns_the_same(program, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each leaf's checked module and the accesses it cannot check are kept in hpvm's cache
    (``llvm-checked/``): a later process in checked mode reads them instead of reading and
    rewriting the module again, says the same of the unchecked ones, and names the accesses
    its checks may fail at as the first did (``ACCESSES``: else a failing one would surface
    as a bare ``IndexError(code)``)."""
    from hpvm.backends.llvm_native import checked as checked_module
    from hpvm.ir.graph import LeafFunction, functions

    leaves = [f for root in program.roots for f in functions(root) if isinstance(f, LeafFunction)]
    assert len(leaves) >= len(CASES) + 1
    made = []
    for later in (False, True):
        monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(checked_module, "_CACHE", {})  # (a new process)
        monkeypatch.setattr(checked_module, "_WARNED", set())
        monkeypatch.setattr(checked_module, "ACCESSES", {})
        if later:
            monkeypatch.setattr(checked_module, "_check", lambda *args: pytest.fail("checked again"))
        with pytest.warns(hpvm.HPVMWarning) as caught:
            bodies = [checked_module.checked_body(leaf) for leaf in leaves]
        said = sorted(str(w.message) for w in caught if "checked mode cannot check" in str(w.message))
        made.append(([(b.module, b.function) for b in bodies], said, dict(checked_module.ACCESSES)))
    assert made[0] == made[1]
    assert {a.array for a in made[1][2].values()} >= {"in_", "out"}
    assert any("leaf 'recurse'" in message for message in made[1][1])
    rewritten = [module != leaf.body.module for (module, _), leaf in zip(made[1][0], leaves, strict=True)]
    assert sum(rewritten) >= len(CASES)  # (the checks are in what was read back)
