"""An HPVM-C program's module names its files by absolute paths (``clang.absolute_files``),
whatever folder hpvm runs in: the same program compiled from two folders is one module, so
what hpvm compiles and keeps from it serves both (a later process from another folder
compiles nothing: tests/c/test_c_field_row_norms.py), and messages name the file the user
can open from anywhere."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves
from hypothesis import given
from hypothesis import strategies as st

import hpvm
from hpvm import c
from hpvm.c.clang import absolute_files

HEADER = "#define SCALE 3\nstatic inline long scaled(long v) { return v * SCALE; }\n"
SOURCE = """#include "hpvm.h"
#include "include/scale.h"

void leaf(long *a, size_t bytes_a, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  a[i + n] = scaled(a[i]);  // @overrun
}

void root(long *a, size_t bytes_a, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *l = __hpvm__createNodeND(1, leaf, n);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(l, 2, 2, 0);
}
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "scale.h").write_text(HEADER)
    path = tmp_path / "prog.c"
    path.write_text(SOURCE)
    return path


@needs_clang
def test_one_program_compiled_from_two_folders_is_one_module(program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = c.compile("prog.c").llvm_text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert c.compile(os.path.join("..", "prog.c")).llvm_text == here
    named = set(re.findall(r'!DIFile\(filename: "([^"]*)", directory: ""', here))
    assert {str(program), str(tmp_path / "include" / "scale.h")} <= named
    assert all(os.path.isabs(name) for name in named)


@needs_clang
@needs_llvm_leaves
def test_a_message_names_the_file_by_its_absolute_path(program, tmp_path, monkeypatch):
    """The bounds pre-check's refusal, from a program given by a relative path."""
    monkeypatch.chdir(tmp_path)
    (root,) = c.compile("prog.c").roots
    a = np.zeros(8, dtype=np.int64).view(np.uint8)
    hpvm.init()
    hpvm.track_memory(a)
    try:
        with pytest.raises(hpvm.OutOfBoundsError) as raised:
            hpvm.wait(hpvm.launch(root, (a, 8), target="cpu"))
    finally:
        hpvm.untrack_memory(a)
        hpvm.cleanup()
    assert f"{program}:{line_of(SOURCE, 'overrun')}" in str(raised.value)


NAMES = st.text(alphabet="abc./_-", min_size=1, max_size=12).filter(lambda s: "\\" not in s)


@given(name=NAMES, folder=st.sampled_from(["", "/", "/work/x", "/tmp/a/b"]), absolute=st.booleans())
def test_every_file_comes_out_absolute_and_normalized_once(name, folder, absolute):
    name = "/" + name if absolute else name
    text = f'!7 = !DIFile(filename: "{name}", directory: "{folder}", checksumkind: CSK_MD5)\n'
    once = absolute_files(text)
    (got,) = re.findall(r'filename: "([^"]*)", directory: "", checksumkind', once)
    base = folder or os.getcwd()
    assert got == (name if os.path.isabs(name) else os.path.normpath(os.path.join(base, name)))
    assert os.path.isabs(got)
    assert absolute_files(once) == once
