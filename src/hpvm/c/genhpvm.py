"""What HPVM's GenHPVM pass does, on clang's text: ``__hpvm__*`` calls become the
``llvm.hpvm.*`` form that ``hpvm.llvm.from_hpvm_ir`` (HPVM's BuildDFG) imports.

- Node functions are the roots (launched by host code; else the graph builders no one
  creates) and everything ``__hpvm__createNodeND`` creates from them.
- ``createNodeND(d, f, sizes...)`` → ``llvm.hpvm.createNode{,1D,2D,3D}(f, i64...)``;
  ``__hpvm__edge`` → ``createEdge``, ``bindIn`` / ``bindOut`` → ``bind.input`` /
  ``bind.output`` (flags as ``i1``).
- ``__hpvm__hint(t)`` → the function attribute ``"hpvm.hint"``; ``__hpvm__attributes(nIn,
  ins..., nOut, outs...)`` → ``"in"`` / ``"out"`` on those parameters.
- ``__hpvm__return(n, v...)`` → the leaf returns the struct of ``v...`` (its return type is
  rewritten); an internal node returns the struct its ``bindOut``\\ s fill.
- queries, ``__hpvm__malloc``, atomics (``inc``/``dec`` as add/sub of 1), ``barrier`` →
  their ``llvm.hpvm.*`` intrinsic.
- ``__hpvm__tensor_*`` → ``llvm.hpvm.tensor.*`` (``tensorcalls.py``), which the importer
  reads as a ``TensorBody``.
- Parameters keep their C names and types: a pointer and its ``size_t`` are two LLVM
  arguments, two ports as HPVM numbers them. Whether the pair is one array port is the
  importer's decision (``hpvm.llvm.grouping``: by how the program connects them); a pointer
  without a size after it is a port too (HPVM's pass tests have them; HPVM-C requires a size
  only for memory moved between devices).

Misuses are ``HPVMCError``\\ s at the C line of the call.

The rewrite is shared out: ``gensig.py`` (a node function's ``define``: hint, ``in`` /
``out``, C name, outputs), ``gengraph.py`` (graph calls), ``genleaf.py`` (returns and a
leaf's computation calls), ``genplace.py`` (where messages point); this module finds the
node functions, rewrites each once, and writes the module of each root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ir.debuginfo import DebugInfo
from ..llvm.abi import DECLARATIONS
from . import tensorcalls
from .errors import HPVMCError
from .gengraph import GraphCalls
from .genleaf import MATH, RENAMED, LeafCalls
from .genplace import Locator
from .gensig import TARGETS, SignatureRewriter
from .module import Call, Function, Module

GRAPH = frozenset({"__hpvm__createNodeND", "__hpvm__edge", "__hpvm__bindIn", "__hpvm__bindOut"})
HOST = frozenset(
    {
        "__hpvm__init", "__hpvm__cleanup", "__hpvm__launch", "__hpvm__wait", "__hpvm__push", "__hpvm__pop",
        "llvm_hpvm_track_mem", "llvm_hpvm_untrack_mem", "llvm_hpvm_request_mem",
    }
)  # fmt: skip


@dataclass
class Signature:
    """A root's LLVM parameter types and return fields: the layout of its argument struct."""

    params: list[str]
    outputs: list[str]


@dataclass
class Rewritten:
    """The result: per root, the text ``from_hpvm_ir`` imports; the host code's text."""

    roots: list[str]
    node_texts: dict[str, str]
    signatures: dict[str, Signature]
    node_functions: set[str]
    c_names: dict[str, str] = field(default_factory=dict)


class GenHPVM:
    """The rewrite of one module (the program's files linked). ``program``: how messages name
    the program (its file, or its files); ``origins``: the file defining each function, for
    the locations debug metadata does not give."""

    def __init__(
        self, text: str, program: str, origins: dict[str, str] | None = None, debug: DebugInfo | None = None
    ):
        self.text = text
        self.module = Module.parse(text)
        self.loc = Locator(program, origins or {}, debug or DebugInfo(text))
        self.outputs: dict[str, list[str]] = {}  # node function → its return fields
        self.rewritten: dict[str, list[str]] = {}  # node function → its new lines (define..body)
        self.active: list[str] = []
        self.sig = SignatureRewriter(self.loc)
        self.graph = GraphCalls(self.loc, self.outputs, self.node)
        self.leaf = LeafCalls(self.loc)

    # -- the whole module ------------------------------------------------------------
    def run(self) -> Rewritten:
        roots = self.roots()
        for r in roots:
            self.node(r, None)
        nodes = set(self.rewritten)
        for name, fn in self.module.functions.items():
            if name not in nodes:
                self.check_host(fn)
        texts = {r: self.node_text(r) for r in roots}
        sigs = {
            r: Signature([p.type for p in self.module.functions[r].params], self.outputs[r]) for r in roots
        }
        return Rewritten(roots, texts, sigs, nodes, {n: self.loc.c(n) for n in nodes})

    def roots(self) -> list[str]:
        launched: list[str] = []
        for fn in self.module.functions.values():
            for call in fn.calls():
                if call.callee != "__hpvm__launch":
                    continue
                target = call.args[1].value if len(call.args) >= 3 else ""
                if not target.startswith("@") or target[1:] not in self.module.functions:
                    raise self.loc.fail(
                        call.line, fn,
                        "__hpvm__launch(isStream, root, args) must name a node function defined in the "
                        f"program as its root, not {target or 'nothing'}",
                    )  # fmt: skip
                if target[1:] not in launched:
                    launched.append(target[1:])
        if launched:
            return launched
        created = {
            call.args[1].value[1:]
            for fn in self.module.functions.values()
            for call in fn.calls()
            if call.callee == "__hpvm__createNodeND" and len(call.args) > 1
        }
        builders = [
            n for n, fn in self.module.functions.items() if any(c.callee in GRAPH for c in fn.calls())
        ]
        roots = [b for b in builders if b not in created]
        if not roots:
            after = re.search(r"\bcall\b[^\n]*@llvm\.hpvm\.createNode", self.text) is not None
            raise HPVMCError(
                f"{self.loc.program}: no dataflow graph: no function calls __hpvm__createNodeND; an HPVM-C "
                "program has a root node function that builds its graph, launched with __hpvm__launch"
                + ("; this text calls llvm.hpvm.createNode*: it is HPVM IR after GenHPVM, which "
                   "hpvm.llvm.from_hpvm_ir (hpvm run / hpvm llvm import) reads" if after else "")
            )  # fmt: skip
        return roots

    def check_host(self, fn: Function) -> None:
        for call in fn.calls():
            if call.callee in GRAPH:
                raise self.loc.fail(
                    call.line, fn,
                    f"{call.callee} in {self.loc.c(fn.name)}(), which is host code (no graph launches or "
                    "creates it); graph calls belong in internal node functions, launched with __hpvm__launch",
                )  # fmt: skip

    def node(self, name: str, creator: Call | None) -> list[str]:
        if name in self.outputs:
            return self.outputs[name]
        fn = self.module.functions.get(name)
        if fn is None:  # (createNodeND of a declared-only function)
            raise HPVMCError(
                f"{self.loc.program}: {self.loc.c(name)} is created as a node but no source file defines it; "
                "define the node function, or add the file that does"
            )
        if name in self.active:
            line = creator.line if creator else fn.define
            raise self.loc.fail(
                line, fn, f"{self.loc.c(name)} creates a node of itself; dataflow graphs are acyclic"
            )
        self.active.append(name)
        if fn.return_type() != "void":
            raise self.loc.fail(
                fn.define, fn,
                f"node function {self.loc.c(name)} returns {fn.return_type()}; HPVM-C node functions return "
                "void and give their outputs with __hpvm__return(n, values...)",
            )  # fmt: skip
        calls = fn.calls()
        graph = [c for c in calls if c.callee in GRAPH]
        for c in calls:
            if c.callee in HOST:
                raise self.loc.fail(
                    c.line, fn,
                    f"{c.callee} in node function {self.loc.c(name)}; host calls (launch, wait, push, pop, "
                    "memory tracking) belong in host code such as main",
                )  # fmt: skip
        if graph:
            for c in calls:
                if c.callee in RENAMED or c.callee == "__hpvm__return":
                    raise self.loc.fail(
                        graph[0].line, fn,
                        f"{graph[0].callee} in {self.loc.c(name)}, which also calls {c.callee} (line "
                        f"{self.loc.debug.line_of(c.line)}): a node function either builds a graph (internal "
                        "node) or computes (leaf); move the computation into a leaf it creates",
                    )  # fmt: skip
        lines = self.rewrite(fn, internal=bool(graph))
        self.active.remove(name)
        self.rewritten[name] = lines
        return self.outputs[name]

    def rewrite(self, fn: Function, internal: bool) -> list[str]:
        renames = self.graph.node_names(fn)
        marks: dict[str, set[str]] = {}
        hint: str | None = None
        body: list[str] = []
        out_fields: dict[int, str] = {}
        returned: list[str] | None = None
        pending_ret: str | None = None
        pending_call = ""
        for raw in fn.body:
            call = Call.parse(raw)
            if call is None or not (
                call.callee.startswith("__hpvm__") or call.callee.startswith("llvm_hpvm")
            ):
                if raw.strip().startswith("ret void"):
                    body.append(self.leaf.ret(fn, raw, internal, pending_ret, returned))
                    pending_ret = None
                    continue
                if pending_ret is not None and raw.strip() and not _after_return_ok(raw):
                    raise self.loc.fail(
                        pending_call, fn,
                        f"__hpvm__return in {self.loc.c(fn.name)} is not followed by the function's return: "
                        "either it is not the last statement, or another path returns without it "
                        "(clang merged the returns); call __hpvm__return(n, values...) as the last "
                        "statement, on every path",
                    )  # fmt: skip
                body.append(raw)
                continue
            name = call.callee
            if name == "__hpvm__hint":
                hint = self.sig.hint(fn, call)
            elif name == "__hpvm__attributes":
                marks = self.sig.attributes(fn, call)
            elif name == "__hpvm__return":
                if internal:
                    raise self.loc.fail(call.line, fn, "__hpvm__return in an internal node function; its outputs "
                                    "are the child outputs bound with __hpvm__bindOut")  # fmt: skip
                types = [a.type for a in call.args[1:]]
                if returned is not None and returned != types:
                    raise self.loc.fail(call.line, fn, f"{self.loc.c(fn.name)} returns ({', '.join(types)}) here but "
                                    f"({', '.join(returned)}) elsewhere; every __hpvm__return gives the same outputs")  # fmt: skip
                self.leaf.check_count(fn, call, len(types))
                returned = types
                pending_ret, lines = self.leaf.build_struct(call, types)
                pending_call = call.line
                body.extend(lines)
            elif name == "__hpvm__createNodeND":
                body.extend(self.graph.create_node(fn, call))
            elif name in ("__hpvm__edge", "__hpvm__bindIn", "__hpvm__bindOut"):
                body.append(self.graph.connect(fn, call, out_fields))
            else:
                body.extend(self.leaf.call(fn, call, raw))
        if internal:
            self.outputs[fn.name] = self.graph.internal_outputs(fn, out_fields)
        else:
            self.outputs[fn.name] = returned or []
        ret_type = "{ " + ", ".join(self.outputs[fn.name]) + " }" if self.outputs[fn.name] else "{}"
        define = self.sig.define(fn, ret_type, marks, hint, renames)
        body = [line.replace("ret {} RET", f"ret {ret_type} undef" if internal else "ret {} zeroinitializer")
                for line in body]  # fmt: skip
        return [self.sig.rename(line, renames) for line in [define, *body]]

    # -- the module of one root ------------------------------------------------------
    def node_text(self, root: str) -> str:
        """The module ``from_hpvm_ir`` imports for ``root``: the functions and globals the
        graph reaches, nothing of the host code. Globals it does not reach go too: a vtable,
        ``llvm.global_ctors`` or a string table of the host code names host functions, which
        are not in this text."""
        keep = self.module.closure([root])
        lines = self.module.lines
        out: list[str] = []
        k = 0
        by_start = {f.start: f for f in self.module.functions.values()}
        dropped = {g.index for g in self.module.globals.values() if g.name not in keep}
        while k < len(lines):
            fn = by_start.get(k)
            if fn is not None:
                if fn.name in keep:
                    out.extend(self.rewritten.get(fn.name) or [fn.define, *fn.body])
                    out.append("}")
                k = fn.end + 1
                continue
            line = lines[k]
            if k in dropped or (line.startswith("declare") and re.search(r"@(__hpvm__|llvm_hpvm_)", line)):
                k += 1
                continue
            out.append(line)
            k += 1
        text = "\n".join(out)
        used = [d for key, d in DECLARATIONS.items() if f"@llvm.hpvm.{key}(" in text]
        used += tensorcalls.declarations(text)
        used += [
            f"declare float @{m}(float)"
            for m in sorted(set(MATH.values()))
            if f"@{m}(" in text and not re.search(rf"^declare [^\n]*@{re.escape(m)}\(", text, re.M)
        ]
        return text + "\n" + "\n".join(used) + "\n"


def rewrite(
    text: str, program: str, origins: dict[str, str] | None = None, debug: DebugInfo | None = None
) -> Rewritten:
    """GenHPVM on clang's text of a program (``program`` names it in messages; ``origins``:
    the file of each function, where debug metadata says nothing; ``debug``: the text's
    debug metadata, if it was read already)."""
    return GenHPVM(text, program, origins, debug).run()


def _after_return_ok(raw: str) -> bool:
    """Whether ``raw`` may stand between ``__hpvm__return`` and the ``ret``: a debug record,
    or the end of a local array's lifetime — clang ends a local array's (``float e[4];``)
    lifetime after the function's last statement, so a leaf with one has that call there."""
    line = raw.lstrip()
    return line.startswith("#dbg") or "@llvm.lifetime.end" in line


__all__ = ["TARGETS", "Rewritten", "Signature", "rewrite"]
