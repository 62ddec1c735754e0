"""ir/cache.py: hpvm's cache folder, moved by HPVM_CACHE_DIR, and a temporary folder when
it cannot be written."""

from __future__ import annotations

from hpvm.ir import cache


def test_the_variable_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path / "here"))
    assert cache.cache_root() == tmp_path / "here"
    folder = cache.cache_folder("c-host")
    assert folder == tmp_path / "here" / "c-host" and folder.is_dir()


def test_an_unwritable_cache_falls_back_to_a_temporary_folder(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # (no folder can be made under a file)
    monkeypatch.setenv("HPVM_CACHE_DIR", str(blocker / "cache"))
    folder = cache.cache_folder("c-ir")
    assert folder.is_dir() and folder.name == "c-ir" and not str(folder).startswith(str(blocker))
    assert cache.cache_folder("c-ir") == folder  # the same one for the rest of the process
