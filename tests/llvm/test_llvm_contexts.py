"""The LLVM front end's text does not depend on what the process parsed before.

LLVM's global context keeps the named struct types of every module still alive (the
``llvm_native`` back end's JIT keeps each leaf module it compiled), and a later module
defining the same name got ``%struct.out.saxpy.20.21``: an exported ``.ll``, the leaves
re-imported from it (their names, their module text: the caches' keys) and PREPARE's
output changed with the process's history. The front end now parses in contexts of its
own (``hpvm/ir/llvmcontext.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from hpvm import llvm
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.graph import InternalFunction, LeafFunction, functions
from hpvm.ir.printer import print_program

SAXPY = Path(__file__).parent / "hpvm9" / "saxpy_two_level.ll"


def _leaves(root: InternalFunction) -> list[tuple[str, str]]:
    """Each LLVM leaf's function name and module text: what its caches are keyed by."""
    found = []
    for fn in functions(root):
        if isinstance(fn, LeafFunction) and isinstance(fn.body, LLVMBody):
            found.append((fn.body.function, fn.body.module))
    return found


def _everything(text: str) -> dict[str, object]:
    """What the front end makes of ``text``: the import, the export, the export imported
    again, PREPARE's text and what EXTRACT reads back from it optimized."""
    root = llvm.from_hpvm_ir(text, file=str(SAXPY))
    exported = llvm.to_hpvm_ir(root)
    again = llvm.from_hpvm_ir(exported)
    prepared = llvm.prepare(root)
    extracted = llvm.extract(llvm.optimize(prepared, 2))
    return {
        "import": print_program(root, bodies=True),
        "import leaves": _leaves(root),
        "export": exported,
        "re-import leaves": _leaves(again),
        "prepare": prepared,
        "extract": print_program(extracted, bodies=True),
        "extract leaves": _leaves(extracted),
    }


def test_a_module_alive_in_the_global_context_changes_no_name() -> None:
    import llvmlite.binding as binding

    text = SAXPY.read_text()
    before = _everything(text)
    names = sorted(set(re.findall(r"^(%[\w.]+) = type", text + str(before["export"]), re.M)))
    assert "%struct.out.saxpy" in names
    # An earlier program, still alive in the process (as the JIT keeps its leaves), that
    # defines every one of those names with another body.
    alive = binding.parse_assembly(
        "".join(
            f"{n} = type {{ i8, i8, i8 }}\n@g{k} = global {n} zeroinitializer\n" for k, n in enumerate(names)
        )
    )
    after = _everything(text)
    for what in before:
        assert after[what] == before[what], what
    assert "%struct.out.saxpy = type" in str(before["export"])  # (clang's name, no suffix)
    del alive
