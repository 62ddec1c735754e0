"""HBIR text → syntax tree (``ast.py``), with located errors and nothing raw escaping.

lark parses ``grammar.lark`` (LALR, contextual lexer); ``_Builder`` turns lark's tree into
the typed nodes of ``ast.py``, each with its line and column. Every failure — a token that
does not fit, a character no token starts with, the end of the text too early, nesting too
deep for Python — becomes an ``HBIRParseError`` at ``file:line:column`` saying what was
found and what was expected there, in the words of the language (``';'``, ``a name``),
never lark's terminal names.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..errors import ParseError
from . import ast as A


class HBIRParseError(ParseError):
    """Malformed HBIR text: ``file:line:column: what is wrong (what was expected)``."""


@functools.cache
def _lark() -> Any:
    from lark import Lark

    grammar = Path(__file__).with_name("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)


def parse(text: str, filename: str | None = None) -> A.Program:
    """The syntax tree of ``text``; ``HBIRParseError`` at the first malformed place."""
    from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

    file = filename or "<hbir>"
    try:
        tree = _lark().parse(text)
    except UnexpectedToken as e:
        found = "end of the file" if e.token.type == "$END" else f"'{e.token}'"
        raise HBIRParseError(
            f"unexpected {found}; expected {_expected(e.accepts or e.expected)}",
            *(_end(text) if e.token.type == "$END" else _position(e, text)),
            file,
        ) from None
    except UnexpectedCharacters as e:
        char = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        raise HBIRParseError(
            f"unexpected character {char!r}; expected {_expected(e.allowed or set())}",
            e.line,
            e.column,
            file,
        ) from None
    except UnexpectedEOF as e:
        line, column = _end(text)
        raise HBIRParseError(
            f"unexpected end of the file; expected {_expected(e.expected)}", line, column, file
        ) from None
    except LarkError as e:  # (not expected: the three above are what parsing raises)
        raise HBIRParseError(f"cannot parse: {e}", 1, 1, file) from None
    except RecursionError:
        raise HBIRParseError("the program is nested too deeply to parse", 1, 1, file) from None
    try:
        segments = _Builder().transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, HBIRParseError):
            raise HBIRParseError(e.orig_exc.message, e.orig_exc.line, e.orig_exc.column, file) from None
        if isinstance(e.orig_exc, RecursionError):
            raise HBIRParseError("the program is nested too deeply to parse", 1, 1, file) from None
        raise
    except RecursionError:
        raise HBIRParseError("the program is nested too deeply to parse", 1, 1, file) from None
    return A.Program(tuple(segments), filename=file, line=1, column=1)


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _position(e: Any, text: str) -> tuple[int, int]:
    line, column = getattr(e, "line", None), getattr(e, "column", None)
    if not isinstance(line, int) or line < 1 or not isinstance(column, int) or column < 1:
        return _end(text)
    return line, column


_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "QUANTITY": "a size such as 8G or 8B",
    "$END": "the end of the file",
}


def _expected(names: Any) -> str:
    """lark's terminal names in the language's words: ``';'``, ``a name``, ``'int'``."""
    terminals = {t.name: t for t in _lark().terminals}
    words = set()
    for name in names:
        if name in _WORDS:
            words.add(_WORDS[name])
            continue
        term = terminals.get(name)
        pattern = getattr(getattr(term, "pattern", None), "value", None)
        if term is not None and type(term.pattern).__name__ == "PatternStr":
            words.add(f"'{pattern}'")
        elif not name.startswith("__"):
            words.add(name.lower())
    if not words:
        return "something else"
    ordered = sorted(words)
    return ordered[0] if len(ordered) == 1 else "one of " + ", ".join(ordered)


def _where(meta: Any) -> dict[str, int]:
    return {"line": getattr(meta, "line", 0) or 0, "column": getattr(meta, "column", 0) or 0}


def _tok(token: Any) -> dict[str, int]:
    return {"line": token.line or 0, "column": token.column or 0}


def _make_builder() -> type:
    from lark import Transformer, v_args

    @v_args(meta=True)
    class Builder(Transformer):
        """lark's tree → ``ast.py`` nodes (one method per grammar rule)."""

        # -- segments ---------------------------------------------------------------------
        def start(self, meta, children):
            return list(children)

        def target_seg(self, meta, items):
            return A.Target(tuple(items), **_where(meta))

        def config_seg(self, meta, items):
            return A.Config(tuple(items), **_where(meta))

        def data_seg(self, meta, items):
            return A.Data(tuple(items), **_where(meta))

        def code_seg(self, meta, items):
            return A.Code(tuple(items), **_where(meta))

        # -- target -----------------------------------------------------------------------
        def dims(self, meta, children):
            return tuple(children)

        def memory(self, meta, children):
            name, dims, *fields = children
            return A.Memory(str(name), dims, tuple(fields), **_where(meta))

        def mem_field(self, meta, children):
            name, value = children
            return A.MemField(str(name), value, **_where(meta))

        def mem_value(self, meta, children):
            return str(children[0])

        def tile(self, meta, children):
            name, dims, *body = children
            return A.Tile(str(name), dims, body[0] if body else None, **_where(meta))

        def tile_body(self, meta, children):
            return tuple(children)

        # -- config -----------------------------------------------------------------------
        def group(self, meta, children):
            name, dims, *items = children
            return A.Group(str(name), dims, tuple(items), **_where(meta))

        def tile_map(self, meta, children):
            return A.TileMap(children[0], **_where(meta))

        def temporal(self, meta, children):
            return A.Temporal(children[0], **_where(meta))

        # -- data -------------------------------------------------------------------------
        def const_kw(self, meta, children):
            return True

        def const_decl(self, meta, children):
            const, name, value = children
            return A.Const(str(name), value, bool(const), **_where(meta))

        def layout_decl(self, meta, children):
            name, *flags = children
            return A.LayoutDecl(str(name), tuple(flags), **_where(meta))

        def elem(self, meta, children):
            return str(children[0])

        def type(self, meta, children):
            return children[0], children[1]

        def distribution(self, meta, children):
            name, dims = children
            return A.Distribution(str(name), dims, **_where(meta))

        def array_decl(self, meta, children):
            name, (elem, dims), distribution, *flags = children
            return A.ArrayDecl(str(name), elem, dims, distribution, tuple(flags), **_where(meta))

        def direction(self, meta, children):
            return str(children[0])

        def prop_key(self, meta, children):
            return str(children[0])

        def prop(self, meta, children):
            key, value = children
            return A.Prop(key, value, **_where(meta))

        def io_array_decl(self, meta, children):
            direction, name, (elem, dims), *props = children
            props = tuple(p for p in props if p is not None)
            return A.IOArrayDecl(direction, str(name), elem, dims, props, **_where(meta))

        # -- code -------------------------------------------------------------------------
        def block(self, meta, children):
            name, *rest = children
            indices = tuple(c for c in rest if _is_expr(c))
            body = tuple(c for c in rest if _is_stmt(c))
            return A.Block(str(name), indices, body, **_where(meta))

        def var_decl(self, meta, children):
            elem, name, dims, init = children
            return A.VarDecl(elem, str(name), init, dims, **_where(meta))

        def init_list(self, meta, children):
            return A.ArrayInit(tuple(c for c in children if c is not None), **_where(meta))

        def for_decl(self, meta, children):
            elem, name, init = children
            return A.VarDecl(elem, str(name), init, **_where(meta))

        def assign_op(self, meta, children):
            return str(children[0])

        def incdec_op(self, meta, children):
            return str(children[0])

        def incdec(self, meta, children):
            target, op = children
            return A.Assign(target, "+=" if op == "++" else "-=", A.IntLit(1, **_where(meta)), **_where(meta))

        def assign(self, meta, children):
            target, op, value = children
            return A.Assign(target, op, value, **_where(meta))

        def expr_stmt(self, meta, children):
            return A.ExprStmt(children[0], **_where(meta))

        def body(self, meta, children):
            stmt = children[0]
            return stmt.body if isinstance(stmt, A.Compound) else (stmt,)

        def else_part(self, meta, children):
            return children[0]

        def if_stmt(self, meta, children):
            cond, then, *orelse = children
            return A.If(cond, then, orelse[0] if orelse else None, **_where(meta))

        def while_stmt(self, meta, children):
            cond, body = children
            return A.While(cond, body, **_where(meta))

        def for_stmt(self, meta, children):
            init, cond, step, body = children
            if isinstance(init, A.Node) and _is_expr(init):
                init = A.ExprStmt(init, line=init.line, column=init.column)
            if isinstance(step, A.Node) and _is_expr(step):
                step = A.ExprStmt(step, line=step.line, column=step.column)
            return A.For(init, cond, step, body, **_where(meta))

        def iter_args(self, meta, children):
            return tuple(children)

        def for_in(self, meta, children):
            elem, var, args, body = children
            return A.ForIn(elem, str(var), args, body, **_where(meta))

        def break_stmt(self, meta, children):
            return A.Break(**_where(meta))

        def continue_stmt(self, meta, children):
            return A.Continue(**_where(meta))

        def compound(self, meta, children):
            return A.Compound(tuple(children), **_where(meta))

        # -- expressions ------------------------------------------------------------------
        def _chain(self, children):
            out = children[0]
            for op, right in zip(children[1::2], children[2::2]):
                out = A.Binary(str(op), out, right, line=out.line, column=out.column)
            return out

        def binary_chain(self, meta, children):
            return self._chain(children)

        def or_chain(self, meta, children):
            out = children[0]
            for right in children[1:]:
                out = A.Binary("||", out, right, line=out.line, column=out.column)
            return out

        def and_chain(self, meta, children):
            out = children[0]
            for right in children[1:]:
                out = A.Binary("&&", out, right, line=out.line, column=out.column)
            return out

        def eq_op(self, meta, children):
            return str(children[0])

        rel_op = add_op = mul_op = eq_op

        def cond(self, meta, children):
            cond, then, orelse = children
            return A.Cond(cond, then, orelse, line=cond.line, column=cond.column)

        def neg(self, meta, children):
            return A.Unary("-", children[0], **_where(meta))

        def not_(self, meta, children):
            return A.Unary("!", children[0], **_where(meta))

        def index(self, meta, children):
            base, idx = children
            return A.Index(base, idx, **_where(meta))

        def call(self, meta, children):
            name, *args = children
            return A.Call(str(name), tuple(a for a in args if a is not None), **_where(meta))

        def int_lit(self, meta, children):
            return A.IntLit(int(children[0]), **_tok(children[0]))

        def float_lit(self, meta, children):
            return A.FloatLit(float(children[0]), **_tok(children[0]))

        def true_lit(self, meta, children):
            return A.BoolLit(True, **_where(meta))

        def false_lit(self, meta, children):
            return A.BoolLit(False, **_where(meta))

        def str_lit(self, meta, children):
            return A.StrLit(str(children[0])[1:-1], **_tok(children[0]))

        def head(self, meta, children):
            return children[0]

        def ref(self, meta, children):
            return A.Ref(tuple(str(c) for c in children), **_where(meta))

    return Builder


_STMTS = (A.VarDecl, A.Assign, A.ExprStmt, A.If, A.While, A.For, A.ForIn, A.Break, A.Continue, A.Compound)


def _is_stmt(node: Any) -> bool:
    return isinstance(node, _STMTS)


def _is_expr(node: Any) -> bool:
    return isinstance(
        node, (A.IntLit, A.FloatLit, A.BoolLit, A.StrLit, A.Ref, A.Index, A.Unary, A.Binary, A.Call, A.Cond)
    )


@functools.cache
def _builder_class() -> type:
    return _make_builder()


def _Builder() -> Any:  # noqa: N802 — reads like the class it makes
    return _builder_class()()


__all__ = ["HBIRParseError", "parse"]
