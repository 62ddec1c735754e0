"""Each ``ziglang`` installation gets a zig cache of its own (``hpvm/c/zig.py``): two
environments on one machine no longer rebuild libc++ over each other's entry, and a
``ZIG_GLOBAL_CACHE_DIR`` the user set wins."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

from hpvm.c import zig


def test_a_cache_the_user_chose_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv(zig.CACHE_VARIABLE, str(tmp_path / "mine"))
    assert zig.environment()[zig.CACHE_VARIABLE] == str(tmp_path / "mine")


def test_each_installation_has_its_own_cache_under_hpvms(monkeypatch, tmp_path):
    monkeypatch.delenv(zig.CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path / "hpvm"))
    real = importlib.util.find_spec
    where = {"origin": "/envs/one/site-packages/ziglang/__init__.py"}

    def find_spec(name, *args):
        return SimpleNamespace(origin=where["origin"]) if name == "ziglang" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    first = zig.environment()[zig.CACHE_VARIABLE]
    assert first == zig.environment()[zig.CACHE_VARIABLE]  # stable: found again next time
    assert Path(first).is_dir() and Path(first).parent == tmp_path / "hpvm" / "zig"
    where["origin"] = "/envs/two/site-packages/ziglang/__init__.py"
    second = zig.environment()[zig.CACHE_VARIABLE]
    assert second != first and Path(second).parent == Path(first).parent


def test_the_command_runs_this_pythons_ziglang():
    cmd = zig.command("cc", ["-O2", "x.c"])
    assert cmd[1:] == ["-m", "ziglang", "cc", "-O2", "x.c"]
