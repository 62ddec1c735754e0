"""Programs of several files: each source compiled by clang on its own (``-I``, ``-D``
applied to each), the modules linked into one program; errors at the file and line they
are in; ``.ll`` sources beside C ones; the command line's ``FILE... -- ARGS``; and two
programs in one process, one after the other and at the same time."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.cli import main as cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAMS = Path(__file__).parent / "programs"  # (fixed paths: zig's and Numba's caches find them)
TWO = PROGRAMS / "two_files"
KERNELS = (TWO / "kernels.c").read_text()
MAIN = (TWO / "main.c").read_text()


def write(folder: Path, files: dict[str, str]) -> dict[str, Path]:
    paths = {}
    for name, text in files.items():
        paths[name] = folder / name
        paths[name].parent.mkdir(parents=True, exist_ok=True)
        paths[name].write_text(text)
    return paths


@pytest.fixture(scope="module")
def two_files():
    """programs/two_files: main.c (root, main) and kernels.c (the leaf), kernels.h in include/."""
    return {
        "main.c": TWO / "main.c",
        "kernels.c": TWO / "kernels.c",
        "include/kernels.h": TWO / "include" / "kernels.h",
    }


@pytest.fixture(scope="module")
def scaled(two_files):
    """The program compiled twice, with SCALE 2 (the header's default) and -D SCALE=3."""
    sources = [two_files["main.c"], two_files["kernels.c"]]
    inc = [str(two_files["include/kernels.h"].parent)]
    return c.compile(sources, include_dirs=inc), c.compile(sources, defines=["SCALE=3"], include_dirs=inc)


def test_a_node_function_of_another_file_runs(scaled, capfd):
    two, three = scaled
    leaf = two.roots[0].graph.nodes[0].function
    assert leaf.name == "scale_add" and leaf.location.file.endswith("kernels.c")  # where it is defined
    assert two.roots[0].location.file.endswith("main.c")
    assert two.run(["5"]) == 0  # on cpu
    assert three.run(["1"], target="interp") == 0
    assert capfd.readouterr().out == "scale 2, k 5: 0 wrong\nscale 3, k 1: 0 wrong\n"


def test_two_programs_one_after_the_other(scaled, capfd):
    two, three = scaled
    runs = [
        two.run(["1"], target="interp"),
        three.run(["2"], target="interp"),
        two.run(["3"], target="interp"),
    ]
    assert runs == [0, 0, 0]
    assert capfd.readouterr().out.splitlines() == [
        "scale 2, k 1: 0 wrong",
        "scale 3, k 2: 0 wrong",
        "scale 2, k 3: 0 wrong",
    ]


def test_the_command_line_takes_files_includes_defines_and_arguments(two_files, capfd):
    main, kernels = str(two_files["main.c"]), str(two_files["kernels.c"])
    inc = str(two_files["include/kernels.h"].parent)
    assert cli(["c", "run", main, kernels, "-I", inc, "-D", "SCALE=3", "--target", "interp", "--", "4"]) == 0
    assert "scale 3, k 4: 0 wrong" in capfd.readouterr().out
    assert cli(["c", "run", main, kernels, "7", "-I", inc, "--target", "interp"]) == 0  # no --: 7 on
    assert "scale 2, k 7: 0 wrong" in capfd.readouterr().out
    assert cli(["c", "lower", main, kernels, "-I", inc]) == 0
    assert "node @scale_add" in capfd.readouterr().out
    assert cli(["c", "run", main, "-I", inc]) == 1  # kernels.c left out: its functions are missing
    assert "scale_add" in capfd.readouterr().err


def test_an_ll_source_beside_c(two_files, tmp_path, capfd):
    from hpvm.c import clang

    inc = [str(two_files["include/kernels.h"].parent)]
    ll = tmp_path / "kernels.ll"
    ll.write_text(clang.to_llvm(two_files["kernels.c"], include_dirs=inc))
    program = c.compile([two_files["main.c"], ll], include_dirs=inc)
    assert program.run(["2"], target="interp") == 0
    assert "scale 2, k 2: 0 wrong" in capfd.readouterr().out


@pytest.fixture(scope="module")
def rendezvous():
    """programs/rendezvous.c: main waits for the files its arguments name before it launches."""
    path = PROGRAMS / "rendezvous.c"
    return c.compile(path), c.compile(path, defines=["SCALE=3"])


def test_two_programs_at_the_same_time(rendezvous, tmp_path, capfd):
    """B launches only after A has launched, finished and called __hpvm__cleanup while B's
    array was tracked: each run has its own runtime (with one shared, A's cleanup would
    have forgotten B's array and B's launch would fail)."""
    a, b = rendezvous
    f = {name: str(tmp_path / name) for name in ("a1", "a2", "b1", "b2")}
    codes: dict[str, object] = {}

    def go(name, program, argv):
        try:
            codes[name] = program.run(argv, target="interp")
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            codes[name] = e

    threads = [
        threading.Thread(target=go, args=("a", a, [f["a1"], f["a2"], f["b1"]])),
        threading.Thread(target=go, args=("b", b, [f["b1"], f["b2"], f["a1"], f["a2"]])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert codes == {"a": 0, "b": 0}
    assert sorted(capfd.readouterr().out.splitlines()) == [
        "times 2 (run 1): 0 wrong",
        "times 3 (run 1): 0 wrong",
    ]


def test_one_program_twice_at_the_same_time(rendezvous, tmp_path, capfd):
    """Two runs of one CProgram: each has its own instance of the library (its globals)."""
    a, _ = rendezvous
    f = {name: str(tmp_path / name) for name in ("x1", "x2", "y1", "y2")}
    results: list[int] = []
    other = threading.Thread(
        target=lambda: results.append(a.run([f["y1"], f["y2"], f["x1"]], target="interp"))
    )
    other.start()
    results.append(a.run([f["x1"], f["x2"], f["y1"]], target="interp"))
    other.join(timeout=60)
    assert results == [0, 0]
    assert capfd.readouterr().out.splitlines() == ["times 2 (run 1): 0 wrong"] * 2


# -- errors ---------------------------------------------------------------------------


def test_an_error_in_the_second_file_names_it(two_files, tmp_path):
    bad = KERNELS.replace(
        "  a[i] = a[i] * SCALE + k;\n", "  a[i] = a[i] * SCALE + k;\n  __hpvm__return(2, k);  // @ret\n"
    )
    path = write(tmp_path, {"kernels.c": bad})["kernels.c"]
    with fails(c.HPVMCError, f"{path}:{line_of(bad, 'ret')}", "__hpvm__return(2, ...) gives 1 value"):
        c.compile([two_files["main.c"], path], include_dirs=[str(two_files["include/kernels.h"].parent)])


def test_the_importers_error_in_the_second_file_names_it(two_files, tmp_path):
    """A root in the second file binding a port its leaf does not have: BuildDFG's error,
    at the line in that file (the debug location's own file, not the first source's)."""
    main = (
        MAIN.split("void root(")[0]
        + "void root(int *a, size_t bytes_a, int k);\nint main("
        + MAIN.split("int main(")[1]
    )
    graph = (
        '#include "hpvm.h"\n#include "kernels.h"\n'
        "void root(int *a, size_t bytes_a, int k) {\n"
        "  void *n = __hpvm__createNodeND(1, scale_add, bytes_a / sizeof(int));\n"
        "  __hpvm__bindIn(n, 0, 0, 0);\n"
        "  __hpvm__bindIn(n, 1, 1, 0);\n"
        "  __hpvm__bindIn(n, 2, 7, 0);  // @bind\n"
        "}\n"
    )
    paths = write(tmp_path, {"main.c": main, "graph.c": graph})
    with fails(
        c.HPVMCError, f"{paths['graph.c']}:{line_of(graph, 'bind')}", "index 7 is no input of scale_add"
    ):
        c.compile(
            [paths["main.c"], two_files["kernels.c"], paths["graph.c"]], include_dirs=[str(TWO / "include")]
        )


def test_clangs_error_in_the_second_file_names_it(two_files, tmp_path):
    bad = KERNELS.replace("int expected(int i, int k) {", "int expected(int i, int k) { int x = ;  // @bad\n")
    path = write(tmp_path, {"kernels.c": bad})["kernels.c"]
    with fails(c.HPVMCError, f"{path}: clang could not compile it", f"kernels.c:{line_of(bad, 'bad')}"):
        c.compile([two_files["main.c"], path], include_dirs=[str(two_files["include/kernels.h"].parent)])


def test_a_function_defined_twice(two_files, tmp_path):
    again = "#include <stddef.h>\nint expected(int i, int k) { return 0; }  // @again\n"
    path = write(tmp_path, {"again.c": again})["again.c"]
    sources = [two_files["main.c"], two_files["kernels.c"], path]
    with fails(c.HPVMCError, "expected is defined in", "kernels.c and", f"{path}:{line_of(again, 'again')}"):
        c.compile(sources, include_dirs=[str(two_files["include/kernels.h"].parent)])


def test_a_function_no_file_defines(two_files, tmp_path):
    main = MAIN.replace(
        "  int bad = 0;\n", "  int bad = 0;  // @call\n  bad += helper_nowhere(k);  // @call2\n"
    )
    main = main.replace("int main(", "int helper_nowhere(int);\nint main(")
    path = write(tmp_path, {"main.c": main})["main.c"]
    program = c.compile(
        [path, two_files["kernels.c"]], include_dirs=[str(two_files["include/kernels.h"].parent)]
    )
    with fails(c.HPVMCError, f"main.c:{line_of(main, 'call2')}", "calls helper_nowhere", "no source file"):
        program.run()


def test_no_main_in_any_file(two_files, tmp_path):
    path = write(tmp_path, {"root.c": MAIN.split("int main(")[0]})["root.c"]
    sources = [path, two_files["kernels.c"]]
    program = c.compile(sources, include_dirs=[str(two_files["include/kernels.h"].parent)])
    with fails(c.HPVMCError, f"{path}, {two_files['kernels.c']}: no main function"):
        program.run()


@pytest.mark.parametrize(
    ("sources", "fragment"),
    [([], "no source files given"), (["prog.f90"], "not a source file hpvm compiles")],
)
def test_bad_source_lists(tmp_path, sources, fragment):
    for name in sources:
        (tmp_path / name).write_text("")
    with fails(c.HPVMCError, fragment):
        c.compile([tmp_path / s for s in sources])


def test_a_file_given_twice(two_files):
    with fails(c.HPVMCError, "given twice"):
        c.compile([two_files["kernels.c"], two_files["kernels.c"]])


def test_an_invalid_ll_source(two_files, tmp_path):
    ll = tmp_path / "broken.ll"
    ll.write_text("define void @f( {\n")
    with fails(c.HPVMCError, f"{ll}:2: not valid LLVM IR"):  # (the upgrade's message, at the .ll's line)
        c.compile([two_files["main.c"], ll], include_dirs=[str(two_files["include/kernels.h"].parent)])


def test_modules_llvm_cannot_link(two_files, tmp_path):
    """LLVM's linker refuses (appending arrays of different const-ness): its message, naming
    the file it could not link in."""
    a, b = tmp_path / "a.ll", tmp_path / "b.ll"
    a.write_text("@table = appending global [1 x i32] [i32 1]\n")
    b.write_text("@table = appending constant [1 x i32] [i32 2]\n")
    with fails(c.HPVMCError, f"{b}: cannot be linked with {a}", "different const'ness"):
        c.compile([a, b])


def test_an_ll_source_that_is_not_text(tmp_path):
    ll = tmp_path / "binary.ll"
    ll.write_bytes(b"BC\xc0\xde\x35\x14\x00\x00\xff\xfe")  # (LLVM bitcode, not text)
    with fails(c.HPVMCError, f"{ll}: cannot read it as LLVM text"):
        c.compile(ll)


def test_host_code_the_linker_refuses(two_files, tmp_path):
    """Host code that compiles to something the assembler refuses: the linker's messages."""
    ll = tmp_path / "asm.ll"
    ll.write_text('module asm "  not_an_instruction %rax"\n')
    inc = [str(TWO / "include")]
    program = c.compile([two_files["main.c"], two_files["kernels.c"], ll], include_dirs=inc)
    with fails(c.HPVMCError, "the host code could not be linked into a library", "not_an_instruction"):
        program.run()


def test_the_linked_text_keeps_clangs_type_names_whatever_the_process_parsed_before(tmp_path):
    """LLVM's global context keeps the named struct types of every module still alive, and a
    later module defining the same name printed it as ``%struct.opts.0``: the program's text,
    and so its leaves' names and the caches keyed by them (the host library, Numba's disk
    cache), depended on what the process had parsed before -- a second process compiled all
    of CAVA's leaves again. Each file is now parsed in a context of its own."""
    import llvmlite.binding as llvm

    from hpvm.c import sources

    opts = "struct opts { int level; const char *name; };\n"
    files = write(
        tmp_path,
        {
            "a.c": opts + "const char *name_at(struct opts *o, long i) { return o[i].name; }\n",
            "b.c": opts + "int level_at(struct opts *o, long i) { return o[i].level; }\n",
        },
    )
    before = sources.load([files["a.c"], files["b.c"]]).text
    alive = llvm.parse_assembly(before)  # an earlier program, still alive in the process
    after = sources.load([files["a.c"], files["b.c"]]).text
    assert after == before
    assert "%struct.opts = type { i32, ptr }" in after and "%struct.opts." not in after
    del alive
