"""Parse the text form of a program (grammar.lark) back into node functions.

``parse_program(text)`` returns the root: the last function in the text. Functions may refer
to functions defined later, and graph statements to nodes declared later, so the parse is
done in two passes — declare every function, then build each child graph. Every mistake is
a ``ParseError`` carrying the file, line and column: lark's syntax errors are translated,
and semantic ones (an unknown ``@function`` or ``%node``, a bad type, a repeated name) are
reported at the offending token. Rules that do not concern the text itself (port types that
do not match, a missing feed, ...) are left to ``hpvm.verify``, so that any program, valid
or not, can be written down and read back.

A leaf may carry its body (``print_program(root, bodies=True)`` writes them): a tensor body
becomes a ``TensorBody``; a Python body (module text) is compiled with the text's own file
name and line numbers, and its last ``def`` becomes the leaf's code — checked against the
leaf's parameters from its syntax tree, and *not run*: parsing a program runs none of its
code, the text runs when the leaf must run (``ir/moduletext.py``); LLVM and generated
bodies become ``LLVMBody`` and ``GeneratedBody`` (generated Python waits to run the same
way). A leaf without a body has no code: its ``pyfunc`` raises ``CompileError`` when
called, and asking for its ``source`` raises ``OSError`` (the verifier then skips the
source checks). ``leaf_factory`` lets a caller (the ``.hpvm`` loader) supply the code.
"""

from __future__ import annotations

import difflib
import functools
import json
import linecache
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import CompileError, ParseError, SourceLocation
from .bodies import LLVMBody, OpCall, Operand, PythonBody, TensorBody
from .expr import MAX_EXPR_DEPTH, BinOp, Call, Const, Expr, Shape
from .expr import Param as ParamExpr
from .graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
    Param,
)
from .layouts import KINDS, Layout, axes_problem, kind_problem
from .moduletext import ModuleText
from .printer import quote_name
from .pysource import generated_body
from .types import PortType, parse_type

MAX_DIMS = 3
#: Integers in the text (ports, sizes, layouts, line numbers, tensor constants) are 64-bit
#: values: a literal of more digits than that is a mistake, and Python refuses to convert
#: one of more than 4300 digits at all.
MAX_INT_DIGITS = 19


@dataclass(frozen=True)
class ParsedBody:
    """A leaf's body as the text wrote it: ``kind`` and its code text (or tensor body)."""

    kind: str  # "python", "llvm", "generated" or "tensor"
    file: str
    line: int  # the line of the body's first code line (or of the block)
    text: str = ""  # the code: each "| " line without its marker
    function: str = ""  # llvm: the function's name
    origin: str = ""  # generated: the foreign file
    lines: tuple[int, ...] = ()  # generated: the foreign line of each code line
    context: str | None = None  # generated: the parameter that receives the instance context
    tensor: TensorBody | None = None


class LeafFactory(Protocol):
    """Makes the ``LeafFunction`` for a ``leaf`` declaration (e.g. with code from a file)."""

    def __call__(
        self,
        name: str,
        params: list[Param],
        outputs: list[PortType],
        *,
        ref: str,
        hint: str | None,
        ins: tuple[str, ...],
        outs: tuple[str, ...],
        location: SourceLocation,
        body: ParsedBody | None = None,
    ) -> LeafFunction: ...


@functools.cache
def _lark() -> Lark:
    grammar = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)


@functools.cache
def _layout_lark() -> Lark:
    """The same grammar, started at ``layout_spec``: what ``hpvm.Layout.parse`` reads."""
    grammar = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        start="layout_spec",
    )


def parse_layout(text: str, file: str = "<layout>") -> Layout:
    """A data layout from its text spelling (``chunked(4), axes(0)``), as in the IR text.

    Malformed text is a ``ParseError`` with the line and column inside ``text``.
    """
    if not isinstance(text, str):
        raise TypeError(f"a layout's text spelling is a string like 'chunked(4)', not {text!r}")
    try:
        tree = _layout_lark().parse(text)
    except UnexpectedInput as e:
        raise ParseError(_syntax_message(e, text), e.line, e.column, file) from None
    return _Builder(file, no_code_leaf).layout(tree)


def parse_program(
    text: str, file: str = "<text>", leaf_factory: LeafFactory | None = None
) -> InternalFunction:
    """Parse a whole program; the last function in the text is the root and must be internal."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise ParseError(_syntax_message(e, text), e.line, e.column, file) from None
    cached = linecache.cache.get(file)
    if "|" in text and (cached is None or len(cached) != 4 or cached[1] is not None):
        register_code_view(file, text)  # (unless a loader registered the whole file's view)
    return _Builder(file, leaf_factory or no_code_leaf).program(tree)


_CODE_LINE = re.compile(r"^[ \t]*\|(?: |$)?")


def register_code_view(file: str, text: str) -> None:
    """Let ``linecache`` (tracebacks, ``inspect``) read the Python of ``text``'s bodies.

    Body code runs at the lines of the text it was read from, but those lines start with
    ``|``; the view registered for ``file`` has each code line without its marker, every
    other line as it is — so a helper defined in a body can be found and saved again.
    """
    lines = [_CODE_LINE.sub("", line, count=1) for line in text.split("\n")]
    view = [line + "\n" for line in lines]
    linecache.cache[file] = (len(text), None, view, file)


_FUNCTION_REF = re.compile(
    r'@?(?P<name>[^\W\d]\w*|"(?:[^"\\\n]|\\["\\bfnrt]|\\u[0-9a-fA-F]{4})*")(?:\.(?P<index>[0-9]+))?'
)


def parse_function_ref(ref: str) -> tuple[str, int]:
    """``@f.1`` (or ``f.1``) → (``"f"``, 1); ``@"a b"`` → (``"a b"``, 0).

    Raises ``ValueError`` for text that is not a function reference.
    """
    m = _FUNCTION_REF.fullmatch(ref)
    if m is None:
        raise ValueError(f"{ref!r} is not a function reference like @name or @name.1")
    index = m["index"] or "0"
    if len(index) > MAX_INT_DIGITS:
        raise ValueError(f"the index of {ref[:40]}... has {len(index)} digits; it is a small integer")
    return _unquote(m["name"]), int(index)


def no_code_leaf(
    name: str,
    params: list[Param],
    outputs: list[PortType],
    *,
    ref: str,
    hint: str | None,
    ins: tuple[str, ...],
    outs: tuple[str, ...],
    location: SourceLocation,
    body: ParsedBody | None = None,
) -> LeafFunction:
    """The default leaf factory: the leaf of its body, or without one a leaf whose code
    raises ``CompileError`` when it runs."""
    if body is not None:
        return leaf_from_body(name, params, outputs, hint, ins, outs, location, body, ref=ref)

    def no_code(*args: Any) -> Any:
        raise CompileError(
            f"leaf '{name}' ({location}) was read from HPVM IR text and has no Python code; "
            "load the program from a .hpvm file (hpvm.ir.program_file.load_program) or pass "
            "leaf_factory= to parse_program"
        )

    # A file name that no source can be found for: ``LeafFunction.source`` raises OSError,
    # as it does for any function without source, instead of showing this stub's code.
    no_code.__code__ = no_code.__code__.replace(co_filename=f"<no code for leaf {name}>")
    no_code.__name__ = no_code.__qualname__ = name
    return LeafFunction(no_code, name, params, outputs, hint=hint, ins=ins, outs=outs, location=location)


def python_leaf(
    module: ModuleText,
    ref: str,
    name: str,
    params: list[Param],
    outputs: list[PortType],
    hint: str | None,
    ins: tuple[str, ...],
    outs: tuple[str, ...],
) -> LeafFunction:
    """The leaf whose code is ``module``'s last ``def`` (not run: see the module doc), which
    must take the leaf's parameters, in order — a ``ParseError`` at the ``def`` otherwise."""
    names, expected = module.parameters(), [p.name for p in params]
    if names != expected:
        raise module.error(
            f"the def of leaf {ref} takes ({', '.join(names)}) but the IR declares ({', '.join(expected)})",
            module.def_line,
        )
    body = PythonBody(None, module.def_source, module.def_line, module=module)
    where = SourceLocation(module.file, module.def_line)
    return LeafFunction(None, name, params, outputs, hint=hint, ins=ins, outs=outs, location=where, body=body)


def leaf_from_body(
    name: str,
    params: list[Param],
    outputs: list[PortType],
    hint: str | None,
    ins: tuple[str, ...],
    outs: tuple[str, ...],
    location: SourceLocation,
    body: ParsedBody,
    ref: str | None = None,
) -> LeafFunction:
    """The leaf a parsed body makes (``ref``: the leaf as the text refers to it, ``@name``
    by default). Python and generated code are compiled here, and run when the leaf must."""
    if body.kind == "tensor":
        assert body.tensor is not None
        return LeafFunction(
            None, name, params, outputs, hint=hint, ins=ins, outs=outs, location=location, body=body.tensor
        )
    if body.kind == "llvm":
        llvm = LLVMBody(body.text, body.function)
        return LeafFunction(
            None, name, params, outputs, hint=hint, ins=ins, outs=outs, location=location, body=llvm
        )
    if body.kind == "generated":
        return LeafFunction(
            None,
            name,
            params,
            outputs,
            hint=hint,
            ins=ins,
            outs=outs,
            location=location,
            body=generated_body(
                name, body.text, body.origin, body.lines, (body.file, body.line), body.context
            ),
        )
    ref = ref or f"@{quote_name(name)}"
    module = ModuleText(body.text, body.line, body.file, f"leaf {ref}", location.line)
    return python_leaf(module, ref, name, params, outputs, hint, ins, outs)


# ---------------------------------------------------------------------------------------
# Syntax errors


_TOKEN_NAMES = {
    "FUNC": "a function like @name",
    "NODE": "a node like %name",
    "NAME": "a name",
    "STRING": 'a "quoted name"',
    "INT": "an integer",
    "ONE_TO_ONE": "one_to_one",
    "ALL_TO_ALL": "all_to_all",
    "STREAM": "stream",
    "$END": "the end of the text",
}


def _describe_terminal(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    for term in _lark().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name


def _syntax_message(e: UnexpectedInput, text: str) -> str:
    expected: set[str] = set()
    if isinstance(e, UnexpectedToken):
        expected = set(e.accepts or e.expected)
        found = "end of the text" if e.token.type == "$END" else f"'{e.token}'"
    elif isinstance(e, UnexpectedCharacters):
        expected = set(e.allowed or ())
        found = f"character {text[e.pos_in_stream]!r}"
    elif isinstance(e, UnexpectedEOF):
        expected = set(e.expected)
        found = "end of the text"
    else:  # pragma: no cover - lark has no other kinds today
        found = "input"
    wanted = sorted({_describe_terminal(t) for t in expected})
    message = f"unexpected {found}"
    if wanted:
        if len(wanted) > 8:
            wanted = wanted[:8] + ["..."]
        message += f"; expected {' or '.join(wanted) if len(wanted) <= 2 else 'one of: ' + ', '.join(wanted)}"
    return message


# ---------------------------------------------------------------------------------------
# From the parse tree to node functions


def _suggest(word: str, known: list[str], intro: str) -> str:
    """``did you mean @x?`` for a near miss, else the known names (the first ten)."""
    close = difflib.get_close_matches(word, known, n=1)
    if close:
        return f"did you mean {close[0]}?"
    if not known:
        return f"{intro} none"
    more = ", ..." if len(known) > 10 else ""
    return f"{intro} {', '.join(known[:10])}{more}"


def _code_text(tok: Token) -> str:
    """A code line's text: what follows its ``|`` and one space."""
    text = str(tok)[1:]
    return text[1:] if text.startswith(" ") else text


def _unquote(text: str) -> str:
    """A name as written: bare, or a JSON string (the grammar admits only valid escapes)."""
    return json.loads(text, strict=False) if text.startswith('"') else text


@dataclass
class _Declared:
    """A function declared by the first pass, with the tree of its body for the second."""

    fn: NodeFunction
    tree: Tree
    ref: Token


@dataclass
class _GraphScope:
    fn: InternalFunction
    nodes: dict[str, Node] = field(default_factory=dict)


class _Builder:
    def __init__(self, file: str, leaf_factory: LeafFactory):
        self.file = file
        self.leaf_factory = leaf_factory
        self.functions: dict[tuple[str, int], _Declared] = {}

    def error(self, message: str, where: Token | Tree) -> ParseError:
        if isinstance(where, Tree):
            line, column = where.meta.line, where.meta.column
        else:
            line, column = where.line, where.column
        return ParseError(message, line or 0, column or 0, self.file)

    def int(self, tok: Token, text: str | None = None) -> int:
        """The integer ``tok`` spells (``text``: its digits, when the token has a prefix such
        as ``%``); a ``ParseError`` at the token for one too long to be a 64-bit value."""
        digits = str(tok) if text is None else text
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise self.error(
                f"the integer {digits[:24]}... has {len(digits.lstrip('-'))} digits; integers in the "
                f"text form are 64-bit values (at most {MAX_INT_DIGITS} digits)",
                tok,
            )
        return int(digits)

    def function_ref(self, tok: Token) -> tuple[str, int]:
        """``parse_function_ref`` of a token, its mistakes reported at the token."""
        try:
            return parse_function_ref(tok)
        except ValueError as e:
            raise self.error(str(e), tok) from None

    def location(self, where: Token | Tree) -> SourceLocation:
        line = where.meta.line if isinstance(where, Tree) else where.line
        return SourceLocation(self.file, line or 0)

    # -- pass 1: declarations --------------------------------------------------------------

    def program(self, tree: Tree) -> InternalFunction:
        declared = [self.declare(t) for t in tree.children]
        if not declared:
            raise ParseError(
                "the text defines no function; a program needs a root internal function", 1, 1, self.file
            )
        for d in declared:
            if isinstance(d.fn, InternalFunction):
                self.build_graph(d)
        root = declared[-1]
        if not isinstance(root.fn, InternalFunction):
            raise self.error(
                f"the last function is the root and must be internal, but {root.ref} is a leaf; "
                "put the root internal function last",
                root.tree,
            )
        return root.fn

    def declare(self, tree: Tree) -> _Declared:
        ref_tok: Token = tree.children[0]
        key = self.function_ref(ref_tok)
        if key in self.functions:
            first = self.functions[key].ref
            raise self.error(f"function {ref_tok} is defined twice (first at line {first.line})", ref_tok)
        name = key[0]
        params = self.params(tree.children[1])
        outputs_tree = tree.children[2]
        outputs = self.outputs(outputs_tree) if outputs_tree is not None else None
        attrs = [t for t in tree.children[3:] if isinstance(t, Tree) and t.data in ("hint", "ins", "outs")]
        hint, ins, outs = self.attributes(attrs, ref_tok)
        location = self.location(tree)
        fn: NodeFunction
        if tree.data == "leaf_fn":
            body_tree = tree.children[-1]
            body = self.body(body_tree, params) if isinstance(body_tree, Tree) else None
            fn = self.leaf_factory(
                name,
                params,
                outputs or [],
                ref=str(ref_tok),
                hint=hint,
                ins=ins,
                outs=outs,
                location=location,
                body=body,
            )
        else:
            fn = InternalFunction(
                name,
                params,
                graph=ChildGraph(),
                hint=hint,
                ins=ins,
                outs=outs,
                location=location,
                declared_outputs=outputs,
            )
        decl = _Declared(fn, tree, ref_tok)
        self.functions[key] = decl
        return decl

    # -- leaf bodies -------------------------------------------------------------------------

    def body(self, tree: Tree, params: list[Param]) -> ParsedBody:
        kind = tree.data.removesuffix("_body")
        if kind == "tensor":
            return ParsedBody("tensor", self.file, tree.meta.line or 0, tensor=self.tensor_body(tree, params))
        code = [t for t in tree.children if isinstance(t, Token) and t.type == "CODE_LINE"]
        text = "\n".join(_code_text(t) for t in code) + "\n"
        first = code[0].line if code else (tree.meta.line or 0)
        if kind == "llvm":
            fn_tok = tree.children[0]
            return ParsedBody("llvm", self.file, first, text, function=self.function_ref(fn_tok)[0])
        if kind == "generated":
            origin_tok = tree.children[0]
            lines = tuple(self.int(t) for t in tree.children[1:] if isinstance(t, Token) and t.type == "INT")
            if len(lines) != len(code):
                raise self.error(
                    f"a generated body maps each of its code lines to a line of {origin_tok}: it has "
                    f"{len(code)} code line(s) but lines(...) lists {len(lines)}",
                    origin_tok,
                )
            context_tree = next(
                (t for t in tree.children if isinstance(t, Tree) and t.data == "body_context"), None
            )
            context = _unquote(context_tree.children[0]) if context_tree is not None else None
            return ParsedBody(
                "generated", self.file, first, text, origin=_unquote(origin_tok), lines=lines, context=context
            )
        return ParsedBody("python", self.file, first, text)

    def tensor_body(self, tree: Tree, params: list[Param]) -> TensorBody:
        """``%k = op(operands)`` statements in order, then ``return operands``."""
        from .tensorops import OPS  # (the tensor intrinsics' table: it imports nothing of ours above)

        index = {p.name: i for i, p in enumerate(params)}
        calls: list[OpCall] = []

        def operand(t: Tree) -> Operand:
            tok = t.children[0]
            if t.data == "local_operand":
                k = self.int(tok, str(tok)[1:])
                if k >= len(calls):
                    raise self.error(
                        f"{tok} is used before it is computed (results so far: {len(calls)})", tok
                    )
                return Operand("local", k)
            if t.data == "const_operand":
                text = str(tok)
                value: Any = float(text) if any(c in text for c in ".eEn") else self.int(tok)
                return Operand("const", value)
            name = _unquote(tok)
            if name not in index:
                raise self.error(
                    f"operand '{name}' is not a parameter of the leaf ({', '.join(index) or 'none'})", tok
                )
            return Operand("param", index[name])

        for stmt in tree.children:
            if not isinstance(stmt, Tree) or stmt.data != "tensor_call":
                continue
            local_tok, op_tok, *args = stmt.children
            if self.int(local_tok, str(local_tok)[1:]) != len(calls):
                raise self.error(
                    f"the results are numbered in order: expected %{len(calls)}, not {local_tok}", local_tok
                )
            op = OPS.get(str(op_tok))
            if op is None:
                raise self.error(
                    f"unknown tensor operation {op_tok}; {_suggest(str(op_tok), sorted(OPS), 'they are')}",
                    op_tok,
                )
            operands = tuple(operand(a) for a in args if a is not None)
            if len(operands) != len(op.params):
                raise self.error(
                    f"{op_tok} takes {len(op.params)} operands ({', '.join(op.params)}), {len(operands)} given",
                    op_tok,
                )
            calls.append(OpCall(op.name, operands, op_tok.line or 0))
        ret = next(c for c in tree.children if isinstance(c, Tree) and c.data == "tensor_return")
        returns = tuple(operand(a) for a in ret.children if a is not None)
        return TensorBody(tuple(calls), returns)

    def params(self, tree: Tree) -> list[Param]:
        out = []
        for p in tree.children:
            if p is None:  # "()"
                continue
            name_tok, type_tree, layout_tree = p.children
            layout = self.layout(layout_tree.children[0]) if layout_tree is not None else None
            out.append(Param(_unquote(name_tok), self.type(type_tree), layout))
        return out

    def layout(self, tree: Tree) -> Layout:
        """A ``layout_spec``: a kind, a chunk size for ``chunked``, and optional ``axes(...)``.

        What only the verifier can judge (a chunk of 0, an axis beyond the array's rank, a
        layout on a scalar) is accepted here, so that any program can be read back.
        """
        kind_tok, chunk_tok, axes_tree = tree.children
        kind = str(kind_tok)
        if kind not in KINDS:
            close = difflib.get_close_matches(kind, KINDS, n=1)
            hint = (
                f"did you mean {close[0]}?"
                if close
                else "the layouts are block, chunked(N), strided, replicated"
            )
            raise self.error(f"unknown layout '{kind}'; {hint}", kind_tok)
        chunk = self.int(chunk_tok) if chunk_tok is not None else None
        problem = kind_problem(kind, chunk)
        if problem is not None:
            raise self.error(problem, chunk_tok if chunk_tok is not None else kind_tok)
        axes = None
        if axes_tree is not None:
            entries = [t.children[0] for t in axes_tree.children if t is not None]
            axes = tuple(None if tok.type == "NO_AXIS" else self.int(tok) for tok in entries)
            problem = axes_problem(kind, axes)
            if problem is not None:
                raise self.error(problem, axes_tree)
        return Layout(kind, chunk, axes)

    def outputs(self, tree: Tree) -> list[PortType]:
        return [self.type(t) for t in tree.children if t is not None]

    def type(self, tree: Tree) -> PortType:
        name_tok, dims = tree.children
        marks = [":" if d.data == "sized_dim" else "*" for d in dims.children] if dims is not None else []
        text = str(name_tok) if dims is None else f"{name_tok}[{', '.join(marks)}]"
        try:
            return parse_type(text)
        except (TypeError, ValueError) as e:
            raise self.error(str(e), name_tok) from None

    def attributes(
        self, trees: list[Tree], ref: Token
    ) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
        hint: str | None = None
        names: dict[str, tuple[str, ...]] = {"ins": (), "outs": ()}
        seen: set[str] = set()
        for t in trees:
            if t.data in seen:
                raise self.error(f"{ref} has two {t.data}(...) attributes", t)
            seen.add(t.data)
            if t.data == "hint":
                hint = _unquote(t.children[0])
            else:
                names[t.data] = tuple(_unquote(c) for c in t.children if c is not None)
        return hint, names["ins"], names["outs"]

    # -- pass 2: child graphs --------------------------------------------------------------

    def build_graph(self, decl: _Declared) -> None:
        fn = decl.fn
        assert isinstance(fn, InternalFunction)
        graph = fn.graph
        scope = _GraphScope(fn)
        stmts = [s for s in decl.tree.children[3:] if isinstance(s, Tree) and s.data.endswith("_stmt")]
        for s in stmts:
            if s.data == "node_stmt":
                graph.nodes.append(self.node(s, scope))
        for s in stmts:
            if s.data == "edge_stmt":
                graph.edges.append(self.edge(s, scope))
            elif s.data == "bind_in_stmt":
                graph.in_binds.append(self.bind_in(s, scope))
            elif s.data == "bind_out_stmt":
                graph.out_binds.append(self.bind_out(s, scope))

    def node(self, tree: Tree, scope: _GraphScope) -> Node:
        name_tok, fn_tok, sizes, attrs_tree = tree.children
        name = _unquote(name_tok[1:])
        if name in scope.nodes:
            raise self.error(
                f"node {name_tok} is declared twice in @{quote_name(scope.fn.name)}; node names are unique "
                "in a child graph",
                name_tok,
            )
        target = self.functions.get(self.function_ref(fn_tok))
        if target is None:
            raise self.unknown_function(fn_tok)
        exprs = tuple(self.expr(e, 1) for e in sizes.children if e is not None) if sizes is not None else ()
        if len(exprs) > MAX_DIMS:
            raise self.error(
                f"node {name_tok} has {len(exprs)} dimensions; nodes are replicated in at most "
                "three dimensions (x, y, z)",
                sizes,
            )
        attrs: dict[str, str] = {}
        for item in attrs_tree.children if attrs_tree is not None else ():
            if item is None:
                continue
            key_tok, value_tok = item.children
            key = _unquote(key_tok)
            if key in attrs:
                raise self.error(f"node {name_tok} has two attributes named '{key}'", key_tok)
            attrs[key] = _unquote(value_tok)
        node = Node(name, target.fn, exprs, self.location(tree), attrs)
        scope.nodes[name] = node
        return node

    def unknown_function(self, tok: Token) -> ParseError:
        refs = [str(d.ref) for d in self.functions.values()]
        return self.error(f"unknown function {tok}; {_suggest(str(tok), refs, 'the text defines')}", tok)

    def node_ref(self, tok: Token, scope: _GraphScope) -> Node:
        node = scope.nodes.get(_unquote(tok[1:]))
        if node is None:
            known = ["%" + quote_name(n) for n in scope.nodes]
            hint = _suggest(str(tok), known, "its nodes are")
            raise self.error(f"unknown node {tok} in @{quote_name(scope.fn.name)}; {hint}", tok)
        return node

    def port(self, tree: Tree, scope: _GraphScope, kind: str) -> tuple[Node, int]:
        """``%n.3``, or ``%n.name`` for an input port given by parameter name."""
        node_tok, port_tok = tree.children
        node = self.node_ref(node_tok, scope)
        return node, self.port_index(port_tok, node.function, kind, f"{node_tok}")

    def port_index(self, tok: Token, fn: NodeFunction, kind: str, owner: str) -> int:
        if tok.type == "INT":
            return self.int(tok)
        if kind == "output":
            raise self.error(f"output ports are numbered: write {owner}.0, not {owner}.{tok}", tok)
        index = fn.param_index(_unquote(tok))
        if index is None:
            names = ", ".join(p.name for p in fn.params) or "none"
            raise self.error(f"{owner} has no input named '{_unquote(tok)}' (its inputs: {names})", tok)
        return index

    def edge(self, tree: Tree, scope: _GraphScope) -> Edge:
        src_tree, dst_tree, repl_tree, stream = tree.children
        src, sp = self.port(src_tree, scope, "output")
        dst, dp = self.port(dst_tree, scope, "input")
        repl_tok = repl_tree.children[0]
        repl = {"one_to_one": ONE_TO_ONE, "all_to_all": ALL_TO_ALL}.get(str(repl_tok))
        return Edge(
            src,
            sp,
            dst,
            dp,
            self.int(repl_tok) if repl is None else repl,
            stream is not None,
            self.location(tree),
        )

    def bind_in(self, tree: Tree, scope: _GraphScope) -> InputBind:
        ip_tree, dst_tree, stream = tree.children
        ip = self.port_index(ip_tree.children[0], scope.fn, "input", f"@{scope.fn.name}")
        dst, ic = self.port(dst_tree, scope, "input")
        return InputBind(ip, dst, ic, stream is not None, self.location(tree))

    def bind_out(self, tree: Tree, scope: _GraphScope) -> OutputBind:
        src_tree, op_tok, stream = tree.children
        src, oc = self.port(src_tree, scope, "output")
        return OutputBind(src, oc, self.int(op_tok), stream is not None, self.location(tree))

    # -- size expressions ------------------------------------------------------------------

    def expr(self, tree: Tree | Token, depth: int) -> Expr:
        """The size expression of ``tree``, at nesting ``depth`` (1 for a whole size): one
        nested deeper than ``MAX_EXPR_DEPTH`` operators is refused here, before the
        recursion over it could exhaust Python's stack (``ir/expr.py`` says why)."""
        if isinstance(tree, Token):  # a bare "( expr )" never reaches here; kept for safety
            raise self.error(f"unexpected {tree!s} in a size expression", tree)
        kind = tree.data
        ch = tree.children
        if kind in ("binop", "call") and depth > MAX_EXPR_DEPTH:
            raise self.error(
                f"this size expression nests operators more than {MAX_EXPR_DEPTH} deep; replication "
                "sizes are short integer expressions — compute a long one in the host and pass it "
                "as an input",
                tree,
            )
        if kind == "const":
            return Const(self.int(ch[0]))
        if kind == "neg_const":
            return Const(-self.int(ch[1]))
        if kind == "param_ref":
            return ParamExpr(str(ch[0]))
        if kind == "shape":
            return Shape(str(ch[0]), self.int(ch[1]))
        if kind == "binop":
            return BinOp(str(ch[1]), self.expr(ch[0], depth + 1), self.expr(ch[2], depth + 1))
        if kind == "call":
            if ch[0] not in ("min", "max"):
                raise self.error(
                    f"unknown function {ch[0]}() in a size expression; use min(...) or max(...)", ch[0]
                )
            return Call(str(ch[0]), tuple(self.expr(a, depth + 1) for a in ch[1:] if a is not None))
        raise self.error(f"unexpected {kind} in a size expression", tree)  # pragma: no cover


__all__ = [
    "LeafFactory",
    "ParsedBody",
    "leaf_from_body",
    "no_code_leaf",
    "python_leaf",
    "parse_function_ref",
    "parse_layout",
    "parse_program",
]
