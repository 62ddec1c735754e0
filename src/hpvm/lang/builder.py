"""Tracing internal node functions: the builder calls and the symbolic inputs they see.

An internal node function runs once, with symbolic inputs, while its child graph is built.
``create_node*``, ``edge``, ``bind_in`` and ``bind_out`` record into the graph being built;
the symbolic inputs allow size arithmetic (``n // 16``, ``a.shape[0]``) and nothing else,
so computation on input values in an internal node is caught where it is written.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import traceback
from typing import Any

from ..errors import UNKNOWN_LOCATION, HPVMError, SourceLocation, TracingError, VerificationError
from ..ir import pyast
from ..ir.expr import Expr, Shape, _misuse, as_expr
from ..ir.expr import Param as ParamExpr
from ..ir.graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    Node,
    NodeFunction,
    OutputBind,
    function_source,
)
from ..ir.tracing import TraceContext, building, tracing
from ..ir.types import ArrayType, NodeHandleType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location(skip_package: bool = True) -> SourceLocation:
    """The innermost stack frame outside the hpvm package: where the user called us."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not (skip_package and filename.startswith(_PACKAGE_DIR + os.sep)):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return UNKNOWN_LOCATION


def _context(api: str) -> TraceContext:
    ctx = tracing()
    if ctx is None:
        raise TracingError(
            f"hpvm.{api}() builds a child graph and can only be called inside an "
            f"@hpvm.internal node function ({user_location()})"
        )
    return ctx


class ArraySymbol:
    """An array input of an internal node while it is traced: only its shape may be used."""

    def __init__(self, name: str, atype: ArrayType):
        self.name = name
        self.ndim = atype.rank
        self.dtype = atype.dtype
        self.shape = tuple(Shape(name, axis) for axis in range(atype.rank))

    def __getitem__(self, key: Any) -> Any:
        raise _misuse(f"'{self.name}[...]' (array elements)")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise _misuse(f"'{self.name}[...] = ...' (array elements)")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _misuse(f"'{self.name}' as an array")

    def __len__(self) -> int:
        raise _misuse(f"len({self.name}) (write {self.name}.shape[0])")

    def __bool__(self) -> bool:
        raise _misuse(f"'{self.name}' in a condition")

    def __iter__(self) -> Any:
        raise _misuse(f"iteration over '{self.name}'")

    def __repr__(self) -> str:
        return f"<array input {self.name}>"


class HandleSymbol:
    """A node-handle input of an internal node while it is traced."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<node handle input {self.name}>"


def _symbol(param: Any) -> Any:
    if isinstance(param.type, ArrayType):
        return ArraySymbol(param.name, param.type)
    if isinstance(param.type, NodeHandleType):
        return HandleSymbol(param.name)
    return ParamExpr(param.name)


def trace(fn: InternalFunction) -> ChildGraph:
    """Run ``fn``'s builder with symbolic inputs and return the child graph it built."""
    graph = ChildGraph(owner=fn)
    if fn.builder is None:
        return graph
    ctx = TraceContext(fn, graph, [_symbol(p) for p in fn.params])
    try:
        with building(ctx):
            result = fn.builder(*ctx.symbols)
    except HPVMError as e:
        raise _relocated(e, fn) from None
    except Exception as e:
        raise TracingError(
            f"{fn.describe()}{_where(_builder_location(e, fn), fn)}: building the child graph "
            f"raised {type(e).__name__}: {e}"
        ) from e
    if result is not None:
        raise TracingError(
            f"{fn.describe()}{_where(_return_location(fn), fn)} returned a value; internal nodes "
            "give outputs with hpvm.bind_out(child, oc, op), not with return"
        )
    return graph


def _relocated(e: HPVMError, fn: InternalFunction) -> HPVMError:
    """``e`` with the internal function and, unless the message has it, the line prefixed."""
    loc = _builder_location(e, fn)
    problems = getattr(e, "problems", None) or [str(e)]
    prefixed = [f"{fn.describe()}{'' if _mentions(p, loc) else _where(loc, fn)}: {p}" for p in problems]
    if isinstance(e, VerificationError):
        return type(e)(prefixed)
    try:
        return type(e)("\n".join(prefixed))
    except TypeError:  # an error class with a different constructor
        return TracingError(prefixed)


def _mentions(message: str, loc: SourceLocation) -> bool:
    return re.search(re.escape(str(loc)) + r"(?!\d)", message) is not None


def _where(loc: SourceLocation, fn: InternalFunction) -> str:
    if loc == fn.location:
        return ""
    return f", line {loc.line}" if loc.file == fn.location.file else f", at {loc}"


def _is_user_file(filename: str) -> bool:
    return not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def _builder_location(e: BaseException, fn: InternalFunction) -> SourceLocation:
    """Where in user code ``e`` was raised: the innermost frame in the builder's file, else the
    innermost frame outside the hpvm package (a helper in another file)."""
    own = other = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        filename = frame.f_code.co_filename
        if filename == fn.location.file:
            own = SourceLocation(filename, lineno)
        elif _is_user_file(filename):
            other = SourceLocation(filename, lineno)
    return own or other or fn.location


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _return_location(fn: InternalFunction) -> SourceLocation:
    """The line of the builder's first ``return <value>`` (its own, not a nested function's)."""
    try:
        source, first = function_source(fn.builder)  # type: ignore[arg-type]
        tree = pyast.parse(source)
    except (OSError, TypeError, SyntaxError, StopIteration):
        return fn.location
    todo: list[ast.AST] = list(tree.body[0].body) if tree.body else []  # type: ignore[attr-defined]
    lines = []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and not (node.value is None or _is_none(node.value)):
            lines.append(node.lineno)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return SourceLocation(fn.location.file, first + min(lines) - 1) if lines else fn.location


# ---------------------------------------------------------------------------------------
# Builder calls (the fixed API of DESIGN.md)


def _check_function(f: Any, api: str) -> NodeFunction:
    if not isinstance(f, NodeFunction):
        name = getattr(f, "__name__", repr(f))
        raise TracingError(
            f"hpvm.{api}() at {user_location()}: '{name}' is not a node function; "
            "decorate it with @hpvm.leaf(...) or @hpvm.internal(...)"
        )
    return f


def create_node_nd(dims: int, f: Any, *sizes: Any) -> Node:
    """Create a static node replicated in ``dims`` (0–3) dimensions with the given sizes."""
    return _create("create_node_nd", dims, f, sizes)


def create_node(f: Any) -> Node:
    """Create a static node with one dynamic instance."""
    return _create("create_node", 0, f, ())


def create_node_1d(f: Any, n1: Any) -> Node:
    """Create a node replicated ``n1`` times in x."""
    return _create("create_node_1d", 1, f, (n1,))


def create_node_2d(f: Any, n1: Any, n2: Any) -> Node:
    """Create a node replicated ``n1`` × ``n2`` times (x, y)."""
    return _create("create_node_2d", 2, f, (n1, n2))


def create_node_3d(f: Any, n1: Any, n2: Any, n3: Any) -> Node:
    """Create a node replicated ``n1`` × ``n2`` × ``n3`` times (x, y, z)."""
    return _create("create_node_3d", 3, f, (n1, n2, n3))


def _create(api: str, dims: Any, f: Any, sizes: tuple[Any, ...]) -> Node:
    ctx = _context(api)
    loc = user_location()
    fn = _check_function(f, api)
    if not isinstance(dims, int) or isinstance(dims, bool):
        raise TracingError(f"hpvm.{api}() at {loc}: dims must be an int, not {dims!r}")
    if dims > 3 or dims < 0:
        raise VerificationError(
            f"node '{fn.name}' at {loc}: {dims} dimensions requested; nodes are replicated "
            "in at most three dimensions (x, y, z)"
        )
    if len(sizes) != dims:
        raise TracingError(
            f"node '{fn.name}' at {loc}: {api}({dims}, ...) needs {dims} sizes, got {len(sizes)}"
        )
    try:
        exprs = tuple(as_expr(s) for s in sizes)
    except TracingError as e:
        raise TracingError(f"node '{fn.name}' at {loc}: {e}") from None
    node = Node(ctx.graph.unique_name(fn.name), fn, exprs, loc)
    ctx.graph.nodes.append(node)
    return node


def _check_node(ctx: TraceContext, node: Any, api: str, role: str) -> Node:
    if not isinstance(node, Node):
        raise TracingError(
            f"hpvm.{api}() at {user_location()}: {role} must be a node returned by "
            f"hpvm.create_node*(), not {node!r}"
        )
    if not any(n is node for n in ctx.graph.nodes):
        raise VerificationError(
            f"hpvm.{api}() at {user_location()}: {role} '{node.name}' is not a child of "
            f"'{ctx.function.name}'; edges and binds connect only nodes of the same child graph"
        )
    return node


def _input_index(fn: NodeFunction, port: Any, api: str, role: str) -> int:
    """An input port given as an index, a parameter name, or (in binds) the traced symbol."""
    if isinstance(port, (ParamExpr, ArraySymbol, HandleSymbol)):
        port = port.name
    elif isinstance(port, Expr):
        raise TracingError(f"hpvm.{api}() at {user_location()}: {role} must be an input, not {port}")
    if isinstance(port, str):
        index = fn.param_index(port)
        if index is None:
            raise VerificationError(
                f"hpvm.{api}() at {user_location()}: {fn.describe()} has no input named "
                f"'{port}' (its inputs are {', '.join(p.name for p in fn.params) or 'none'})"
            )
        return index
    return _port_int(port, api, role)


def _port_int(port: Any, api: str, role: str) -> int:
    if not isinstance(port, int) or isinstance(port, bool):
        raise TracingError(f"hpvm.{api}() at {user_location()}: {role} must be an int, not {port!r}")
    return port


def _flag(value: Any, api: str, role: str) -> bool:
    if not isinstance(value, (bool, int)):
        raise TracingError(f"hpvm.{api}() at {user_location()}: {role} must be a bool, not {value!r}")
    return bool(value)


def edge(src: Node, dst: Node, repl: int, sp: int, dp: int | str, stream: bool = False) -> Edge:
    """Create an edge from output ``sp`` of ``src`` to input ``dp`` of ``dst``."""
    ctx = _context("edge")
    src = _check_node(ctx, src, "edge", "the source")
    dst = _check_node(ctx, dst, "edge", "the destination")
    if repl not in (ONE_TO_ONE, ALL_TO_ALL):
        raise TracingError(
            f"hpvm.edge() at {user_location()}: repl must be hpvm.ONE_TO_ONE (0) or "
            f"hpvm.ALL_TO_ALL (1), not {repl!r}"
        )
    e = Edge(
        src,
        _port_int(sp, "edge", "sp"),
        dst,
        _input_index(dst.function, dp, "edge", "dp"),
        int(repl),
        _flag(stream, "edge", "stream"),
        user_location(),
    )
    ctx.graph.edges.append(e)
    return e


def bind_in(node: Node, ip: int | str, ic: int | str, stream: bool = False) -> InputBind:
    """Bind input ``ip`` of the node being built to input ``ic`` of child ``node``."""
    ctx = _context("bind_in")
    node = _check_node(ctx, node, "bind_in", "the child")
    b = InputBind(
        _input_index(ctx.function, ip, "bind_in", "ip"),
        node,
        _input_index(node.function, ic, "bind_in", "ic"),
        _flag(stream, "bind_in", "stream"),
        user_location(),
    )
    ctx.graph.in_binds.append(b)
    return b


def bind_out(node: Node, oc: int, op: int, stream: bool = False) -> OutputBind:
    """Bind output ``oc`` of child ``node`` to output ``op`` of the node being built."""
    ctx = _context("bind_out")
    node = _check_node(ctx, node, "bind_out", "the child")
    b = OutputBind(
        node,
        _port_int(oc, "bind_out", "oc"),
        _port_int(op, "bind_out", "op"),
        _flag(stream, "bind_out", "stream"),
        user_location(),
    )
    ctx.graph.out_binds.append(b)
    return b
