"""What the parts of one HBIR check share: the problems found so far and the tables each
segment declares for the segments after it.

Why a class of its own: the target, data and code checks (``check_target.py``,
``check_data.py``, ``check_code.py``) each read what the segments before declared and
report into one list, so that every problem of a program is raised at once, in line order,
as one ``HBIRCheckError``.
"""

from __future__ import annotations

from typing import Any

from ..errors import HPVMError
from . import ast as A
from .consteval import evaluate, positive_ints
from .model import ArrayInfo, BlockInfo, GlobalInfo, GroupInfo, LayoutInfo, MemoryInfo
from .symbols import reserved_problem


class HBIRCheckError(HPVMError):
    """An HBIR program that parses but is wrong; ``problems`` lists each, as ``file:line:col: ...``."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{len(self.problems)} problems in the HBIR program:\n{lines}")


class CheckContext:
    """The problems of one program and its declarations: target values, memories, tile
    arrays and groups (target, config); constants, layouts and arrays (data); globals and
    blocks (code)."""

    def __init__(self, program: A.Program):
        self.program = program
        self.file = program.filename
        self.problems: list[tuple[int, int, str]] = []
        self.target_values: dict[str, int] = {}
        self.memories: set[str] = set()
        self.memory_infos: dict[str, MemoryInfo] = {}
        self.tile_arrays: dict[str, tuple[int, ...]] = {}
        self.groups: dict[str, GroupInfo] = {}
        self.consts: dict[str, int | float | bool] = {}
        self.layouts: dict[str, LayoutInfo] = {}
        self.arrays: dict[str, ArrayInfo] = {}
        self.globals: dict[str, GlobalInfo] = {}
        self.blocks: list[BlockInfo] = []

    # -- reporting --------------------------------------------------------------------------

    def problem(self, node: A.Node, message: str) -> None:
        self.problems.append((node.line, node.column, message))

    def error(self) -> HBIRCheckError:
        ordered = sorted(set(self.problems), key=lambda p: (p[0], p[1]))
        return HBIRCheckError([f"{self.file}:{line}:{col}: {msg}" for line, col, msg in ordered])

    def name_ok(self, node: A.Node, name: str) -> bool:
        why = reserved_problem(name)
        if why is not None:
            self.problem(node, why)
        return why is None

    # -- constant expressions ---------------------------------------------------------------

    def evaluate(self, e: A.Expr, env: dict[str, Any], what: str) -> Any:
        """The value of a constant expression (``None`` after reporting why it has none)."""
        return evaluate(e, env, what, self.problem)

    def positive_ints(
        self, dims: tuple[A.Expr, ...], env: dict[str, Any], what: str
    ) -> tuple[int, ...] | None:
        return positive_ints(dims, env, what, self.problem)

    def data_env(self) -> dict[str, Any]:
        """What a constant expression of the data and code segments may name."""
        env: dict[str, Any] = dict(self.target_values)
        env.update(self.consts)
        return env
