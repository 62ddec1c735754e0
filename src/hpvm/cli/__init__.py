"""The ``hpvm`` command: run, show and verify saved programs (and Python modules).

``FILE`` is a saved program (``.hpvm``, see docs/text-format.md), HPVM IR in LLVM form
(``.ll``, docs/llvm.md: its leaves run as LLVM on cpu and interp) or a Python file defining
node functions; for a Python file the root is ``--root NAME``, or the one candidate: an
internal node function that no other internal node uses, or a program object whose
``.root`` is one (``program = hpvm.tensor.from_torch(model, x)``), at the module's top
level. ``hpvm hbir check|run|show|lower FILE`` does the same for HammerBlade IR programs
(docs/hbir.md), ``hpvm llvm export|import|opt`` writes, reads and optimizes HPVM IR in LLVM form
and ``hpvm llvm prepare|extract`` seed 004's directive regions (docs/llvm.md), ``hpvm c
run|show|lower FILE`` compiles and runs HPVM-C programs (docs/hpvm-c.md). Every mistake — in
the command line, in the user's file, or writing an output —
is printed as ``error: <message>`` naming the file (and line), with exit status
The command is a package: ``loading.py`` reads a program FILE, ``output.py`` writes what
the user named, ``graphs.py`` holds ``run``, ``show`` and ``verify``, and each front end's
group has its module (``hbir_cmds.py``, ``c_cmds.py``, ``llvm_cmds.py``, ``svm_cmds.py``)
with its commands and parser; this module builds the parser and turns every mistake into
one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import HPVMError
from . import c_cmds, hbir_cmds, llvm_cmds, svm_cmds
from .c_cmds import split_sources as _c_split
from .graphs import cmd_run, cmd_show, cmd_verify
from .loading import CHECKED_HELP, CLIError, load


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hpvm", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"hpvm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", help="a saved program (.hpvm), HPVM IR in LLVM form (.ll) or a Python file")
        p.add_argument("--root", help="the root node function (Python and .ll files)")

    run = sub.add_parser("run", help="run a program")
    common(run)
    run.add_argument("--target", help="force a back end (interp, cpu, ...)")
    run.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="a root input")
    run.add_argument("--save-dir", help="write the array inputs (after the run) as .npy files here")
    run.add_argument("--timings", action="store_true", help="print load, compile and run times")
    run.add_argument("--checked", action="store_true", help=CHECKED_HELP)
    run.set_defaults(func=cmd_run)

    show = sub.add_parser("show", help="draw the graph hierarchy (DOT, SVG, PNG)")
    common(show)
    show.add_argument("-o", "--output", help="out.svg / out.png / out.pdf / out.dot (default: DOT to stdout)")
    show.add_argument("--engine", choices=("dot", "python"), help="renderer (default: Graphviz if installed)")
    show.add_argument(
        "--fuse-tensors",
        action="store_true",
        help="show the graph after FuseHPVMTensorNodes (docs/tensor.md)",
    )
    show.add_argument(
        "--text",
        action="store_true",
        help="print the program in the text form, with its leaves' bodies (docs/text-format.md)",
    )
    show.add_argument(
        "--lowered",
        metavar="BACKEND",
        help="show the graph as BACKEND's lowering passes leave it (cpu, cuda, ...: docs/architecture.md); "
        "'auto': which back end each node runs on, as the hints select them here (a launch "
        "without target=; nodes whose children use several run on the host)",
    )
    show.add_argument(
        "--kernels",
        action="store_true",
        help="print the OpenCL C the opencl back end generates for the program's leaves (this "
        "compiles them: it runs the program's Python, which the other forms of show never do)",
    )
    show.set_defaults(func=cmd_show)

    verify = sub.add_parser("verify", help="check a program against the HPVM rules")
    common(verify)
    verify.set_defaults(func=cmd_verify)
    hbir_cmds.add_parser(sub)
    llvm_cmds.add_parser(sub)
    c_cmds.add_parser(sub)

    svm_cmds.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    after: list[str] = []  # what follows `--`: the arguments of `hpvm c run`'s program
    if "--" in words:
        k = words.index("--")
        words, after = words[:k], words[k + 1 :]
    ns, extra = parser.parse_known_args(words)
    if getattr(ns, "c_command", None) == "run":  # `hpvm c run a.cc b.cc --target cpu -- ARGS`
        ns.files, args = _c_split(ns.files)
        ns.args = [*args, *extra, *after]
    elif extra or after:
        parser.error(f"unrecognized arguments: {' '.join(extra + (['--', *after] if after else []))}")
    try:
        if getattr(ns, "checked", False):
            from ..backends.cpu import configure

            configure(checked=True)
        return int(ns.func(ns))
    except HPVMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the shell's convention, 128 + SIGINT
        print("interrupted", file=sys.stderr)
        return 130
    except RecursionError:  # a file nested deeper than a parser recurses (TOML, Python, text)
        print("error: the input is nested too deeply to read", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `hpvm show prog.py | head`: the reader left, which is fine
        sys.stdout = None  # type: ignore[assignment]  # no flush of a closed pipe at exit
        return 0
    except OSError as e:  # a file or folder the paths above do not name (a cache, a pipe)
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug of hpvm's: one line, never a dependency's traceback alone
        if os.environ.get("HPVM_DEBUG"):
            raise
        print(
            f"error: internal error in hpvm ({type(e).__name__}: {e}); this is a bug of hpvm's, not "
            "of your program: please report it (HPVM_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 2


__all__ = ["CLIError", "build_parser", "load", "main"]
