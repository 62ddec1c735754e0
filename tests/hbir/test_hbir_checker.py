"""The HBIR checker: one test per kind of problem, each located at its line, and every
problem of a program reported together in one HBIRCheckError."""

from __future__ import annotations

import pytest
from hbir_programs import EXAMPLE_FILES

from hpvm import HPVMError, hbir
from hpvm.hbir import HBIRCheckError
from markers import fails

TARGET = (
    "target { memory g[4] { size 8G; width 8B; }; tile t[4][4] { memory l { size 16K; width 8B; }; }; }\n"
)
CONFIG = "config { group tg[4][4] { tile target.t[x][y]; }; }\n"
DATA = "data { dim = 64; layout L { global; chunked(4); }; A: int[dim] = block[4][4] { target.g[x][y]; L; host; }; out C : float[8][8] { location : config.tg, layout : block } }\n"


def program(code: str, target: str = TARGET, config: str = CONFIG, data: str = DATA) -> str:
    return target + config + data + "code {\n" + code + "\n}\n"


def check(text: str) -> None:
    hbir.parse(text, "p.hbir").check()


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_the_examples_check(path) -> None:
    hbir.load(path).check()


def test_a_valid_program_checks() -> None:
    check(
        program(
            "int g = 1;\nconfig.tg[x][y] {\n for (int i in iterator<dim, L, x, y>) { A[i] += g; }\n C[x][y] = 1.5 * x_max; }"
        )
    )


@pytest.mark.parametrize(
    "code, fragment, message",
    [
        # references that do not resolve
        ("config.tg[x][y] { A[0] = chunk_size; }", "chunk_size", "'chunk_size' is not declared"),
        ("config.nogroup[x][y] { }", "nogroup", "'config.nogroup' names no group; groups: tg"),
        ("config.tg[x][y] { for (int i in iterator<dim, M, x, y>) { } }", "iterator", "'M' is not a layout"),
        ("config.tg[x][y] { foo(1); }", "foo", "unknown function 'foo'"),
        # types
        ("config.tg[x][y] { A[0][1] = 2; }", "A[0][1]", "array 'A' has 1 dimension(s) but is indexed with 2"),
        ("config.tg[x][y] { A[1.5] = 2; }", "A[1.5]", "an array index is an int, not a float"),
        ("config.tg[x][y] { int k = A; }", "int k", "array 'A' is used without indices"),
        ("config.tg[x][y] { bool b = true; int k = b + 1; }", "b + 1", "'+' on a bool"),
        ("config.tg[x][y] { float f = 1.5 % 2; }", "1.5 % 2", "'%' takes ints"),
        ("config.tg[x][y] { float f = 1.5; f %= 2; }", "f %= 2", "'%=' takes ints"),
        (
            "config.tg[x][y] { int k = x > 0 ? true : 2; }",
            "int k",
            "the two branches of '?:' are bool and int",
        ),
        ("config.tg[x][y] { dim = 3; }", "dim = 3", "cannot assign to data constant 'dim'"),
        ("config.tg[x][y] { x = 3; }", "x = 3", "cannot assign to tile coordinate 'x'"),
        ("config.tg[x][y] { k = 3; }", "k = 3", "'k' is not declared"),
        ("config.tg[x][y] { int k = 1; int k = 2; }", "int k = 2", "declared twice in the same braces"),
        ("config.tg[x][y] { int A = 1; }", "int A", "'A' is already a data array"),
        ("config.tg[x][y] { int lambda = 1; }", "lambda", "'lambda' is reserved"),
        ('config.tg[x][y] { printf("%d %d\\n", x); }', "printf", "2 conversion(s) but 1 value(s)"),
        ('config.tg[x][y] { printf("%s\\n", x); }', "printf", "'%s' prints a string literal"),
        ('config.tg[x][y] { printf("%d\\n", "x"); }', "printf", "a string is printed with '%s', not '%d'"),
        ('config.tg[x][y] { printf("%p\\n", x); }', "printf", "'%p' is not supported; use %d"),
        ("config.tg[x][y] { printf(x); }", "printf", "first argument is its format string"),
        (
            'config.tg[x][y] { printf("%d%d%d%d%d%d%d%d%d", x, x, x, x, x, x, x, x, x); }',
            "printf",
            "at most 8 values",
        ),
        ("config.tg[dim][y] { }", "config.tg[dim]", "'dim' is already declared in data"),
        ("config.tg[x][y] { bsg_finish(1); }", "bsg_finish", "takes no arguments"),
        ("config.tg[x][y] { break; }", "break", "'break' outside a loop"),
        ("config.tg[x][y] { x + 1; }", "x + 1", "does nothing"),
        # blocks
        ("config.tg[x] { }", "config.tg[x]", "group 'tg' has 2 dimension(s) but the block gives 1"),
        ("config.tg[4][0] { }", "config.tg[4][0]", "tile coordinate 4 is outside group 'tg'"),
        ("config.tg[x][x] { }", "config.tg[x][x]", "names two coordinates"),
        ("config.tg[x][y] { }\nint late = 0;", "int late", "declared after a code block"),
        (
            "config.tg[x][y] { for (int i in iterator<dim, L, x>) { } }",
            "iterator",
            "the 2 coordinate(s) of a tile of group 'tg'",
        ),
    ],
)
def test_code_problems_are_located(code: str, fragment: str, message: str) -> None:
    text = program(code)
    with fails(HBIRCheckError, f"p.hbir:{line_of(text, fragment)}:", message):
        check(text)


@pytest.mark.parametrize(
    "target, config, data, fragment, message",
    [
        # segments
        (TARGET, CONFIG, "", None, "no data segment"),
        # target
        ("target { memory g { width 8G; }; tile t[4][4]; }\n", CONFIG, DATA, "memory g", "'8G' is not a width"),
        ("target { memory g { colour 8B; }; tile t[4][4]; }\n", CONFIG, DATA, "memory g", "has no field 'colour'"),
        # config: unknown tile array, outside it, overlap, bad nesting
        (TARGET, "config { group tg[4][4] { tile target.q[x][y]; }; }", DATA, "target.q", "'target.q' is not a tile array"),
        (TARGET, "config { group tg[4][4] { tile target.t[x+1][y]; }; }", DATA, "group tg", "maps to tile t[4][0], outside the 4x4 tile array"),
        (TARGET, "config { group tg[4][4] { tile target.t[x][y]; }; group tb[2][2] { tile target.t[x+1][y]; }; }", DATA, "group tb",
         "groups 'tg' (line 2) and 'tb' (line 2) overlap: both use tile target.t[1][0]"),
        (TARGET, "config { group tg[4][4] { tile target.t[0][y]; }; }", DATA, "group tg", "maps two members to the same tile target.t[0][0]"),
        (TARGET, "config { group tg[4][4] { }; }", DATA, "group tg", "maps no tiles"),
        (TARGET, "config { group tg[target.t.z_max][4] { tile target.t[x][y]; }; }", DATA, "z_max", "'target.t.z_max' is not declared"),
        # data: undeclared size, unknown layout, partition grid that is no group's, directions
        (TARGET, CONFIG, "data { A: int[dim] = block[4][4] { host; }; }", "dim", "'dim' is not declared"),
        (TARGET, CONFIG, "data { A: int[8] = block[4][4] { Lx; host; }; }", "Lx", "'Lx' in array 'A' is not a flag or a declared layout"),
        (TARGET, CONFIG, "data { A: int[8] = block[3][3] { host; }; }", "block[3][3]", "no group of tiles (groups: tg[4][4]) nor memory array"),
        (TARGET, CONFIG, "data { A: int[8] = block[4][4] { chunked; strided; host; }; }", "strided", "two distributions"),
        (TARGET, CONFIG, "data { A: int[8] = block[4][4] { chunked; }; }", "A: int", "neither host (an input) nor device"),
        (TARGET, CONFIG, "data { A: int[8] = block[4][4] { chunked(0); host; }; }", "chunked(0)", "chunk size of array 'A' is 0"),
        (TARGET, CONFIG, "data { A: int[8] = block[4][4] { target.h[x][y]; host; }; }", "target.h", "'target.h' is not a memory"),
        (TARGET, CONFIG, "data { in A : int[8] { location : config.nope } }", "config.nope", "names no group"),
        (TARGET, CONFIG, "data { in A : int[8] { size : 3 } }", "size : 3", "unknown property 'size'"),
        (TARGET, CONFIG, "data { A: int[8] = block[4] { target.g[x + 1]; host; }; }", "target.g[x + 1]", "part [3] of array 'A' goes to memory target.g[4]"),
        (TARGET, CONFIG, "data { in A : int[8] { } n = 2; }", "n = 2", "constant 'n' is declared after array 'A'"),
        (TARGET, CONFIG, "data { n = 0; in A : int[n] { } }", "in A", "sizes are positive integers"),
    ],
)  # fmt: skip
def test_declaration_problems_are_located(
    target: str, config: str, data: str, fragment: str | None, message: str
) -> None:
    text = program("", target, config, data)
    where = f"p.hbir:{line_of(text, fragment)}:" if fragment else "p.hbir:"
    with fails(HBIRCheckError, where, message):
        check(text)


def test_segments_out_of_order_and_twice() -> None:
    text = CONFIG + TARGET + DATA + "code { }\ncode { }\n"
    with fails(
        HBIRCheckError,
        "comes after the config segment",
        "p.hbir:5:1: a second code segment",
        "(the first is at line 4)",
    ):
        check(text)


def test_all_problems_are_reported_at_once() -> None:
    text = program(
        "config.tg[x][y] { A[0] = nope; }\nconfig.zz[x][y] { }", data=DATA.replace("L; host", "Lq; host")
    )
    with fails(
        HBIRCheckError,
        "3 problems in the HBIR program",
        "'nope' is not declared",
        "'config.zz' names no group",
        "'Lq'",
    ) as info:
        check(text)
    assert len(info.value.problems) == 3 and isinstance(info.value, HPVMError)
    assert all(p.startswith("p.hbir:") for p in info.value.problems)


# ---------------------------------------------------------------------------------------
# No raw exceptions: the checker and the lowering fail only with HBIR errors

from hbir_programs import programs  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hpvm.hbir.printer import format_program  # noqa: E402


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_generated_programs_fail_only_with_check_errors(tree) -> None:
    program = hbir.parse(format_program(tree), "gen.hbir")
    try:
        program.to_hpvm()
    except HBIRCheckError as e:
        assert all(p.startswith("gen.hbir:") for p in e.problems)


MUTATIONS = [
    "x",
    "y",
    "0",
    "1",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "&&",
    "!",
    "(",
    ")",
    "[0]",
    ".x",
    "i",
    "n",
    "dim",
    ";",
]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mutated_examples_fail_only_with_hbir_errors(data) -> None:
    path = data.draw(st.sampled_from(EXAMPLE_FILES))
    words = path.read_text().split(" ")
    for _ in range(data.draw(st.integers(1, 3))):
        k = data.draw(st.integers(0, len(words) - 1))
        words[k] = data.draw(st.sampled_from(MUTATIONS + [""]))
    text = " ".join(words)
    try:
        hbir.parse(text, "mut.hbir").to_hpvm()
    except (hbir.HBIRParseError, HBIRCheckError):
        pass


NESTED_CONFIG = "config { group grid[4] { group row[4] { tile target.t[grid.x][row.x]; }; }; }\n"


@pytest.mark.parametrize(
    "config, data, code, fragment, message",
    [
        (NESTED_CONFIG, "data { }", "config.grid[x] { }", "config.grid[x]", "group 'grid' holds groups, not tiles; write the block for its inner group (row)"),
        ("config { group g[2] { tile target.t[x][0]; group h[1] { tile target.t[3][3]; }; }; }\n", "data { }", "", "group g", "either map its members to tiles"),
        ("config { group tg[4][4] { tile target.t[x][y]; }; group tg[1] { tile target.t[0][0]; }; }\n", "data { }", "", "group tg[1]", "group 'tg' is declared twice"),
        (CONFIG, "data { A: int[8] = chunked[4][4] { host; }; }", "", "chunked[4][4]", "'= chunked[..]' is not a partition"),
        (CONFIG, "data { layout L { block; device; }; }", "", "layout L", "layout 'L' says host/device"),
        (CONFIG, "data { n = 1; n = 2; }", "", "n = 2", "'n' is declared twice in the data segment"),
        (CONFIG, "data { n = 1; }", "int g = 0; int g = 1;", "int g = 1", "'g' is already declared; a global needs a name of its own"),
        (CONFIG, "data { n = 1; }", "config.tg[x][y] { continue; }", "continue", "'continue' outside a loop"),
        (CONFIG, "data { n = 1; }", "config.tg[x][y] { int k = 0; if (k == 0) { int k = 1; } }", "int k = 1", "shadows a variable of an enclosing scope"),
        (CONFIG, "data { n = 4; }", "config.tg[x][y] { for (float i in iterator<n, block, x, y>) { } }", "float i", "an iterator's variable is an int"),
        (CONFIG, "data { n = 4; }", "config.tg[x][y] { for (int x in iterator<n, block, x, y>) { } }", "int x in", "'x' is already declared"),
        (CONFIG, "data { n = 4; }", "config.tg[x][y] { int k = 1 / (2 - 2); }", None, None),  # division by zero at run time: 0, not a check error
        (CONFIG, "data { n = 4 / 0; }", "", "n = 4 / 0", "division by zero in constant 'n'"),
    ],
)  # fmt: skip
def test_more_problems_are_located(
    config: str, data: str, code: str, fragment: str | None, message: str | None
) -> None:
    text = program(code, TARGET, config, data + "\n")
    if fragment is None:
        check(text)
        return
    with fails(HBIRCheckError, f"p.hbir:{line_of(text, fragment)}:", message):
        check(text)


def test_a_duplicate_target_name_is_located() -> None:
    text = program("", "target { memory t { size 1G; }; tile t[4][4]; }\n")
    with fails(HBIRCheckError, "p.hbir:1:", "'t' is declared twice in the target segment"):
        check(text)


@pytest.mark.parametrize(
    "code, data, fragment, message",
    [
        ("config.tg[x][y] {\nA[0] = 99999999999999999999;\n}", DATA, "9999", "does not fit in 64 bits"),
        ("config.tg[x][y] {\nfloat f = 1e400;\n}", DATA, "1e400", "too large for a double"),
        (
            "",
            "data { big = 4611686018427387904 * 4; in A : int[4] { } }\n",
            "big =",
            "constant 'big' is 18446744073709551616, which does not fit in 64 bits",
        ),
    ],
)
def test_literals_and_constants_that_do_not_fit_are_located(
    code: str, data: str, fragment: str, message: str
) -> None:
    text = program(code, data=data)
    with fails(HBIRCheckError, f"p.hbir:{line_of(text, fragment)}:", message):
        check(text)
