"""GenHPVM's part for internal node functions: ``__hpvm__createNodeND``, ``__hpvm__edge``,
``__hpvm__bindIn`` / ``__hpvm__bindOut`` as ``llvm.hpvm.createNode*``, ``createEdge`` and
``bind.*``, and the outputs an internal node's ``bindOut``\\ s give it.

Why a class of its own: a graph builder's calls are checked and rewritten apart from a
leaf's computation; what it needs of the rest of the rewrite is the outputs of the nodes
it creates (``outputs``) and a way to rewrite a child first (``node``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .genplace import Locator
from .module import Call, Function


class GraphCalls:
    """Rewrites graph calls; ``outputs``: each rewritten node function's return fields,
    ``node(name, creator)``: rewrites a created node function (once) and gives its fields."""

    def __init__(
        self, loc: Locator, outputs: dict[str, list[str]], node: Callable[[str, Call | None], list[str]]
    ):
        self.loc = loc
        self.outputs = outputs
        self.node = node

    def create_node(self, fn: Function, call: Call) -> list[str]:
        dims = call.args[0].const() if call.args else None
        if dims not in (0, 1, 2, 3):
            raise self.loc.fail(call.line, fn, "__hpvm__createNodeND(dims, function, sizes...): dims must be a "
                            "constant 0, 1, 2 or 3")  # fmt: skip
        if len(call.args) != 2 + dims:  # type: ignore[operator]
            raise self.loc.fail(call.line, fn, f"__hpvm__createNodeND({dims}, ...) takes {dims} replication "
                            f"size(s) after the function, but {len(call.args) - 2} were given")  # fmt: skip
        target = call.args[1].value
        if not target.startswith("@"):
            raise self.loc.fail(call.line, fn, "__hpvm__createNodeND's second argument must be a node function "
                            "of the program (its name), not a computed pointer")  # fmt: skip
        self.node(target[1:], call)
        lines, sizes = [], []
        for k, a in enumerate(call.args[2:]):
            if a.type == "i64":
                sizes.append(f"i64 {a.value}")
            elif a.type in ("i32", "i16", "i8"):
                cast = f"{call.result or '%hpvm.node'}.size{k}"
                lines.append(f"{call.indent}{cast} = sext {a.type} {a.value} to i64")
                sizes.append(f"i64 {cast}")
            else:
                raise self.loc.fail(call.line, fn, f"replication size {k} of __hpvm__createNodeND is a {a.type}; "
                                "sizes are integers")  # fmt: skip
        which = {0: "createNode", 1: "createNode1D", 2: "createNode2D", 3: "createNode3D"}[dims]  # type: ignore[index]
        result = f"{call.result} = " if call.result else ""
        lines.append(
            f"{call.indent}{result}call ptr @llvm.hpvm.{which}({', '.join([f'ptr {target}', *sizes])}){call.dbg()}"
        )
        return lines

    def node_names(self, fn: Function) -> dict[str, str]:
        """Node handles named as their C variables (``void *add = ...`` → ``%add``) when the
        name is free: the importer names nodes after them."""
        text = "\n".join([fn.define, *fn.body])
        renames: dict[str, str] = {}
        for call in fn.calls():
            if call.callee != "__hpvm__createNodeND" or not call.result:
                continue
            m = re.search(r"#dbg_value\(ptr " + re.escape(call.result) + r", !(\d+),", text)
            var = self.loc.debug.variables.get(int(m.group(1))) if m else None
            if (
                var
                and re.fullmatch(r"[A-Za-z_][\w.]*", var)
                and not re.search(f"%{re.escape(var)}(?![-\\w.$])", text)
            ):
                if f"%{var}" not in renames.values():
                    renames[call.result] = f"%{var}"
        return renames

    def connect(self, fn: Function, call: Call, out_fields: dict[int, str]) -> str:
        name = call.callee
        handles = 2 if name == "__hpvm__edge" else 1
        want = handles + (4 if name == "__hpvm__edge" else 3)
        if len(call.args) != want:
            raise self.loc.fail(call.line, fn, f"{name} takes {want} arguments, {len(call.args)} given")
        consts = [a.const() for a in call.args[handles:]]
        if any(c is None for c in consts):
            raise self.loc.fail(call.line, fn, f"{name}: the replication kind, port numbers and streaming flag "
                            "must be constants")  # fmt: skip
        ptrs = [f"ptr {a.value}" for a in call.args[:handles]]
        result = f"{call.result} = " if call.result else ""
        if name == "__hpvm__edge":
            repl, sp, dp, stream = consts
            if repl not in (0, 1):
                raise self.loc.fail(
                    call.line, fn, f"__hpvm__edge replication kind {repl}: 0 (one to one) or 1 (all to all)"
                )
            args = [*ptrs, f"i1 {_bool(repl)}", f"i32 {sp}", f"i32 {dp}", f"i1 {_bool(stream)}"]
            return f"{call.indent}{result}call ptr @llvm.hpvm.createEdge({', '.join(args)}){call.dbg()}"
        a, b, stream = consts
        which = "bind.input" if name == "__hpvm__bindIn" else "bind.output"
        if name == "__hpvm__bindOut":
            child = self.child_of(fn, call.args[0].value)
            fields = self.outputs.get(child, []) if child else []
            if child and a >= len(fields):  # type: ignore[operator]
                raise self.loc.fail(call.line, fn, f"__hpvm__bindOut binds output {a} of {self.loc.c(child)}, which has "
                                f"{len(fields)} output field(s) (from its __hpvm__return); bind 0..{len(fields) - 1}")  # fmt: skip
            if child:
                out_fields[b] = fields[a]  # type: ignore[index]
        args = [*ptrs, f"i32 {a}", f"i32 {b}", f"i1 {_bool(stream)}"]
        return f"{call.indent}call void @llvm.hpvm.{which}({', '.join(args)}){call.dbg()}"

    def child_of(self, fn: Function, handle: str) -> str | None:
        for call in fn.calls():
            if call.callee == "__hpvm__createNodeND" and call.result == handle and len(call.args) > 1:
                return call.args[1].value[1:]
        return None

    def internal_outputs(self, fn: Function, out_fields: dict[int, str]) -> list[str]:
        if not out_fields:
            return []
        top = max(out_fields)
        missing = [k for k in range(top + 1) if k not in out_fields]
        if missing:
            raise self.loc.fail(fn.define, fn, f"outputs {missing} of {self.loc.c(fn.name)} are bound by no "
                            f"__hpvm__bindOut, but output {top} is; bind every output from 0 up")  # fmt: skip
        return [out_fields[k] for k in range(top + 1)]


def _bool(v: int | None) -> str:
    return "true" if v else "false"
