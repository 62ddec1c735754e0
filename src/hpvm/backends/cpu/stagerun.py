"""A streamed stage's run on ``cpu``, resolved once per stage: what ``run_stage`` calls per item.

A stage thread runs one item after another through the same compiled stage function, and
everything around that call is the same for every item: which of the lowered root's nodes
the stage holds, its ``StageSpec`` (what it imports and exports), the compiled function
(looked up under the compile lock), which root inputs are scalars to convert, which
outputs to convert back, whether its ``malloc`` pool may be recycled. Working these out per
item was about 25 µs of Python under the GIL per stage item — half of what a stream of the
edge detection's six stages cost per frame beyond the stages themselves, on a path that
seven threads take in turn (issue 24, item 2). ``stage_run`` resolves them once per
compiled program and stage (``CompiledProgram.stage_runs``), as a launch's runner does for
the whole root (``CPUBackend._runner``), and leaves per item only the conversions a value
needs, the call and the result's dictionaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir.graph import ALL_TO_ALL, InternalFunction, Node
from ...ir.types import ScalarType
from .compiler import CompiledProgram
from .graphgen import StageSpec

#: (root arguments, upstream values by node name, ``RunContext.instance``) -> (what the stage
#: sends to other stages by node name, its root outputs by index): ``Backend.run_stage``'s
#: result.
StageRun = Callable[
    [Sequence[Any], dict[str, Any], tuple[int, ...]], tuple[dict[str, dict[Any, Any]], dict[int, Any]]
]

#: Port scalar type -> the Python type Numba types as that port's type (``numba.typeof``):
#: a value of it needs no conversion to get the port's compiled signature.
SAME_TYPING: dict[Any, type] = {np.int64: int, np.float64: float, np.bool_: bool}

#: (argument index, conversion to the port's NumPy type, the Python type Numba types alike)
#: per scalar port: ``scalar_converts``' result, ``converted``'s table.
Converts = tuple[tuple[int, Callable[[Any], Any], "type | None"], ...]


def scalar_converts(program: CompiledProgram) -> Converts:
    """The table ``converted`` uses for ``program``'s scalar ports: a scalar already of its
    port's NumPy type, or of the type Numba gives its converted value, is passed as it is
    (the same compiled signature), any other converted."""
    return tuple((i, convert, SAME_TYPING.get(convert)) for i, convert in program.scalar_ins)


def converted(args: Sequence[Any], converts: Converts) -> Sequence[Any]:
    """``args`` with each scalar of another type converted to its port's type: ``args``
    itself when none needs it (the caller's own sequence is never changed; a copy is made
    only to convert). The runner (``Backend.runner``) and a stage's run (``stage_run``) use
    it, the runner only for a root with scalar ports (no call where there is nothing to
    convert)."""
    values = args
    for i, convert, same in converts:
        kind = type(values[i])
        if kind is not convert and kind is not same:
            if values is args:
                values = list(args)
            values[i] = convert(values[i])
    return values


def stage_spec(root: InternalFunction, nodes: Sequence[Node]) -> StageSpec:
    """What the stage of ``nodes`` (the lowered ``root``'s) imports from the other stages,
    exports to them, and which root outputs it produces."""
    inside = {id(n) for n in nodes}
    imports: list[tuple[Node, int, str]] = []
    exports: list[tuple[Node, int, str]] = []
    for e in root.graph.edges:
        mode = "last" if e.repl == ALL_TO_ALL or e.src.dims == 0 else "each"
        item = (e.src, e.sp, mode)
        if id(e.dst) in inside and id(e.src) not in inside and item not in imports:
            imports.append(item)
        if id(e.src) in inside and id(e.dst) not in inside and item not in exports:
            exports.append(item)
    outputs = sorted(b.op for b in root.graph.out_binds if id(b.src) in inside)
    return StageSpec(list(nodes), imports, exports, outputs)


def stage_run(backend: Any, program: CompiledProgram, nodes: Sequence[Node]) -> StageRun:
    """The run of the stage of ``nodes`` (by name: the unlowered root's nodes, or the
    lowered's), made on first use and kept in ``program`` (each checked mode has its
    programs, so a mode switch never runs the other's). ``backend`` is the ``CPUBackend``
    whose compiler and error reporting it uses."""
    key = tuple(n.name for n in nodes)
    run = program.stage_runs.get(key)
    if run is None:
        run = program.stage_runs[key] = _resolved(backend, program, key)
    return run  # type: ignore[no-any-return]


def _resolved(backend: Any, program: CompiledProgram, names: tuple[str, ...]) -> StageRun:
    lowered = program.root
    func, spec = backend.compiler.stage(program, stage_spec(lowered, [lowered.graph.node(n) for n in names]))
    imports = tuple((n.name, (p, mode)) for n, p, mode in spec.imports)
    exports = tuple((n.name, (p, mode)) for n, p, mode in spec.exports)
    types = lowered.out_types
    outs = tuple(
        (op, types[op].dtype.type if isinstance(types[op], ScalarType) else None) for op in spec.outputs
    )
    count = len(outs)
    members = tuple(n.name for n in spec.nodes)
    converts = scalar_converts(program)
    root_ctx, direct, call, failed = program.root_ctx(), not program.llvm_heap, backend._call, backend._failed
    pools = program.pools if program.pooled else None
    recycle = False
    if program.flow is not None:
        flow = program.flow
        # Outputs handed to other stages are read after the call: they must not be recycled.
        recycle = not any(flow.may_hold(n.function, p) for n, p, _ in spec.exports) and not any(
            flow.may_hold(lowered, op) for op in spec.outputs
        )

    def run(
        args: Sequence[Any], upstream: dict[str, Any], instance: tuple[int, ...]
    ) -> tuple[dict[str, dict[Any, Any]], dict[int, Any]]:
        values = converted(args, converts)
        ctx = program.root_ctx(instance) if instance else root_ctx
        imported = [upstream[name][port] for name, port in imports]
        if pools is not None:
            pool = pools.checkout(recycle)
            try:
                result = call(program, func, (*values, ctx, *program.pool_args(pool), *imported))
            finally:
                pools.checkin(pool, recycle)
        elif direct:
            try:
                result = func(*values, ctx, *imported)
            except Exception as e:
                failed(program, (*values, ctx, *imported), e)
        else:
            result = call(program, func, (*values, ctx, *imported))
        outputs = {op: v if convert is None else convert(v) for (op, convert), v in zip(outs, result)}
        produced: dict[str, dict[Any, Any]] = {name: {} for name in members}
        for (name, port), value in zip(exports, result[count:]):
            produced[name][port] = value
        return produced, outputs

    return run
