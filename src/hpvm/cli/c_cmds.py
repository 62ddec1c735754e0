"""``hpvm c run|show|lower FILE...``: HPVM-C programs (docs/hpvm-c.md).

Why a module of its own: one module per subcommand group, its commands and its parser;
``split_sources`` is how ``main`` tells ``hpvm c run``'s sources from its program's
arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .loading import CHECKED_HELP, CLIError
from .output import draw_graph


def _c_program(ns: argparse.Namespace) -> Any:
    from .. import c

    return c.compile(ns.files, defines=ns.define, include_dirs=ns.include)


def split_sources(words: list[str]) -> tuple[list[str], list[str]]:
    """``hpvm c run``'s positionals: the program's source files (the first word, and those
    after it named like sources), then its arguments (from the first other word on)."""
    from ..c.clang import C_SUFFIXES, CXX_SUFFIXES, LL_SUFFIXES

    suffixes = C_SUFFIXES | CXX_SUFFIXES | LL_SUFFIXES
    k = 1
    while k < len(words) and Path(words[k]).suffix in suffixes:
        k += 1
    return words[:k], words[k:]


def cmd_c_run(ns: argparse.Namespace) -> int:
    import hpvm

    program = _c_program(ns)
    try:
        return program.run(list(ns.args), target=ns.target)
    finally:
        hpvm.cleanup()


def cmd_c_lower(ns: argparse.Namespace) -> int:
    from ..ir.printer import print_program

    program = _c_program(ns)
    for root in program.roots:
        print(print_program(root, bodies=ns.bodies), end="")
    return 0


def cmd_c_show(ns: argparse.Namespace) -> int:

    program = _c_program(ns)
    roots = program.roots
    if ns.root is not None:
        roots = [r for r in roots if r.name == ns.root]
        if not roots:
            names = ", ".join(r.name for r in program.roots)
            raise CLIError(f"{', '.join(ns.files)}: no root named {ns.root!r}; its roots are {names}")
    root = roots[0]
    return draw_graph(root, ns.output, ns.engine)


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser("c", help="HPVM-C programs (.c, .cpp): run, show, lower")
    cmds = cmd.add_subparsers(dest="c_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "files",
            nargs="+",
            metavar="FILE",
            help="the program's sources (.c; .cc/.cpp/.cxx for C++; .ll: clang's output, LLVM 9 text included)",
        )
        p.add_argument(
            "-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]", help="a macro"
        )
        p.add_argument(
            "-I", dest="include", action="append", default=[], metavar="DIR", help="a header folder"
        )

    run = cmds.add_parser(
        "run",
        help="compile and run the program's main; its exit code is the command's",
        usage="hpvm c run FILE... [-I DIR] [-D NAME[=V]] [--target T] [-- ARGS...]",
        description="Arguments for main follow --, or the source files (the first word not named like a source).",
    )
    common(run)
    run.add_argument(
        "--target",
        help="the back end of its graphs (default: cpu for LLVM leaves, tensor for tensor leaves; interp runs both)",
    )
    run.add_argument("--checked", action="store_true", help=CHECKED_HELP)
    run.set_defaults(func=cmd_c_run)
    show = cmds.add_parser("show", help="draw a graph of the program (DOT, SVG, PNG)")
    common(show)
    show.add_argument("--root", help="which root (default: the first one main launches)")
    show.add_argument("-o", "--output", help="out.svg / out.png / out.pdf / out.dot (default: DOT to stdout)")
    show.add_argument("--engine", choices=("dot", "python"), help="renderer (default: Graphviz if installed)")
    show.set_defaults(func=cmd_c_show)
    lower = cmds.add_parser("lower", help="print the program's graphs in hpvm's text form")
    common(lower)
    lower.add_argument("--bodies", action="store_true", help="with the leaves' LLVM code")
    lower.set_defaults(func=cmd_c_lower)
