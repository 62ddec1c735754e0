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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ir.debuginfo import DebugInfo
from ..llvm.abi import DECLARATIONS
from . import tensorcalls
from .errors import HPVMCError
from .module import Call, Function, Module, split_top
from .sources import placed

GRAPH = frozenset({"__hpvm__createNodeND", "__hpvm__edge", "__hpvm__bindIn", "__hpvm__bindOut"})
HOST = frozenset(
    {
        "__hpvm__init", "__hpvm__cleanup", "__hpvm__launch", "__hpvm__wait", "__hpvm__push", "__hpvm__pop",
        "llvm_hpvm_track_mem", "llvm_hpvm_untrack_mem", "llvm_hpvm_request_mem",
    }
)  # fmt: skip
RENAMED = {
    "__hpvm__getNode": "getNode",
    "__hpvm__getParentNode": "getParentNode",
    "__hpvm__malloc": "malloc",
    "__hpvm__barrier": "barrier",
    **{f"__hpvm__{q}_{a}": f"{q}.{a}" for q in ("getNodeInstanceID", "getNumNodeInstances") for a in "xyz"},
    **{
        f"__hpvm__atomic_{op}": f"atomic.{op}"
        for op in ("add", "sub", "min", "max", "xchg", "and", "or", "xor")
    },
}
# Hints HPVM's approximation tools read (``__hpvm__node_id(n)``: the node's number for the
# tuner, in HPVM's ResNet programs and what torch2hpvm writes); they change no result.
IGNORED = frozenset({"__hpvm__isNonZeroLoop", "__hpvm__order", "__hpvm__node_id"})
#: HPVM's float math builtins (hpvm/include/hpvm.h) → LLVM's own intrinsics (rsqrt: 1 / sqrt).
MATH = {
    "__hpvm__sqrt": "llvm.sqrt.f32",
    "__hpvm__rsqrt": "llvm.sqrt.f32",
    "__hpvm__floor": "llvm.floor.f32",
    "__hpvm__sin": "llvm.sin.f32",
    "__hpvm__cos": "llvm.cos.f32",
}
#: HPVM's atomics beyond seed 000's list, as LLVM's own atomic instructions (i32).
RMW = {"__hpvm__atomic_umin": "umin", "__hpvm__atomic_umax": "umax"}
#: HPVM's target enumeration (HPVMHint.h) → hpvm's hint. FPGA has no back end here.
TARGETS = {0: None, 1: "cpu", 2: "gpu", 3: "tensor", 4: "tensor", 5: "gpu"}
TARGET_NAMES = {0: "None", 1: "CPU_TARGET", 2: "GPU_TARGET", 3: "CUDNN_TARGET", 4: "TENSOR_TARGET",
                5: "CPU_OR_GPU_TARGET", 6: "FPGA_TARGET"}  # fmt: skip


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
        self.program = program
        self.origins = origins or {}
        self.module = Module.parse(text)
        self.debug = debug or DebugInfo(text)
        self.outputs: dict[str, list[str]] = {}  # node function → its return fields
        self.rewritten: dict[str, list[str]] = {}  # node function → its new lines (define..body)
        self.active: list[str] = []
        self.returns = 0  # __hpvm__return calls rewritten so far

    # -- locations ----------------------------------------------------------------------
    def at(self, line_text: str, fn: Function | None = None) -> str:
        """``file:line`` of an instruction (else of its function's definition), at the file
        the debug metadata names (and the ``.ll`` it was read from: ``sources.placed``); else
        the function's file, else the program."""
        where = self.debug.where(line_text)
        if where is None and fn is not None:
            where = self.debug.function_where(fn.define)
        origin = self.origins.get(fn.name) if fn is not None else None
        if where is not None:
            return placed(where, origin)
        return origin or self.program

    def fail(self, line_text: str, fn: Function | None, message: str) -> HPVMCError:
        return HPVMCError(f"{self.at(line_text, fn)}: {message}")

    def c(self, name: str) -> str:
        return self.debug.c_name(name)

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
        return Rewritten(roots, texts, sigs, nodes, {n: self.c(n) for n in nodes})

    def roots(self) -> list[str]:
        launched: list[str] = []
        for fn in self.module.functions.values():
            for call in fn.calls():
                if call.callee != "__hpvm__launch":
                    continue
                target = call.args[1].value if len(call.args) >= 3 else ""
                if not target.startswith("@") or target[1:] not in self.module.functions:
                    raise self.fail(
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
                f"{self.program}: no dataflow graph: no function calls __hpvm__createNodeND; an HPVM-C "
                "program has a root node function that builds its graph, launched with __hpvm__launch"
                + ("; this text calls llvm.hpvm.createNode*: it is HPVM IR after GenHPVM, which "
                   "hpvm.llvm.from_hpvm_ir (hpvm run / hpvm llvm import) reads" if after else "")
            )  # fmt: skip
        return roots

    def check_host(self, fn: Function) -> None:
        for call in fn.calls():
            if call.callee in GRAPH:
                raise self.fail(
                    call.line, fn,
                    f"{call.callee} in {self.c(fn.name)}(), which is host code (no graph launches or "
                    "creates it); graph calls belong in internal node functions, launched with __hpvm__launch",
                )  # fmt: skip

    # -- one node function -----------------------------------------------------------
    def node(self, name: str, creator: Call | None) -> list[str]:
        if name in self.outputs:
            return self.outputs[name]
        fn = self.module.functions.get(name)
        if fn is None:  # (createNodeND of a declared-only function)
            raise HPVMCError(
                f"{self.program}: {self.c(name)} is created as a node but no source file defines it; "
                "define the node function, or add the file that does"
            )
        if name in self.active:
            line = creator.line if creator else fn.define
            raise self.fail(line, fn, f"{self.c(name)} creates a node of itself; dataflow graphs are acyclic")
        self.active.append(name)
        if fn.return_type() != "void":
            raise self.fail(
                fn.define, fn,
                f"node function {self.c(name)} returns {fn.return_type()}; HPVM-C node functions return "
                "void and give their outputs with __hpvm__return(n, values...)",
            )  # fmt: skip
        calls = fn.calls()
        graph = [c for c in calls if c.callee in GRAPH]
        for c in calls:
            if c.callee in HOST:
                raise self.fail(
                    c.line, fn,
                    f"{c.callee} in node function {self.c(name)}; host calls (launch, wait, push, pop, "
                    "memory tracking) belong in host code such as main",
                )  # fmt: skip
        if graph:
            for c in calls:
                if c.callee in RENAMED or c.callee == "__hpvm__return":
                    raise self.fail(
                        graph[0].line, fn,
                        f"{graph[0].callee} in {self.c(name)}, which also calls {c.callee} (line "
                        f"{self.debug.line_of(c.line)}): a node function either builds a graph (internal "
                        "node) or computes (leaf); move the computation into a leaf it creates",
                    )  # fmt: skip
        lines = self.rewrite(fn, internal=bool(graph))
        self.active.remove(name)
        self.rewritten[name] = lines
        return self.outputs[name]

    def rewrite(self, fn: Function, internal: bool) -> list[str]:
        renames = self.node_names(fn)
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
                    body.append(self.ret(fn, raw, internal, pending_ret, returned))
                    pending_ret = None
                    continue
                if pending_ret is not None and raw.strip() and not raw.lstrip().startswith("#dbg"):
                    raise self.fail(
                        pending_call, fn,
                        f"__hpvm__return in {self.c(fn.name)} is not followed by the function's return: "
                        "either it is not the last statement, or another path returns without it "
                        "(clang merged the returns); call __hpvm__return(n, values...) as the last "
                        "statement, on every path",
                    )  # fmt: skip
                body.append(raw)
                continue
            name = call.callee
            if name == "__hpvm__hint":
                hint = self.hint(fn, call)
            elif name == "__hpvm__attributes":
                marks = self.attributes(fn, call)
            elif name == "__hpvm__return":
                if internal:
                    raise self.fail(call.line, fn, "__hpvm__return in an internal node function; its outputs "
                                    "are the child outputs bound with __hpvm__bindOut")  # fmt: skip
                types = [a.type for a in call.args[1:]]
                if returned is not None and returned != types:
                    raise self.fail(call.line, fn, f"{self.c(fn.name)} returns ({', '.join(types)}) here but "
                                    f"({', '.join(returned)}) elsewhere; every __hpvm__return gives the same outputs")  # fmt: skip
                self.check_count(fn, call, len(types))
                returned = types
                pending_ret, lines = self.build_struct(call, types)
                pending_call = call.line
                body.extend(lines)
            elif name == "__hpvm__createNodeND":
                body.extend(self.create_node(fn, call))
            elif name in ("__hpvm__edge", "__hpvm__bindIn", "__hpvm__bindOut"):
                body.append(self.connect(fn, call, out_fields))
            elif name in RENAMED:
                body.append(_direct(raw, call, f"llvm.hpvm.{RENAMED[name]}"))
            elif name in ("__hpvm__atomic_inc", "__hpvm__atomic_dec"):
                op = "add" if name.endswith("inc") else "sub"
                ptr = call.args[0].value
                res = f"{call.result} = " if call.result else ""
                body.append(
                    f"{call.indent}{res}call i32 @llvm.hpvm.atomic.{op}(ptr {ptr}, i32 1){call.dbg()}"
                )
            elif name in IGNORED:
                if call.result and _uses(fn, call.result):  # (its void * result, if used, is null)
                    body.append(f"{call.indent}{call.result} = getelementptr i8, ptr null, i64 0")
                continue
            elif name in MATH:
                body.extend(_math(call, MATH[name], rsqrt=name == "__hpvm__rsqrt"))
            elif name in RMW:
                ptr, value = call.args[0].value, call.args[1].value
                res = f"{call.result} = " if call.result else ""
                body.append(
                    f"{call.indent}{res}atomicrmw {RMW[name]} ptr {ptr}, i32 {value} seq_cst{call.dbg()}"
                )
            elif name == "__hpvm__atomic_cmpxchg":
                ptr, expected, new = (a.value for a in call.args[:3])
                pair = f"{call.result or '%hpvm.cmpxchg'}.pair"
                body.append(
                    f"{call.indent}{pair} = cmpxchg ptr {ptr}, i32 {expected}, i32 {new} seq_cst seq_cst{call.dbg()}"
                )
                if call.result:
                    body.append(f"{call.indent}{call.result} = extractvalue {{ i32, i1 }} {pair}, 0")
            elif name.startswith(tensorcalls.C_PREFIX):
                at = call.line
                body.extend(tensorcalls.rewrite_call(call, lambda m, at=at: self.fail(at, fn, m)))
            else:
                raise self.fail(call.line, fn, f"{name} is not part of HPVM-C (hpvm.h declares the API); "
                                "check the spelling")  # fmt: skip
        if internal:
            self.outputs[fn.name] = self.internal_outputs(fn, out_fields)
        else:
            self.outputs[fn.name] = returned or []
        ret_type = "{ " + ", ".join(self.outputs[fn.name]) + " }" if self.outputs[fn.name] else "{}"
        define = self.define(fn, ret_type, marks, hint, renames)
        body = [line.replace("ret {} RET", f"ret {ret_type} undef" if internal else "ret {} zeroinitializer")
                for line in body]  # fmt: skip
        return [self.rename(line, renames) for line in [define, *body]]

    # -- pieces of the rewrite ------------------------------------------------------------
    @staticmethod
    def rename(line: str, renames: dict[str, str]) -> str:
        for old, new in renames.items():
            line = re.sub(re.escape(old) + r"(?![-\w.$])", new, line)
        return line

    def hint(self, fn: Function, call: Call) -> str | None:
        value = call.args[0].const() if call.args else None
        if value not in TARGETS:
            raise self.fail(
                call.line, fn,
                f"__hpvm__hint({TARGET_NAMES.get(value, value)}): hpvm runs CPU_TARGET, GPU_TARGET, "  # type: ignore[arg-type]
                "CPU_OR_GPU_TARGET, CUDNN_TARGET and TENSOR_TARGET nodes (FPGA has no back end here)",
            )  # fmt: skip
        return TARGETS[value]  # type: ignore[index]

    def attributes(self, fn: Function, call: Call) -> dict[str, set[str]]:
        args = call.args
        names = {p.value for p in fn.params}
        marks: dict[str, set[str]] = {}
        try:
            n_in = args[0].const()
            ins = args[1 : 1 + n_in]  # type: ignore[operator]
            n_out = args[1 + n_in].const()  # type: ignore[operator]
            outs = args[2 + n_in : 2 + n_in + n_out]  # type: ignore[operator]
            if n_in is None or n_out is None or len(args) != 2 + n_in + n_out:
                raise IndexError
        except (IndexError, TypeError):
            raise self.fail(call.line, fn, "__hpvm__attributes(nIn, in pointers..., nOut, out pointers...): "
                            "the counts do not match the pointers given") from None  # fmt: skip
        for mark, group in (("in", ins), ("out", outs)):
            for a in group:
                if a.value not in names:
                    raise self.fail(
                        call.line, fn,
                        f"__hpvm__attributes names {a.value}, which is not a pointer parameter of "
                        f"{self.c(fn.name)}; list the function's own pointer parameters",
                    )  # fmt: skip
                marks.setdefault(a.value, set()).add(mark)
        return marks

    def check_count(self, fn: Function, call: Call, count: int) -> None:
        n = call.args[0].const() if call.args else None
        if n != count:
            raise self.fail(call.line, fn, f"__hpvm__return({n}, ...) gives {count} value(s); the count must "
                            "match the values that follow")  # fmt: skip

    def build_struct(self, call: Call, types: list[str]) -> tuple[str, list[str]]:
        st = "{ " + ", ".join(types) + " }" if types else "{}"
        self.returns += 1  # (a function may call __hpvm__return on several paths: unique names)
        prev, lines = "poison", []
        for k, a in enumerate(call.args[1:]):
            name = f"%hpvm.ret.{self.returns}.{k}"
            lines.append(f"{call.indent}{name} = insertvalue {st} {prev}, {a.type} {a.value}, {k}")
            prev = name
        return (prev if types else "zeroinitializer"), lines

    def ret(
        self, fn: Function, raw: str, internal: bool, pending: str | None, returned: list[str] | None
    ) -> str:
        indent = raw[: len(raw) - len(raw.lstrip())]
        tail = raw.strip()[len("ret void") :]
        if internal:
            return f"{indent}ret {{}} RET{tail}"
        if returned is None:
            return f"{indent}ret {{}} RET{tail}"
        if pending is None:
            raise self.fail(raw, fn, f"{self.c(fn.name)} returns without __hpvm__return on this path; call "
                            "__hpvm__return(n, values...) before every return")  # fmt: skip
        st = "{ " + ", ".join(returned) + " }" if returned else "{}"
        return f"{indent}ret {st} {pending}{tail}"

    def create_node(self, fn: Function, call: Call) -> list[str]:
        dims = call.args[0].const() if call.args else None
        if dims not in (0, 1, 2, 3):
            raise self.fail(call.line, fn, "__hpvm__createNodeND(dims, function, sizes...): dims must be a "
                            "constant 0, 1, 2 or 3")  # fmt: skip
        if len(call.args) != 2 + dims:  # type: ignore[operator]
            raise self.fail(call.line, fn, f"__hpvm__createNodeND({dims}, ...) takes {dims} replication "
                            f"size(s) after the function, but {len(call.args) - 2} were given")  # fmt: skip
        target = call.args[1].value
        if not target.startswith("@"):
            raise self.fail(call.line, fn, "__hpvm__createNodeND's second argument must be a node function "
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
                raise self.fail(call.line, fn, f"replication size {k} of __hpvm__createNodeND is a {a.type}; "
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
            var = self.debug.variables.get(int(m.group(1))) if m else None
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
            raise self.fail(call.line, fn, f"{name} takes {want} arguments, {len(call.args)} given")
        consts = [a.const() for a in call.args[handles:]]
        if any(c is None for c in consts):
            raise self.fail(call.line, fn, f"{name}: the replication kind, port numbers and streaming flag "
                            "must be constants")  # fmt: skip
        ptrs = [f"ptr {a.value}" for a in call.args[:handles]]
        result = f"{call.result} = " if call.result else ""
        if name == "__hpvm__edge":
            repl, sp, dp, stream = consts
            if repl not in (0, 1):
                raise self.fail(
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
                raise self.fail(call.line, fn, f"__hpvm__bindOut binds output {a} of {self.c(child)}, which has "
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
            raise self.fail(fn.define, fn, f"outputs {missing} of {self.c(fn.name)} are bound by no "
                            f"__hpvm__bindOut, but output {top} is; bind every output from 0 up")  # fmt: skip
        return [out_fields[k] for k in range(top + 1)]

    def define(self, fn: Function, ret_type: str, marks: dict[str, set[str]], hint: str | None,
               renames: dict[str, str]) -> str:  # fmt: skip
        head, rest = fn.define.split(f"@{fn.name}(", 1)
        words = head.split()
        words[-1] = ret_type
        params = []
        for p in fn.params:
            extra = [f'"{m}"' for m in sorted(marks.get(p.value, ()))]
            params.append(" ".join([p.type, *p.attrs, *extra, p.value]))
        _, after = _split_params(rest)
        attrs = []
        if hint:
            attrs.append(f'"hpvm.hint"="{hint}"')
        c_name = self.c(fn.name)
        if c_name != fn.name:
            attrs.append(f'"hpvm.name"="{c_name}"')
        after = after.replace(" #", " " + " ".join(attrs) + " #", 1) if attrs and " #" in after else (
            " " + " ".join(attrs) + after if attrs else after)  # fmt: skip
        return f"{' '.join(words)} @{fn.name}({', '.join(params)}){after}"

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


def _direct(raw: str, call: Call, callee: str) -> str:
    """The call ``raw`` calling ``callee`` instead, without an explicit function type: a
    call through HPVM's unprototyped C declarations (``void *__hpvm__getNode()``, so clang
    writes ``call ptr (...) @__hpvm__getNode()``) names one, which an intrinsic refuses."""
    ret = call.type.split("(", 1)[0].strip()
    return raw.replace(f"{call.type} @{call.callee}(", f"{ret} @{callee}(", 1)


def _uses(fn: Function, value: str) -> bool:
    """Whether ``value`` (``%x``) is used in ``fn``, beside the line defining it."""
    use = re.compile(re.escape(value) + r"(?![-\w.$])")
    return sum(len(use.findall(line)) for line in fn.body) > 1


def _math(call: Call, intrinsic: str, rsqrt: bool) -> list[str]:
    """``__hpvm__sqrt(x)`` and the others (``float`` → ``float``) as LLVM's intrinsic;
    ``__hpvm__rsqrt(x)`` as ``1 / sqrt(x)``."""
    x = call.args[0].value if call.args else "undef"
    if not rsqrt:
        res = f"{call.result} = " if call.result else ""
        return [f"{call.indent}{res}call float @{intrinsic}(float {x}){call.dbg()}"]
    root = f"{call.result or '%hpvm.rsqrt'}.sqrt"
    lines = [f"{call.indent}{root} = call float @{intrinsic}(float {x}){call.dbg()}"]
    if call.result:
        lines.append(f"{call.indent}{call.result} = fdiv float 1.0, {root}")
    return lines


def _bool(v: int | None) -> str:
    return "true" if v else "false"


def _split_params(rest: str) -> tuple[list[str], str]:
    return split_top(rest)


def rewrite(
    text: str, program: str, origins: dict[str, str] | None = None, debug: DebugInfo | None = None
) -> Rewritten:
    """GenHPVM on clang's text of a program (``program`` names it in messages; ``origins``:
    the file of each function, where debug metadata says nothing; ``debug``: the text's
    debug metadata, if it was read already)."""
    return GenHPVM(text, program, origins, debug).run()


__all__ = ["Rewritten", "Signature", "rewrite"]
