"""The code segment of an HBIR program: globals, and each code block's group, coordinates
and statements.

Why a module of its own: the code segment is checked against everything declared before
it; ``BlockChecker`` judges what a block is run on (its group and coordinates) and builds
the scope its code sees (``outer_symbols``), ``StatementChecker`` the statements inside.
"""

from __future__ import annotations

from typing import Any

from . import ast as A
from .check_data import DISTRIBUTIONS
from .checkcontext import CheckContext
from .model import ArrayInfo, BlockInfo, GlobalInfo, GroupInfo, axis_name
from .printf import LOG_VALUES, printf_conversions
from .symbols import Scope, Symbol, expr_type, resolve_ref


class BlockChecker:
    """Checks the code segment: its globals into ``cx.globals``, its blocks into
    ``cx.blocks``, each block's statements with a ``StatementChecker``."""

    def __init__(self, cx: CheckContext):
        self.cx = cx
        self.statements = StatementChecker(cx)

    def check_code(self, seg: A.Code) -> None:
        seen_block = False
        for item in seg.items:
            if isinstance(item, A.VarDecl):
                if seen_block:
                    self.cx.problem(
                        item, f"global '{item.name}' is declared after a code block; declare globals first"
                    )
                self.global_decl(item)
            else:
                seen_block = True
                self.block(item, len(self.cx.blocks))

    def global_decl(self, d: A.VarDecl) -> None:
        if not self.cx.name_ok(d, d.name):
            return
        if d.dims or isinstance(d.init, A.ArrayInit):
            self.cx.problem(
                d,
                f"global '{d.name}' is an array; globals are scalars — declare a shared array in data "
                "(out G : int[n] { }) or a local array inside a code block",
            )
            return
        if d.name in self.cx.globals or d.name in self.cx.arrays or d.name in self.cx.consts:
            self.cx.problem(d, f"'{d.name}' is already declared; a global needs a name of its own")
            return
        init: Any = 0
        if d.init is not None:
            init = self.cx.evaluate(d.init, self.cx.data_env(), f"the initial value of global '{d.name}'")
            if init is None:
                return
        self.cx.globals[d.name] = GlobalInfo(d.name, d.elem, init, d.line)

    def outer_symbols(self, group: GroupInfo, binders: tuple[str | None, ...]) -> dict[str, Symbol]:
        return outer_symbols(
            self.cx.target_values, self.cx.consts, self.cx.arrays, self.cx.globals, group, binders
        )

    def block(self, b: A.Block, index: int) -> None:
        group = self.cx.groups.get(b.group)
        if group is None:
            self.cx.problem(
                b, f"'config.{b.group}' names no group; groups: {', '.join(self.cx.groups) or 'none'}"
            )
            return
        if group.tile_map is None:
            inner = ", ".join(c.name for c in group.children)
            self.cx.problem(
                b,
                f"group '{b.group}' holds groups, not tiles; write the block for its inner group ({inner}) and use {b.group}.x there",
            )
            return
        if len(b.indices) != len(group.dims):
            self.cx.problem(
                b,
                f"group '{b.group}' has {len(group.dims)} dimension(s) but the block gives {len(b.indices)} index(es)",
            )
            return
        binders: list[str | None] = []
        fixed: list[int | None] = []
        for k, idx in enumerate(b.indices):
            if isinstance(idx, A.Ref) and len(idx.parts) == 1:
                name = idx.parts[0]
                if self.cx.name_ok(idx, name) and name in binders:
                    self.cx.problem(idx, f"'{name}' names two coordinates of the block")
                elif name in self.cx.consts or name in self.cx.arrays or name in self.cx.globals:
                    self.cx.problem(
                        idx,
                        f"'{name}' is already declared in data or as a global; name the coordinate otherwise",
                    )
                binders.append(idx.parts[0])
                fixed.append(None)
            elif isinstance(idx, A.IntLit):
                if not 0 <= idx.value < group.dims[k]:
                    self.cx.problem(
                        idx,
                        f"tile coordinate {idx.value} is outside group '{b.group}' (0..{group.dims[k] - 1})",
                    )
                binders.append(None)
                fixed.append(idx.value)
            else:
                self.cx.problem(
                    idx, "a block's index is a name (every tile) or an integer (the tiles at that coordinate)"
                )
                return
        self.cx.blocks.append(BlockInfo(b, group, tuple(binders), tuple(fixed), index))
        scope = Scope(self.outer_symbols(group, tuple(binders)))
        scope.push()
        self.statements.stmts(b.body, scope, 0, group)
        scope.pop()


class StatementChecker:
    """Checks the statements of a block: declarations and scopes, types, assignments,
    loops, printf and bsg_finish calls."""

    def __init__(self, cx: CheckContext):
        self.cx = cx

    def stmts(self, stmts: tuple[A.Stmt, ...], scope: Scope, loops: int, group: GroupInfo) -> None:
        for s in stmts:
            self.stmt(s, scope, loops, group)

    def typed(self, e: A.Expr, scope: Scope) -> str | None:
        return expr_type(e, scope, self.cx.problem)

    def stmt(self, s: A.Stmt, scope: Scope, loops: int, group: GroupInfo) -> None:
        if isinstance(s, A.VarDecl):
            shape = self.local_array(s, scope) if s.dims else ()
            if isinstance(s.init, A.ArrayInit) and not s.dims:
                self.cx.problem(
                    s.init,
                    f"braces initialise arrays, but '{s.name}' is a scalar; write {s.elem} {s.name} = value;",
                )
            elif s.init is not None and not s.dims:
                self.typed(s.init, scope)  # type: ignore[arg-type]
            if not self.cx.name_ok(s, s.name):
                return
            existing = scope.lookup(s.name)
            if existing is not None and existing.kind != "local":
                self.cx.problem(
                    s, f"'{s.name}' is already a {_kind_words(existing.kind)}; give the variable another name"
                )
            elif scope.declared_here(s.name):
                self.cx.problem(s, f"'{s.name}' is declared twice in the same braces")
            elif existing is not None:
                self.cx.problem(
                    s, f"'{s.name}' shadows a variable of an enclosing scope; give it another name"
                )
            scope.declare(s.name, Symbol("local", s.elem, rank=len(shape or s.dims)))
        elif isinstance(s, A.Assign):
            self.assign(s, scope)
        elif isinstance(s, A.ExprStmt):
            self.call_stmt(s, scope)
        elif isinstance(s, A.If):
            self.typed(s.cond, scope)
            for body in (s.then, s.orelse or ()):
                scope.push()
                self.stmts(body, scope, loops, group)
                scope.pop()
        elif isinstance(s, A.While):
            self.typed(s.cond, scope)
            scope.push()
            self.stmts(s.body, scope, loops + 1, group)
            scope.pop()
        elif isinstance(s, A.For):
            scope.push()
            if s.init is not None:
                self.stmt(s.init, scope, loops, group)
            if s.cond is not None:
                self.typed(s.cond, scope)
            if s.step is not None:
                self.stmt(s.step, scope, loops, group)
            scope.push()
            self.stmts(s.body, scope, loops + 1, group)
            scope.pop()
            scope.pop()
        elif isinstance(s, A.ForIn):
            self.for_in(s, scope, loops, group)
        elif isinstance(s, (A.Break, A.Continue)):
            if loops == 0:
                word = "break" if isinstance(s, A.Break) else "continue"
                self.cx.problem(s, f"'{word}' outside a loop; to end this tile's block use bsg_finish()")
        elif isinstance(s, A.Compound):
            scope.push()
            self.stmts(s.body, scope, loops, group)
            scope.pop()

    def local_array(self, s: A.VarDecl, scope: Scope) -> tuple[int, ...] | None:
        """A local array's shape (constant, positive, one or two dimensions) after checking
        its initialiser; ``None`` when it has none."""
        shape = self.cx.positive_ints(s.dims, self.cx.data_env(), f"a dimension of local array '{s.name}'")
        if shape is not None and len(shape) > 2:
            self.cx.problem(
                s,
                f"local array '{s.name}' has {len(shape)} dimensions; local arrays have one or two (declare "
                "a larger one in data)",
            )
            shape = None
        if s.init is None:
            return shape
        if not isinstance(s.init, A.ArrayInit):
            self.cx.problem(
                s.init,
                f"an array is initialised with braces: {s.elem} {s.name}{''.join('[..]' for _ in s.dims)} = {{...}};",
            )
            self.typed(s.init, scope)
            return shape
        items = s.init.items
        nested = [isinstance(i, A.ArrayInit) for i in items]
        if shape is not None and len(shape) == 2 and all(nested) and items:
            if len(items) > shape[0]:
                self.cx.problem(s.init, f"{len(items)} rows initialise '{s.name}', which has {shape[0]}")
            for row in items:
                self.init_values(row, shape[1], f"a row of '{s.name}'", scope)  # type: ignore[arg-type]
        else:
            size = None if shape is None else shape[0] * (shape[1] if len(shape) == 2 else 1)
            self.init_values(s.init, size, f"'{s.name}'", scope)
        return shape

    def init_values(self, init: A.ArrayInit, size: int | None, what: str, scope: Scope) -> None:
        """A flat brace list: at most ``size`` values, none of them braces, each typed."""
        if size is not None and len(init.items) > size:
            self.cx.problem(init, f"{len(init.items)} values initialise {what}, which holds {size}")
        for item in init.items:
            if isinstance(item, A.ArrayInit):
                self.cx.problem(
                    item, f"too many braces in the initialiser of {what}; nest one level per dimension"
                )
            else:
                self.typed(item, scope)

    def assign(self, s: A.Assign, scope: Scope) -> None:
        value_type = self.typed(s.value, scope)
        target = s.target
        if isinstance(target, A.Ref):
            sym = resolve_ref(target, scope)
            if sym is None:
                self.cx.problem(
                    target,
                    f"'{target.dotted}' is not declared; declare it first (int {target.dotted} = ...;)",
                )
                return
            if sym.kind not in ("local", "global"):
                self.cx.problem(target, f"cannot assign to {_kind_words(sym.kind)} '{target.dotted}'")
                return
            if sym.rank:
                self.cx.problem(
                    target,
                    f"cannot assign to the whole array '{target.dotted}'; assign its elements ({target.dotted}"
                    + "[i]" * sym.rank
                    + " = ...)",
                )
                return
            elem = sym.elem
        elif isinstance(target, A.Index):
            elem = expr_type(target, scope, self.cx.problem)
            if elem is None:
                return
        else:
            self.cx.problem(target, "only variables and array elements can be assigned")
            return
        if s.op != "=" and "bool" in (elem, value_type):
            self.cx.problem(s, f"'{s.op}' on a bool; arithmetic takes ints and floats")
        elif s.op == "%=" and "float" in (elem, value_type):
            self.cx.problem(s, "'%=' takes ints; the remainder of floats is not HBIR")

    def call_stmt(self, s: A.ExprStmt, scope: Scope) -> None:
        call = s.expr
        if not isinstance(call, A.Call):
            self.typed(call, scope)
            self.cx.problem(
                s,
                "this expression statement does nothing; statements assign, declare, branch, loop or call printf / bsg_finish",
            )
            return
        if call.name == "bsg_finish":
            if call.args:
                self.cx.problem(call, "bsg_finish() takes no arguments")
        elif call.name == "printf":
            if not call.args or not isinstance(call.args[0], A.StrLit):
                self.cx.problem(call, 'printf\'s first argument is its format string: printf("x = %d\\n", x)')
                return
            conversions = printf_conversions(call.args[0].value)
            letters: list[str | None] = [None] * (len(call.args) - 1)
            if isinstance(conversions, str):
                self.cx.problem(call.args[0], conversions)
            elif len([c for c in conversions if c != "s"]) > LOG_VALUES:
                self.cx.problem(
                    call,
                    f"printf prints at most {LOG_VALUES} values (strings of %s do not count); split it in two",
                )
            elif len(conversions) != len(call.args) - 1:
                self.cx.problem(
                    call,
                    f"printf's format has {len(conversions)} conversion(s) but {len(call.args) - 1} value(s) follow it",
                )
            else:
                letters = list(conversions)
            for letter, a in zip(letters, call.args[1:], strict=True):
                if letter == "s" and not isinstance(a, A.StrLit):
                    self.typed(a, scope)
                    self.cx.problem(
                        a,
                        "'%s' prints a string literal (HBIR has no string values); write one, or use %d / %f",
                    )
                elif letter not in (None, "s") and isinstance(a, A.StrLit):
                    self.cx.problem(a, f"a string is printed with '%s', not '%{letter}'")
                elif not isinstance(a, A.StrLit):
                    self.typed(a, scope)
        else:
            self.cx.problem(
                call, f"unknown function '{call.name}'; HBIR code calls printf(...) and bsg_finish()"
            )

    def for_in(self, s: A.ForIn, scope: Scope, loops: int, group: GroupInfo) -> None:
        if len(s.args) != 2 + len(group.dims):
            coords = ", ".join(axis_name(k) for k in range(len(group.dims)))
            self.cx.problem(
                s,
                f"iterator<...> takes the range, the layout and the {len(group.dims)} coordinate(s) of a tile of "
                f"group '{group.name}': iterator<n, L, {coords}>",
            )
        else:
            if self.typed(s.args[0], scope) not in (None, "int"):
                self.cx.problem(s.args[0], "the range of an iterator is an int")
            layout = s.args[1]
            name = layout.parts[0] if isinstance(layout, A.Ref) and len(layout.parts) == 1 else None
            if name is None or (name not in self.cx.layouts and name not in DISTRIBUTIONS):
                self.cx.problem(
                    layout,
                    f"'{_text(layout)}' is not a layout; name one declared in data (layout L {{ ... }}) or block/chunked/strided/replicated",
                )
            for c in s.args[2:]:
                if self.typed(c, scope) not in (None, "int"):
                    self.cx.problem(c, "a tile coordinate is an int")
        if s.elem != "int":
            self.cx.problem(s, f"an iterator's variable is an int, not a {s.elem}")
        scope.push()
        if self.cx.name_ok(s, s.var):
            existing = scope.lookup(s.var)
            if existing is not None:
                self.cx.problem(s, f"'{s.var}' is already declared; give the loop variable another name")
            scope.declare(s.var, Symbol("local", "int"))
        scope.push()
        self.stmts(s.body, scope, loops + 1, group)
        scope.pop()
        scope.pop()


def outer_symbols(
    target_values: dict[str, int],
    consts: dict[str, Any],
    arrays: dict[str, ArrayInfo],
    globals_: dict[str, GlobalInfo],
    group: GroupInfo,
    binders: tuple[str | None, ...],
) -> dict[str, Symbol]:
    """What a block's code sees before its own declarations: target fields, constants, arrays,
    globals, the coordinates and extents of its group and of the groups around it."""
    syms: dict[str, Symbol] = {}
    for key, value in target_values.items():
        syms[key] = Symbol("target", "int", value=value)
    for name, value in consts.items():
        elem = "bool" if isinstance(value, bool) else "float" if isinstance(value, float) else "int"
        syms[name] = Symbol("const", elem, value=value)
    for a in arrays.values():
        syms[a.name] = Symbol("array", a.elem, rank=len(a.shape), python=a.name)
    for g in globals_.values():
        syms[g.name] = Symbol("global", g.elem, python=f"{g.name}[0]")
    for level, g in enumerate(group.chain):
        for k in range(len(g.dims)):
            axis = axis_name(k)
            syms[f"{g.name}.{axis}"] = Symbol("group", "int", value=(level, k), python=f"{g.name}__{axis}")
            syms[f"{g.name}.{axis}_max"] = Symbol("extent", "int", value=g.dims[k], python=str(g.dims[k]))
    for k in range(len(group.dims)):
        axis = axis_name(k)
        syms[f"{axis}_max"] = Symbol("extent", "int", value=group.dims[k], python=str(group.dims[k]))
        if binders[k] is not None:
            syms[binders[k]] = Symbol("coord", "int", value=k, python=f"{group.name}__{axis}")
    return syms


def _text(e: A.Expr) -> str:
    from .printer import format_expr

    return format_expr(e)


def _kind_words(kind: str) -> str:
    return {
        "const": "data constant",
        "array": "data array",
        "coord": "tile coordinate",
        "extent": "group extent",
        "target": "target field",
        "group": "group coordinate",
        "global": "global",
        "local": "variable",
    }[kind]
