"""``HBIRProgram``: a parsed HBIR program that checks, lowers and runs itself.

``run(inputs, target=None)`` takes the host (``in``) arrays as NumPy arrays by name, makes
the device (``out``) arrays (zeros), the globals (their initial values) and the printf log,
launches the lowered graph through the host API (``ir/host.py``: front ends do not import
the runtime), and returns the device arrays by name. What the tiles printed is written to
``stdout`` (or the ``out=`` stream) after the run, tile by tile in row-major order of the
tile array, each tile's lines in the order it printed them (docs/hbir.md).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import MemoryTrackingError
from ..ir.elementfit import first_misfit, range_text
from ..ir.graph import InternalFunction
from ..ir.host import host
from . import ast as A
from .checker import HBIRCheckError, c_unescape, check, printf_conversions
from .codegen import LOG_CAPACITY, LOG_VALUES, WAIT_COLUMNS
from .concurrent import run_groups
from .lower import lower
from .model import Model
from .parser import HBIRParseError
from .parser import parse as parse_ast
from .waits import wait_loops


class HBIRInputError(HBIRCheckError):
    """``run``'s inputs do not match the program's data segment: missing, unknown,
    mis-shaped, of a type that does not convert, or holding a value the declared element
    type cannot (an ``int`` array is C's 32-bit int)."""


class HBIRProgram:
    """One HBIR program (``hbir.parse`` / ``hbir.load`` make these)."""

    def __init__(self, tree: A.Program):
        self.tree = tree
        self.filename = tree.filename
        self._model: Model | None = None
        self._root: InternalFunction | None = None
        self.last_output = ""

    def check(self) -> Model:
        """The checked model; ``HBIRCheckError`` listing every problem otherwise."""
        if self._model is None:
            self._model = check(self.tree)
        return self._model

    def to_hpvm(self) -> InternalFunction:
        """The root node function of the lowered graph (checked first; verified)."""
        if self._root is None:
            from ..ir.verify import verify

            model = self.check()
            root = lower(model, _root_name(self.filename))
            verify(root)
            self._root = root
        return self._root

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """The host arrays ``run`` needs: name → (shape, dtype)."""
        return {a.name: (a.shape, a.dtype) for a in self.check().arrays.values() if a.direction == "in"}

    @property
    def outputs(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """The device arrays ``run`` returns: name → (shape, dtype)."""
        return {a.name: (a.shape, a.dtype) for a in self.check().arrays.values() if a.direction == "out"}

    def _arguments(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        model = self.check()
        problems = []
        unknown = sorted(set(inputs) - set(self.inputs))
        for name in unknown:
            what = "a device (output) array" if name in model.arrays else "not an array of the program"
            problems.append(
                f"{self.filename}: input '{name}' is {what}; the inputs are: {', '.join(self.inputs) or 'none'}"
            )
        arrays: dict[str, np.ndarray] = {}
        for a in model.arrays.values():
            where = f"{self.filename}:{a.line}"
            if a.direction == "out":
                arrays[a.name] = np.zeros(a.shape, a.dtype)
                continue
            if a.name not in inputs:
                problems.append(
                    f"{where}: input array '{a.name}' ({a.elem}{_dims(a.shape)}) is missing; pass it in inputs"
                )
                continue
            value = np.asarray(inputs[a.name])
            if value.shape != a.shape:
                problems.append(
                    f"{where}: input array '{a.name}' is declared {a.elem}{_dims(a.shape)} but was given shape {value.shape}"
                )
                continue
            if not np.can_cast(value.dtype, a.dtype, casting="same_kind"):
                problems.append(
                    f"{where}: input array '{a.name}' holds {a.elem} ({a.dtype}) but was given {value.dtype}; convert it"
                )
                continue
            outside = first_misfit(value, a.dtype)
            if outside is not None:
                index = tuple(int(i) for i in np.unravel_index(outside, value.shape))
                v = value[index].item()
                problems.append(
                    f"{where}: input array '{a.name}' holds {a.elem} ({a.dtype}, {range_text(a.dtype)}), but "
                    f"element {_dims(index)} is {v}, which it cannot hold (the first such element); "
                    "pass values in range"
                )
                continue
            arrays[a.name] = np.array(value, dtype=a.dtype, order="C", copy=True)
        if problems:
            raise HBIRInputError(problems)
        return arrays

    def run(
        self, inputs: Mapping[str, Any] | None = None, target: str | None = None, out: IO[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Run on ``target`` (``None``: the default back end); the device arrays by name.
        A program whose blocks wait for other groups runs each group at once on its own
        thread (``concurrent.py``), on ``interp`` (docs/hbir.md, *Order*)."""
        root = self.to_hpvm()
        model = self.check()
        arrays = self._arguments(inputs or {})
        globals_ = {
            g.name: np.array([g.init], dtype=_global_dtype(model, g.name)) for g in model.globals.values()
        }
        names = [p.name for p in root.params]
        tiles = len(model.physical_tiles())
        extra: dict[str, np.ndarray] = {}
        if "hbir_log" in names:
            extra["hbir_log"] = np.zeros((tiles, LOG_CAPACITY, LOG_VALUES + 1), np.float64)
            extra["hbir_nlog"] = np.zeros(tiles, np.int64)
        waits = "hbir_wait" in names
        if waits:
            extra["hbir_wait"] = np.zeros((tiles + 1, WAIT_COLUMNS), np.int64)
            target = self._wait_target(target)
        values = {**arrays, **globals_, **extra}
        args = tuple(values[n] for n in names)
        hpvm = host()
        hpvm.init()
        for a in args:
            hpvm.track_memory(a)
        try:
            if waits:
                run_groups(model, self._group_roots(), values, hpvm, target)
            else:
                hpvm.wait(hpvm.launch(root, args, target=target))
            for a in args:
                hpvm.request_memory(a)
        except BaseException:
            # The run's own error is the one to see: an array a group that did not stop in
            # time still uses cannot be untracked (hpvm.cleanup() releases it), and saying
            # so here would hide the deadlock or the node's error behind it.
            for a in args:
                with contextlib.suppress(MemoryTrackingError):
                    hpvm.untrack_memory(a)
            raise
        for a in args:
            hpvm.untrack_memory(a)
        self.globals_after = {n: v[0].item() for n, v in globals_.items()}
        if "hbir_log" in extra:
            self.last_output = self._printed(model, extra["hbir_log"], extra["hbir_nlog"])
            (out or sys.stdout).write(self.last_output)
        else:
            self.last_output = ""
        return {a.name: arrays[a.name] for a in model.arrays.values() if a.direction == "out"}

    def _wait_target(self, target: str | None) -> str | None:
        """The back end of a program with wait loops: the groups run at once as launches on
        host threads, which ``interp`` and ``cpu`` allow (``cpu`` compiles leaves without
        the interpreter lock; the wait loops' atomics keep the loads in the loop); the
        other back ends do not run concurrent launches of spinning kernels."""
        if target in (None, "interp", "cpu"):
            return target
        lines = sorted({loop.line for b in self.check().blocks for loop in self._wait_loops(b)})
        raise HBIRCheckError(
            [
                f"{self.filename}:{lines[0]}: this loop waits for another group (it reads shared memory its "
                f"body does not change; wait loops at lines {', '.join(map(str, lines))}), so the groups must "
                f"run at once, which target '{target}' cannot do; run it with target='cpu' or 'interp'"
            ]
        )

    def _wait_loops(self, block: Any) -> list[Any]:
        model = self.check()
        return wait_loops(block.block.body, set(model.arrays) | set(model.globals))

    def _group_roots(self) -> dict[str, InternalFunction]:
        """One verified root per group with blocks: its blocks, in program order."""
        from ..ir.verify import verify

        model = self.check()
        out: dict[str, InternalFunction] = {}
        for info in model.blocks:
            if info.group.name in out:
                continue
            blocks = [b for b in model.blocks if b.group is info.group]
            root = lower(model, f"{_root_name(self.filename)}_{info.group.name}", blocks)
            verify(root)
            out[info.group.name] = root
        return out

    def _printed(self, model: Model, log: np.ndarray, counts: np.ndarray) -> str:
        """The tiles' printf output, tile by tile (see the module docstring)."""
        lines = []
        for t in range(len(counts)):
            n = int(counts[t])
            for k in range(min(n, LOG_CAPACITY)):
                fmt = model.printf_formats[int(log[t, k, 0])]
                lines.append(format_c(fmt, log[t, k, 1:]))
            if n > LOG_CAPACITY:
                lines.append(f"[{self.filename}: tile {t} printed {n - LOG_CAPACITY} more lines, not kept]\n")
        return "".join(lines)

    def draw(self, path: str | Path) -> None:
        """Draw the tile map (``draw.py``) to ``path`` (.svg, .png, .pdf)."""
        from .draw import draw

        draw(self.check(), path)

    def _repr_svg_(self) -> str | None:
        """The tile map in a notebook (``hpvm hbir show``'s)."""
        from ..ir.pictures import svg_text

        return svg_text(self.draw, f"HBIR program {self.filename}")


def _global_dtype(model: Model, name: str) -> np.dtype:
    from .model import DTYPES

    return DTYPES[model.globals[name].elem]


def _dims(shape: tuple[int, ...]) -> str:
    return "".join(f"[{d}]" for d in shape)


def _root_name(filename: str) -> str:
    stem = re.sub(r"\W", "_", Path(filename).stem) or "hbir"
    return stem if stem[0].isalpha() else f"hbir_{stem}"


def format_c(fmt: str, values: np.ndarray) -> str:
    """C's printf of ``fmt`` (escapes as written in the HBIR string) with logged values."""
    text = c_unescape(fmt)
    letters = printf_conversions(fmt)
    assert not isinstance(letters, str)
    converted = []
    for letter, v in zip(letters, values):
        if letter in "diuxXoc":
            converted.append(int(v))
        else:
            converted.append(float(v))
    pytext = re.sub(r"%([-+ #0]*[0-9]*(?:\.[0-9]+)?)(?:hh|h|ll|l|z)?([diuxXofFeEgGc%])", _py_conversion, text)
    return pytext % tuple(converted)


def _py_conversion(m: re.Match[str]) -> str:
    flags, letter = m.group(1), m.group(2)
    if letter == "%":
        return "%%"
    return f"%{flags}{'d' if letter in 'iu' else letter}"


def parse(text: str, filename: str | None = None) -> HBIRProgram:
    """An ``HBIRProgram`` from HBIR text (``HBIRParseError`` if malformed)."""
    return HBIRProgram(parse_ast(text, filename))


def load(path: str | Path) -> HBIRProgram:
    """An ``HBIRProgram`` from an ``.hbir`` file."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise HBIRParseError(f"cannot read the HBIR file: {e}", 1, 1, str(path)) from None
    return parse(text, str(path))


__all__ = ["HBIRInputError", "HBIRProgram", "format_c", "load", "parse"]
