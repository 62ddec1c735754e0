"""``import hpvm`` does not import the SVM; ``hpvm.svm`` imports only NumPy and the
standard library (pydantic waits for the first machine file)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_import_hpvm_does_not_import_the_svm_and_hpvm_svm_is_lazy():
    out = run(
        """
        import sys
        import hpvm
        before = "hpvm.svm" in sys.modules
        machine = hpvm.svm.this_computer(cores=1)
        heavy = [m for m in ("pydantic", "matplotlib", "numba", "torch") if m in sys.modules]
        print(before, heavy, machine.name)
        hpvm.svm.load_machine("pca_tiled")
        print("pydantic" in sys.modules)
        """
    )
    assert out.splitlines() == ["False [] this computer", "True"]


def test_the_hlc_mapping_is_imported_by_an_svm_launch_only():
    """``import hpvm`` and launches on other targets load nothing of the HLC mapping; a
    launch with ``target="svm"`` loads it without matplotlib (that is for pictures)."""
    out = run(
        """
        import os, sys
        os.environ["HPVM_SVM_LEAVES"] = "interp"
        import hpvm

        @hpvm.leaf
        def inc(x: hpvm.i64) -> hpvm.i64:
            return x + 1

        @hpvm.internal
        def root(x: hpvm.i64):
            n = hpvm.create_node(inc)
            hpvm.bind_in(n, 0, 0)
            hpvm.bind_out(n, 0, 0)

        mapping = ("hpvm.runtime.svm_target", "hpvm.svm", "hpvm.svm.mapping")
        hpvm.init()
        hpvm.wait(hpvm.launch(root, (1,), target="interp"))
        print([m for m in mapping if m in sys.modules])
        h = hpvm.launch(root, None, stream=True, target="svm")
        hpvm.push(h, (1,))
        print(hpvm.pop(h), [m for m in mapping if m not in sys.modules], "matplotlib" in sys.modules)
        hpvm.wait(h)
        hpvm.cleanup()
        """
    )
    assert out.splitlines() == ["[]", "(np.int64(2),) [] False"]


def test_an_unknown_attribute_of_hpvm_is_still_an_attribute_error():
    out = run(
        """
        import hpvm
        try:
            hpvm.no_such_thing
        except AttributeError as exc:
            print(exc)
        """
    )
    assert out == "module 'hpvm' has no attribute 'no_such_thing'"
