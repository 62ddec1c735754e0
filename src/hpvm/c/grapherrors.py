"""A graph call the importer refuses (``hpvm.llvm.GraphCallError``), said in HPVM-C's terms.

Why. GenHPVM turns ``__hpvm__createNodeND`` / ``__hpvm__edge`` / ``__hpvm__bindIn`` /
``__hpvm__bindOut`` into ``llvm.hpvm.*`` calls, and the importer (HPVM's BuildDFG) checks
them: a port index no port has, two ends of different types, a node handle this function did
not create. Its message quotes the LLVM call (``'%call2 = call ptr @llvm.hpvm.createEdge(ptr
%l, ptr %m, i1 true, i32 3, i32 1, i1 false), !dbg !61'``), which a C programmer never wrote.
Here the error becomes ``prog.c:19: __hpvm__edge(l, m, 1, 3, 1, 0) in root: <what is
wrong>; <how to fix it in C>``: the call quoted from the source at its ``!dbg`` line and
column, functions and values by their C names, and a fix for each kind of mistake
(``GRAPH_ERROR_KINDS``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..llvm.errors import GRAPH_ERROR_KINDS, GraphCallError
from .errors import HPVMCError

#: The HPVM-C call each graph intrinsic comes from.
_C_CALLS = {
    "createEdge": "__hpvm__edge",
    "bind.input": "__hpvm__bindIn",
    "bind.output": "__hpvm__bindOut",
    "createNode": "__hpvm__createNodeND",
}
_INTRINSIC = re.compile(r"@llvm\.hpvm\.(createEdge|bind\.input|bind\.output|createNode)")

#: How to fix each kind of mistake, in C.
_FIXES = {
    "input": "a node's inputs are its function's parameters, numbered from 0 (a pointer and its size "
    "are two ports); use the index of the parameter to connect",
    "output": "a node's outputs are the values its function passes to __hpvm__return (after the "
    "count), numbered from 0; use the index of the value to connect",
    "node": "pass a node handle this function got from __hpvm__createNodeND; a node created in another "
    "function is connected there, and reaches this one through that function's __hpvm__bindIn / "
    "__hpvm__bindOut",
    "constant": "write the replication kind, the port indices and the streaming flag as integer constants",
    "type": "connect ports of one C type: a pointer to a pointer (u8[*], u8[:], f32[:] ... in hpvm's "
    "words), a size_t or long to a size_t or long (i64), an int to an int (i32), a float to a float (f32)",
    "part": "an array port is a pointer and its size, two parameters in a row: connect the pointer to "
    "the other pointer and the size to the size after it",
    "companion": "connect the array's pointer too (the parameter just before its size), with a call "
    "of the same kind",
    "function": "pass the name of a node function the program defines; a node function may not create "
    "a node of itself (graphs are acyclic)",
    "size": "a replication size is integer arithmetic (+, -, *, /, %, shifts) of the function's "
    "integer parameters and constants",
    "negative": "a replication size counts the node's instances in that dimension: write 0 or more (a "
    "value the program computes goes in as an integer parameter of this function, checked when the graph "
    "is launched)",
    "computation": "a node function that calls __hpvm__createNodeND only creates nodes, edges and binds, "
    "and computes replication sizes with integer arithmetic (+, -, *, /, %, shifts) of its integer "
    "parameters; move the computation into a leaf, or compute the value on the host and pass it in",
}
assert set(_FIXES) == GRAPH_ERROR_KINDS

#: What is wrong, where the importer's words are LLVM's.
_PROBLEMS = {
    "computation": "this function builds a graph (it calls __hpvm__createNodeND), and this line computes "
    "something that is no node, edge or bind, nor a replication size's integer arithmetic",
}


def c_graph_error(
    e: GraphCallError, place: str | None, source: tuple[str, int, int | None] | None, c_names: dict[str, str]
) -> HPVMCError:
    """``e`` at ``place`` (``file:line`` of the call, as messages name it; the program's
    label when unknown), quoting the C call at ``source`` (file, line, column of its
    ``!dbg``) when the file can be read; ``c_names``: symbol → C (C++) name."""
    m = _INTRINSIC.search(e.call.instruction)
    api = _C_CALLS[m.group(1)] if m else None
    quoted = _call_text(source, api) if source else None

    def c_name(found: re.Match[str]) -> str:
        return c_names.get(found.group(1), found.group(1))

    problem = re.sub(r"@([-\w.$]+)", c_name, _PROBLEMS.get(e.kind, e.problem)).replace(
        "LLVM indices", "indices"
    )
    problem = re.sub(r"%([A-Za-z_]\w*)\b", r"'\1'", problem)  # (a value: its C variable's name)
    function = c_names.get(e.call.function, e.call.function)
    what = f"{quoted or api or 'a statement'} in {function}"
    return HPVMCError(f"{place}: {what}: {problem}; {_FIXES[e.kind]}")


def _call_text(source: tuple[str, int, int | None], api: str | None) -> str | None:
    """The C call ``api(...)`` at ``source``'s line (at its column when it starts there),
    as written (the whole line for another instruction: ``api`` ``None``); ``None`` when
    the file cannot be read or the call is not on that line."""
    file, line, column = source
    try:
        text = Path(file).read_text(errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    if api is None:  # (the statement, without a line comment)
        return " ".join(text.split("//")[0].split()) or None
    starts = [column - 1] if column and text[column - 1 :].startswith(api) else []
    starts += [k.start() for k in re.finditer(re.escape(api) + r"\s*\(", text)]
    if not starts:
        return None
    depth = 0
    for k in range(text.index("(", starts[0]), len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return " ".join(text[starts[0] : k + 1].split())
    return None  # (a call over several lines: the line is named, not quoted)


__all__ = ["c_graph_error"]
