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
