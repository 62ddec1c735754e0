"""ir/cache.py: hpvm's cache folder, moved by HPVM_CACHE_DIR, and a temporary folder when
it cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_the_temporary_folder_is_removed_when_the_process_ends(tmp_path):
    """A process that fell back leaves nothing in the temporary directory."""
    (tmp_path / "a-file").write_text("")
    env = {**os.environ, "HPVM_CACHE_DIR": str(tmp_path / "a-file" / "cache")}
    script = "from hpvm.ir import cache; print(cache.cache_folder('c-ir').parent)"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    made = Path(out.stdout.strip())
    assert made.name.startswith("hpvm-cache-")
    assert not made.exists()


def test_write_whole_replaces_the_file_and_leaves_no_temporary(tmp_path):
    from hpvm.ir.cache import write_whole

    path = tmp_path / "entry.json"
    write_whole(path, "first")
    write_whole(path, "second")
    assert path.read_text() == "second" and [p.name for p in tmp_path.iterdir()] == ["entry.json"]
    assert path.stat().st_mode & 0o777 == 0o644  # (readable by others, as the cache's files were)


def test_write_whole_into_a_missing_folder_raises_and_leaves_nothing(tmp_path):
    import pytest

    from hpvm.ir.cache import write_whole

    with pytest.raises(OSError):
        write_whole(tmp_path / "gone" / "entry.json", "text")
    assert list(tmp_path.iterdir()) == []
