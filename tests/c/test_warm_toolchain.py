"""The toolchain warm-up (``make install``) must really run zig on modules like a user's.

It once linked a bare module through hpvm's library cache, which already held it, so zig
never ran and the first C++ test of every fresh clone built libc++ (90-100 s)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hpvm.c import clang

WARM = Path(__file__).resolve().parents[2] / "tools" / "warm-c-toolchain.py"

pytestmark = pytest.mark.skipif(clang.unavailable_reason() is not None, reason="ziglang is not installed")


def _warm_module():
    spec = importlib.util.spec_from_file_location("warm_c_toolchain", WARM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_warm_up_links_with_zig_past_hpvms_cache(monkeypatch, capsys) -> None:
    import hpvm.c.hostlib as hostlib

    linked: list[tuple[bool, str]] = []
    real_link = hostlib.link

    def spy(text: str, cxx: bool, label: str, folder: Path) -> Path:
        out = real_link(text, cxx, label, folder)
        assert out.is_file()
        linked.append((cxx, text))
        return out

    monkeypatch.setattr(hostlib, "link", spy)
    monkeypatch.setattr(
        hostlib, "build", lambda *a, **k: pytest.fail("the warm-up must not go through the cache")
    )
    assert _warm_module().main() == 0
    assert sorted(cxx for cxx, _ in linked) == [False, True]
    # modules as clang makes a user's: with the target triple zig keys its libc++ build by
    assert all("target triple" in text for _, text in linked)
    assert "toolchain ready" in capsys.readouterr().out
