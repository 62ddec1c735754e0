"""The pass infrastructure: ``Module``, ``Pass``, ``PassManager`` and program copying.

A pass changes a ``Module`` (a program under transformation: its root node function) in
place. ``PassManager.run`` verifies the input program, works on a copy of it — internal node
functions and their graphs are copied, leaf functions are shared, since passes replace
leaves rather than edit them — and verifies the module after every pass, so a pass that
breaks a rule is caught where it did so.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import VerificationError
from ..ir.graph import ChildGraph, Edge, InputBind, InternalFunction, Node, NodeFunction, OutputBind
from ..ir.verify import verify


@dataclass
class Module:
    """A program being transformed: passes may change its graphs or replace its root.

    ``notes``: what passes report about what they did, by pass name (passes themselves are
    frozen objects without state, so one pass object can run on many modules at once).
    """

    root: InternalFunction
    notes: dict[str, list[Any]] = field(default_factory=dict)


class Pass(ABC):
    """A transformation of a ``Module``, known by its ``name``."""

    name: ClassVar[str] = "pass"

    @abstractmethod
    def apply(self, module: Module) -> None:
        """Transform ``module`` in place."""


class PassManager:
    """Runs passes in order on a copy of a program, verifying after each one."""

    def __init__(self, passes: Sequence[Pass]):
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"{p!r} is not a Pass (a hpvm.passes.Pass with apply(module))")
        self.passes = list(passes)

    def run(self, root: InternalFunction) -> InternalFunction:
        """The transformed copy of ``root``; ``root`` itself is not changed."""
        return self.run_module(root).root

    def run_module(self, root: InternalFunction) -> Module:
        """The module after the passes ran on a copy of ``root``: its root and its notes."""
        verify(root)
        module = Module(copy_program(root))
        for p in self.passes:
            p.apply(module)
            try:
                verify(module.root)
            except VerificationError as e:
                raise VerificationError(
                    [f"after pass '{p.name}': {problem}" for problem in e.problems]
                ) from None
        return module


def run_passes(root: InternalFunction, passes: Sequence[Pass]) -> InternalFunction:
    """``PassManager(passes).run(root)``."""
    return PassManager(passes).run(root)


def lower(root: InternalFunction, passes: Sequence[Pass]) -> InternalFunction:
    """What a back end compiles: a copy of ``root`` after ``passes`` (its lowering pipeline),
    verified after each. The copy's root-level nodes keep their names, so a back end given
    nodes of ``root`` (a pipeline stage, a part of a mixed graph) finds its own by name."""
    return PassManager(passes).run(root)


def copy_program(root: InternalFunction) -> InternalFunction:
    """A copy of ``root``'s hierarchy: new internal functions, graphs, nodes, edges and binds;
    the same leaf functions. An internal function used by several nodes is copied once."""
    memo: dict[int, InternalFunction] = {}

    def copy(fn: NodeFunction) -> NodeFunction:
        if not isinstance(fn, InternalFunction):
            return fn
        done = memo.get(id(fn))
        if done is not None:
            return done
        old = fn.graph
        nodes = {id(n): Node(n.name, copy(n.function), n.sizes, n.location, dict(n.attrs)) for n in old.nodes}
        graph = ChildGraph(
            nodes=[nodes[id(n)] for n in old.nodes],
            edges=[
                Edge(nodes[id(e.src)], e.sp, nodes[id(e.dst)], e.dp, e.repl, e.stream, e.location)
                for e in old.edges
            ],
            in_binds=[InputBind(b.ip, nodes[id(b.dst)], b.ic, b.stream, b.location) for b in old.in_binds],
            out_binds=[OutputBind(nodes[id(b.src)], b.oc, b.op, b.stream, b.location) for b in old.out_binds],
        )
        new = InternalFunction(
            fn.name,
            list(fn.params),
            graph=graph,
            hint=fn.hint,
            ins=fn.ins,
            outs=fn.outs,
            location=fn.location,
            declared_outputs=None if fn.declared_outputs is None else list(fn.declared_outputs),
        )
        new.__doc__ = fn.__doc__
        new.root_dims = fn.root_dims
        memo[id(fn)] = new
        return new

    result = copy(root)
    assert isinstance(result, InternalFunction)
    return result
