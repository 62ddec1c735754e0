"""``hpvm svm machine``: a metadata file checked and summarised from the command line."""

from __future__ import annotations

import pytest

from hpvm.cli import main


def test_hpvm_svm_machine_summarises_a_shipped_machine(capsys):
    assert main(["svm", "machine", "pca_tiled"]) == 0
    out = capsys.readouterr().out
    assert "machine 'pca_tiled'" in out
    assert (
        "PROC2      stream; master CONTROL; runs USER_DEFINED_KERNEL, rle, zip; reaches FIFO12, FIFO23, LOCALMEM2"
        in out
    )
    assert "DMA1       DMA, 4 concurrent" in out
    assert "GLOBALMEM1 16 MiB, width 8 B" in out
    assert "FIFO12     64 × 4 B" in out
    assert "LOCAL_BUS  GLOBAL_BUS — LOCALMEM1" in out


def test_hpvm_svm_machine_this_computer(capsys):
    assert main(["svm", "machine", "this"]) == 0
    assert "RAM        1 GiB" in capsys.readouterr().out


def test_hpvm_svm_machine_reports_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[machine]\nname = "x"\n[processors.C]\nmaster = "C"\nspeed = 3\n')
    assert main(["svm", "machine", str(bad)]) == 1
    assert "bad.toml: processors.C: key 'speed': unknown key" in capsys.readouterr().err


def test_hpvm_svm_machine_draws_the_machine(tmp_path, capsys):
    out = tmp_path / "tiled.png"
    assert main(["svm", "machine", "pca_tiled", "-o", str(out)]) == 0
    assert f"picture: {out}" in capsys.readouterr().out
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 10_000


def test_draw_machine_places_rows_and_reports_bad_paths(tmp_path):
    from hpvm import svm
    from hpvm.svm.picture import positions

    machine = svm.load_machine("pca_tiled")
    pos = positions(machine)
    assert {pos[p][1] for p in machine.processors} == {2.0}
    assert {pos[m][1] for m in [*machine.memories, *machine.fifos]} == {0.0}
    assert pos["CONTROL"][0] == 0.0  # the control processor first
    svg = svm.draw_machine(svm.this_computer(cores=2), tmp_path / "this.svg")
    assert "<svg" in svg.read_text()[:500]
    with pytest.raises(svm.SVMError, match="draw_machine: cannot write"):
        svm.draw_machine(machine, tmp_path / "no" / "such" / "dir.png")
