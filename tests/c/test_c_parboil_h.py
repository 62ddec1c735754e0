"""``parboil.h``: Parboil's host library as HPVM's parboil programs include it (``#include
<parboil.h>``), header-only in ``hpvm/c/include``. A C++ host written as HPVM's parboil
``main.cc`` files are (``programs/parboil/main.cc``: ``pb_ReadParameters``, the timer set
switched around reading, tracking, launch and wait, request and untracking, printed, the
output written to ``-o``), run on cpu with its inputs in ``tmp_path``; the command-line
cases (no ``-i``, two input files, arguments kept, ``--``, repeated and unknown options);
``hpvm c run`` handing ``-i`` / ``-o`` to ``main``; a C program with sub-timers and a timer
of its own (``programs/parboil/timers.c``); and the header alone under strict ISO C and
C++, built into a library with zig and its ``main`` called. Each program compiles once per
module (and once more per ``hpvm c run``, as the command does: zig's and hpvm's caches
answer)."""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.cli import main as cli

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "parboil"  # (fixed paths: zig's cache finds them)
_LINE = re.compile(r"^(?P<sub> -)?(?P<name>\S.*?)\s*: (?P<seconds>\d+\.\d{9})$")
#: The categories the C++ host switches to, in the order parboil.h prints them.
SWITCHED = ["IO", "Kernel", "Copy", "Compute", "Mem_Track", "Mem_Untrack"]


@pytest.fixture(scope="module")
def saxpy():
    return c.compile(FOLDER / "main.cc")


@pytest.fixture(scope="module")
def timers_c():
    return c.compile(FOLDER / "timers.c")


def vector_file(path: Path, values: list[float]) -> str:
    path.write_text(f"{len(values)}\n" + " ".join(str(v) for v in values) + "\n")
    return str(path)


def read_vector(path: Path) -> list[float]:
    words = path.read_text().split()
    assert int(words[0]) == len(words) - 1
    return [float(w) for w in words[1:]]


def timer_lines(out: str) -> tuple[list[tuple[str, float]], float]:
    """The categories (sub-timers as ``" -label"``) pb_PrintTimerSet printed, and the wall time."""
    lines = out.splitlines()
    (wall_at,) = [k for k, ln in enumerate(lines) if ln.startswith("Timer Wall Time: ")]
    wall = float(lines[wall_at].split(": ")[1])
    found = []
    k = wall_at - 1
    while k >= 0 and (m := _LINE.match(lines[k])) is not None:
        found.append(((m["sub"] or "") + m["name"], float(m["seconds"])))
        k -= 1
    return found[::-1], wall


X = [1.0, 2.0, 3.0, 4.5, -8.0]
Y = [10.0, 20.0, 30.0, 40.0, 0.25]


def test_a_parboil_host_runs_its_graph_and_times_it(saxpy, tmp_path, capfd):
    x, y = vector_file(tmp_path / "x.txt", X), vector_file(tmp_path / "y.txt", Y)
    out = tmp_path / "out.txt"
    assert saxpy.run(["-i", f"{x},{y}", "-o", str(out), "3"], target="cpu") == 0
    assert read_vector(out) == [3 * a + b for a, b in zip(X, Y)]
    printed = capfd.readouterr().out
    assert f"Found input file 0 - {x}\nFound input file 1 - {y}\noutput: {out}\n" in printed
    categories, wall = timer_lines(printed)
    # one line per category switched to (each counted time), in parboil.h's order, none other
    assert [name for name, _ in categories] == SWITCHED
    seconds = dict(categories)
    assert all(s > 0 for s in seconds.values())
    # the intervals are disjoint and inside the wall time (printed to the nanosecond)
    assert sum(seconds.values()) <= wall + 1e-8
    # the program reads timers.timers[pb_TimerID_KERNEL] itself afterwards: the same time
    assert f"Kernel time: {seconds['Kernel']:.9f}\n" in printed


@pytest.mark.parametrize(
    ("argv", "kept", "inputs", "output", "scale"),
    [
        (["-i", "{x}", "-o", "{out}", "2"], ["2"], ["{x}"], "{out}", 2.0),  # one input: y is zeros
        (  # arguments before, between and after the options stay, in order; after --, options too
            ["2", "-i", "{x},{y}", "kept", "-o", "{out}", "--", "-i", "-o"],
            ["2", "kept", "-i", "-o"],
            ["{x}", "{y}"],
            "{out}",
            2.0,
        ),
        (  # a repeated option: the last counts
            ["-o", "first", "-i", "{y}", "-o", "{out}", "-i", "{x}", "4"],
            ["4"],
            ["{x}"],
            "{out}",
            4.0,
        ),
        (["-", "-ab", "-i", "{x}"], ["-", "-ab"], ["{x}"], "(none)", 0.0),  # not options: kept
    ],
)
def test_the_command_line_is_read_as_parboil_reads_it(
    saxpy, tmp_path, capfd, argv, kept, inputs, output, scale
):
    names = {
        "x": vector_file(tmp_path / "x.txt", X),
        "y": vector_file(tmp_path / "y.txt", Y),
        "out": str(tmp_path / "out.txt"),
    }
    assert saxpy.run([a.format(**names) for a in argv], target="cpu") == 0
    printed = capfd.readouterr().out
    # argc counts argv[0] and what was kept; argv[argc] is NULL (the program says if not)
    assert f"argc {len(kept) + 1}:{''.join(f' [{a}]' for a in kept)}\n" in printed
    files = [i.format(**names) for i in inputs]
    assert "".join(f"Found input file {k} - {f}\n" for k, f in enumerate(files)) in printed
    assert printed.count("Found input file") == len(files)
    assert f"output: {output.format(**names)}\n" in printed
    if output != "(none)":
        ys = Y if len(files) == 2 else [0.0] * len(X)
        assert read_vector(tmp_path / "out.txt") == [scale * a + b for a, b in zip(X, ys)]


@pytest.mark.parametrize("separator", [[], ["--"]])
def test_hpvm_c_run_hands_parboils_options_to_main(tmp_path, capfd, separator):
    # `hpvm c run main.cc -i A,B -o F ARGS`: the words after the sources, -i and -o among
    # them, are main's (with or without --), not options of hpvm's own
    x, y = vector_file(tmp_path / "x.txt", X), vector_file(tmp_path / "y.txt", Y)
    out = tmp_path / "out.txt"
    argv = ["-i", f"{x},{y}", "-o", str(out), "2"]
    assert cli(["c", "run", str(FOLDER / "main.cc"), "--target", "cpu", *separator, *argv]) == 0
    assert read_vector(out) == [2 * a + b for a, b in zip(X, Y)]
    assert f"argc 2: [2]\nFound input file 0 - {x}\nFound input file 1 - {y}\n" in capfd.readouterr().out


def test_without_an_input_file_the_program_says_so(saxpy, tmp_path, capfd):
    out = tmp_path / "out.txt"
    assert saxpy.run(["-o", str(out), "3"], target="cpu") == 255  # (main returned -1)
    captured = capfd.readouterr()
    assert "argc 2: [3]\n" in captured.out and "Found input file" not in captured.out
    assert "Expecting one or two input filenames" in captured.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-i", "x.txt", "-x", "3"], "parboil: unexpected command-line parameter '-x'"),
        (["3", "-i"], "parboil: expecting a file name after '-i'"),
        (["-i", "x.txt", "-o"], "parboil: expecting a file name after '-o'"),
    ],
)
def test_an_option_parboil_does_not_take_is_an_error(saxpy, capfd, argv, message):
    # pb_ReadParameters prints why on stderr and returns NULL; this main then returns -1
    assert saxpy.run(argv, target="cpu") == 255
    captured = capfd.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_a_c_program_with_sub_timers_and_a_timer_of_its_own(timers_c, tmp_path, capfd):
    ints = tmp_path / "ints.txt"
    ints.write_text("4\n2 -3 7 0\n")
    out = tmp_path / "squares.txt"
    assert timers_c.run(["-i", str(ints), "-o", str(out), "30"], target="cpu") == 0
    assert out.read_text().split() == ["4", "9", "49", "0"]
    captured = capfd.readouterr()
    slept = re.search(r"^slept: (\d+\.\d+) \(while running: (\d+\.\d+)\)$", captured.out, re.M)
    assert slept is not None, captured.out
    # a monotonic clock counts at least the 30 ms slept, and a running timer's time so far
    assert 0.030 <= float(slept[2]) <= float(slept[1])
    categories, wall = timer_lines(captured.out)
    names = [name for name, _ in categories]
    assert names == ["IO", " -Input", " -Output", "Kernel", "Copy", "Compute", "Mem_Track", "Mem_Untrack"]
    seconds = dict(categories)
    assert seconds["Compute"] >= 0.030  # (the sleep happened in Compute)
    # IO counts its sub-timers' time, and the moment after the missing sub-timer was asked for
    assert seconds["IO"] + 2e-9 >= seconds[" -Input"] + seconds[" -Output"]
    assert sum(s for n, s in categories if not n.startswith(" -")) <= wall + 1e-8
    assert captured.err.count("parboil: ignoring an attempt to start a running timer") == 1
    assert captured.err.count("parboil: ignoring an attempt to stop a stopped timer") == 1
    assert 'parboil: pb_SwitchToSubTimer: no sub-timer "Missing" in category 1' in captured.err


def test_the_c_program_checks_its_inputs(timers_c, tmp_path, capfd):
    ints = tmp_path / "ints.txt"
    ints.write_text("1\n5\n")
    assert timers_c.run(["-i", f"{ints},{ints}", "-o", str(tmp_path / "o.txt"), "1"], target="cpu") == 255
    assert "Expecting one input file, -o and the milliseconds to sleep" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("tool", "flags"),
    [
        ("cc", ["-std=c89"]),  # neither clock: clock_gettime declared as Linux has it
        ("cc", ["-std=c99"]),  # the same
        ("cc", ["-std=c11"]),  # C11's timespec_get
        ("c++", ["-x", "c++", "-std=c++11"]),
    ],
)
def test_the_header_builds_and_times_in_strict_iso_c(tmp_path, capfd, tool, flags):
    from hpvm.c import hostlib, include_dir, zig

    library = tmp_path / "strict.so"
    cmd = zig.command(
        tool,
        [
            *hostlib.LINK_FLAGS,
            *flags,
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{include_dir()}",
            str(FOLDER / "strict.c"),
        ],
    )
    done = subprocess.run([*cmd, "-o", str(library)], capture_output=True, text=True, env=zig.environment())
    assert done.returncode == 0, done.stderr
    lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
    words = [b"strict", b"-i", b"a,b,c", b"kept", b"-o", b"out"]
    argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
    lib.main.argtypes = [ctypes.c_int, ctypes.c_void_p]
    assert lib.main(len(words), ctypes.cast(argv, ctypes.c_void_p)) == 0
    ctypes.CDLL(None).fflush(None)
    printed = capfd.readouterr().out
    assert "inputs 3, output out, argc 2, argv[1] kept\n" in printed
    categories, wall = timer_lines(printed)
    assert [name for name, _ in categories] == ["Compute"]
    assert 0.002 <= categories[0][1] <= wall  # the timer counted the clock's 2 ms
