"""The HBIR checker: every problem of a parsed program, all at once, each at its line.

It checks the segment order (target, config, data, code — each once), that every reference
resolves (constants, tile arrays, memories, groups, layouts, arrays, variables), the types
of the code (int / float / bool, array ranks and indexing arity, what may be assigned), that
groups do not overlap (naming both groups and a shared tile), and that every layout fits
its array and a group's grid. Problems are collected and raised together as one
``HBIRCheckError``; a program without problems gives the ``Model`` the lowering reads.

This module orders the segments and runs one checker per segment over one shared
``CheckContext`` (``checkcontext.py``): ``check_target.py`` (target and config),
``check_data.py``, ``check_code.py`` (blocks and statements). Constant expressions are in
``consteval.py``, printf formats in ``printf.py``; their names are re-exported here.
"""

from __future__ import annotations

from . import ast as A
from .check_code import BlockChecker, outer_symbols
from .check_data import DataChecker, part_bytes
from .check_target import TargetChecker
from .checkcontext import CheckContext, HBIRCheckError
from .consteval import c_div, c_rem, fold
from .model import Model
from .printf import LOG_VALUES, c_unescape, inline_strings, printf_conversions

SEGMENTS = (A.Target, A.Config, A.Data, A.Code)
SEGMENT_NAMES = {A.Target: "target", A.Config: "config", A.Data: "data", A.Code: "code"}


class Checker:
    """One check of one program (``check(program)``): the segments in order, each by its
    checker, into one context."""

    def __init__(self, program: A.Program):
        self.cx = CheckContext(program)
        self.target = TargetChecker(self.cx)
        self.data = DataChecker(self.cx)
        self.code = BlockChecker(self.cx)

    def run(self) -> Model:
        segments = self.check_order()
        if segments.get(A.Target) is not None:
            self.target.check_target(segments[A.Target])
        if segments.get(A.Config) is not None:
            self.target.check_config(segments[A.Config])
        if segments.get(A.Data) is not None:
            self.data.check_data(segments[A.Data])
        if segments.get(A.Code) is not None:
            self.code.check_code(segments[A.Code])
        if self.cx.problems:
            raise self.cx.error()
        return Model(
            self.cx.file,
            self.cx.consts,
            self.cx.target_values,
            self.cx.tile_arrays,
            self.cx.groups,
            self.cx.layouts,
            self.cx.arrays,
            self.cx.globals,
            self.cx.blocks,
            memories=self.cx.memory_infos,
        )

    def check_order(self) -> dict[type, A.Segment]:
        seen: dict[type, A.Segment] = {}
        last = -1
        for seg in self.cx.program.segments:
            kind = type(seg)
            name = SEGMENT_NAMES[kind]
            pos = SEGMENTS.index(kind)
            if kind in seen:
                self.cx.problem(
                    seg,
                    f"a second {name} segment; a program has one of each (the first is at line {seen[kind].line})",
                )
                continue
            if pos < last:
                after = SEGMENT_NAMES[SEGMENTS[last]]
                self.cx.problem(
                    seg,
                    f"the {name} segment comes after the {after} segment; the order is target, config, data, code",
                )
            last = max(last, pos)
            seen[kind] = seg
        for kind in SEGMENTS:
            if kind not in seen:
                line = self.cx.program.segments[-1].line if self.cx.program.segments else 1
                self.cx.problems.append(
                    (
                        line,
                        1,
                        f"the program has no {SEGMENT_NAMES[kind]} segment; every program has target, config, data and code, in that order",
                    )
                )
        return seen


def check(program: A.Program) -> Model:
    """The program's ``Model``; ``HBIRCheckError`` listing every problem if it has any."""
    return Checker(program).run()


__all__ = [
    "LOG_VALUES",
    "HBIRCheckError",
    "c_div",
    "c_rem",
    "c_unescape",
    "check",
    "fold",
    "inline_strings",
    "outer_symbols",
    "part_bytes",
    "printf_conversions",
]
