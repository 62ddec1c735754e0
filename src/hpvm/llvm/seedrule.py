"""Seed 000's rule on where HPVM intrinsics are called, its checker, and how the export obeys it.

The seed: "The node function may call additional, auxiliary functions. However, the
auxiliary functions are not allowed to include any HPVM intrinsics, as they are not
considered to be part of the HPVM node hierarchy."

Why the export needs work for it: Numba compiles a Python leaf into an *adapter* (the ABI
to Numba's calling convention) that calls, or has inlined, Numba's code of the leaf, which
holds the queries, ``malloc``, atomics and barriers; and an imported leaf's code is kept
as a function its new node function calls. Either way the intrinsics would sit in a
function the node function calls. So the export (``inline_into_node_functions``) marks
every function that reaches an intrinsic ``alwaysinline``, runs LLVM's always-inliner and
drops what nothing calls any more, leaving the intrinsics in the node functions. A function
that reaches one through recursion cannot be inlined: an ``LLVMExportError`` naming the
leaf. ``outside_node_functions`` is the rule's checker: the export asserts it on its
output, and the tests run it over every exported program.

Node functions are found as HPVM's BuildDFG finds them: the functions a ``createNode*``
call creates and the functions that build a graph (the root among them). Host intrinsics
(``launch``, ``wait``...) belong to host code, which is no node: they are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..ir.llvm_text import WRITTEN_NAME, global_name, mark_always_inline, name_of
from ..ir.llvmcontext import machine_for, own_context
from . import abi
from .errors import LLVMExportError


@dataclass(frozen=True)
class Violation:
    """A call of an HPVM intrinsic in function ``function``, which is no node function."""

    function: str
    instruction: str

    def __str__(self) -> str:
        return f"@{self.function}: {self.instruction}"


#: A direct call (or invoke) in LLVM's printing: the callee is the first ``@name(`` after the
#: keyword (arguments come after it; an indirect call has none there). Group 2: the rest.
_CALL = re.compile(rf"\b(?:call|invoke|callbr)\b[^@\n]*?@({WRITTEN_NAME})\((.*)$")
_DEFINE = re.compile(rf"^define\b[^@\n]*@({WRITTEN_NAME})\(")
_FIRST_FUNCTION = re.compile(rf"^\s*ptr\s+@({WRITTEN_NAME})\s*[,)]")


class CallGraph:
    """Who calls whom directly among the functions a module defines, and who calls which
    HPVM intrinsic (host intrinsics left out). Read from the module as LLVM prints it (one
    instruction per line): walking instructions through llvmlite costs a foreign call per
    operand, which made a second export of the largest example take four times as long."""

    def __init__(self, module: Any, printed: bool = False):
        """``module``: an llvmlite module, or LLVM IR text (``printed``: as LLVM printed it,
        read as it is; else parsed and printed again first)."""
        if isinstance(module, str) and not printed:
            with own_context() as parse:
                module = str(parse(module))
        self.callees: dict[str, set[str]] = {}
        self.intrinsics: dict[str, list[tuple[str, str]]] = {}  # function -> [(short name, instruction)]
        self.created: set[str] = set()
        self.builders: set[str] = set()
        function = None
        for line in str(module).splitlines():
            if function is None:
                m = _DEFINE.match(line)
                if m:
                    function = name_of(m.group(1))
                    self.callees[function] = set()
                continue
            if line == "}":
                function = None
                continue
            m = _CALL.search(line)
            if m is None:
                continue
            name = name_of(m.group(1))
            if not name.startswith(abi.PREFIX):
                self.callees[function].add(name)
                continue
            short = name[len(abi.PREFIX) :]
            if short.startswith("createNode"):
                created = _FIRST_FUNCTION.match(m.group(2))
                if created:
                    self.created.add(name_of(created.group(1)))
            if short in abi.GRAPH_INTRINSICS:
                self.builders.add(function)
            elif short not in abi.HOST_INTRINSICS:
                self.intrinsics.setdefault(function, []).append((short, line.strip()))

    @property
    def node_functions(self) -> set[str]:
        return self.created | self.builders

    def reachable(self, start: str) -> set[str]:
        """The defined functions ``start`` calls, directly or not (itself only through a cycle)."""
        seen: set[str] = set()
        todo = list(self.callees.get(start, ()))
        while todo:
            f = todo.pop()
            if f in seen or f not in self.callees:
                continue
            seen.add(f)
            todo.extend(self.callees[f])
        return seen

    def reaching(self) -> set[str]:
        """The functions that are no node functions and call an HPVM intrinsic, directly or
        through other such functions."""
        nodes = self.node_functions
        found = {f for f in self.intrinsics if f not in nodes}
        changed = True
        while changed:
            changed = False
            for f, called in self.callees.items():
                if f not in found and f not in nodes and called & found:
                    found.add(f)
                    changed = True
        return found


def outside_node_functions(module: Any, printed: bool = False) -> list[Violation]:
    """Every call of an HPVM intrinsic (host intrinsics aside) in a function that is no
    node function: seed 000 allows none. ``module``, ``printed``: as for ``CallGraph``."""
    graph = CallGraph(module, printed)
    nodes = graph.node_functions
    return [
        Violation(f, instruction)
        for f, calls in graph.intrinsics.items()
        if f not in nodes
        for _, instruction in calls
    ]


def _cycle(graph: CallGraph, start: str, within: set[str]) -> list[str] | None:
    """A call path from ``start`` back to itself through ``within``, if there is one."""
    path = [start]
    seen: set[str] = set()

    def walk(f: str) -> bool:
        for g in sorted(graph.callees.get(f, ())):
            if g == start:
                path.append(g)
                return True
            if g in within and g not in seen:
                seen.add(g)
                path.append(g)
                if walk(g):
                    return True
                path.pop()
        return False

    return path if walk(start) else None


def _first_intrinsic(graph: CallGraph, f: str, within: set[str]) -> str:
    """The name of an intrinsic ``f`` reaches (for messages)."""
    for g in [f, *sorted(graph.reachable(f) & within)]:
        if g in graph.intrinsics:
            return abi.PREFIX + graph.intrinsics[g][0][0]
    return "an HPVM intrinsic"


def inline_into_node_functions(text: str, leaves: Mapping[str, str]) -> str:
    """``text`` (a verified module, as LLVM printed it) with every function that reaches an HPVM intrinsic
    inlined into its callers, up to the node functions, and dropped when nothing calls it
    any more. ``leaves``: each leaf node function's LLVM name → how messages name the leaf.
    ``LLVMExportError`` for a function reaching an intrinsic through recursion, or one
    LLVM could not inline (a call through a function pointer)."""
    graph = CallGraph(text, printed=True)
    reach = graph.reaching()
    if not reach:
        return text
    refuse_recursion(graph, reach, leaves)
    marked, _ = mark_always_inline(text, {global_name(f) for f in reach})
    with own_context() as parse:  # (the text's type names do not depend on the process)
        module = parse(marked)
        run_passes(module, ("always_inliner",))
        for fn in module.functions:  # (the inliner already dropped the internal ones it emptied)
            if fn.name in reach:
                fn.linkage = "internal"
        run_passes(module, ("global_dead_code_eliminate",))
        final = str(module)
    left = outside_node_functions(final, printed=True)
    if left:
        raise LLVMExportError(
            "these functions reach HPVM intrinsics and could not be inlined into their node "
            f"functions (seed 000 allows intrinsics only there): {'; '.join(map(str, left))}. "
            "Call them directly (not through a function pointer), without a noinline call site"
        )
    return final


def refuse_recursion(graph: CallGraph, reach: set[str], leaves: Mapping[str, str]) -> None:
    """``LLVMExportError`` for a function of ``reach`` that reaches an HPVM intrinsic
    through recursion (it cannot be inlined). ``leaves``: as ``inline_into_node_functions``'s."""
    for f in sorted(reach):
        cycle = _cycle(graph, f, reach)
        if cycle is not None:
            users = [leaves[n] for n in sorted(leaves) if f in graph.reachable(n)]
            who = users[0] if users else f"@{f}"
            path = " → ".join(f"@{g}" for g in cycle)
            raise LLVMExportError(
                f"{who}: @{f} reaches {_first_intrinsic(graph, f, reach)} through recursion ({path}). "
                "Seed 000 allows HPVM intrinsics only in node functions, so the export inlines every "
                "function that reaches one into its node function, and a recursive function cannot be "
                "inlined: call the intrinsic outside the recursion (in the leaf itself) and pass its "
                "value down"
            )


def run_passes(module: Any, passes: tuple[str, ...]) -> None:
    """LLVM's passes ``passes`` (llvmlite's ``add_<name>_pass``) on ``module``, in place."""
    import llvmlite.binding as llvm

    pm = llvm.create_new_module_pass_manager()
    for name in passes:
        getattr(pm, f"add_{name}_pass")()
    builder = llvm.create_pass_builder(machine_for(module.triple), llvm.create_pipeline_tuning_options())
    pm.run(module, builder)


__all__ = [
    "CallGraph",
    "Violation",
    "inline_into_node_functions",
    "outside_node_functions",
    "refuse_recursion",
    "run_passes",
]
