"""The root package: its public names, and what ``import hpvm`` loads (the error classes only;
everything else on first use, so a script, the CLI or a worker pays for what it uses)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import hpvm
import hpvm.errors
import hpvm.lang


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_every_public_name_resolves_and_is_listed_once() -> None:
    assert len(hpvm.__all__) == len(set(hpvm.__all__))
    for name in hpvm.__all__:
        assert getattr(hpvm, name) is not None, name
    errors = {n for n in vars(hpvm.errors) if n.endswith(("Error", "Warning")) and n[0].isupper()}
    assert set(hpvm.__all__) == set(hpvm._PUBLIC) | (errors & set(hpvm.__all__))
    assert set(hpvm.lang.__all__) <= set(hpvm.__all__)
    assert hpvm.leaf is hpvm.lang.leaf and hpvm.launch.__module__ == "hpvm.runtime.api"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        hpvm.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no attribute 'no_such_name'" in str(e)
    else:
        raise AssertionError("hpvm.no_such_name resolved")


def test_import_hpvm_loads_neither_numpy_nor_the_runtime() -> None:
    loaded = _run(
        """
        import sys
        import hpvm
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "lark", "llvmlite")
                     or m in ("hpvm.runtime", "hpvm.lang", "hpvm.ir.graph")))
        """
    )
    assert loaded == "[]"


def test_star_import_gives_every_public_name() -> None:
    assert _run("from hpvm import *\nprint(callable(launch), callable(leaf), i32)") == "True True i32"


def test_a_front_end_finds_the_runtime_without_importing_it() -> None:
    """A front end reaches the host through ``hpvm.ir.host``; the root package named the
    runtime as its provider, imported on the first call that needs a host."""
    out = _run(
        """
        import sys
        import hpvm.ir.host as host
        before = "hpvm.runtime" in sys.modules
        print(before, type(host.host()).__name__, type(host.new_host()).__name__)
        """
    )
    assert out == "False module Runtime"


def test_with_a_c_compiler_the_replay_extension_is_built() -> None:
    """``make install`` builds the optional extension ``hpvm.runtime._replay`` where a C
    compiler is (setup.py; ``optional``, so a failed build only warns): on a machine with
    one, a missing extension is a broken build, not a choice — reinstall
    (``pip install -e .``) and read the compiler's message."""
    import shutil
    import sysconfig

    from hpvm.runtime import fastpath

    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine: hpvm runs without the extension")
    assert fastpath.built(), fastpath.REASON
