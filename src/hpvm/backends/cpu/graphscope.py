"""How a graph function's generated code names the values of one child graph.

A graph function (``graphgen.py``) computes its children's outputs into variables named by
the child's position: ``__hn<k>_v<port>`` (one instance's value), ``__hn<k>_A<port>`` (a
per-instance array, for a consumer in a later loop), ``__hn<k>_L<port>`` (the peeled last
instance's value), ``__hn<k>_s<axis>`` (a replication size), and ``__himp<k>_<port>_<mode>``
(a value imported from another streaming stage). Which of these a (node, port) needs, and
which expression each input port reads, depend only on the graph, its feed table, the fused
loop groups and the stage being generated: that is a ``Scope``. Keeping it apart from the
code that writes loops lets a flattened node's inner graph (``flatten.py``) be written by
the same loop code under a scope of its own (its nodes named ``__hn<k>_<j>_...``).
"""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass, field

from ...ir import expr as size_expr
from ...ir.analysis import FeedTable, returned_params
from ...ir.graph import ALL_TO_ALL, ONE_TO_ONE, Edge, InternalFunction, LeafFunction, Node
from ...ir.types import ArrayType
from .block import Read, local


@dataclass
class Group:
    """Children that run in one loop nest: a fused run (``fuse_one_to_one``), or one node."""

    nodes: list[Node]
    dims: int
    barrier: bool = False


@dataclass(frozen=True)
class Names:
    """Generated names for a graph whose children run inside another graph's function (a
    flattened node, ``flatten.py``): its inputs, and the context tuple its children extend."""

    params: list[str]
    ctx: str
    ready: frozenset[int] = frozenset()  # inputs whose names hold their value before the loop


#: (id(node), output port) -> how consumers read it: "each", "last", "ptr" (see ``needs``).
Needs = dict[tuple[int, int], set[str]]


#: The generated module's globals that graph code calls besides builtins (``compiler.py``'s
#: ``_runtime_helpers``; the rest of them, like every generated local, start with ``__h``).
_GLOBALS = frozenset({"np"})


def input_name(name: str) -> str:
    """How a graph function's code names its input ``name``: as the program does, unless
    that name is a Python keyword, a builtin, one of the module's globals or starts like the
    generated names (``__h``). Why: the code calls ``range``, ``min``, ``np.int64``... and a
    parameter of the same name hides them; HPVM-C and Python node functions may name a
    port ``range`` or ``np`` (a root ``range`` made every loop an int64 call)."""
    if keyword.iskeyword(name) or hasattr(builtins, name) or name in _GLOBALS or name.startswith("__h"):
        return f"__hin_{name}"
    return name


def render(expr: size_expr.Expr, fn: InternalFunction, names: Names | None) -> str:
    """A size expression of ``fn``'s inputs as generated code (inputs renamed by ``names``)."""
    return str(renamed(expr, fn, names))


def renamed(expr: size_expr.Expr, fn: InternalFunction, names: Names | None) -> size_expr.Expr:
    """``expr`` with ``fn``'s inputs renamed by ``names`` (without: as ``input_name``
    names them)."""
    if names is None:
        return size_expr.renamed(expr, {p: input_name(p) for p in expr.params()})
    return size_expr.renamed(expr, {p.name: new for p, new in zip(fn.params, names.params)})


def message(node: Node, what: str) -> str:
    """A LaunchError message naming ``node`` and where it is, as a Python literal."""
    return repr(f"node '{node.name}' ({node.location}): {what}")


def import_name(k: int | str, port: int, mode: str) -> str:
    """The stage-function parameter holding output ``port`` of child ``k`` from another stage."""
    return f"__himp{k}_{port}_{mode}"


def same_array_everywhere(node: Node, port: int, feeds: FeedTable) -> bool:
    """Whether every instance provably returns the same array from output ``port``: the
    leaf returns one of its array parameters unchanged, and that parameter is fed the same
    value in every instance (a bind, an all-to-all edge, or a single-instance source).
    Then no per-instance pointer check is needed."""
    fn = node.function
    if not isinstance(fn, LeafFunction):
        return False
    index = returned_params(fn)[port]
    feed = None if index is None else feeds[id(node)][index]
    if feed is None:
        return False
    kind, item = feed
    return kind == "bind" or item.repl == ALL_TO_ALL or item.src.dims == 0


def needs(fn: InternalFunction, feeds: FeedTable, groups: list[Group], selected: set[int] | None) -> Needs:
    """What each (node, port) of ``fn``'s graph must provide to its consumers: "each" (a
    per-instance array), "last" (the peeled last instance's value), and "ptr" (per-instance
    array pointers, checked equal: an array sent per instance to a node outside the loop).
    ``selected``: the ids of the nodes of the stage being generated (``None``: all)."""
    graph = fn.graph
    group_of = {id(n): g for g in groups for n in g.nodes}
    out: Needs = {}
    for e in graph.edges:
        if selected is not None and id(e.src) not in selected:
            continue
        if e.src.dims == 0:
            continue  # a 0-dim node's outputs are plain variables
        if selected is not None and id(e.dst) not in selected:
            mode = "each" if e.repl == ONE_TO_ONE else "last"
        elif e.repl == ONE_TO_ONE and group_of[id(e.src)] is group_of[id(e.dst)]:
            continue  # fused: in registers
        else:
            mode = "each" if e.repl == ONE_TO_ONE else "last"
        out.setdefault((id(e.src), e.sp), set()).add(mode)
    for b in graph.out_binds:
        if (selected is None or id(b.src) in selected) and b.src.dims > 0:
            out.setdefault((id(b.src), b.oc), set()).add("last")
    # An array sent per instance to a node outside the loop: every instance must send the
    # same array (the usual case: a memory object passed along); it is checked by pointer.
    for (node_id, port), want in out.items():
        node = next(n for n in graph.nodes if id(n) == node_id)
        if "each" in want and isinstance(node.function.out_types[port], ArrayType):
            want.discard("each")
            want.add("last")
            if not same_array_everywhere(node, port, feeds):
                want.add("ptr")
    return out


@dataclass(frozen=True)
class Scope:
    """One child graph as a graph function's code names it: ``fn`` (whose graph it is), its
    feed table, each child's name part ``k`` (``index``: id(node) -> k), the values imported
    from other stages (``imported``: (id(node), port) -> mode) and what each output must
    provide (``needs``)."""

    fn: InternalFunction
    feeds: FeedTable
    index: dict[int, int] | dict[int, str]
    imported: dict[tuple[int, int], str] = field(default_factory=dict)
    needs: Needs = field(default_factory=dict)

    def input(
        self, node: Node, port: int, idx: list[str], group: Group | None, names: Names | None = None
    ) -> str:
        """The expression input ``port`` of one instance (ids ``idx``) of ``node`` reads, in
        a loop running ``group`` (``None``: outside any loop)."""
        return self.read(node, port, idx, group, names).text

    def read(
        self, node: Node, port: int, idx: list[str], group: Group | None, names: Names | None = None
    ) -> Read:
        """``input``'s expression with the locals it reads (``block.py``: a parallel loop's
        chunk function takes them)."""
        kind, item = self.feeds[id(node)][port]  # type: ignore[misc]
        if kind == "bind":
            return local(names.params[item] if names else input_name(self.fn.params[item].name))  # type: ignore[index]
        edge: Edge = item  # type: ignore[assignment]
        src_k = self.index[id(edge.src)]
        mode = "each" if edge.repl == ONE_TO_ONE else "last"
        imported = self.imported

        def indexed(array: str) -> Read:  # one instance's element of a per-instance array
            return Read(f"{array}[{', '.join(idx)}]", (array, *idx))

        if isinstance(edge.src.function.out_types[edge.sp], ArrayType) and edge.src.dims > 0:
            fused = group is not None and any(edge.src is m for m in group.nodes)
            if not fused and (id(edge.src), edge.sp) not in imported:
                return local(f"__hn{src_k}_L{edge.sp}")  # the one shared array (checked by pointer)
            if not fused:
                return local(import_name(src_k, edge.sp, imported[(id(edge.src), edge.sp)]))
        if (id(edge.src), edge.sp) in imported:
            value = import_name(src_k, edge.sp, imported[(id(edge.src), edge.sp)])
            if edge.src.dims > 0 and mode == "each":
                return indexed(value)
            return local(value)
        if edge.src.dims == 0:
            return local(f"__hn{src_k}_v{edge.sp}")
        if mode == "each":
            if group is not None and any(edge.src is m for m in group.nodes):
                return local(f"__hn{src_k}_v{edge.sp}")
            return indexed(f"__hn{src_k}_A{edge.sp}")
        return local(f"__hn{src_k}_L{edge.sp}")

    def src_sizes(self, edge: Edge) -> list[str] | None:
        """The grid extents of ``edge``'s source as seen here, to check a one-to-one edge's
        grids equal; ``None`` where there is nothing to check."""
        k = self.index[id(edge.src)]
        if isinstance(edge.src.function.out_types[edge.sp], ArrayType):
            return None  # an array value, not a grid: grids across stages are checked at push
        if (id(edge.src), edge.sp) in self.imported:
            name = import_name(k, edge.sp, self.imported[(id(edge.src), edge.sp)])
            return [f"{name}.shape[{a}]" for a in range(edge.src.dims)]
        if edge.src.dims != edge.dst.dims:
            return None  # the verifier rejects this
        return [f"__hn{k}_s{a}" for a in range(edge.src.dims)]

    def returns(self, outputs: list[int], exports: list[tuple[Node, int, str]]) -> str:
        """The graph function's return tuple: root outputs ``outputs``, then ``exports``
        (node, port, "each"|"last") for other stages."""
        by_op = {b.op: b for b in self.fn.graph.out_binds}

        def value(node: Node, port: int, mode: str) -> str:
            k = self.index[id(node)]
            if isinstance(node.function.out_types[port], ArrayType):
                mode = "last"  # arrays travel as the one shared array
            if node.dims == 0:
                return f"__hn{k}_v{port}"
            return f"__hn{k}_A{port}" if mode == "each" else f"__hn{k}_L{port}"

        items = [value(by_op[op].src, by_op[op].oc, "last") for op in outputs]
        items += [value(n, p, mode) for n, p, mode in exports]
        return "(" + "".join(f"{i}, " for i in items) + ")"
