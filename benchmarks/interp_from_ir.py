"""The interpreter's two ways of running a leaf: ``python benchmarks/interp_from_ir.py [ROUNDS]``.

Every program of the test suite's program list (``tests/programs.py``) runs on the
interpreter with its leaves made from their leaf IR (``from_ir.py``) and from their syntax
tree (``arith_rewrite.py``), alternating in one process (round-robin, ROUNDS rounds,
default 5): the medians of the whole suite's CPU time (`time.process_time`) per round, warm (each leaf's function
made once) and cold (every leaf's function made again each run, what a test's first launch
pays: the leaf IR built too), and the time to make the functions alone (IR: built too). Prints the load average beside them:
the machine is shared, only the ratios mean much.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import hpvm  # noqa: E402
from hpvm.backends.base import get_backend  # noqa: E402
from hpvm.backends.interp.arith_rewrite import typed_function  # noqa: E402
from hpvm.backends.interp.from_ir import ir_function  # noqa: E402
from hpvm.ir.graph import LeafFunction  # noqa: E402
from hpvm.ir.leafir.build import build  # noqa: E402
from programs import PROGRAMS, run_program  # noqa: E402


def _leaves() -> list[LeafFunction]:
    found: dict[int, LeafFunction] = {}

    def visit(fn: object) -> None:
        graph = getattr(fn, "graph", None)
        if graph is None:
            if isinstance(fn, LeafFunction):
                found[id(fn)] = fn
            return
        for node in graph.nodes:
            visit(node.function)

    for program in PROGRAMS:
        visit(program.root)
    return list(found.values())


def _suite(from_ir: bool, cold: bool, leaves: list[LeafFunction]) -> Callable[[], None]:
    backend = get_backend("interp")

    def run() -> None:
        backend.from_ir = from_ir
        if cold:  # every function made again, every leaf IR built again
            backend._functions.clear()
            for leaf in leaves:
                leaf.__dict__.pop("_leaf_ir", None)
        for program in PROGRAMS:
            run_program(program, "interp")
        hpvm.cleanup()

    return run


def _make(leaves: list[LeafFunction], from_ir: bool) -> Callable[[], None]:
    def run() -> None:
        for leaf in leaves:
            if from_ir:
                ir_function_uncached(leaf)
            else:
                typed_function(leaf)

    return run


def ir_function_uncached(leaf: LeafFunction) -> object:
    """``ir_function`` with the leaf's IR built again (the first launch builds it)."""
    leaf.__dict__["_leaf_ir"] = build(leaf)
    return ir_function(leaf)


def main(rounds: int) -> None:
    leaves = _leaves()
    ir_leaves = [leaf for leaf in leaves if ir_function(leaf) is not None]
    runs = {
        "warm, tree": _suite(False, False, leaves),
        "warm, IR": _suite(True, False, leaves),
        "cold, tree": _suite(False, True, leaves),
        "cold, IR": _suite(True, True, leaves),
        "make, tree": _make(ir_leaves, False),
        "make, IR": _make(ir_leaves, True),
    }
    for run in runs.values():
        run()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in runs}
    loads = []
    for k in range(rounds):
        names = list(runs)
        names = names[k % len(names) :] + names[: k % len(names)]
        for name in names:
            start = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - start)
        loads.append(Path("/proc/loadavg").read_text().split()[0])
    print(f"{len(PROGRAMS)} programs, {len(leaves)} leaves, {len(ir_leaves)} run from their IR")
    print(f"load average (1 min) after each round: {' '.join(loads)}")
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for what in ("warm", "cold", "make"):
        tree, ir = med[f"{what}, tree"], med[f"{what}, IR"]
        print(f"| {what} | tree {tree * 1e3:.0f} ms | IR {ir * 1e3:.0f} ms | IR / tree {ir / tree:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
