"""The text form of a program: every node function reachable from a root, readable and parseable.

The text is what ``hpvm.ir.parser.parse_program`` reads back (print → parse → print is a
fixed point), what saved ``.hpvm`` files hold, and what people read when they debug a graph.
The format is described in docs/text-format.md; in short::

    # hpvm IR v1
    leaf @vadd(a: f32[:], b: f32[:], c: f32[:]) -> () hint(cpu) ins(a, b) outs(c)
    internal @root(a: f32[:], b: f32[:], c: f32[:], n: i64) {
      %vadd = node @vadd[n]
      bind in 0 -> %vadd.0
      ...
    }

Functions are printed children first and the root last (the parser takes the last function
as the root). Two different functions with the same name are told apart by a suffix:
``@f``, ``@f.1``, ``@f.2``. Source locations are not part of the text.

With ``bodies=True`` each leaf carries its body, so the text alone is the program::

    leaf @scale(x: f32[:], n: i64) -> () ins(x) outs(x) python {
      | FACTOR = 2.5
      |
      | def scale(x, n):
      |     ...
    }
    leaf @conv_add(x: f32[:, :, :, :], w: f32[:, :, :, :], b: f32[:]) -> (f32[:, :, :, :]) tensor {
      %0 = convolution(x, w, 1, 1, 1, 1)
      %1 = add(%0, b)
      return %1
    }

A Python body is the leaf's code as a small module (imports, constants, helpers, then the
``def``: ``ir/pysource.py``); an LLVM body (``llvm @fn { | ... }``) the module text; a
generated body (``generated "file" lines(...) { | ... }``) its Python and the line of the
foreign file each of its lines came from. Each line of code text starts with ``|``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable

from .bodies import GeneratedBody, LLVMBody, Operand, PythonBody, TensorBody
from .graph import (
    REPLICATION_NAMES,
    ChildGraph,
    InternalFunction,
    LeafFunction,
    NodeFunction,
    Param,
    functions,
)
from .types import PortType

HEADER = "# hpvm IR v1"
#: Operand and parameter names that would read as numbers in a tensor body: quoted there.
NUMBER_WORDS = frozenset({"inf", "nan"})

BodyChoice = bool | Callable[[LeafFunction], bool]


def print_program(root: InternalFunction, bodies: BodyChoice = False) -> str:
    """The text form of every node function reachable from ``root``, root last.

    ``bodies``: print each leaf's body too (``True``), or those for which it returns true.
    """
    fns = list(functions(root))
    refs = function_refs(fns)
    lines = [HEADER]
    for fn in fns:
        lines.extend(print_function(fn, refs, bodies))
    return "\n".join(lines) + "\n"


def function_refs(fns: Iterable[NodeFunction]) -> dict[int, str]:
    """``id(fn)`` → its reference in the text (``@f``, or ``@f.1`` for a second ``f``)."""
    refs: dict[int, str] = {}
    count: dict[str, int] = {}
    for fn in fns:
        k = count.get(fn.name, 0)
        count[fn.name] = k + 1
        refs[id(fn)] = "@" + quote_name(fn.name) + (f".{k}" if k else "")
    return refs


def print_function(fn: NodeFunction, refs: dict[int, str], bodies: BodyChoice = False) -> list[str]:
    """The lines of one function: a leaf (one line, or with its body), or an internal with
    its child graph."""
    params = ", ".join(print_param(p) for p in fn.params)
    head = f"{refs[id(fn)]}({params})"
    if isinstance(fn, LeafFunction):
        line = f"leaf {head} -> {_types(fn.outputs)}{_attributes(fn)}"
        wanted = bodies(fn) if callable(bodies) else bodies
        return print_body(fn, line) if wanted else [line]
    assert isinstance(fn, InternalFunction)
    declared = fn.declared_outputs
    arrow = f" -> {_types(declared)}" if declared is not None else ""
    # Without a declaration the outputs follow from the output binds; show them as a comment.
    derived = fn.out_types if declared is None else []
    note = f"  # -> {_types(derived)}" if derived else ""
    lines = [f"internal {head}{arrow}{_attributes(fn)} {{{note}"]
    lines.extend("  " + s for s in graph_statements(fn.graph, refs))
    lines.append("}")
    return lines


def print_body(fn: LeafFunction, head: str) -> list[str]:
    """A leaf's declaration line ``head`` followed by its body block."""
    body = fn.body
    if isinstance(body, TensorBody):
        names = [quote_name(p.name, NUMBER_WORDS) for p in fn.params]

        def operand(o: Operand) -> str:
            if o.kind == "param":
                return names[o.value]
            if o.kind == "local":
                return f"%{o.value}"
            return constant_text(o.value)

        lines = [f"{head} tensor {{"]
        for k, call in enumerate(body.calls):
            lines.append(f"  %{k} = {call.op}({', '.join(operand(a) for a in call.args)})")
        lines.append(f"  return {', '.join(operand(r) for r in body.returns)}".rstrip())
        return [*lines, "}"]
    if isinstance(body, PythonBody):
        from .pysource import leaf_module_source  # (it imports the graph module, as we do)

        return [f"{head} python {{", *_code_lines(leaf_module_source(fn)), "}"]
    if isinstance(body, LLVMBody):
        return [f"{head} llvm @{quote_name(body.function)} {{", *_code_lines(body.module), "}"]
    assert isinstance(body, GeneratedBody)
    origin = json.dumps(body.origin)
    context = f" context({quote_name(body.context)})" if body.context else ""
    return [
        f"{head} generated {origin} lines({', '.join(map(str, body.lines))}){context} {{",
        *_code_lines(body.source),
        "}",
    ]


def _code_lines(text: str) -> list[str]:
    """Code text as body lines: each behind ``  | `` (``  |`` for an empty line)."""
    return [f"  | {line}" if line else "  |" for line in text.rstrip("\n").split("\n")]


def constant_text(value: object) -> str:
    """A numeric constant of a tensor body: Python's repr, and ``inf``, ``-inf``, ``nan``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    return repr(value)


def print_param(p: Param) -> str:
    """``name: type``, then the data layout if any: ``a: f32[:] layout(chunked(4), axes(0))``."""
    layout = f" layout({p.layout})" if p.layout is not None else ""
    return f"{quote_name(p.name)}: {p.type}{layout}"


def graph_statements(graph: ChildGraph, refs: dict[int, str]) -> list[str]:
    """Nodes, then edges, then input binds, then output binds, each in creation order."""
    out = []
    for node in graph.nodes:
        fn_ref = refs.get(id(node.function)) or "@" + quote_name(node.function.name)
        sizes = f"[{', '.join(str(s) for s in node.sizes)}]" if node.sizes else ""
        attrs = ", ".join(f"{quote_name(k)} = {json.dumps(v)}" for k, v in sorted(node.attrs.items()))
        out.append(f"{_node(node.name)} = node {fn_ref}{sizes}{f' {{{attrs}}}' if attrs else ''}")
    for e in graph.edges:
        repl = REPLICATION_NAMES.get(e.repl, str(e.repl))
        out.append(f"edge {_node(e.src.name)}.{e.sp} -> {_node(e.dst.name)}.{e.dp} {repl}{_stream(e.stream)}")
    for b in graph.in_binds:
        out.append(f"bind in {b.ip} -> {_node(b.dst.name)}.{b.ic}{_stream(b.stream)}")
    for ob in graph.out_binds:
        out.append(f"bind out {_node(ob.src.name)}.{ob.oc} -> {ob.op}{_stream(ob.stream)}")
    return out


def quote_name(name: str, reserved: frozenset[str] = frozenset()) -> str:
    """A name as written after ``@``/``%`` or as a parameter: bare if an identifier (and not
    one of the ``reserved`` words), else quoted."""
    return name if name.isidentifier() and name not in reserved else json.dumps(name)


def _node(name: str) -> str:
    return "%" + quote_name(name)


def _types(types: Iterable[PortType]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _stream(flag: bool) -> str:
    return " stream" if flag else ""


def _attributes(fn: NodeFunction) -> str:
    parts = []
    if fn.hint is not None:
        parts.append(f"hint({quote_name(fn.hint)})")
    if fn.ins:
        parts.append(f"ins({', '.join(quote_name(n) for n in fn.ins)})")
    if fn.outs:
        parts.append(f"outs({', '.join(quote_name(n) for n in fn.outs)})")
    return "".join(" " + p for p in parts)
