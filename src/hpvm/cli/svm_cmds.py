"""``hpvm svm machine|show|map``: the Streaming Virtual Machine (docs/svm.md).

Why a module of its own: one module per subcommand group, its commands and its parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import HPVMError
from .loading import CLIError, load, raised_at
from .output import picture, writing


def cmd_svm_machine(ns: argparse.Namespace) -> int:
    from .. import svm
    from ..svm.describe import describe

    if ns.output:
        picture(ns.output)
    machine = svm.this_computer() if ns.machine == "this" else svm.load_machine(ns.machine)
    print(describe(machine))
    if ns.output:
        with writing(Path(ns.output)):
            print(f"picture: {svm.draw_machine(machine, ns.output)}")
    return 0


def cmd_svm_show(ns: argparse.Namespace) -> int:
    import runpy

    from .. import svm

    path = Path(ns.file)
    if not path.is_file():
        raise CLIError(f"{ns.file}: no such file (give an SVM program, e.g. examples/svm/pipeline.py)")
    picture(ns.output)
    try:  # compiled first: a file that is not Python is the user's mistake, said as such
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:  # (bad UTF-8 too)
        raise CLIError(
            f"{path}:{exc.lineno or 1}: not a Python program ({exc.msg}); hpvm svm show runs an SVM "
            "program written in Python (examples/svm/)"
        ) from None
    except ValueError as exc:  # a null byte
        raise CLIError(f"{path}: not a Python program ({exc}); hpvm svm show runs a Python file") from None
    status = 0
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:  # the program's own exit: draw what it did, then pass its status on
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except HPVMError:
        raise
    except Exception as exc:  # the user's program raised: say where, draw nothing
        raise CLIError(
            f"{raised_at(exc, path)}: the SVM program raised {type(exc).__name__}: {exc}"
        ) from None
    finally:
        svm.cleanup()
    with writing(Path(ns.output)):
        print(f"picture: {svm.draw_program(ns.output)}")
    return status


def cmd_svm_map(ns: argparse.Namespace) -> int:
    from ..runtime.svm_target import machine_from_environment, plan

    root, _ = load(ns.file, ns.root)
    if ns.machine is None:
        machine = machine_from_environment()
    else:
        from .. import svm

        machine = svm.this_computer() if ns.machine == "this" else svm.load_machine(ns.machine)
    _, mapping = plan(root, machine, ns.capacity)
    print(f"graph '{root.name}' ({root.location})")
    print(mapping.describe())
    if ns.output:
        from ..svm.mapping_picture import draw_mapping

        with writing(picture(ns.output)):
            print(f"picture: {draw_mapping(mapping, ns.output)}")
    return 0


def add_parser(sub: Any) -> None:
    svm_cmd = sub.add_parser("svm", help="the Streaming Virtual Machine (docs/svm.md)")
    svm_sub = svm_cmd.add_subparsers(dest="svm_command", required=True)
    machine = svm_sub.add_parser("machine", help="check a machine metadata file and print what it declares")
    machine.add_argument("machine", help="a TOML file, a shipped machine's name (pca_tiled), or 'this'")
    machine.add_argument("-o", "--output", help="also draw it: out.png / out.svg / out.pdf")
    machine.set_defaults(func=cmd_svm_machine)
    show_svm = svm_sub.add_parser("show", help="run an SVM program and draw its kernels, streams and blocks")
    show_svm.add_argument("file", help="a Python program using hpvm.svm (it is run as __main__)")
    show_svm.add_argument("-o", "--output", default="svm_program.png", help="out.png / out.svg / out.pdf")
    show_svm.set_defaults(func=cmd_svm_show)
    map_svm = svm_sub.add_parser(
        "map", help="print (and draw) how a streaming graph's stages and edges map onto a machine"
    )
    map_svm.add_argument("file", help="a Python file defining a streaming graph (as for hpvm run)")
    map_svm.add_argument("--root", help="the root node function, when the file has several")
    map_svm.add_argument(
        "--machine",
        help="a TOML file, a shipped machine's name (pca_tiled) or 'this' (default: $HPVM_SVM_MACHINE, else this computer)",
    )
    map_svm.add_argument(
        "--capacity", type=int, default=16, help="elements per stream, as launch(capacity=...) (default 16)"
    )
    map_svm.add_argument("-o", "--output", help="also draw it: out.png / out.svg / out.pdf")
    map_svm.set_defaults(func=cmd_svm_map)
