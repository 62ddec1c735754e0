"""The dataflow-graph model of seed 000: node functions, static nodes, edges and binds.

A *node function* is either a leaf (Python code that computes) or an internal function
(whose child graph is built by tracing a Python builder, or given directly, e.g. by the
text parser). A *node* is one use of a node function inside a child graph, replicated into
dynamic instances over 0–3 dimensions whose sizes are expressions of the parent's inputs.
"""

from __future__ import annotations

import inspect
import textwrap
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import UNKNOWN_LOCATION, CompileError, HPVMError, SourceLocation, TypeAnnotationError
from .bodies import GeneratedBody, LeafBody, PythonBody, TensorBody
from .expr import ROUNDING, Expr, rounding_differs
from .layouts import Layout
from .types import ArrayType, PortType, port_type

if TYPE_CHECKING:
    from .moduletext import ModuleText

ONE_TO_ONE = 0
ALL_TO_ALL = 1
REPLICATION_NAMES = {ONE_TO_ONE: "one_to_one", ALL_TO_ALL: "all_to_all"}

CPU_TARGET = "cpu"
GPU_TARGET = "gpu"
TENSOR_TARGET = "tensor"
HINTS = (CPU_TARGET, GPU_TARGET, TENSOR_TARGET)


@dataclass(frozen=True)
class Param:
    """One input port of a node function: a named, typed parameter.

    An array parameter may carry a data ``layout`` (ir/layouts.py): how the array is
    partitioned over the instance grid of the node that runs the function. It is a
    placement promise for back ends that distribute data; the others ignore it.
    """

    name: str
    type: PortType
    layout: Layout | None = None

    def __str__(self) -> str:
        layout = f" layout({self.layout})" if self.layout is not None else ""
        return f"{self.name}: {self.type}{layout}"


@dataclass(frozen=True)
class WrittenPorts:
    """How a front end numbered a function's ports where its numbering is not the graph's:
    the written index of each input and each output. HPVM's LLVM IR (and so HPVM-C) passes
    an array as a pointer and its size, two arguments and two indices of ``bindIn``/``edge``,
    where the graph has one port; messages about ports use the written indices
    (``written_in``/``written_out``), so that they match the program's calls."""

    ins: tuple[int, ...]
    outs: tuple[int, ...]


class NodeFunction:
    """What leaf and internal functions share: name, typed ports, hint and array attributes."""

    kind = "node"
    #: The front end's numbering of the ports, where it is not the graph's (``WrittenPorts``).
    written: WrittenPorts | None = None

    def __init__(
        self,
        name: str,
        params: list[Param],
        hint: str | None,
        ins: tuple[str, ...],
        outs: tuple[str, ...],
        location: SourceLocation,
    ):
        self.name = name
        self.params = params
        self.hint = hint
        self.ins = tuple(ins)
        self.outs = tuple(outs)
        self.location = location

    @property
    def out_types(self) -> list[PortType]:
        raise NotImplementedError

    def param_index(self, name: str) -> int | None:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        return None

    def _repr_svg_(self) -> str | None:
        """The program's picture in a notebook (``hpvm show``'s; ``ir/pictures.py``)."""
        from .pictures import program_svg

        return program_svg(self)

    def array_params(self) -> list[Param]:
        return [p for p in self.params if isinstance(p.type, ArrayType)]

    def describe(self) -> str:
        return f"{self.kind} '{self.name}' ({self.location})"

    def __repr__(self) -> str:
        return f"<{self.kind} node function {self.name} at {self.location}>"


def written_in(fn: NodeFunction | None, port: int) -> int:
    """Input ``port`` of ``fn`` as its program numbers it (``WrittenPorts``); ``port`` itself
    where the numbering is the graph's, or the port does not exist."""
    written = fn.written if fn is not None else None
    return written.ins[port] if written is not None and 0 <= port < len(written.ins) else port


def written_out(fn: NodeFunction | None, port: int) -> int:
    """Output ``port`` of ``fn`` as its program numbers it (``written_in`` for outputs)."""
    written = fn.written if fn is not None else None
    return written.outs[port] if written is not None and 0 <= port < len(written.outs) else port


class LeafFunction(NodeFunction):
    """A leaf node function: it computes, with a body of one of the kinds of ``ir/bodies``.

    ``LeafFunction(pyfunc, name, ...)`` makes a Python leaf (``source`` may give its
    ``def`` when it cannot be read from the function); ``body=`` gives any other kind.
    Whatever the kind, ``source`` is the body as Python (a tensor body renders as the calls
    of ``hpvm.tensor`` it stands for; an LLVM body has none: ``OSError``) and ``pyfunc`` a
    Python callable computing it, for the back ends that run leaves as Python.
    """

    kind = "leaf"

    def __init__(
        self,
        pyfunc: Callable[..., Any] | None,
        name: str,
        params: list[Param],
        outputs: list[PortType],
        hint: str | None = None,
        ins: tuple[str, ...] = (),
        outs: tuple[str, ...] = (),
        location: SourceLocation = UNKNOWN_LOCATION,
        source: str | None = None,
        body: LeafBody | None = None,
    ):
        super().__init__(name, params, hint, ins, outs, location)
        if body is None:
            if pyfunc is None:
                raise TypeError(f"leaf '{name}' needs a Python function or a body")
            body = PythonBody(pyfunc, source, location.line)
        self.body: LeafBody = body
        self.outputs = outputs

    @property
    def body_kind(self) -> str:
        """``python``, ``tensor``, ``llvm`` or ``generated`` (see ``ir/bodies``)."""
        return self.body.kind

    @property
    def out_types(self) -> list[PortType]:
        return self.outputs

    @property
    def pyfunc(self) -> Callable[..., Any]:
        """A Python callable computing the body (the interpreter runs it). A body read from
        a program file runs its module text here, the first time (``ir/moduletext.py``)."""
        body = self.body
        if isinstance(body, (PythonBody, GeneratedBody)):
            if body.pyfunc is None:
                assert body.module is not None
                func = body.module.function()
                self.body = replace(body, pyfunc=func)
                self._forget_facts()  # facts found before it ran used its static names only
                return func
            return body.pyfunc
        made = self.__dict__.get("_pyfunc")
        if made is None:
            made = self.__dict__["_pyfunc"] = self._make_pyfunc()
        return made

    @property
    def pending_code(self) -> ModuleText | None:
        """The module text of a body read from a program file while it has not run (``None``
        once it has, and for every other body): what only looking at the leaf leaves alone."""
        body = self.body
        if isinstance(body, (PythonBody, GeneratedBody)) and body.pyfunc is None:
            return body.module
        return None

    def materialize(self) -> None:
        """Run the body's module text if it has not run (``pyfunc`` does it when first used)."""
        if self.pending_code is not None:
            _ = self.pyfunc

    def _forget_facts(self) -> None:
        """Drop what the analyses cached about the body (``leafinfo``, ``leafstride``,
        ``helpercalls``, ``tensorops``, ``bounded``): they are found again from the new source or namespace."""
        for key in (
            "_leaf_info",
            "_helper_intrinsics",
            "_tensor_leaf",
            "_unit_stride",
            "_unbounded_reason",
            "_keyed_reason",
            "_fixed_work",
            "_leaf_ir",
        ):
            self.__dict__.pop(key, None)

    def _make_pyfunc(self) -> Callable[..., Any]:
        body = self.body
        if isinstance(body, TensorBody):
            from .tensorops.body import body_function

            return body_function(self.name, self.params, self.outputs, body)
        name, location = self.name, self.location

        def no_python(*args: Any) -> Any:
            raise CompileError(
                f"leaf '{name}' ({location}) has an {body.kind} body and no Python; run it on a "
                "back end that accepts that kind"
            )

        return no_python

    @property
    def source(self) -> str:
        """The body as Python source: a ``def`` without decorators, dedented."""
        body = self.body
        if isinstance(body, PythonBody):
            if body.source is None:
                text, line = function_source(body.pyfunc)
                self.body = body = PythonBody(body.pyfunc, text, line)
            return body.source  # type: ignore[return-value]
        if isinstance(body, GeneratedBody):
            return body.source
        if isinstance(body, TensorBody):
            from .tensorops.body import render_leaf

            return render_leaf(self.name, self.params, self.outputs, body.calls, body.returns)
        raise OSError(f"leaf '{self.name}' has an {body.kind} body, not Python source")

    @property
    def source_line(self) -> int:
        """The line ``source`` starts on, in the file the leaf's lines are counted in."""
        body = self.body
        if isinstance(body, PythonBody):
            _ = self.source
            return self.body.line  # type: ignore[union-attr]
        return 1

    def set_source(self, source: str, line: int) -> None:
        """Record where the leaf's Python source lives (its ``def`` and the line it is on)."""
        body = self.body
        if isinstance(body, PythonBody):
            self.body = replace(body, source=source, line=line)
        else:
            self.body = PythonBody(self.pyfunc, source, line)
        self._forget_facts()  # facts about the old source are stale

    def where(self, line: int) -> SourceLocation:
        """The place a line of ``source`` stands for: the leaf's file for Python and tensor
        bodies, the foreign file's line for generated code (its source map)."""
        return self.locate(None, line)

    @property
    def code_file(self) -> str:
        """The file name the leaf's running code carries (what tracebacks show)."""
        pending = self.pending_code
        if pending is not None:
            return pending.file
        code = getattr(self.pyfunc, "__code__", None)
        return code.co_filename if code is not None else self.location.file

    def locate(self, file: str | None, line: int) -> SourceLocation:
        """The user's place for ``line`` of ``file`` (a traceback frame; ``None``: a line of
        ``source``): generated code maps through its source map, other code is its own place."""
        body = self.body
        if isinstance(body, GeneratedBody) and (file is None or file == self.code_file):
            return body.origin_of(line)
        if isinstance(body, TensorBody) and file == self.code_file and file != self.location.file:
            from .tensorops.body import rendered_call  # (the rendered leaf's lines: its operations')

            call = rendered_call(body, line)
            if call is not None and call.line:
                return SourceLocation(self.location.file, call.line)
        return SourceLocation(file or self.location.file, line)

    def __call__(self, *args: Any) -> Any:
        """Call the leaf's Python directly (intrinsics work only while a graph runs)."""
        return self.pyfunc(*args)


class InternalFunction(NodeFunction):
    """An internal node function: it only builds a child graph.

    The graph is built the first time it is needed (so node functions may be defined in any
    order) by ``tracer(self)`` — the front end that made the function supplies it; ``lang``
    traces ``builder`` — or given directly (the text parser and the passes do this).
    """

    kind = "internal"

    def __init__(
        self,
        name: str,
        params: list[Param],
        builder: Callable[..., Any] | None = None,
        graph: ChildGraph | None = None,
        hint: str | None = None,
        ins: tuple[str, ...] = (),
        outs: tuple[str, ...] = (),
        location: SourceLocation = UNKNOWN_LOCATION,
        declared_outputs: list[PortType] | None = None,
        tracer: Callable[[InternalFunction], ChildGraph] | None = None,
    ):
        super().__init__(name, params, hint, ins, outs, location)
        self.builder = builder
        self.tracer = tracer
        self._graph = graph
        self.declared_outputs = declared_outputs
        #: The dimensions of the instance a run of this function as a root stands for: 0 for a
        #: launch's root; a node's replication for the function of a node that mixes devices,
        #: whose parts a back end runs as their own graph, once per instance of the node
        #: (``passes/split_by_target.py``). The verifier lets leaves query that many.
        self.root_dims = 0
        if graph is not None:
            graph.owner = self

    @property
    def graph(self) -> ChildGraph:
        if self._graph is None:
            self._graph = self.tracer(self) if self.tracer is not None else ChildGraph(owner=self)
        return self._graph

    @property
    def out_types(self) -> list[PortType]:
        """One type per output: from the output binds (their number is the highest op + 1)."""
        binds = self.graph.out_binds
        if not binds:
            return list(self.declared_outputs or [])
        count = max(b.op for b in binds) + 1
        types: list[PortType | None] = [None] * count
        for b in binds:
            src_types = b.src.function.out_types
            if 0 <= b.oc < len(src_types) and 0 <= b.op < count:
                types[b.op] = src_types[b.oc]
        return [t if t is not None else _UNBOUND for t in types]

    def __call__(self, *args: Any) -> Any:
        from ..errors import TracingError

        raise TracingError(
            f"{self.describe()} is a graph builder and cannot be called; "
            "launch it with hpvm.launch(root, args) or use it in hpvm.create_node(...)"
        )


class _Unbound:
    """Placeholder type of an internal output that no bind feeds (the verifier reports it)."""

    def __str__(self) -> str:
        return "<unbound>"


_UNBOUND: Any = _Unbound()


@dataclass(eq=False)
class Node:
    """A static node in a child graph: a node function replicated over ``len(sizes)`` dims.

    ``attrs``: what passes found out about the node, for the back ends that consume them
    (``fuse``: the fusion group it runs in; ``place``: where an allocation leaf runs;
    ``target``: the back end its part of the graph runs on; see ``passes/``). Printed in the
    text form (``%n = node @f[n] {fuse = "a", place = "host"}``); values are strings.
    """

    name: str
    function: NodeFunction
    sizes: tuple[Expr, ...]
    location: SourceLocation = UNKNOWN_LOCATION
    attrs: dict[str, str] = field(default_factory=dict)

    @property
    def dims(self) -> int:
        return len(self.sizes)

    def evaluate_sizes(self, env: dict[str, Any], where: str) -> tuple[int, ...]:
        """The replication sizes for one execution; ``LaunchError`` if one is invalid.

        ``where`` says which execution (the parent instance, or the launch), for the message.
        """
        from ..errors import LaunchError

        values = []
        for axis, expr in enumerate(self.sizes):
            prefix = f"{where}node '{self.name}' ({self.location}): replication size '{expr}' (dimension {'xyz'[axis]})"
            try:
                value = expr.evaluate(env)
                other = rounding_differs(expr, env, value)
            except Exception as e:
                raise LaunchError(f"{prefix} cannot be evaluated: {e}") from None
            if other is not None:
                raise LaunchError(f"{prefix} is {value} in Python but {other} in HPVM-C and LLVM: {ROUNDING}")
            if value < 0:
                raise LaunchError(f"{prefix} is {value}; sizes must be >= 0")
            values.append(value)
        return tuple(values)

    def __repr__(self) -> str:
        return f"<node {self.name}>"


@dataclass(eq=False)
class Edge:
    """A dataflow edge from output ``sp`` of ``src`` to input ``dp`` of ``dst``."""

    src: Node
    sp: int
    dst: Node
    dp: int
    repl: int = ONE_TO_ONE
    stream: bool = False
    location: SourceLocation = UNKNOWN_LOCATION

    def describe(self) -> str:
        kind = REPLICATION_NAMES.get(self.repl, f"replication {self.repl}")
        sp, dp = written_out(self.src.function, self.sp), written_in(self.dst.function, self.dp)
        return f"edge {self.src.name}.{sp} -> {self.dst.name}.{dp} ({kind}, {self.location})"


@dataclass(eq=False)
class InputBind:
    """Input ``ip`` of the parent is bound to input ``ic`` of child ``dst``."""

    ip: int
    dst: Node
    ic: int
    stream: bool = False
    location: SourceLocation = UNKNOWN_LOCATION

    def describe(self, parent: NodeFunction | None = None) -> str:
        """The bind as messages name it; ``parent``: the function whose graph holds it (its
        input's number as written, ``written_in``)."""
        ip, ic = written_in(parent, self.ip), written_in(self.dst.function, self.ic)
        return f"input bind {ip} -> {self.dst.name}.{ic} ({self.location})"


@dataclass(eq=False)
class OutputBind:
    """Output ``oc`` of child ``src`` is bound to output ``op`` of the parent."""

    src: Node
    oc: int
    op: int
    stream: bool = False
    location: SourceLocation = UNKNOWN_LOCATION

    def describe(self, parent: NodeFunction | None = None) -> str:
        """The bind as messages name it (``InputBind.describe``)."""
        oc, op = written_out(self.src.function, self.oc), written_out(parent, self.op)
        return f"output bind {self.src.name}.{oc} -> {op} ({self.location})"


@dataclass(eq=False)
class ChildGraph:
    """The child graph of an internal node: nodes, edges and binds."""

    owner: InternalFunction | None = None
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    in_binds: list[InputBind] = field(default_factory=list)
    out_binds: list[OutputBind] = field(default_factory=list)

    def unique_name(self, base: str) -> str:
        taken = {n.name for n in self.nodes}
        if base not in taken:
            return base
        i = 1
        while f"{base}_{i}" in taken:
            i += 1
        return f"{base}_{i}"

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def functions(root: NodeFunction) -> Iterator[NodeFunction]:
    """Every node function reachable from ``root``, each once, children before parents."""
    seen: set[int] = set()
    order: list[NodeFunction] = []
    active: set[int] = set()

    def visit(fn: NodeFunction) -> None:
        if id(fn) in seen or id(fn) in active:
            return  # a function containing itself is reported by the verifier
        active.add(id(fn))
        if isinstance(fn, InternalFunction):
            for node in fn.graph.nodes:
                visit(node.function)
        active.discard(id(fn))
        seen.add(id(fn))
        order.append(fn)

    visit(root)
    return iter(order)


def materialize(root: NodeFunction) -> None:
    """Run the module text of every leaf of ``root``'s program that has not run yet.

    Loading a program file runs none of its code (``ir/moduletext.py``); ``launch`` calls
    this before it verifies the program, so that the checks that need a leaf's real
    namespace run then. A graph that cannot be built is left to the verifier to report.
    """
    seen: set[int] = set()
    todo: list[NodeFunction] = [root]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, LeafFunction):
            fn.materialize()
        elif isinstance(fn, InternalFunction):
            try:
                nodes = fn.graph.nodes
            except HPVMError:
                continue
            todo.extend(reversed([n.function for n in nodes]))  # (in the order of the graph)


# ---------------------------------------------------------------------------------------
# Building node functions from Python functions (used by the decorators and the loader)


def location_of(pyfunc: Callable[..., Any]) -> SourceLocation:
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return UNKNOWN_LOCATION
    return SourceLocation(code.co_filename, code.co_firstlineno)


def function_source(pyfunc: Callable[..., Any]) -> tuple[str, int]:
    """The ``def`` of a function without its decorators, dedented, and the line it starts on."""
    lines, first = inspect.getsourcelines(pyfunc)
    lines = textwrap.dedent("".join(lines)).splitlines(keepends=True)
    start = next(
        (i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), None
    )
    if start is None:
        raise OSError(f"no 'def' found in the source of {pyfunc!r} (lambdas cannot be node functions)")
    return "".join(lines[start:]), first + start


def _annotation_error(fn_desc: str, what: str, problem: str) -> TypeAnnotationError:
    return TypeAnnotationError(
        f"{fn_desc}: {what} {problem}; annotate ports with HPVM types, e.g. "
        "'n: hpvm.i64', 'a: hpvm.f32[:]' (a 1-D float32 array) or '-> tuple[hpvm.f32, hpvm.i64]'"
    )


def signature_ports(
    pyfunc: Callable[..., Any], kind: str, require_return: bool
) -> tuple[list[Param], list[PortType] | None]:
    """Typed parameters and outputs from a function's annotations.

    Every parameter must be annotated (ports are typed: the verifier checks edges and binds
    against these types). The return annotation gives the outputs: none or ``None`` → no
    outputs, one type → one output, ``tuple[a, b]`` → two outputs. For internal functions a
    missing return annotation means "derive the outputs from the output binds" (``None``).
    """
    loc = location_of(pyfunc)
    desc = f"{kind} '{pyfunc.__name__}' ({loc})"
    try:
        hints = typing.get_type_hints(pyfunc)
    except Exception:  # annotations that do not evaluate: report them one by one below
        hints = {}
    sig = inspect.signature(pyfunc)
    params = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise _annotation_error(desc, f"parameter '{p.name}'", "is *args/**kwargs/keyword-only")
        ann = hints.get(p.name, p.annotation)
        if ann is inspect.Parameter.empty:
            raise _annotation_error(desc, f"parameter '{p.name}'", "has no type annotation")
        try:
            params.append(Param(p.name, port_type(ann)))
        except (TypeError, ValueError) as e:
            raise _annotation_error(desc, f"parameter '{p.name}'", f"has annotation {ann!r}: {e}") from None
    ret = hints.get("return", sig.return_annotation)
    if ret is inspect.Signature.empty:
        return params, ([] if require_return else None)
    return params, _output_types(ret, desc)


def _output_types(ret: Any, desc: str) -> list[PortType]:
    if ret is None or ret is type(None):
        return []
    if typing.get_origin(ret) is tuple:
        args = typing.get_args(ret)
        if args == ((),):
            return []
        if Ellipsis in args:
            raise _annotation_error(desc, "the return annotation", "uses '...'")
        ret_items = list(args)
    else:
        ret_items = [ret]
    out = []
    for i, item in enumerate(ret_items):
        try:
            out.append(port_type(item))
        except (TypeError, ValueError) as e:
            raise _annotation_error(desc, f"output {i}", f"has annotation {item!r}: {e}") from None
    return out
