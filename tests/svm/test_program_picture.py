"""What a run did (``svm.program_uses``), drawn (``svm.draw_program``, ``hpvm svm show``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpvm import svm
from hpvm.cli import main
from hpvm.svm import runtime as svm_runtime
from hpvm.svm.program import arrows, layers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "svm"


class Task(svm.Kernel):
    pass


def test_a_run_records_writers_and_readers_of_streams_and_blocks(tmp_path):
    svm.init(svm.this_computer(cores=2))
    src, mid = svm.Stream(), svm.Stream()
    table = svm.Block()
    svm.stream_init_ram(src, "RAM", 0, 8, np.int32)
    svm.stream_init_ram(mid, "RAM", 64, 8, np.int32)
    svm.block_init(table, "RAM", 128, 4, np.int32)
    svm.stream_push_with_eos(src, 5)  # control code writes src
    producer = Task()
    svm.kernel_init(producer, "PROC0", None, lambda k: svm.stream_push(mid, svm.stream_pop(src) * 2))
    svm.kernel_run(producer)
    assert svm.stream_pop(mid) == 10  # control code reads mid
    svm.kernel_wait(producer)
    svm.block_write(table, 0, 1)
    svm.cleanup()
    kernels, uses = svm.program_uses()  # still there after cleanup
    assert kernels == {"producer": "PROC0"}
    by_name = {u.name: u for u in uses}
    assert by_name["src"].writers == {"control code"} and by_name["src"].readers == {"producer"}
    assert by_name["mid"].writers == {"producer"} and by_name["mid"].readers == {"control code"}
    assert by_name["table"].kind == "block" and by_name["table"].writers == {"control code"}
    pairs = {(w, r, u.name) for w, r, u in arrows(uses)}
    assert ("control code", ">[RAM]", "table") in pairs  # a block nobody read: left in memory
    assert ("control code", "producer", "src") in pairs and ("producer", "control code", "mid") in pairs
    picture = svm.draw_program(tmp_path / "program.png")
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_layers_follow_the_streams_and_survive_cycles():
    nodes = ["control code", "a", "b", "c"]
    assert layers(nodes, [("control code", "a"), ("a", "b"), ("b", "c"), ("c", "control code")]) == {
        "control code": 0,
        "a": 1,
        "b": 2,
        "c": 3,
    }
    cyclic = layers(["a", "b"], [("a", "b"), ("b", "a")])  # a feedback loop: no endless relaxation
    assert set(cyclic) == {"a", "b"}


def test_nothing_to_draw_before_any_program(monkeypatch, tmp_path):
    monkeypatch.setattr(svm_runtime, "_last_program", None)
    svm.init(svm.this_computer(cores=1))
    with pytest.raises(svm.SVMError, match="no program has run yet"):
        svm.draw_program(tmp_path / "p.png")
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    svm.stream_push(s, 1)
    with pytest.raises(svm.SVMError, match="draw_program: cannot write"):
        svm.draw_program(tmp_path / "missing" / "p.png")


def test_hpvm_svm_show_runs_a_program_and_draws_it(tmp_path, capsys):
    out = tmp_path / "pipeline.png"
    assert main(["svm", "show", str(EXAMPLES / "pipeline.py"), "-o", str(out)]) == 0
    assert f"picture: {out}" in capsys.readouterr().out
    assert out.stat().st_size > 5_000
    kernels, _ = svm.program_uses()
    assert kernels == {"k1": "PROC1", "k2": "PROC2"}


def test_hpvm_svm_show_passes_the_exit_status_on_and_reports_missing_files(tmp_path, capsys):
    program = tmp_path / "exits.py"
    program.write_text(
        "import sys\nfrom hpvm import svm\nsvm.init()\ns = svm.Stream()\n"
        "svm.stream_init_ram(s, 'RAM', 0, 4, 4)\nsvm.stream_push(s, b'abcd')\nsys.exit(3)\n"
    )
    assert main(["svm", "show", str(program), "-o", str(tmp_path / "e.png")]) == 3
    assert main(["svm", "show", str(tmp_path / "absent.py")]) == 1
    assert "absent.py: no such file" in capsys.readouterr().err
