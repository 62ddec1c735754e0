"""Read the leaf IR's text form (``leafir.lark``) back: ``parse_leaf_ir(print_leaf(ir)) == ir``.

Every expression is rebuilt through the typed constructors of ``leafir/rules.py``, so the
types the text does not write are derived exactly as the builder derived them; a variable's
type comes from its parameter or ``var`` line. Every mistake — a syntax error, an undeclared
name, an operation the typing rules refuse, an unknown intrinsic — is a ``ParseError`` with
the line and column in the text. Rules that need the whole leaf (a ``break`` outside a loop,
an assignment of the wrong type) are the verifier's (``leafir/verify.py``), so that any IR,
valid or not, can be written down and read back.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree, UnexpectedInput

from ...errors import ParseError
from ..graph import Param
from ..instance_context import FIELD_NAMES
from ..intrinsics import INTRINSICS
from ..layouts import Layout
from ..parser import _syntax_message, parse_layout
from ..types import SCALAR_TYPES, parse_type, scalar_type
from . import ops, rules


@functools.cache
def _lark() -> Lark:
    grammar = Path(__file__).with_name("leafir.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)


def parse_leaf_ir(text: str, file: str = "<leaf ir>") -> ops.LeafIR:
    """The leaf IR that ``text`` (``print_leaf``'s form) writes down."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise ParseError(_syntax_message(e, text), e.line, e.column, file) from None
    return _Reader(file).leaf(tree)


class _Reader:
    def __init__(self, file: str):
        self.file = file
        self.types: dict[str, Any] = {}

    def fail(self, at: Tree | Token, message: str) -> ParseError:
        if isinstance(at, Token):
            line, column = at.line or 0, at.column or 0
        else:
            line, column = getattr(at.meta, "line", 0), getattr(at.meta, "column", 0)
        return ParseError(message, line, column, self.file)

    def typed(self, at: Tree | Token, make: Any, *args: Any) -> Any:
        try:
            return make(*args)
        except rules.TypeProblem as e:
            raise self.fail(at, str(e)) from None

    def _type(self, tok: Token) -> Any:
        try:
            return parse_type(str(tok))
        except (TypeError, ValueError) as e:
            raise self.fail(tok, str(e)) from None

    def _layout(self, tok: Token | None) -> Layout | None:
        if tok is None:
            return None
        try:
            return parse_layout(str(tok)[len("layout(") : -1], self.file)
        except ParseError as e:
            raise self.fail(tok, e.message) from None

    # -- the leaf and its statements ------------------------------------------------------

    def leaf(self, tree: Tree) -> ops.LeafIR:
        kids = tree.children
        name = str(kids[0])
        params: list[Param] = []
        outputs: list[Any] = []
        locals_: list[tuple[str, Any]] = []
        stmts: list[Tree] = []
        k = 1
        while k < len(kids) and not (isinstance(kids[k], Token) and kids[k].type == "STRING"):
            kid = kids[k]
            if isinstance(kid, Tree) and kid.data == "param":
                params.append(
                    Param(str(kid.children[0]), self._type(kid.children[1]), self._layout(kid.children[2]))
                )
            elif isinstance(kid, Token) and kid.type == "TYPE":
                outputs.append(self._type(kid))
            k += 1
        file = json.loads(str(kids[k]))
        line = int(kids[k + 1])
        for kid in kids[k + 2 :]:
            if kid.data == "decl":
                var, t = str(kid.children[0]), self._type(kid.children[1])
                if var in self.types or any(p.name == var for p in params):
                    raise self.fail(kid.children[0], f"'{var}' is declared twice")
                locals_.append((var, t))
                self.types[var] = t
            else:
                stmts.append(kid)
        for p in params:
            if p.name in self.types:
                raise self.fail(tree, f"parameter '{p.name}' is declared twice")
            self.types[p.name] = p.type
        body = tuple(self.stmt(s) for s in stmts)
        return ops.LeafIR(name, tuple(params), tuple(outputs), tuple(locals_), body, file, line)

    def block(self, tree: Tree) -> ops.Block:
        return tuple(self.stmt(s) for s in tree.children)

    def stmt(self, tree: Tree) -> ops.Stmt:
        line = int(tree.children[0])
        body = tree.children[1]
        kind, kids = body.data, body.children
        if kind == "assign":
            target, value = self.expr(kids[0]), self.expr(kids[1])
            if isinstance(target, ops.Var):
                return ops.Assign(target, value, line)
            if isinstance(target, ops.Load):
                return ops.Store(target.array, target.indices, value, line)
            raise self.fail(body, "only a variable or an array element can be assigned")
        if kind == "for_":
            var = self.var(kids[0])
            start, stop, step = (self.expr(k) for k in kids[1:4])
            return ops.For(var, start, stop, step, self.block(kids[4]), line)
        if kind == "while_":
            return ops.While(self.expr(kids[0]), self.block(kids[1]), line)
        if kind == "if_":
            return ops.If(self.expr(kids[0]), self.block(kids[1]), self.block(kids[2]), line)
        if kind == "return_":
            return ops.Return(tuple(self.expr(k) for k in kids if k is not None), line)
        if kind == "raise_":
            return ops.Raise(None if not kids or kids[0] is None else json.loads(str(kids[0])), line)
        if kind == "break_":
            return ops.Break(line)
        if kind == "continue_":
            return ops.Continue(line)
        return ops.ExprStmt(self.expr(kids[0]), line)

    # -- expressions ----------------------------------------------------------------------

    def var(self, tok: Token) -> ops.Var:
        name = str(tok)
        if name not in self.types:
            raise self.fail(tok, f"'{name}' is neither a parameter nor declared with 'var'")
        return ops.Var(name, self.types[name])

    def expr(self, tree: Tree | Token) -> ops.Expr:
        if isinstance(tree, Token):  # pragma: no cover - every atom is a rule of its own
            raise self.fail(tree, f"unexpected '{tree}'")
        method = getattr(self, f"_{tree.data}")
        return method(tree, tree.children)

    def _var(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.var(kids[0])

    def _number(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        text = str(kids[0])
        value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        return self.typed(tree, rules.const, value)

    def _true(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return rules.const(True)

    def _false(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return rules.const(False)

    def _typed_const(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        t = scalar_type(str(kids[0]))
        text = str(kids[1])
        value: Any = float(text) if (t.is_float or any(c in text for c in ".eEni")) else int(text)
        if t.dtype.kind in "iub" and isinstance(value, float):
            raise self.fail(kids[1], f"{text} is not a value of {t}")
        return self.typed(tree, rules.const, value, t)

    def _ctx_read(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        name = str(kids[1])
        if name not in FIELD_NAMES:
            raise self.fail(kids[1], f"'{name}' is not a field of the context ({', '.join(FIELD_NAMES)} are)")
        return self.typed(tree, rules.ctx_read, int(kids[0]), FIELD_NAMES.index(name))

    def _binary(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(
            tree, rules.binary, str(kids[1].children[0]), self.expr(kids[0]), self.expr(kids[2])
        )

    def _compare(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        operands = [self.expr(k) for k in kids[0::2]]
        names = [str(k.children[0]) for k in kids[1::2]]
        return self.typed(tree, rules.compare, names, operands)

    def _and_(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.boolop, "and", [self.expr(k) for k in kids])

    def _or_(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.boolop, "or", [self.expr(k) for k in kids])

    def _ifexp(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        body, test, orelse = (self.expr(k) for k in kids)
        return self.typed(tree, rules.ifexp, test, body, orelse)

    def _unary(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.unary, str(kids[0].children[0]), self.expr(kids[1]))

    def _not_(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.unary, "not", self.expr(kids[0]))

    def _load(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.load, self.expr(kids[0]), [self.expr(k) for k in kids[1:]])

    def _shape(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.shape, self.expr(kids[0]), int(kids[1]))

    def _size(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.size, self.expr(kids[0]))

    def _retype(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        return self.typed(tree, rules.retype, self.expr(kids[0]), scalar_type(str(kids[1])))

    def _alloc(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        func = str(kids[0])
        if not func.startswith("np."):
            raise self.fail(kids[0], f"'{func}<...>' is not a NumPy function making a local array")
        shape = [self.expr(k) for k in kids[2:]]
        return self.typed(tree, rules.alloc, func.removeprefix("np."), shape, scalar_type(str(kids[1])))

    def _call(self, tree: Tree, kids: list[Any]) -> ops.Expr:
        func = str(kids[0])
        args = [self.expr(k) for k in kids[1:] if k is not None]
        if func.startswith("hpvm."):
            entry = INTRINSICS.get(func.removeprefix("hpvm."))
            if entry is None:
                raise self.fail(kids[0], f"'{func}' is not an intrinsic")
            return self.typed(tree, rules.intrinsic, entry, args)
        if func in SCALAR_TYPES:
            if len(args) != 1:
                raise self.fail(tree, f"the conversion {func}(...) takes one value")
            return self.typed(tree, rules.cast, args[0], SCALAR_TYPES[func])
        return self.typed(tree, rules.call, func, args)


__all__ = ["parse_leaf_ir"]
