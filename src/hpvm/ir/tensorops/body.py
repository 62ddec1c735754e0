"""Tensor bodies as Python: reading a Python leaf as tensor operations, and writing one.

A leaf is in the *tensor form* (docs/tensor.md) when its body is a ``TensorBody`` (what the
importer and FuseHPVMTensorNodes make) or Python that is straight-line code: assignments of
``hpvm.tensor.<op>(...)`` calls to names, then one ``return``. Operands are the leaf's
parameters, results of earlier calls and numeric constants (literals or module-level
numbers). ``parse_tensor_leaf`` gives the operations of either — what the ``tensor`` back
end compiles and what fusion splices — and says which line breaks the form otherwise. The
front end's operation functions are recognised by their ``__hpvm_tensor_op__`` tag, so
reading needs no import of the front end.

``render_leaf`` writes a tensor body as the equivalent Python (``LeafFunction.source`` of a
tensor leaf); ``body_function`` makes the callable that runs one (its ``pyfunc``: the
interpreter runs tensor leaves like any other, on the NumPy reference implementations).
"""

from __future__ import annotations

import ast
import builtins
import itertools
import linecache
import re
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..bodies import PYTHON_KINDS, OpCall, Operand, TensorBody, const_text
from ..leafinfo import parse_leaf, visible_names
from ..types import ArrayType, PortType
from . import OPS, apply

if TYPE_CHECKING:
    from ..graph import LeafFunction, Param


@dataclass(frozen=True)
class TensorLeaf:
    """The operations of a tensor leaf and what it returns."""

    fn: LeafFunction
    calls: tuple[OpCall, ...]
    returns: tuple[Operand, ...]

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(c.op for c in self.calls)

    def single_op(self) -> OpCall | None:
        """The call, when the leaf is one operation returning its result (a fusion candidate)."""
        if len(self.calls) == 1 and self.returns == (Operand("local", 0),):
            return self.calls[0]
        return None


class NotATensorLeaf(Exception):
    """Why a leaf is not a tensor leaf, and the line (callers turn it into their error)."""

    def __init__(self, reason: str, line: int):
        super().__init__(reason)
        self.reason, self.line = reason, line


def parse_tensor_leaf(fn: LeafFunction) -> TensorLeaf:
    """The operations of ``fn``: its ``TensorBody``, or its Python body read as the tensor
    form; ``NotATensorLeaf`` when it is neither.

    Reading Python is cached on the function (``set_source`` makes a new read).
    """
    body = fn.body
    if isinstance(body, TensorBody):
        return TensorLeaf(fn, body.calls, body.returns)
    if body.kind not in PYTHON_KINDS:
        raise NotATensorLeaf(f"its body is {body.kind} code, not tensor operations", fn.location.line)
    try:
        key: Any = (fn.source, fn.source_line)
    except (OSError, TypeError):
        key = None
    cached = fn.__dict__.get("_tensor_leaf")
    if cached is not None and key is not None and cached[0] == key:
        return cached[1]
    result = _Reader(fn).read()
    fn.__dict__["_tensor_leaf"] = (key, result)
    return result


class _Reader:
    def __init__(self, fn: LeafFunction):
        self.fn = fn
        self.globals: dict[str, Any] = visible_names(fn)
        self.names: dict[str, Operand] = {p.name: Operand("param", i) for i, p in enumerate(fn.params)}
        self.calls: list[OpCall] = []

    def read(self) -> TensorLeaf:
        func = parse_leaf(self.fn)
        if func is None:
            raise NotATensorLeaf("its Python source cannot be read", self.fn.location.line)
        returns: tuple[Operand, ...] | None = None
        for stmt in func.body:
            if returns is not None:
                raise NotATensorLeaf("a statement after the return", stmt.lineno)
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                continue  # a docstring
            if isinstance(stmt, ast.Pass):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                self.assign(stmt)
            elif isinstance(stmt, ast.Return):
                returns = self.returned(stmt)
            else:
                raise NotATensorLeaf(
                    f"a '{type(stmt).__name__.lower()}' statement; tensor leaves are straight-line "
                    "assignments of hpvm.tensor operations and one return",
                    stmt.lineno,
                )
        if returns is None:
            returns = ()
        return TensorLeaf(self.fn, tuple(self.calls), returns)

    def assign(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or stmt.value is None:
            raise NotATensorLeaf(
                "assign each result to one plain name (y = hpvm.tensor.relu(x))", stmt.lineno
            )
        self.names[targets[0].id] = self.value(stmt.value)

    def returned(self, stmt: ast.Return) -> tuple[Operand, ...]:
        if stmt.value is None:
            return ()
        items = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
        return tuple(self.value(item) for item in items)

    def value(self, node: ast.expr) -> Operand:
        if isinstance(node, ast.Call):
            self.calls.append(self.call(node))
            return Operand("local", len(self.calls) - 1)
        return self.operand(node)

    def call(self, node: ast.Call) -> OpCall:
        target = self.resolve(node.func)
        name = getattr(target, "__hpvm_tensor_op__", None) if target is not None else None
        if name not in OPS:
            raise NotATensorLeaf(
                f"calls {ast.unparse(node.func)}(), which is not an hpvm.tensor operation "
                f"(operations: {', '.join(sorted(OPS))})",
                node.lineno,
            )
        op = OPS[name]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise NotATensorLeaf(
                f"hpvm.tensor.{name}() with *args/**kwargs; pass the arguments one by one", node.lineno
            )
        if len(node.args) > len(op.params):
            raise NotATensorLeaf(
                f"hpvm.tensor.{name}() takes {len(op.params)} arguments ({', '.join(op.params)}), "
                f"{len(node.args)} given",
                node.lineno,
            )
        args: list[Operand | None] = [self.operand(a) for a in node.args]
        args += [None] * (len(op.params) - len(args))
        for kw in node.keywords:
            if kw.arg not in op.params:
                raise NotATensorLeaf(f"hpvm.tensor.{name}() has no argument '{kw.arg}'", node.lineno)
            index = op.params.index(kw.arg)
            if args[index] is not None:
                raise NotATensorLeaf(f"hpvm.tensor.{name}() got argument '{kw.arg}' twice", node.lineno)
            args[index] = self.operand(kw.value)
        first_default = len(op.params) - len(op.defaults)
        for i, a in enumerate(args):
            if a is None:
                if i < first_default:
                    raise NotATensorLeaf(
                        f"hpvm.tensor.{name}() is missing argument '{op.params[i]}'", node.lineno
                    )
                args[i] = Operand("const", op.defaults[i - first_default])
        return OpCall(name, tuple(a for a in args if a is not None), node.lineno)

    def operand(self, node: ast.expr) -> Operand:
        if isinstance(node, ast.Call):
            raise NotATensorLeaf(
                "a call nested in another call's arguments; assign its result to a name first",
                node.lineno,
            )
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            value = self.globals.get(node.id, getattr(builtins, node.id, None))
            if _is_number(value):
                return Operand("const", _plain(value))
            raise NotATensorLeaf(
                f"'{node.id}' is not a parameter, an earlier result or a numeric constant", node.lineno
            )
        try:
            value = ast.literal_eval(node)
        except ValueError:
            value = None
        if _is_number(value):
            return Operand("const", value)
        raise NotATensorLeaf(
            f"operand '{ast.unparse(node)}'; operands are parameters, earlier results and numeric "
            "constants (compute on tensors only with hpvm.tensor operations)",
            node.lineno,
        )

    def resolve(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            return self.globals.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, np.bool_)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------------------------
# Writing tensor leaves


def annotation(t: PortType) -> str:
    """The annotation of a port type in leaf source (``hpvm.f32[:, :]``)."""
    return f"hpvm.{t.elem.name}[{', '.join(':' * t.rank)}]" if isinstance(t, ArrayType) else f"hpvm.{t}"


def render_leaf(
    name: str,
    params: Sequence[Param],
    outputs: Sequence[PortType],
    calls: Sequence[OpCall],
    returns: Sequence[Operand],
) -> str:
    """Python source of a tensor leaf: one assignment per call (``t0``, ``t1``, ...), a return."""
    taken = {p.name for p in params}
    locals_: list[str] = []
    for i in range(len(calls)):
        candidate, k = f"t{i}", 0
        while candidate in taken:
            k += 1
            candidate = f"t{i}_{k}"
        taken.add(candidate)
        locals_.append(candidate)

    def text(o: Operand) -> str:
        if o.kind == "param":
            return params[o.value].name
        if o.kind == "local":
            return locals_[o.value]
        return const_text(o.value)

    sig = ", ".join(f"{p.name}: {annotation(p.type)}" for p in params)
    if not outputs:
        ret_ann = "None"
    elif len(outputs) == 1:
        ret_ann = annotation(outputs[0])
    else:
        ret_ann = f"tuple[{', '.join(annotation(t) for t in outputs)}]"
    lines = [f"def {name}({sig}) -> {ret_ann}:"]
    for local, call in zip(locals_, calls):
        lines.append(f"    {local} = hpvm.tensor.{call.op}({', '.join(text(a) for a in call.args)})")
    if returns:
        lines.append(f"    return {', '.join(text(r) for r in returns)}")
    elif not calls:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


def rendered_call(body: TensorBody, line: int) -> OpCall | None:
    """The operation on ``line`` of ``render_leaf``'s text of ``body`` (line 1 its ``def``,
    line k + 2 its k-th operation), if that line is one."""
    k = line - 2
    return body.calls[k] if 0 <= k < len(body.calls) else None


def python_name(name: str) -> str:
    """``name`` as a Python identifier (node names may be any string)."""
    text = re.sub(r"\W", "_", name) or "_"
    return "_" + text if text[0].isdigit() else text


# ---------------------------------------------------------------------------------------
# Running a tensor body

_COUNTER = itertools.count()


def body_function(
    name: str, params: Sequence[Param], outputs: Sequence[PortType], body: TensorBody
) -> Callable[..., Any]:
    """A Python function computing ``body``: its rendered source, compiled under a file name
    of its own (registered with ``linecache``, so tracebacks and messages quote its lines),
    with ``hpvm.tensor.<op>`` bound to the intrinsics' ``apply`` (NumPy or torch operands)."""
    name = python_name(name)
    source = render_leaf(name, params, outputs, body.calls, body.returns)
    filename = f"<hpvm tensor leaf {name} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tensor = types.SimpleNamespace(**{op: _operation(op) for op in OPS})
    scope: dict[str, Any] = {"hpvm": types.SimpleNamespace(tensor=tensor), "__name__": "hpvm_tensor_leaf"}
    exec(compile(source, filename, "exec"), scope)
    return scope[name]


def _operation(op: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return apply(op, args)

    call.__name__ = call.__qualname__ = op
    call.__hpvm_tensor_op__ = op  # type: ignore[attr-defined]
    return call


__all__ = [
    "NotATensorLeaf",
    "TensorLeaf",
    "annotation",
    "body_function",
    "parse_tensor_leaf",
    "python_name",
    "render_leaf",
    "rendered_call",
]
