"""Properties of the text-level pieces of HPVM-C, on generated inputs: what a module's
functions and globals reach (``module.py``), the file and line of every debug location in a
program of several files (``debuginfo.py``), the host module's order of constructors and
destructors and its validity as LLVM IR (``hosttext.py``), and the command line's split of
sources from arguments (``cli.py``)."""

from __future__ import annotations

import os

import llvmlite.binding as llvm
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.c.hostjit import host_calls
from hpvm.c.hosttext import MAIN, host_module
from hpvm.c.module import Module
from hpvm.cli import _c_split
from hpvm.ir.debuginfo import DebugInfo

# -- module.py: what a root reaches -----------------------------------------------------


@st.composite
def reference_graphs(draw):
    """Functions f0..fn and globals g0..gm, each naming some of the others."""
    n = draw(st.integers(1, 6))
    m = draw(st.integers(0, 4))
    names = [f"f{k}" for k in range(n)] + [f"g{k}" for k in range(m)]
    edges = {name: draw(st.lists(st.sampled_from(names), max_size=3, unique=True)) for name in names}
    return names, edges


def module_text(names: list[str], edges: dict[str, list[str]]) -> str:
    """LLVM text of the graph: a function loads the globals and calls the functions it names;
    a global is a table of pointers to what it names."""
    lines = []
    for name in names:
        refs = edges[name]
        if name.startswith("g"):
            table = ", ".join(f"ptr @{r}" for r in refs)
            lines.append(
                f"@{name} = global [{len(refs)} x ptr] [{table}]" if refs else f"@{name} = global i32 0"
            )
            continue
        lines.append(f"define void @{name}() {{")
        for k, r in enumerate(refs):
            lines.append(f"  call void @{r}()" if r.startswith("f") else f"  %v{k} = load ptr, ptr @{r}")
        lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n"


@given(reference_graphs(), st.data())
def test_closure_is_reachability(graph, data):
    names, edges = graph
    root = data.draw(st.sampled_from([n for n in names if n.startswith("f")]))
    want, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            todo.extend(edges[name])
    module = Module.parse(module_text(names, edges))
    assert module.closure([root]) == want
    assert set(module.globals) == {n for n in names if n.startswith("g")}


# -- debuginfo.py: locations in a program of several files -------------------------------


@st.composite
def debug_programs(draw):
    """Files, each with functions (subprograms) holding lexical blocks, and instructions
    located in one of those scopes: the metadata in a shuffled order, as a linker leaves it."""
    files = draw(st.lists(st.sampled_from(["main.cc", "io.cc", "inc/io.h", "k.c", "/abs/x.c"]), min_size=1,
                          max_size=4, unique=True))  # fmt: skip
    # clang's folder: the one it ran in (names stay as typed) or another one (a relative
    # name is joined with it, so the user can find the file)
    folder = draw(st.sampled_from([os.getcwd(), "/elsewhere/build"]))
    nodes: list[tuple[int, str]] = []
    ids = iter(range(1, 10_000))
    file_ids = {f: next(ids) for f in files}
    for f, i in file_ids.items():
        nodes.append((i, f'!DIFile(filename: "{f}", directory: "{folder}")'))
    scopes: list[tuple[int, str]] = []
    for f in files:
        for _ in range(draw(st.integers(1, 2))):
            sub = next(ids)
            line = draw(st.integers(1, 500))
            nodes.append((sub, f'distinct !DISubprogram(name: "fn{sub}", scope: !{file_ids[f]}, file: !{file_ids[f]}, line: {line}, spFlags: DISPFlagDefinition)'))  # fmt: skip
            scopes.append((sub, f))
            if draw(st.booleans()):
                block = next(ids)
                nodes.append((block, f"distinct !DILexicalBlock(scope: !{sub}, file: !{file_ids[f]}, line: {line + 1}, column: 3)"))  # fmt: skip
                scopes.append((block, f))
    located = []
    for _ in range(draw(st.integers(1, 8))):
        scope, f = draw(st.sampled_from(scopes))
        loc, line = next(ids), draw(st.integers(1, 9999))
        column = draw(st.sampled_from(["", ", column: 7"]))
        nodes.append((loc, f"!DILocation(line: {line}{column}, scope: !{scope})"))
        shown = f if f.startswith("/") or folder == os.getcwd() else f"{folder}/{f}"
        located.append((f"  call void @g(), !dbg !{loc}", f"{shown}:{line}"))
    order = draw(st.permutations(nodes))
    text = "\n".join(f"!{i} = {body}" for i, body in order) + "\n"
    return text, located


@given(debug_programs())
def test_every_location_names_its_own_file(program):
    text, located = program
    debug = DebugInfo(text)
    for instruction, where in located:
        assert debug.where(instruction) == where
        assert debug.line_of(instruction) == int(where.rsplit(":", 1)[1])
        assert debug.place(instruction) == where  # (nothing inlined)
    assert debug.where("  ret void") is None
    assert debug.place("  ret void") is None


@given(
    st.lists(st.tuples(st.sampled_from(["graph.cpp", "inc/comp.h", "util.h"]), st.integers(1, 99)), min_size=1, max_size=5),
    st.booleans(),
)  # fmt: skip
def test_an_inlined_access_is_placed_at_its_outermost_call_then_where_it_is(chain, cycle) -> None:
    """``chain``: the (file, line) of an access, then of each call it was inlined through,
    each location ``inlinedAt`` the next (``cycle``: the last points back at the first, as
    malformed metadata could — still an answer, never a hang)."""
    files = sorted({f for f, _ in chain})
    text = [f'!{100 + k} = !DIFile(filename: "{f}", directory: "{os.getcwd()}")' for k, f in enumerate(files)]
    text += [
        f'!{200 + k} = distinct !DISubprogram(name: "f{k}", file: !{100 + k}, line: 1)'
        for k in range(len(files))
    ]
    for k, (f, line) in enumerate(chain):
        after = k + 1 if k + 1 < len(chain) else (0 if cycle and len(chain) > 1 else None)
        inlined = f", inlinedAt: !{300 + after}" if after is not None else ""
        text.append(
            f"!{300 + k} = !DILocation(line: {line}, column: 3, scope: !{200 + files.index(f)}{inlined})"
        )
    debug = DebugInfo("\n".join(text) + "\n")
    access = "  %v = load i32, ptr %p, align 4, !dbg !300"
    inner = f"{chain[0][0]}:{chain[0][1]}"
    outer = inner if len(chain) == 1 else f"{chain[-1][0]}:{chain[-1][1]}"
    assert debug.where(access) == inner
    assert debug.place(access) == (inner if outer == inner else f"{outer} (in {inner}, inlined)")


# -- hosttext.py: constructors, destructors, a module that verifies -----------------------


def _xtor_table(name: str, entries: list[tuple[int, str]]) -> str:
    items = ", ".join(f"{{ i32, ptr, ptr }} {{ i32 {p}, ptr @{f}, ptr null }}" for p, f in entries)
    return f"@{name} = appending global [{len(entries)} x {{ i32, ptr, ptr }}] [{items}]"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(101, 65535), max_size=5),
    st.lists(st.integers(101, 65535), max_size=5),
    st.booleans(),
    st.booleans(),
)
def test_host_module_orders_constructors_and_verifies(ctor_prios, dtor_prios, main_args, cxx):
    ctors = [(p, f"ctor{k}") for k, p in enumerate(ctor_prios)]
    dtors = [(p, f"dtor{k}") for k, p in enumerate(dtor_prios)]
    lines = [f"define void @{f}() {{\n  ret void\n}}" for _, f in ctors + dtors]
    if ctors:
        lines.append(_xtor_table("llvm.global_ctors", ctors))
    if dtors:
        lines.append(_xtor_table("llvm.global_dtors", dtors))
    main = "define i32 @main(i32 %argc, ptr %argv) {" if main_args else "define i32 @main() {"
    lines += [
        "declare void @__hpvm__init()",
        "declare ptr @__hpvm__getNode()",  # a node call: defined as a trap in the host
        "define void @root(i32 %x) {\n  %n = call ptr @__hpvm__getNode()\n  ret void\n}",
        f"{main}\n  call void @__hpvm__init()\n  ret i32 0\n}}",
    ]
    host = host_module("\n".join(lines) + "\n", {"root"}, ["root"], host_calls(), cxx)
    assert host.main_params == (("i32", "ptr") if main_args else ())
    wrapper = host.text.split(f"@{MAIN}(", 1)[1]
    called = [w.split("@", 1)[1].split("(")[0] for w in wrapper.splitlines() if "void @ctor" in w]
    assert called == [f for _, f in sorted(ctors, key=lambda e: e[0])]  # lowest priority first, stable
    finish = host.text.split("__hpvm_c.finish() {", 1)[1].split("}", 1)[0]
    ended = [w.split("@", 1)[1].split("(")[0] for w in finish.splitlines() if "void @dtor" in w]
    assert ended == [f for _, f in sorted(reversed(dtors), key=lambda e: -e[0])]
    assert "llvm.global_ctors" not in host.text and "llvm.global_dtors" not in host.text
    module = llvm.parse_assembly(host.text)
    module.verify()
    root = module.get_function("root")
    assert "llvm.trap" in str(root) and "__hpvm__getNode" not in str(root)


# -- cli.py: sources, then the program's arguments ---------------------------------------

_SOURCE = st.sampled_from(["a.c", "b.cc", "dir/c.cpp", "d.cxx", "e.ll"])
_WORD = st.sampled_from(["7", "data.txt", "-v", "out", "x.c.txt", "A.bin"])


@given(_SOURCE, st.lists(_SOURCE, max_size=3), st.lists(st.one_of(_WORD, _SOURCE), max_size=4))
def test_sources_then_arguments(first, more, rest):
    words = [first, *more, *rest]
    files, args = _c_split(words)
    assert files + args == words
    assert files[0] == first and len(files) >= 1 + len(more)
    if args:
        assert not args[0].endswith((".c", ".cc", ".cpp", ".cxx", ".ll"))
