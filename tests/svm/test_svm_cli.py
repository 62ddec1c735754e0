"""``hpvm svm machine``: a metadata file checked and summarised from the command line."""

from __future__ import annotations

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
