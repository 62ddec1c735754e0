"""ir/cache.py: hpvm's cache folder, moved by HPVM_CACHE_DIR, and a temporary folder when
it cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


FIELDS = {"text": (str, type(None)), "count": int}


def _store(tmp_path, monkeypatch, build, version="v1", key=("f",), text="module"):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    return cache.stored_json("answers", version, list(key), text, FIELDS, build)


def test_a_stored_answer_is_read_instead_of_built(tmp_path, monkeypatch):
    built = []

    def build() -> dict:
        built.append(1)
        return {"text": "made", "count": 3}

    assert _store(tmp_path, monkeypatch, build) == {"text": "made", "count": 3}
    assert _store(tmp_path, monkeypatch, build) == {"text": "made", "count": 3}
    assert len(built) == 1
    # another version of the code, key or text: another answer
    for other in ({"version": "v2"}, {"key": ("g",)}, {"text": "module2"}):
        _store(tmp_path, monkeypatch, build, **other)
    assert len(built) == 4 and len(list((tmp_path / "answers").glob("*.json"))) == 4


def test_a_damaged_stored_answer_is_built_again_and_replaced(tmp_path, monkeypatch):
    want = {"text": None, "count": 0}
    _store(tmp_path, monkeypatch, lambda: want)
    (stored,) = (tmp_path / "answers").glob("*.json")
    for damage in (
        "",
        "{not json",
        "[]",
        '{"text": "x"}',
        '{"text": 3, "count": 0}',
        '{"text": "x", "count": 1, "more": 2}',
    ):
        stored.write_text(damage)
        assert _store(tmp_path, monkeypatch, lambda: want) == want
        assert _store(tmp_path, monkeypatch, lambda: pytest.fail("built again")) == want  # replaced


def test_a_build_that_raises_stores_nothing(tmp_path, monkeypatch):
    def refuse() -> dict:
        raise ValueError("refused")

    for _ in range(2):
        with pytest.raises(ValueError, match="refused"):
            _store(tmp_path, monkeypatch, refuse)
    assert not list((tmp_path / "answers").glob("*.json"))


def test_an_unwritable_answer_is_built_each_time_without_an_error(tmp_path, monkeypatch):
    folder = tmp_path / "answers"
    folder.mkdir()
    monkeypatch.setattr(cache, "write_whole", lambda path, text: (_ for _ in ()).throw(OSError("read-only")))
    assert _store(tmp_path, monkeypatch, lambda: {"text": "a", "count": 1}) == {"text": "a", "count": 1}
    assert not list(folder.glob("*.json"))


def test_code_digest_changes_with_any_file_or_the_extra(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = cache.code_digest([a, b], "llvmlite 0.1")
    assert cache.code_digest([a, b], "llvmlite 0.1") == first
    assert cache.code_digest([a, b], "llvmlite 0.2") != first
    b.write_text("y = 3\n")
    assert cache.code_digest([a, b], "llvmlite 0.1") != first


def test_prune_keeps_the_most_recently_used(tmp_path):
    files = []
    for k in range(6):
        path = tmp_path / f"{k}.json"
        path.write_text("{}")
        os.utime(path, (1000 + k, 1000 + k))  # written in the order 0..5
        files.append(path)
    (tmp_path / "other.o").write_text("")  # (another pattern: not counted, not removed)
    cache.used(files[0])  # read since: the most recent
    cache.prune(tmp_path, "*.json", keep=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.json", "4.json", "5.json", "other.o"]
    cache.used(tmp_path / "gone.json")  # (pruned by another process: no error)


def test_stored_answers_beyond_the_folder_s_keep_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "KEEP", 2)
    for k in range(4):
        _store(tmp_path, monkeypatch, lambda k=k: {"text": str(k), "count": k}, key=(f"f{k}",))
    assert len(list((tmp_path / "answers").glob("*.json"))) == 2


def test_graph_modules_past_the_bar_go_with_their_numba_cache(tmp_path, monkeypatch):
    """``prune_graphs``: nothing happens until there are ``GRAPH_SLACK`` modules more than
    ``GRAPH_KEEP``; then the least recently used go, each with Numba's files for it, and
    other files stay."""
    monkeypatch.setattr(cache, "GRAPH_KEEP", 3)
    monkeypatch.setattr(cache, "GRAPH_SLACK", 2)
    numba_cache = tmp_path / "__pycache__"
    numba_cache.mkdir()
    (tmp_path / "llvm-clone").mkdir()
    other = tmp_path / "hpvm_graph_notes.txt"
    other.write_text("not a module")

    def module(k: int) -> None:
        path = tmp_path / f"hpvm_graph_{k:04d}.py"
        path.write_text("x = 1\n")
        os.utime(path, (1000 + k, 1000 + k))
        for entry in ("f-1.py311.nbi", "f-1.py311.1.nbc"):
            (numba_cache / f"{path.stem}.{entry}").write_bytes(b"")

    for k in range(5):  # (GRAPH_KEEP + GRAPH_SLACK: not yet)
        module(k)
    cache.prune_graphs(tmp_path)
    assert len(list(tmp_path.glob("hpvm_graph_*.py"))) == 5
    module(5)
    os.utime(tmp_path / "hpvm_graph_0000.py", (2000, 2000))  # (used since: kept)
    cache.prune_graphs(tmp_path)
    kept = sorted(p.stem for p in tmp_path.glob("hpvm_graph_*.py"))
    assert kept == ["hpvm_graph_0000", "hpvm_graph_0004", "hpvm_graph_0005"]
    assert sorted({p.name.split(".")[0] for p in numba_cache.iterdir()}) == kept
    assert other.exists() and (tmp_path / "llvm-clone").is_dir()


def test_the_cpu_back_end_marks_a_graph_module_it_loads_used(tmp_path, monkeypatch):
    from hpvm.backends.cpu.compiler import Compiler

    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    compiler = Compiler()
    path = compiler._write("x = 1\n")
    os.utime(path, (1000, 1000))
    assert compiler._write("x = 1\n") == path
    assert path.stat().st_mtime > 1000


def _folders(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_locked_folders_past_the_bar_are_pruned_to_the_most_recently_used(tmp_path, monkeypatch):
    """``locked_folder``: nothing happens until ``FOLDER_SLACK`` folders more than
    ``FOLDER_KEEP`` gather; then a new one prunes the least recently used, each with what it
    holds; using a folder marks it used."""
    monkeypatch.setattr(cache, "FOLDER_KEEP", 3)
    monkeypatch.setattr(cache, "FOLDER_SLACK", 1)
    for k in range(4):
        with cache.locked_folder(tmp_path, f"f{k}") as folder:
            (folder / "out.ll").write_text(f"module {k}")
        os.utime(folder / "lock", (1000 + k, 1000 + k))
    assert _folders(tmp_path) == ["f0", "f1", "f2", "f3"]
    with cache.locked_folder(tmp_path, "f0") as folder:  # (used again: the most recent)
        assert (folder / "out.ll").read_text() == "module 0"
    with cache.locked_folder(tmp_path, "f4"):
        pass
    assert _folders(tmp_path) == ["f0", "f3", "f4"]


def test_a_locked_folder_held_by_another_process_is_not_pruned(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setattr(cache, "FOLDER_KEEP", 1)
    monkeypatch.setattr(cache, "FOLDER_SLACK", 0)
    with cache.locked_folder(tmp_path, "held") as folder:
        pass
    os.utime(folder / "lock", (1000, 1000))
    with open(folder / "lock") as holder:  # (another open file: flock as another process's)
        fcntl.flock(holder, fcntl.LOCK_EX)
        with cache.locked_folder(tmp_path, "new"):
            pass
    assert _folders(tmp_path) == ["held", "new"]
    assert (folder / "lock").exists()


def test_a_process_waiting_for_a_folder_that_is_pruned_makes_it_again(tmp_path, monkeypatch):
    """The race ``locked_folder`` loops for: another process prunes the folder (its lock
    file removed under the lock) while this one waits for that lock."""
    import fcntl

    real_flock = fcntl.flock
    pruned = []

    def flock_after_a_prune(fd, operation):  # type: ignore[no-untyped-def]
        if not pruned and operation == fcntl.LOCK_EX:
            pruned.append(True)
            cache._remove_locked_folder(tmp_path / "x" / "lock")  # (as another process would)
        return real_flock(fd, operation)

    with cache.locked_folder(tmp_path, "x") as folder:
        (folder / "out.ll").write_text("old")
    monkeypatch.setattr(cache.fcntl, "flock", flock_after_a_prune)
    with cache.locked_folder(tmp_path, "x") as folder:
        assert pruned and (folder / "lock").exists() and not (folder / "out.ll").exists()
        assert cache._in_place(os.open(folder / "lock", os.O_RDONLY), folder / "lock")
    assert _folders(tmp_path) == ["x"]


def test_hpvm_c_keeps_its_clang_output_in_locked_folders(tmp_path, monkeypatch):
    """``c/clang.py`` compiles each source in a ``locked_folder`` of ``c-ir/``."""
    from hpvm.c import clang

    if clang.unavailable_reason() is not None:
        pytest.skip(clang.unavailable_reason())
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "one.c"
    source.write_text("int one(void) { return 1; }\n")
    assert "define" in clang.to_llvm(source)
    (folder,) = (tmp_path / "cache" / "c-ir").iterdir()
    assert (folder / "lock").exists() and not (folder / "out.ll").exists()


def test_locked_folders_shared_by_threads_while_they_are_pruned(tmp_path, monkeypatch):
    """Threads (each lock an open file of its own, as processes') use three folders while
    every new folder prunes all but one: no error, and no thread ever sees another's file
    in a folder it holds."""
    import threading

    monkeypatch.setattr(cache, "FOLDER_KEEP", 1)
    monkeypatch.setattr(cache, "FOLDER_SLACK", 0)
    problems: list[str] = []

    def work(thread: int) -> None:
        try:
            for k in range(40):
                with cache.locked_folder(tmp_path, f"f{(thread + k) % 3}") as folder:
                    mine = f"{thread}:{k}"
                    (folder / "out.ll").write_text(mine)
                    if (folder / "out.ll").read_text() != mine:
                        problems.append(f"{folder.name} changed under {mine}")
                    (folder / "out.ll").unlink()
        except Exception as e:  # noqa: BLE001 (reported below)
            problems.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []
    assert 1 <= len(_folders(tmp_path)) <= 3
