"""Machine metadata: the TOML format, its validation (errors name file, entry and key),
the shipped machines, "this computer", and reachability over links (restriction A6)."""

from __future__ import annotations

import string
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import HPVMError, svm
from hpvm.svm.machine import machine_from_dict
from hpvm.svm.schema import parse_size

MINIMAL = """
[machine]
name = "mini"

[processors.CTRL]
master = "CTRL"

[processors.P]
master = "CTRL"
supported_kernels = ["USER_DEFINED_KERNEL", "rle"]

[processors.D]
master = ["CTRL"]
dma = true
max_concurrent_kernels = 3
supported_kernels = ["Move"]

[memories.M]
size = "64K"
width = 8
cost = 2.5

[fifos.F]
depth = 16
element_size = 4

[links.PM]
ends = ["P", "M"]

[links.PF]
ends = ["P", "F"]
"""


def write(tmp_path, text: str):
    path = tmp_path / "machine.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_minimal_machine_loads_with_every_kind_of_entry(tmp_path):
    m = svm.load_machine(write(tmp_path, MINIMAL))
    assert m.name == "mini"
    assert m.memories["M"].size == 64 * 1024 and m.memories["M"].width == 8 and m.memories["M"].cost == 2.5
    assert m.fifos["F"].depth == 16 and m.fifos["F"].element_size == 4
    assert m.processors["P"].master == ("CTRL",) and not m.processors["P"].is_dma
    assert m.processors["P"].supported_kernels == ("USER_DEFINED_KERNEL", "rle")
    assert m.processors["D"].is_dma and m.processors["D"].max_concurrent_kernels == 3
    assert m.control_processor.name == "CTRL"
    assert m.links["PM"].ends == ("P", "M")
    assert m.reachable("P") == {"M", "F"}
    assert m.reachable("D") == frozenset()


def test_the_shipped_tiled_machine_has_tiles_dmas_fifos_and_one_control_processor():
    m = svm.load_machine("pca_tiled")
    assert "pca_tiled" in svm.shipped_machines()
    assert [p.name for p in m.processors.values() if p.is_control] == ["CONTROL"]
    assert sum(p.is_dma for p in m.processors.values()) == 2
    assert {"PROC1", "PROC2", "PROC3", "PROC4"} <= set(m.processors)
    assert set(m.fifos) == {"FIFO12", "FIFO23", "FIFO34"}
    # A stream processor reaches its own memory and its FIFOs, nothing else.
    assert m.reachable("PROC2") == {"LOCALMEM2", "FIFO12", "FIFO23"}
    # The DMA engines reach every local memory through a link joined to a link.
    assert m.reachable("DMA1") == {"GLOBALMEM1", "LOCALMEM1", "LOCALMEM2", "LOCALMEM3", "LOCALMEM4"}


def test_this_computer_has_one_stream_processor_per_core_and_host_ram():
    m = svm.this_computer(cores=3)
    assert [n for n in m.processors if n.startswith("PROC")] == ["PROC0", "PROC1", "PROC2"]
    assert m.control_processor.name == "CONTROL" and m.processors["DMA"].is_dma
    assert m.memories["RAM"].size == 1 << 30
    assert m.reachable("PROC1") == {"RAM"}


def test_init_without_a_machine_uses_this_computer():
    svm.init()
    assert svm.current_machine().name == "this computer"


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (('size = "64K"', 'size = "64Q"'), ("memories.M: key 'size': '64Q' is not a size",)),
        (("depth = 16", "depth = 0"), ("fifos.F", "key 'depth'", "greater than 0")),
        (("width = 8", "widht = 8"), ("memories.M", "key 'widht'", "unknown key")),
        (
            ('master = "CTRL"\nsupported', 'master = "NOBODY"\nsupported'),
            ("processors.P", "key 'master'", "NOBODY"),
        ),
        (('ends = ["P", "M"]', 'ends = ["P", "MM"]'), ("links.PM", "key 'ends'", "'MM'")),
        (
            ('ends = ["P", "F"]', 'ends = ["P"]'),
            (
                "links.PF",
                "key 'ends'",
            ),
        ),
        (("dma = true\n", ""), ("processors.D", "max_concurrent_kernels is for DMA")),
        (('name = "mini"', ""), ("[machine]: key 'name'", "required key missing")),
        (("[fifos.F]", "[memories.F]\nsize = 4"), ("memories.F", "key 'depth'", "unknown key")),
    ],
)
def test_every_metadata_error_names_the_file_the_entry_and_the_key(tmp_path, edit, fragments):
    old, new = edit
    assert old in MINIMAL
    path = write(tmp_path, MINIMAL.replace(old, new, 1))
    with pytest.raises(svm.SVMError) as info:
        svm.load_machine(path)
    assert isinstance(info.value, HPVMError)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_a_link_cannot_end_at_itself_and_processors_are_required(tmp_path):
    with pytest.raises(svm.SVMError, match=r"links\.PF: key 'ends': a link cannot end at itself"):
        svm.load_machine(write(tmp_path, MINIMAL.replace('ends = ["P", "F"]', 'ends = ["P", "PF"]')))
    with pytest.raises(svm.SVMError, match=r"machine\.toml: \[processors\]: required key missing"):
        svm.load_machine(write(tmp_path, '[machine]\nname = "empty"\n'))


def test_a_name_used_twice_is_an_error(tmp_path):
    path = write(tmp_path, MINIMAL + "\n[fifos.M]\ndepth = 1\nelement_size = 1\n")
    with pytest.raises(svm.SVMError, match=r"fifos\.M: the name 'M' is also used in \[memories\]"):
        svm.load_machine(path)


def test_bad_toml_and_missing_files_are_svm_errors(tmp_path):
    with pytest.raises(svm.SVMError, match=r"machine\.toml: not valid TOML"):
        svm.load_machine(write(tmp_path, "[machine\nname = 1"))
    with pytest.raises(svm.SVMError, match="cannot read machine file"):
        svm.load_machine(tmp_path / "absent.toml")
    with pytest.raises(svm.SVMError, match="no shipped machine of that name.*pca_tiled"):
        svm.load_machine("no_such_machine")


def test_a_machine_without_a_control_processor_cannot_run(tmp_path):
    text = MINIMAL.replace('[processors.CTRL]\nmaster = "CTRL"', '[processors.CTRL]\nmaster = "P"')
    with pytest.raises(svm.SVMError, match="has no control processor"):
        svm.init(svm.load_machine(write(tmp_path, text)))


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["", "K", "M", "G", "k", "KiB", "MB"]))
def test_sizes_with_suffixes_are_binary_multiples(n, suffix):
    scale = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[suffix[:1].upper()]
    assert parse_size(f"{n}{suffix}") == n * scale


names = st.text(string.ascii_uppercase + string.digits, min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(names, min_size=1, max_size=4, unique=True),
    st.lists(st.tuples(names, st.integers(1, 1 << 20)), max_size=4, unique_by=lambda t: t[0]),
    st.data(),
)
def test_generated_machines_round_trip_or_fail_with_an_svm_error(procs, mems, data):
    """Random metadata either loads into a Machine whose tables match the input, or is
    rejected with an SVMError — never another exception."""
    table = {
        "machine": {"name": "gen"},
        "processors": {p: {"master": procs[0], "supported_kernels": ["USER_DEFINED_KERNEL"]} for p in procs},
        "memories": {m: {"size": size} for m, size in mems},
        "links": {},
    }
    everything = procs + [m for m, _ in mems]
    for i in range(data.draw(st.integers(0, 3))):
        ends = data.draw(st.lists(st.sampled_from(everything + ["BOGUS"]), min_size=2, max_size=3))
        table["links"][f"L{i}"] = {"ends": ends}
    if data.draw(st.booleans()):
        table["memories"]["BAD"] = {"size": data.draw(st.sampled_from([0, -5, "12X", "4K"]))}
    try:
        m = machine_from_dict(table, "gen.toml")
    except svm.SVMError as exc:
        assert "gen.toml" in str(exc)
        return
    assert set(m.processors) == set(procs)
    assert {k: v.size for k, v in m.memories.items()} == {
        k: v["size"] if isinstance(v["size"], int) else 4096 for k, v in table["memories"].items()
    }
    for p in procs:
        assert m.reachable(p) <= set(m.memories)
