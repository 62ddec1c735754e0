"""``hpvm hbir check|run|show|lower FILE``: HammerBlade IR programs (docs/hbir.md).

Why a module of its own: one module per subcommand group, its commands and its parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .loading import CHECKED_HELP, CLIError
from .output import count, picture, writing


def _hbir(path: str) -> Any:
    from .. import hbir

    return hbir.load(path)


def cmd_hbir_check(ns: argparse.Namespace) -> int:
    model = _hbir(ns.file).check()
    groups = [g for g in model.groups.values() if g.tile_map is not None]
    print(
        f"{ns.file}: OK — {count(len(groups), 'group')} of tiles, {count(len(model.arrays), 'array')}, "
        f"{count(len(model.blocks), 'code block')}"
    )
    return 0


def cmd_hbir_lower(ns: argparse.Namespace) -> int:
    from ..ir.printer import print_program

    print(print_program(_hbir(ns.file).to_hpvm(), bodies=True), end="")
    return 0


def _hbir_inputs(pairs: Sequence[str]) -> dict[str, np.ndarray]:
    inputs = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise CLIError(f"--in {pair!r}: write NAME=FILE.npy, e.g. --in A=a.npy")
        try:
            inputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CLIError(f"--in {name}={path}: cannot be read as a .npy file: {e}") from None
    return inputs


def cmd_hbir_run(ns: argparse.Namespace) -> int:
    import hpvm

    program = _hbir(ns.file)
    inputs = _hbir_inputs(ns.inputs)
    try:
        outputs = program.run(inputs, target=ns.target)
    finally:
        hpvm.cleanup()
    for name, value in outputs.items():
        print(f"{name}: {value.dtype}{list(value.shape)} = {np.array2string(value, threshold=20)}")
    if ns.save_dir:
        out = Path(ns.save_dir)
        with writing(out):
            out.mkdir(parents=True, exist_ok=True)
            for name, value in outputs.items():
                np.save(out / f"{name}.npy", value)
        print(f"arrays written to {out}/")
    return 0


def cmd_hbir_show(ns: argparse.Namespace) -> int:
    picture(ns.output)
    program = _hbir(ns.file)
    program.check()
    with writing(Path(ns.output)):
        program.draw(ns.output)
    print(f"wrote {ns.output}")
    return 0


def add_parser(sub: Any) -> None:
    hbir = sub.add_parser("hbir", help="HammerBlade IR programs (.hbir): check, run, show, lower")
    cmds = hbir.add_subparsers(dest="hbir_command", required=True)
    check = cmds.add_parser("check", help="parse and check a program; every problem with its line")
    check.add_argument("file", help="an HBIR program (.hbir)")
    check.set_defaults(func=cmd_hbir_check)
    run = cmds.add_parser("run", help="run a program; prints (and saves) the device arrays")
    run.add_argument("file", help="an HBIR program (.hbir)")
    run.add_argument(
        "--in", dest="inputs", action="append", default=[], metavar="NAME=FILE.npy", help="a host array"
    )
    run.add_argument("--target", help="force a back end (interp, cpu, cuda, opencl)")
    run.add_argument("--checked", action="store_true", help=CHECKED_HELP)
    run.add_argument("--save-dir", help="write the device arrays as NAME.npy here")
    run.set_defaults(func=cmd_hbir_run)
    show = cmds.add_parser("show", help="draw the tile map: groups, and where each array's parts live")
    show.add_argument("file", help="an HBIR program (.hbir)")
    show.add_argument("-o", "--output", required=True, help="map.svg / map.png / map.pdf")
    show.set_defaults(func=cmd_hbir_show)
    lower = cmds.add_parser(
        "lower", help="print the lowered program in hpvm's text form, with its leaves' code"
    )
    lower.add_argument("file", help="an HBIR program (.hbir)")
    lower.set_defaults(func=cmd_hbir_lower)
