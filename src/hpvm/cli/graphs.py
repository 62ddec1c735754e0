"""``hpvm run``, ``hpvm show`` and ``hpvm verify``: a program's graph run with inputs
from the command line, drawn or printed, and checked against HPVM's rules.

Why a module of its own: these are the subcommands on hpvm's own programs (saved,
LLVM or Python); the front ends' subcommands (``hbir``, ``c``, ``llvm``, ``svm``) have
their own modules.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HPVMError, LaunchError, VerificationError
from ..ir.graph import InternalFunction, functions
from ..ir.types import ArrayType, ScalarType
from .loading import CLIError, load, raised_at
from .output import count, draw_graph, writing


def _parse_arg(param: Any, text: str) -> Any:
    if isinstance(param.type, ArrayType):
        if not text.endswith(".npy"):
            raise CLIError(f"--arg {param.name}: array inputs are given as .npy files, not {text!r}")
        try:
            return np.load(text)
        except (OSError, ValueError, EOFError) as e:  # missing, unreadable, not a .npy array
            raise CLIError(f"--arg {param.name}: cannot read {text}: {e}") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise CLIError(f"--arg {param.name}: {text!r} is not a number") from None
    assert isinstance(param.type, ScalarType)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CLIError(f"--arg {param.name}: {text!r} is not a number")
    if param.type.is_integer and not isinstance(value, int):
        raise CLIError(f"--arg {param.name}: {text!r} is not an integer, and '{param.name}' is {param.type}")
    try:
        converted = param.type.dtype.type(value)
    except (OverflowError, ValueError) as e:
        raise CLIError(
            f"--arg {param.name}: {text} does not fit the input's type {param.type}: {e}"
        ) from None
    return converted


def _launch_args(root: InternalFunction, pairs: Sequence[str]) -> list[Any]:
    given: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise CLIError(f"--arg takes NAME=VALUE, not {pair!r}")
        given[name] = value
    unknown = set(given) - {p.name for p in root.params}
    if unknown:
        raise CLIError(f"'{root.name}' has no input(s) {', '.join(sorted(unknown))}")
    missing = [p.name for p in root.params if p.name not in given]
    if missing:
        raise LaunchError(
            f"'{root.name}' needs a value for each input; missing: {', '.join(missing)} "
            "(give --arg NAME=VALUE; arrays as NAME=file.npy)"
        )
    return [_parse_arg(p, given[p.name]) for p in root.params]


def cmd_run(ns: argparse.Namespace) -> int:
    import hpvm

    started = time.perf_counter()
    root, host = load(ns.file, ns.root)
    loaded = time.perf_counter()
    compiled: float | None = None
    moved = hpvm.memory_stats()
    notes: list[str] = []
    hpvm.init()
    try:
        if host is not None and not ns.arg:
            try:
                host(root, ns.target)
            except HPVMError:
                raise
            except Exception as e:  # the saved host function is the user's code
                raise CLIError(
                    f"{raised_at(e, Path(ns.file))}: the program's host function raised "
                    f"{type(e).__name__}: {e}"
                ) from None
        else:
            from ..runtime.launch import check_root, choose_backend

            args = _launch_args(root, ns.arg)
            for a in args:
                if isinstance(a, np.ndarray):
                    hpvm.track_memory(a)
            choose_backend(check_root(root), ns.target).compile(root, args)
            compiled = time.perf_counter()
            handle = hpvm.launch(root, tuple(args), target=ns.target)
            outputs = hpvm.wait(handle)
            notes = handle.notes  # how the back end ran it (dask: split, or whole and why)
            for i, value in enumerate(outputs or ()):
                print(f"output {i}: {value}")
            if ns.save_dir:
                out = Path(ns.save_dir)
                with writing(out):
                    out.mkdir(parents=True, exist_ok=True)
                    for p, a in zip(root.params, args):
                        if isinstance(a, np.ndarray):
                            np.save(out / f"{p.name}.npy", hpvm.request_memory(a))
                print(f"arrays written to {out}/")
    finally:
        hpvm.cleanup()
    if ns.timings:
        done = time.perf_counter()
        if compiled is None:  # a saved host function ran: compilation is inside its run
            print(f"load {loaded - started:.3f} s, run {done - loaded:.3f} s", file=sys.stderr)
        else:
            print(
                f"load {loaded - started:.3f} s, compile {compiled - loaded:.3f} s, "
                f"run {done - compiled:.3f} s",
                file=sys.stderr,
            )
        print(f"moved {hpvm.memory_stats().since(moved)}", file=sys.stderr)  # host <-> devices
        for note in notes:
            print(note, file=sys.stderr)
    return 0


def cmd_show(ns: argparse.Namespace) -> int:

    root, _ = load(ns.file, ns.root)
    if ns.kernels:
        from ..backends.opencl.show import kernels_text

        text, errors = kernels_text(root)
        print(text, end="")
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        return 1 if errors else 0
    if ns.fuse_tensors:
        from ..tensor import fuse

        root = fuse(root)
    if ns.lowered == "auto":  # where each part runs, as a launch without target= splits it
        from ..backends.mixed import split_by_target

        root = split_by_target(root)
    elif ns.lowered is not None:
        from ..backends import get_backend
        from ..passes import lower

        root = lower(root, get_backend(ns.lowered).lowering)
    if ns.text:
        from ..ir.printer import print_program

        print(print_program(root, bodies=_has_body), end="")
        return 0
    return draw_graph(root, ns.output, ns.engine)


def _has_body(fn: Any) -> bool:
    """Whether ``hpvm show --text`` can print a leaf's body: every kind but a Python leaf
    whose code the file did not carry (text printed without ``--bodies``)."""
    from ..ir.bodies import PythonBody
    from ..ir.pysource import leaf_module_source

    if not isinstance(fn.body, PythonBody):
        return True
    try:
        leaf_module_source(fn)
    except VerificationError:
        return False
    return True


def cmd_verify(ns: argparse.Namespace) -> int:
    from ..ir.verify import verify

    root, _ = load(ns.file, ns.root)
    verify(root)
    fns = list(functions(root))
    nodes = sum(len(f.graph.nodes) for f in fns if isinstance(f, InternalFunction))
    print(f"{ns.file}: OK — root '{root.name}', {count(len(fns), 'node function')}, {count(nodes, 'node')}")
    return 0
