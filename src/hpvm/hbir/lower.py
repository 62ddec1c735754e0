"""A checked HBIR program (``Model``) → an hpvm dataflow graph.

The root's parameters are the data arrays (in declaration order, each with its layout),
then one single-element array per global (shared memory: every tile sees the same
element), then, when the program prints, the log arrays ``hbir_log`` (f64, tiles ×
records × values) and ``hbir_nlog`` (i64, records per tile). Each code block becomes a
leaf whose body is generated from its statements (``codegen.py``), a ``GeneratedBody``
whose source map points at the ``.hbir`` lines. The leaf is replicated over its group's
grid (a block pinned to one tile, ``config.tg[0][0]``, is one instance); a block of a
nested group sits inside one internal node per enclosing group, each replicated over that
group's grid. The blocks are the root's children in program order, with no edges: the
graph semantics run children in creation order when nothing orders them (docs/semantics.md
§6), so a block sees what the blocks before it wrote.
"""

from __future__ import annotations

from ..errors import SourceLocation
from ..ir.expr import Const
from ..ir.graph import ChildGraph, InputBind, InternalFunction, LeafFunction, Node, Param
from ..ir.pysource import generated_body
from ..ir.types import ArrayType, ScalarType, f64, i64
from .checker import outer_symbols
from .codegen import LOG_CAPACITY, LOG_VALUES, Generated, generate, has_waits
from .model import ArrayInfo, BlockInfo, GroupInfo, Model, node_grid

_ELEM = {"int": ScalarType("i32"), "float": ScalarType("f32"), "bool": ScalarType("bool")}


def array_param(a: ArrayInfo, group: GroupInfo | None, root: bool = False) -> Param:
    """The parameter of array ``a`` on the root (``root``) or on the leaf of a block
    replicated over ``group`` (``None``: a one-instance leaf): with its layout where hpvm's
    layouts mean what HBIR's ownership does (docs/hbir.md)."""
    layout = None
    if a.layout is not None:
        if root or (group is not None and a.layout.kind == "replicated"):
            layout = a.layout.to_layout()
        elif group is not None and a.partitioned_over(group) and len(group.dims) <= 3:
            layout = a.layout.to_layout(len(a.shape), len(group.dims))  # (hpvm's grids stop at 3)
    return Param(a.name, ArrayType(_ELEM[a.elem], len(a.shape)), layout)


#: The run's own arrays: the printf log, and the wait rows of the watchdog (program.py).
_RUN_ARRAYS = {"hbir_log": ArrayType(f64, 3), "hbir_nlog": ArrayType(i64, 1), "hbir_wait": ArrayType(i64, 2)}


def root_params(model: Model, logs: bool, waits: bool = False) -> list[Param]:
    params = [array_param(a, None, root=True) for a in model.arrays.values()]
    params += [Param(g.name, ArrayType(_ELEM[g.elem], 1)) for g in model.globals.values()]
    if logs:
        params += [Param("hbir_log", _RUN_ARRAYS["hbir_log"]), Param("hbir_nlog", _RUN_ARRAYS["hbir_nlog"])]
    if waits:
        params.append(Param("hbir_wait", _RUN_ARRAYS["hbir_wait"]))
    return params


def _leaf(model: Model, info: BlockInfo, gen: Generated) -> LeafFunction:
    file = model.filename
    body = generated_body(gen.name, gen.text, file, gen.lines)
    group = info.group if any(f is None for f in info.fixed) else None
    params = []
    for name in gen.params:
        if name in model.arrays:
            params.append(array_param(model.arrays[name], group))
        elif name in model.globals:
            params.append(Param(name, ArrayType(_ELEM[model.globals[name].elem], 1)))
        else:
            params.append(Param(name, _RUN_ARRAYS[name]))
    logs = ("hbir_log", "hbir_nlog") if gen.logs else ()
    logs += ("hbir_wait",) if gen.waits else ()
    ins = tuple(n for n in gen.params if n in gen.reads or n in logs)
    outs = tuple(n for n in gen.params if n in gen.writes or n in logs)
    return LeafFunction(
        None,
        gen.name,
        params,
        [],
        ins=ins,
        outs=outs,
        location=SourceLocation(file, info.block.line),
        body=body,
    )


def _node_for(model: Model, info: BlockInfo, leaf: LeafFunction) -> Node:
    """The node the root holds for a block: the leaf, wrapped in one internal node per
    enclosing group (innermost first), each replicated over its group's grid."""
    location = SourceLocation(model.filename, info.block.line)
    sizes = tuple(Const(d) for d in node_grid(info.group.dims)) if any(f is None for f in info.fixed) else ()
    node = Node(leaf.name, leaf, sizes, location)
    for outer in reversed(info.group.chain[:-1]):
        params = [
            array_param(model.arrays[p.name], outer) if p.name in model.arrays else Param(p.name, p.type)
            for p in leaf.params
        ]
        graph = ChildGraph(nodes=[node], in_binds=[InputBind(i, node, i) for i in range(len(params))])
        fn = InternalFunction(
            f"{outer.name}_{leaf.name}",
            params,
            graph=graph,
            ins=leaf.ins,
            outs=leaf.outs,
            location=location,
        )
        node = Node(fn.name, fn, tuple(Const(d) for d in node_grid(outer.dims)), location)
    return node


def lower(model: Model, name: str = "hbir", blocks: list[BlockInfo] | None = None) -> InternalFunction:
    """The root node function of the program (see the module docstring); of ``blocks``
    only, when given (one group's, for the concurrent run of program.py)."""
    leaves = []
    track = has_waits(model)
    for info in model.blocks if blocks is None else blocks:
        binders = info.binders
        outer = outer_symbols(
            model.target_values, model.consts, model.arrays, model.globals, info.group, binders
        )
        gen = generate(model, info, f"{info.group.name}_{info.index}", outer, track)
        leaves.append((info, gen))
    logs = any(gen.logs for _, gen in leaves)
    waits = any(gen.waits for _, gen in leaves)
    params = root_params(model, logs, waits)
    index = {p.name: i for i, p in enumerate(params)}
    graph = ChildGraph()
    for info, gen in leaves:
        node = _node_for(model, info, _leaf(model, info, gen))
        graph.nodes.append(node)
        for i, p in enumerate(node.function.params):
            graph.in_binds.append(InputBind(index[p.name], node, i))
    arrays = tuple(a for a in model.arrays)
    outs = tuple(a.name for a in model.arrays.values() if a.direction == "out")
    run = (("hbir_log", "hbir_nlog") if logs else ()) + (("hbir_wait",) if waits else ())
    return InternalFunction(
        name,
        params,
        graph=graph,
        ins=arrays + tuple(model.globals) + (("hbir_wait",) if waits else ()),
        outs=outs + tuple(model.globals) + run,
        location=SourceLocation(model.filename, 1),
    )


__all__ = ["LOG_CAPACITY", "LOG_VALUES", "array_param", "lower", "root_params"]
