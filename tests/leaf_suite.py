"""Every leaf of the shared test programs and the examples, by (origin, name): what the
leaf-IR tests and the analyses' old-versus-new checks run over."""

from __future__ import annotations

from pathlib import Path

import example_modules
import gpu_convention
import hpvm.hbir as hbir
import mixed_programs
import programs
import streaming_programs
from hpvm.ir.graph import LeafFunction, functions

EXAMPLES = ("vector_add", "histogram", "reduction", "stencil", "sgemm", "edge_detection")
HBIR = sorted((Path(example_modules.EXAMPLES) / "hbir").glob("*.hbir"))


def _leaves() -> dict[tuple[str, str], LeafFunction]:
    found: dict[tuple[str, str], LeafFunction] = {}

    def add(origin: str, fn: object) -> None:
        if isinstance(fn, LeafFunction):
            found.setdefault((origin, fn.name), fn)

    for program in programs.PROGRAMS:
        for fn in functions(program.root):
            add("programs", fn)
    for module in (gpu_convention, mixed_programs, streaming_programs):
        for value in vars(module).values():
            add(module.__name__, value)
    for name in EXAMPLES:
        for value in vars(example_modules.load(name)).values():
            add(name, value)
    for path in HBIR:
        for fn in functions(hbir.load(path).to_hpvm()):
            add(path.name, fn)
    return found


LEAVES = _leaves()
