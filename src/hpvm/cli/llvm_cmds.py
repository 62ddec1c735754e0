"""``hpvm llvm export|import|opt|prepare|extract``: HPVM IR in LLVM form and seed 004's
directive regions (docs/llvm.md).

Why a module of its own: one module per subcommand group, its commands and its parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .loading import at_file, load, read_llvm
from .output import emit_llvm


def cmd_llvm_export(ns: argparse.Namespace) -> int:
    from .. import llvm

    root, _ = load(ns.file, ns.root)
    if emit_llvm(llvm.to_hpvm_ir(root), ns.output):
        print(f"{ns.file}: wrote {ns.output} (root '{root.name}')")
    return 0


def cmd_llvm_prepare(ns: argparse.Namespace) -> int:
    from .. import llvm

    root, _ = load(ns.file, ns.root)
    if emit_llvm(llvm.prepare(root), ns.output):
        print(f"{ns.file}: wrote {ns.output} (root '{root.name}', directive regions)")
    return 0


def cmd_llvm_extract(ns: argparse.Namespace) -> int:
    from .. import llvm
    from ..ir.printer import print_program

    path = Path(ns.file)
    try:
        root = llvm.extract(read_llvm(path))
    except llvm.LLVMImportError as e:
        raise type(e)(f"{path}: {e}") from None
    print(print_program(root, bodies=ns.bodies), end="")
    return 0


def cmd_llvm_import(ns: argparse.Namespace) -> int:
    from .. import llvm
    from ..ir.printer import print_program

    path = Path(ns.file)
    text = read_llvm(path)
    try:
        root = llvm.from_hpvm_ir(text, file=str(path), root=ns.root)
    except llvm.LLVMImportError as e:
        raise at_file(path, e) from None
    print(print_program(root, bodies=ns.bodies), end="")
    return 0


def cmd_llvm_opt(ns: argparse.Namespace) -> int:
    from .. import llvm

    path = Path(ns.file)
    try:
        text = llvm.optimize(read_llvm(path), ns.level)
    except llvm.LLVMImportError as e:
        raise llvm.LLVMImportError(f"{path}: {e}") from None
    if emit_llvm(text, ns.output):
        print(f"{ns.file}: wrote {ns.output} (-O{ns.level})")
    return 0


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser(
        "llvm",
        help="HPVM IR in LLVM form (.ll): export a program, import one, optimize; LLVMPar prepare/extract",
    )
    cmds = cmd.add_subparsers(dest="llvm_command", required=True)
    export = cmds.add_parser("export", help="write a program as HPVM IR in LLVM form")
    export.add_argument("file", help="a saved program (.hpvm) or a Python file")
    export.add_argument("--root", help="the root node function (Python files only)")
    export.add_argument("-o", "--output", help="the .ll file to write (default: print it)")
    export.set_defaults(func=cmd_llvm_export)
    imp = cmds.add_parser("import", help="read HPVM IR in LLVM form; print the graph in hpvm's text form")
    imp.add_argument("file", help="an LLVM IR file (.ll)")
    imp.add_argument("--bodies", action="store_true", help="print each leaf's LLVM module too")
    imp.add_argument("--root", help="the root node function (a module that launches several graphs)")
    imp.set_defaults(func=cmd_llvm_import)
    opt = cmds.add_parser("opt", help="run LLVM's own optimizer (-O0 to -O3) on LLVM IR")
    opt.add_argument("file", help="an LLVM IR file (.ll)")
    opt.add_argument(
        "-O", dest="level", type=int, choices=(0, 1, 2, 3), default=2, help="the level (default 2)"
    )
    opt.add_argument("-o", "--output", help="the .ll file to write (default: print it)")
    opt.set_defaults(func=cmd_llvm_opt)
    prep = cmds.add_parser("prepare", help="write a program as LLVM IR with directive regions (seed 004)")
    prep.add_argument("file", help="a saved program (.hpvm) or a Python file")
    prep.add_argument("--root", help="the root node function (Python files only)")
    prep.add_argument("-o", "--output", help="the .ll file to write (default: print it)")
    prep.set_defaults(func=cmd_llvm_prepare)
    ext = cmds.add_parser(
        "extract",
        help="read LLVM IR with directive regions (optimized or not); print the graph in hpvm's text form",
    )
    ext.add_argument("file", help="an LLVM IR file (.ll)")
    ext.add_argument("--bodies", action="store_true", help="print each leaf's LLVM module too")
    ext.set_defaults(func=cmd_llvm_extract)
