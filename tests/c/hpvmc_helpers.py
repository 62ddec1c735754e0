"""Shared by the HPVM-C tests (imported by path: tests/c is on sys.path): skip without clang (the ziglang package), write C sources,
find the line of a ``// @marker`` comment."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "c"


def _clang_reason() -> str | None:
    from hpvm.c import unavailable_reason

    return unavailable_reason()


def _llvm_leaves_reason() -> str | None:
    from hpvm.backends import get_backend

    if "llvm" not in get_backend("cpu").accepts:
        return "the cpu back end does not run LLVM leaves in this build"
    return None


needs_clang = pytest.mark.skipif(_clang_reason() is not None, reason=f"HPVM-C needs clang: {_clang_reason()}")
needs_llvm_leaves = pytest.mark.skipif(_llvm_leaves_reason() is not None, reason=str(_llvm_leaves_reason()))


@pytest.fixture
def clean_runtime():  # type: ignore[no-untyped-def]
    """The runtime cleaned up after the test (modules take it with ``usefixtures``): a test that
    launches leaves no tracked arrays, workers or streams to the next."""
    yield
    import hpvm

    hpvm.cleanup()


def compiled_program(path: Path):  # type: ignore[no-untyped-def]
    """A module-scoped fixture: ``c.compile(path)`` once for the module's tests."""

    @pytest.fixture(scope="module")
    def program():  # type: ignore[no-untyped-def]
        from hpvm import c

        return c.compile(path)

    return program


def line_of(source: str, marker: str) -> int:
    """The 1-based line of ``source`` that ends with ``// @marker``."""
    hits = [k for k, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith(f"// @{marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


@pytest.fixture
def write_c(tmp_path: Path):
    """``write_c(source, name="prog.c")`` → the path of a file holding ``source``."""

    def write(source: str, name: str = "prog.c") -> Path:
        path = tmp_path / name
        path.write_text(source)
        return path

    return write
