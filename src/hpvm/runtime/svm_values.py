"""What each stream of the HLC mapping carries, and how: values of a fixed size travel
*by value*, in the stream's elements in SVM memory; the others *by reference*, as an item
number whose values wait in a host-side table (docs/svm.md, "The HLC mapping").

**How a value's size is known: from the program's types, before anything runs.** The
mapping is decided at ``launch`` (and printed by ``hpvm svm map``) before the first item
exists, and an SVM element has one size for the stream's whole life, so the size must
follow from the graph alone:

- a scalar output port (``ScalarType``) handed on once per item (``"last"``: the node is
  not replicated, or the edge is all-to-all) is one scalar of its dtype;
- a scalar port handed on per instance (``"each"``) is an array of the node's replication
  shape, fixed when every replication size is a constant (a size that reads an argument
  may change from push to push: by reference);
- an array port (``ArrayType``) is by reference: hpvm arrays are passed by reference (a
  stage may write the array in place, and the host or a later stage read it there), and
  its type gives only a rank, not a shape — copying it into SVM memory would change what
  the program computes;
- root arguments stay in the host's table (every kernel reads them, not one stream).

A stream's element is a NumPy structured record: ``seq`` (the item number, ``-1`` tagged
EOS for the end) and one field per value carried by value. A stream with no value field
keeps plain ``int64`` elements, exactly as before.

Values cross between a kernel's back end and the record in the back end's exchange form
(``Backend.export_outputs`` / ``import_outputs``, as between the parts of a mixed graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.base import Backend
from ..ir.expr import Const
from ..ir.graph import ALL_TO_ALL, Edge, InternalFunction, Node
from ..ir.types import ArrayType, ScalarType

SEQ = "seq"


@dataclass(frozen=True)
class ValueField:
    """One value a stream carries by value: output ``port`` of ``node`` in exchange ``mode``
    (or, with ``node`` None, root output ``port``), in record field ``name``."""

    name: str
    node: Node | None
    port: int
    mode: str
    dtype: np.dtype
    shape: tuple[int, ...]


@dataclass
class Layout:
    """How one stream carries an item: its element ``dtype`` (``int64`` when nothing goes
    by value), the ``fields`` by value, the node outputs (by node name) and root outputs
    left by reference, and ``report`` lines saying what goes how and why."""

    dtype: np.dtype
    fields: list[ValueField] = field(default_factory=list)
    ref_keys: dict[str, set[tuple[int, str]]] = field(default_factory=dict)  # node -> ports by reference
    value_nodes: dict[str, Node] = field(default_factory=dict)  # nodes with a port by value
    report: list[str] = field(default_factory=list)

    @property
    def plain(self) -> bool:
        return not self.fields

    # -- between kernels ------------------------------------------------------------------

    def pack(
        self, backend: Backend, seqs: list[int], envs: list[Any], args: list[Any], params: list[str]
    ) -> tuple[np.ndarray, list[Any]]:
        """The records of ``seqs`` (values by value filled from each item's ``envs`` entry,
        node name → the back end's own form) and what stays in the table for each item
        (None: nothing, the record is the item). Fields are filled a column at a time."""
        records = np.zeros(len(seqs), self.dtype)
        records[SEQ] = seqs
        columns: dict[str, list[Any]] = {f.name: [] for f in self.fields}
        refs: list[Any] = []
        for j, env in enumerate(envs[: len(seqs)]):
            if not isinstance(env, dict):  # a failed item's marker: it stays in the table
                refs.append(env)
                for f in self.fields:
                    columns[f.name].append(np.zeros(f.shape, f.dtype))
                continue
            exchanged = {
                name: backend.export_outputs(node, self._sizes(node, args[j], params), env[name])
                for name, node in self.value_nodes.items()
            }
            for f in self.fields:
                assert f.node is not None
                columns[f.name].append(exchanged[f.node.name][(f.port, f.mode)])
            if not self.ref_keys:  # everything by value: nothing for the table
                refs.append(None)
                continue
            native = {n: env[n] for n in self.ref_keys if n not in self.value_nodes}
            # (by port, any mode: a back end may hand an array port on under another mode)
            rest = {
                name: {k: v for k, v in exchanged[name].items() if k[0] in self._ref_ports(name)}
                for name in self.value_nodes
            }
            refs.append((native, rest) if native or any(rest.values()) else None)
        for f in self.fields:
            if columns[f.name]:
                records[f.name] = columns[f.name]
        return records, refs

    def unpack_into(
        self,
        backend: Backend,
        records: np.ndarray,
        refs: list[Any],
        args: list[Any],
        params: list[str],
        envs: list[dict[str, Any]],
    ) -> None:
        """Add each item's upstream values (node name → the back end's own form) from its
        record and its table entry (``pack``'s) to its ``envs`` entry (as many as ``envs``)."""
        columns = [(f, records[f.name]) for f in self.fields]
        for j, env in enumerate(envs):
            if refs[j] is None:  # everything by value
                exchanged: dict[str, dict[Any, Any]] = {name: {} for name in self.value_nodes}
            else:
                native, rest = refs[j]
                env.update(native)
                exchanged = {name: dict(rest.get(name, {})) for name in self.value_nodes}
            for f, column in columns:
                assert f.node is not None
                value = column[j]
                exchanged[f.node.name][(f.port, f.mode)] = value.copy() if f.shape else value
            for name, node in self.value_nodes.items():
                env[name] = backend.import_outputs(node, self._sizes(node, args[j], params), exchanged[name])

    def _ref_ports(self, name: str) -> set[int]:
        return {port for port, _ in self.ref_keys.get(name, ())}

    @staticmethod
    def _sizes(node: Node, args: Any, params: list[str]) -> tuple[int, ...]:
        """The node's replication sizes for an item (no work for an unreplicated node)."""
        if not node.sizes:
            return ()
        return node.evaluate_sizes(dict(zip(params, args)), "")

    # -- to the host ----------------------------------------------------------------------

    def pack_outputs(self, seqs: list[int], outputs: list[Any]) -> tuple[np.ndarray, list[Any]]:
        """Result records: root outputs by value in fields, the others in the table."""
        records = np.zeros(len(seqs), self.dtype)
        records[SEQ] = seqs
        by_value = {f.port for f in self.fields}
        refs: list[Any] = []
        for j, outs in enumerate(outputs[: len(seqs)]):
            if not isinstance(outs, dict):
                refs.append(outs)
                continue
            for f in self.fields:
                if f.port in outs:
                    records[f.name][j] = outs[f.port]
            refs.append({op: v for op, v in outs.items() if op not in by_value} or None)
        return records, refs

    def unpack_outputs(self, record: Any, ref: dict[int, Any]) -> dict[int, Any]:
        outs = dict(ref)
        for f in self.fields:
            value = record[f.name]  # a NumPy scalar of the port's dtype, as the back ends give
            outs[f.port] = value.copy() if f.shape else value
        return outs


def _record(fields: list[ValueField]) -> np.dtype:
    if not fields:
        return np.dtype(np.int64)
    return np.dtype([(SEQ, np.int64), *[(f.name, f.dtype, f.shape) for f in fields]])


def edge_mode(edge: Edge) -> str:
    """The exchange mode an edge reads (as the back ends' stage specs decide it)."""
    return "last" if edge.repl == ALL_TO_ALL or edge.src.dims == 0 else "each"


def _fixed(node: Node, port: int, mode: str) -> tuple[tuple[int, ...] | None, str]:
    """The shape of the value (None: no fixed size) and why."""
    ptype = node.function.out_types[port]
    if not isinstance(ptype, ScalarType):
        if isinstance(ptype, ArrayType):
            return None, f"{ptype} is an array: shared by reference, a stage may write it in place"
        return None, f"{ptype} is not a number"
    if mode == "last":
        return (), f"one {ptype} per item"
    if all(isinstance(s, Const) for s in node.sizes):
        shape = tuple(int(s.value) for s in node.sizes)  # type: ignore[attr-defined]
        return shape, f"{ptype} per instance, replication {shape} constant"
    sizes = ", ".join(str(s) for s in node.sizes)
    return None, f"{ptype} per instance of replication ({sizes}), which may change per push"


def layout_between(
    root: InternalFunction, stages: list[list[Node]], src: tuple[int, ...] | None, dst: tuple[int, ...] | None
) -> Layout:
    """How the stream from the kernel of stages ``src`` to that of ``dst`` (None: the host)
    carries an item."""
    if src is None:
        return Layout(np.dtype(np.int64), report=["root arguments: by reference (every kernel reads them)"])
    inside_src = {id(n) for i in src for n in stages[i]}
    if dst is None:
        return _result_layout(root, inside_src)
    inside_dst = {id(n) for i in dst for n in stages[i]}
    fields: list[ValueField] = []
    layout = Layout(np.dtype(np.int64))
    seen: set[tuple[str, int, str]] = set()
    for e in root.graph.edges:
        if id(e.src) not in inside_src or id(e.dst) not in inside_dst:
            continue
        mode = edge_mode(e)
        key = (e.src.name, e.sp, mode)
        if key in seen:
            continue
        seen.add(key)
        shape, why = _fixed(e.src, e.sp, mode)
        what = f"{e.src.name}.{e.sp} -> {e.dst.name}.{e.dp}"
        if shape is None:
            layout.ref_keys.setdefault(e.src.name, set()).add((e.sp, mode))
            layout.report.append(f"{what}: by reference ({why})")
            continue
        ptype = e.src.function.out_types[e.sp]
        assert isinstance(ptype, ScalarType)
        fields.append(ValueField(f"v{len(fields)}", e.src, e.sp, mode, ptype.dtype, shape))
        layout.value_nodes[e.src.name] = e.src
        layout.report.append(f"{what}: by value ({why})")
    layout.fields = fields
    layout.dtype = _record(fields)
    return layout


def _result_layout(root: InternalFunction, inside: set[int]) -> Layout:
    fields: list[ValueField] = []
    report: list[str] = []
    for b in root.graph.out_binds:
        if id(b.src) not in inside:
            continue
        ptype = root.out_types[b.op]
        what = f"{b.src.name}.{b.oc} -> output {b.op}"
        if isinstance(ptype, ScalarType):
            fields.append(ValueField(f"out{b.op}", None, b.op, "out", ptype.dtype, ()))
            report.append(f"{what}: by value (one {ptype} per item)")
        else:
            report.append(
                f"{what}: by reference ({ptype} is an array: the host gets the one the stages wrote)"
            )
    return Layout(_record(fields), fields, report=report)


class Layouts:
    """The layouts of one launch, each worked out once per (src, dst) pair of stage groups;
    ``element_bytes`` is the mapper's callback."""

    def __init__(self, root: InternalFunction, stages: list[list[Node]]) -> None:
        self.root, self.stages = root, stages
        self._cache: dict[tuple[tuple[int, ...] | None, tuple[int, ...] | None], Layout] = {}

    def get(self, src: tuple[int, ...] | None, dst: tuple[int, ...] | None) -> Layout:
        if (src, dst) not in self._cache:
            self._cache[(src, dst)] = layout_between(self.root, self.stages, src, dst)
        return self._cache[(src, dst)]

    def element_bytes(self, src: tuple[int, ...] | None, dst: tuple[int, ...] | None) -> int:
        return self.get(src, dst).dtype.itemsize
