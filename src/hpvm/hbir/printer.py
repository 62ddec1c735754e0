"""Syntax tree → HBIR text: the inverse of the parser, up to layout and positions.

``format_program(parse(t))`` is HBIR that parses back to an equal tree (positions take no
part in equality); the property test in ``tests/hbir/test_roundtrip.py`` checks it on
generated programs. Every binary and unary operation is parenthesised, so the text needs
no precedence reasoning to read back the same.
"""

from __future__ import annotations

from . import ast as A

_INDENT = "    "


def format_expr(e: A.Expr) -> str:
    """An expression as HBIR text, operations parenthesised."""
    if isinstance(e, A.IntLit):
        return str(e.value)
    if isinstance(e, A.FloatLit):
        return repr(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.StrLit):
        return f'"{e.value}"'
    if isinstance(e, A.Ref):
        return e.dotted
    if isinstance(e, A.Index):
        return f"{format_expr(e.base)}[{format_expr(e.index)}]"
    if isinstance(e, A.Unary):
        return f"({e.op}{format_expr(e.operand)})"
    if isinstance(e, A.Binary):
        return f"({format_expr(e.left)} {e.op} {format_expr(e.right)})"
    if isinstance(e, A.Call):
        return f"{e.name}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, A.Cond):
        return f"({format_expr(e.cond)} ? {format_expr(e.then)} : {format_expr(e.orelse)})"
    raise TypeError(f"not an HBIR expression: {e!r}")


def _dims(dims: tuple[A.Expr, ...]) -> str:
    return "".join(f"[{format_expr(d)}]" for d in dims)


def _memory(m: A.Memory) -> str:
    fields = " ".join(f"{f.name} {f.value};" for f in m.fields)
    return f"memory {m.name}{_dims(m.dims)} {{ {fields} }};"


def _group(g: A.Group, depth: int) -> list[str]:
    pad = _INDENT * depth
    out = [f"{pad}group {g.name}{_dims(g.dims)} {{"]
    for item in g.items:
        if isinstance(item, A.Group):
            out += _group(item, depth + 1)
        elif isinstance(item, A.TileMap):
            out.append(f"{pad}{_INDENT}tile {format_expr(item.ref)};")
        else:
            value = "" if item.value is None else " " + format_expr(item.value)
            out.append(f"{pad}{_INDENT}temporal{value};")
    out.append(f"{pad}}};")
    return out


def _data_item(item: A.Const | A.LayoutDecl | A.ArrayDecl | A.IOArrayDecl) -> str:
    if isinstance(item, A.Const):
        return f"{'const ' if item.const else ''}{item.name} = {format_expr(item.value)};"
    if isinstance(item, A.LayoutDecl):
        flags = " ".join(f"{format_expr(f)};" for f in item.flags)
        return f"layout {item.name} {{ {flags} }};"
    if isinstance(item, A.ArrayDecl):
        dist = ""
        if item.distribution is not None:
            dist = f" = {item.distribution.kind}{_dims(item.distribution.dims)}"
        flags = " ".join(f"{format_expr(f)};" for f in item.flags)
        return f"{item.name}: {item.elem}{_dims(item.dims)}{dist} {{ {flags} }};"
    props = ", ".join(f"{p.key} : {format_expr(p.value)}" for p in item.props)
    return f"{item.direction} {item.name} : {item.elem}{_dims(item.dims)} {{ {props} }}"


def _init(init: A.Expr | A.ArrayInit) -> str:
    if isinstance(init, A.ArrayInit):
        return "{" + ", ".join(_init(i) for i in init.items) + "}"
    return format_expr(init)


def _simple(s: A.Stmt) -> str:
    if isinstance(s, A.VarDecl):
        init = "" if s.init is None else f" = {_init(s.init)}"
        return f"{s.elem} {s.name}{_dims(s.dims)}{init}"
    if isinstance(s, A.Assign):
        return f"{format_expr(s.target)} {s.op} {format_expr(s.value)}"
    if isinstance(s, A.ExprStmt):
        return format_expr(s.expr)
    raise TypeError(f"not a simple statement: {s!r}")


def format_stmts(stmts: tuple[A.Stmt, ...], depth: int) -> list[str]:
    """Statements as lines indented ``depth`` levels."""
    out: list[str] = []
    pad = _INDENT * depth
    for s in stmts:
        if isinstance(s, (A.VarDecl, A.Assign, A.ExprStmt)):
            out.append(f"{pad}{_simple(s)};")
        elif isinstance(s, A.If):
            out.append(f"{pad}if ({format_expr(s.cond)}) {{")
            out += format_stmts(s.then, depth + 1)
            if s.orelse is None:
                out.append(f"{pad}}}")
            else:
                out.append(f"{pad}}} else {{")
                out += format_stmts(s.orelse, depth + 1)
                out.append(f"{pad}}}")
        elif isinstance(s, A.While):
            out.append(f"{pad}while ({format_expr(s.cond)}) {{")
            out += format_stmts(s.body, depth + 1)
            out.append(f"{pad}}}")
        elif isinstance(s, A.For):
            init = "" if s.init is None else _simple(s.init)
            cond = "" if s.cond is None else format_expr(s.cond)
            step = "" if s.step is None else _simple(s.step)
            out.append(f"{pad}for ({init}; {cond}; {step}) {{")
            out += format_stmts(s.body, depth + 1)
            out.append(f"{pad}}}")
        elif isinstance(s, A.ForIn):
            args = ", ".join(format_expr(a) for a in s.args)
            out.append(f"{pad}for ({s.elem} {s.var} in iterator<{args}>) {{")
            out += format_stmts(s.body, depth + 1)
            out.append(f"{pad}}}")
        elif isinstance(s, A.Break):
            out.append(f"{pad}break;")
        elif isinstance(s, A.Continue):
            out.append(f"{pad}continue;")
        elif isinstance(s, A.Compound):
            out.append(f"{pad}{{")
            out += format_stmts(s.body, depth + 1)
            out.append(f"{pad}}}")
        else:
            raise TypeError(f"not an HBIR statement: {s!r}")
    return out


def format_program(program: A.Program) -> str:
    """The whole program as HBIR text."""
    out: list[str] = []
    for seg in program.segments:
        if isinstance(seg, A.Target):
            out.append("target {")
            for item in seg.items:
                if isinstance(item, A.Memory):
                    out.append(_INDENT + _memory(item))
                else:
                    body = ""
                    if item.memories is not None:
                        body = " { " + " ".join(_memory(m) for m in item.memories) + " }"
                    out.append(f"{_INDENT}tile {item.name}{_dims(item.dims)}{body};")
        elif isinstance(seg, A.Config):
            out.append("config {")
            for g in seg.groups:
                out += _group(g, 1)
        elif isinstance(seg, A.Data):
            out.append("data {")
            out += [_INDENT + _data_item(i) for i in seg.items]
        else:
            out.append("code {")
            for item in seg.items:
                if isinstance(item, A.VarDecl):
                    out.append(f"{_INDENT}{_simple(item)};")
                else:
                    out.append(f"{_INDENT}config.{item.group}{_dims(item.indices)} {{")
                    out += format_stmts(item.body, 2)
                    out.append(f"{_INDENT}}}")
        out.append("}")
    return "\n".join(out) + "\n"


__all__ = ["format_expr", "format_program", "format_stmts"]
