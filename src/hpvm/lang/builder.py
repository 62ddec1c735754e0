"""Tracing internal node functions: the builder calls and the symbolic inputs they see.

An internal node function runs once, with symbolic inputs, while its child graph is built.
``create_node*``, ``edge``, ``bind_in`` and ``bind_out`` record into the graph being built;
the symbolic inputs allow size arithmetic (``n // 16``, ``a.shape[0]``) and nothing else,
so computation on input values in an internal node is caught where it is written.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..errors import UNKNOWN_LOCATION, HPVMError, SourceLocation, TracingError, VerificationError
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
)
from ..ir.types import ArrayType, NodeHandleType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_state = threading.local()


def user_location(skip_package: bool = True) -> SourceLocation:
    """The innermost stack frame outside the hpvm package: where the user called us."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not (skip_package and filename.startswith(_PACKAGE_DIR + os.sep)):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return UNKNOWN_LOCATION


@dataclass
class TraceContext:
    function: InternalFunction
    graph: ChildGraph
    symbols: list[Any] = field(default_factory=list)


def _stack() -> list[TraceContext]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def tracing() -> TraceContext | None:
    """The internal node being traced on this thread, if any."""
    stack = _stack()
    return stack[-1] if stack else None


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
    _stack().append(ctx)
    try:
        result = fn.builder(*ctx.symbols)
    except HPVMError as e:
        if isinstance(e, VerificationError) and _names_location(e):
            raise
        raise type(e)(f"{fn.describe()}, line {_builder_line(e, fn)}: {e}") from None
    except Exception as e:
        raise TracingError(
            f"{fn.describe()}, line {_builder_line(e, fn)}: building the child graph raised "
            f"{type(e).__name__}: {e}"
        ) from e
    finally:
        _stack().pop()
    if result is not None:
        raise TracingError(
            f"{fn.describe()} returned a value; internal nodes give outputs with "
            "hpvm.bind_out(child, oc, op), not with return"
        )
    return graph


def _names_location(e: HPVMError) -> bool:
    return ".py:" in str(e)


def _builder_line(e: BaseException, fn: InternalFunction) -> int:
    """The line of the builder (or a helper it called in user code) where ``e`` was raised."""
    line = fn.location.line
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
            line = lineno
    return line


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
    ctx = _context("create_node_nd")
    loc = user_location()
    fn = _check_function(f, "create_node_nd")
    if not isinstance(dims, int) or isinstance(dims, bool):
        raise TracingError(f"hpvm.create_node_nd() at {loc}: dims must be an int, not {dims!r}")
    if dims > 3 or dims < 0:
        raise VerificationError(
            f"node '{fn.name}' at {loc}: {dims} dimensions requested; nodes are replicated "
            "in at most three dimensions (x, y, z)"
        )
    if len(sizes) != dims:
        raise TracingError(
            f"node '{fn.name}' at {loc}: create_node_nd({dims}, ...) needs {dims} sizes, got {len(sizes)}"
        )
    exprs = tuple(as_expr(s) for s in sizes)
    node = Node(ctx.graph.unique_name(fn.name), fn, exprs, loc)
    ctx.graph.nodes.append(node)
    return node


def create_node(f: Any) -> Node:
    """Create a static node with one dynamic instance."""
    return create_node_nd(0, f)


def create_node_1d(f: Any, n1: Any) -> Node:
    """Create a node replicated ``n1`` times in x."""
    return create_node_nd(1, f, n1)


def create_node_2d(f: Any, n1: Any, n2: Any) -> Node:
    """Create a node replicated ``n1`` × ``n2`` times (x, y)."""
    return create_node_nd(2, f, n1, n2)


def create_node_3d(f: Any, n1: Any, n2: Any, n3: Any) -> Node:
    """Create a node replicated ``n1`` × ``n2`` × ``n3`` times (x, y, z)."""
    return create_node_nd(3, f, n1, n2, n3)


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
