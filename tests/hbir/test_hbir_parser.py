"""The HBIR parser: every construct of the dialect parses to a located tree; malformed text
is an HBIRParseError at file:line:column saying what was expected, never a raw exception."""

from __future__ import annotations

import pytest
from hbir_programs import EXAMPLE_FILES, programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm import HPVMError, ParseError
from hpvm.hbir import HBIRParseError
from hpvm.hbir import ast as A
from hpvm.hbir.parser import parse
from hpvm.hbir.printer import format_program
from markers import fails

SEED_SNIPPETS = """\
target {
    memory g[4] { size 8G; width 8B; };
    memory q { size ?; width ?; };
    tile t[4][4] { memory l [4] { size 16K; width 8B; }; };
}
config {
    group tga[2][4] { tile target.t[x][y]; };
    group tgb[2][4] { tile target.t[x+2][y]; temporal; };
    group grid[target.t.y_max] {
        group row[target.t.x_max] { tile target.t[grid.x][row.x]; };
    };
}
data {
    dim = 500; /* a constant */
    const chunk = 4;
    layout L { global; chunked(chunk); };
    C: int[dim] = block[target.t.x_max][target.t.y_max] { target.g[x][y]; chunked; device; };
    in A : int[3][3] { location : config.t, layout : block }
    out B : bool[3][3] { location : config.t, layout : L }
}
code {
    int g_done_flag = 0;
    float scale;
    config.tga[0][0] { bsg_finish(); }
    config.tga[x][y] {
        for (int i = x+(y*x_max); i < dim; i += x_max*y_max) { C[i] = j-1; }
        for (int i in iterator<dim, L, x, y>) {
            if (i == 0) printf("%d %f\\n", i, 1.5e3);
            else if (!(i > 3) && true || false) break;
            else { i++; continue; }
        }
        while (g_done_flag != 1) { g_done_flag = data.C[0] % 2 / 1 - -1; }
        A[1][2] *= target.t.l.size;
    }
}
"""


def test_every_construct_of_the_dialect_parses() -> None:
    prog = parse(SEED_SNIPPETS, "seed.hbir")
    target, config, data, code = prog.segments
    assert isinstance(target, A.Target) and [type(i).__name__ for i in target.items] == [
        "Memory",
        "Memory",
        "Tile",
    ]
    assert target.items[0].fields == (A.MemField("size", "8G"), A.MemField("width", "8B"))
    assert target.items[1].fields[0].value == "?"
    nested = config.groups[2]
    assert nested.name == "grid" and isinstance(nested.items[0], A.Group)
    assert isinstance(config.groups[1].items[1], A.Temporal)
    assert [type(i).__name__ for i in data.items] == [
        "Const", "Const", "LayoutDecl", "ArrayDecl", "IOArrayDecl", "IOArrayDecl",
    ]  # fmt: skip
    assert data.items[1].const and not data.items[0].const
    assert data.items[3].distribution == A.Distribution(
        "block", (A.Ref(("target", "t", "x_max")), A.Ref(("target", "t", "y_max")))
    )
    assert data.items[5].props[1] == A.Prop("layout", A.Ref(("L",)))
    glob, _, single, spmd = code.items
    assert isinstance(glob, A.VarDecl) and single.indices == (A.IntLit(0), A.IntLit(0))
    loop = spmd.body[0]
    assert isinstance(loop, A.For) and loop.body[0].value == A.Binary("-", A.Ref(("j",)), A.IntLit(1))  # j-1
    forin = spmd.body[1]
    assert isinstance(forin, A.ForIn) and forin.args[1] == A.Ref(("L",))
    branch = forin.body[0]
    assert isinstance(branch.orelse[0], A.If)  # else if
    assert branch.orelse[0].orelse[0] == A.Assign(A.Ref(("i",)), "+=", A.IntLit(1))  # i++
    assert spmd.body[3] == A.Assign(
        A.Index(A.Index(A.Ref(("A",)), A.IntLit(1)), A.IntLit(2)), "*=", A.Ref(("target", "t", "l", "size"))
    )


def test_the_conditional_operator_is_right_associative_and_binds_loosest() -> None:
    block = parse("code { config.t[x] { y = a || b ? 1 : c ? 2 : 3; } }").segments[0].items[0]
    value = block.body[0].value
    assert value == A.Cond(
        A.Binary("||", A.Ref(("a",)), A.Ref(("b",))),
        A.IntLit(1),
        A.Cond(A.Ref(("c",)), A.IntLit(2), A.IntLit(3)),
    )


def test_nodes_carry_their_line_and_column() -> None:
    prog = parse(SEED_SNIPPETS, "seed.hbir")
    code = prog.segments[3]
    lines = SEED_SNIPPETS.splitlines()
    spmd = code.items[3]
    assert lines[spmd.line - 1].lstrip().startswith("config.tga[x][y]") and spmd.column == 5
    sub = spmd.body[0].body[0].value
    assert (sub.line, sub.column) == (spmd.line + 1, lines[spmd.line].index("j-1") + 1)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_examples_parse_and_print_back(path) -> None:
    prog = parse(path.read_text(), str(path))
    assert parse(format_program(prog)) == prog


@pytest.mark.parametrize(
    "text, where, fragments",
    [
        ("code { config.tg[x][y] { x = ; } }", "f.hbir:1:30", ["unexpected ';'", "a name", "an integer"]),
        (
            "target { memory g[4] { size 8G width 8B; }; }",
            "f.hbir:1:32",
            ["unexpected 'width'", "expected ';'"],
        ),
        ("code { int @ }", "f.hbir:1:12", ["unexpected character '@'"]),
        ("code {\n", "f.hbir:2:1", ["unexpected end of the file", "'}'"]),
        ("data { dim = 5 }", "f.hbir:1:16", ["unexpected '}'", "expected ';'"]),
        ("code { config.t[x] { for (int i in iterator<n, L>) { } } }", None, []),  # valid
        (
            "code { config.t[x] { for (int i in iterator<n < 2>) { } } }",
            "f.hbir:1:47",
            ["unexpected '<'", "one of ',', '>'"],
        ),
        ('code { config.t[x] { printf("unterminated); } }', "f.hbir:1:29", ["unexpected character '\"'"]),
        ("segment { }", "f.hbir:1:1", ["'code'", "'config'", "'data'", "'target'"]),
    ],
)
def test_malformed_text_is_located(text: str, where: str | None, fragments: list[str]) -> None:
    if where is None:
        parse(text, "f.hbir")
        return
    with fails(HBIRParseError, where + ":", *fragments) as info:
        parse(text, "f.hbir")
    assert isinstance(info.value, ParseError) and isinstance(info.value, HPVMError)


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    text = "code { config.t[x] { y = " + "(" * 5000 + "1" + ")" * 5000 + "; } }"
    try:
        parse(text, "deep.hbir")
    except HBIRParseError as e:
        assert "nested too deeply" in str(e)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_printed_programs_parse_back_equal(program: A.Program) -> None:
    text = format_program(program)
    assert parse(text) == program
    assert parse(format_program(parse(text))) == parse(text)


def _only_parse_errors(text: str) -> None:
    try:
        parse(text, "fuzz.hbir")
    except HBIRParseError as e:
        assert e.file == "fuzz.hbir" and e.line >= 1 and e.column >= 1


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_programs_fail_only_with_parse_errors(data) -> None:
    text = data.draw(st.sampled_from([SEED_SNIPPETS] + [p.read_text() for p in EXAMPLE_FILES]))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(text)))
        kind = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = data.draw(
            st.sampled_from(list("{}[]();,.<>=+-*/%!&|\"'@#?: \n0aK") + ["if", "for", "//", "/*"])
        )
        if kind == "delete":
            text = text[:pos] + text[pos + data.draw(st.integers(1, 5)) :]
        elif kind == "insert":
            text = text[:pos] + piece + text[pos:]
        else:
            text = text[:pos] + piece + text[pos + 1 :]
    _only_parse_errors(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80) | st.text(alphabet='target{config}data;code[]()xy=0+-<>,." \n/*', max_size=80))
def test_random_text_fails_only_with_parse_errors(text: str) -> None:
    _only_parse_errors(text)
