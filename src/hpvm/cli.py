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
is printed as ``error: <message>`` naming the file (and line), with exit status 1.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
from .errors import HPVMError, LaunchError, VerificationError
from .ir.graph import InternalFunction, functions
from .ir.types import ArrayType, ScalarType


class CLIError(HPVMError):
    """A bad command line (file not found, unknown root, malformed --arg)."""


def _import_module(path: Path) -> Any:
    """Run the user's file as a module; its mistakes (a syntax error, an exception while it
    runs) are ``CLIError``s naming the file and line, not tracebacks."""
    spec = importlib.util.spec_from_file_location(f"hpvm_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CLIError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)  # runs the module body, as importing it would
    except HPVMError:
        raise  # already names the node function, file and line
    except SyntaxError as e:
        where = f"{e.filename or path}:{e.lineno or 0}" + (f":{e.offset}" if e.offset else "")
        raise CLIError(f"{where}: invalid Python: {e.msg}") from None
    except Exception as e:
        raise CLIError(f"{_raised_at(e, path)}: importing the file raised {type(e).__name__}: {e}") from None
    finally:
        sys.path.pop(0)
    return module


def _raised_at(e: BaseException, path: Path) -> str:
    """``file:line`` of the user's line an exception came through: the last frame in
    ``path`` (the module's own line), or ``path`` alone when none is (an error compiling it)."""
    frames = traceback.extract_tb(e.__traceback__)
    target = path.resolve()
    mine = [f for f in frames if Path(f.filename).resolve() == target]
    if not mine:
        return str(path)
    where = f"{path}:{mine[-1].lineno}"
    deepest = frames[-1]
    if deepest is not mine[-1]:
        where += f" (raised in {deepest.filename}:{deepest.lineno})"
    return where


def _candidates(module: Any) -> dict[str, InternalFunction]:
    """The module's top-level roots by name: internal node functions, and the ``.root`` of
    program objects (an imported model's ``TensorProgram``, ...)."""
    found: dict[str, InternalFunction] = {}
    for name, value in vars(module).items():
        if isinstance(value, InternalFunction):
            found[name] = value
        elif not isinstance(value, type) and isinstance(getattr(value, "root", None), InternalFunction):
            found[name] = value.root
    return found


def _load_python(path: Path, root_name: str | None) -> InternalFunction:
    module = _import_module(path)
    internals = _candidates(module)
    if root_name is not None:
        if root_name not in internals:
            raise CLIError(
                f"{path}: no internal node function named '{root_name}', nor a program object with "
                f"a .root, at its top level (found: {', '.join(internals) or 'none'})"
            )
        return internals[root_name]
    used = {id(fn) for v in internals.values() for fn in functions(v) if fn is not v}
    roots = {name: v for name, v in internals.items() if id(v) not in used}
    if not roots:
        raise CLIError(
            f"{path}: no root graph at its top level — no @hpvm.internal function, and no program "
            "object with a .root (such as program = hpvm.tensor.from_torch(model, x)); a graph "
            "made inside a function only exists once it runs. Assign the root or the program to "
            "a module-level name, or save it (hpvm.ir.program_file.save_program(root, "
            "'prog.hpvm'); an imported model: program.save('prog.hpvm')) and give that file"
        )
    if len({id(v) for v in roots.values()}) > 1:
        raise CLIError(
            f"{path}: several candidate root graphs ({', '.join(roots)}); name one with --root NAME"
        )
    return next(iter(roots.values()))


def load(path_text: str, root_name: str | None = None) -> tuple[InternalFunction, Any]:
    """The root node function of FILE, and the saved host function if there is one."""
    path = Path(path_text)
    if not path.exists():
        raise CLIError(f"{path}: no such file")
    if path.is_dir():
        raise CLIError(f"{path}: is a directory; give a saved program (.hpvm) or a Python file")
    if path.suffix in _OTHER_READERS:
        raise CLIError(f"{path}: {_OTHER_READERS[path.suffix]}")
    if path.suffix == ".py":
        return _load_python(path, root_name), None
    if path.suffix == ".ll":  # HPVM IR in LLVM form: its leaves run as LLVM (docs/llvm.md)
        from . import llvm

        try:
            return llvm.from_hpvm_ir(_read_llvm(path), file=str(path), root=root_name), None
        except llvm.LLVMImportError as e:
            raise _at_file(path, e) from None
    from .ir.program_file import load_program

    try:
        loaded = load_program(path)
    except OSError as e:
        raise CLIError(f"{path}: cannot be read: {e.strerror or e}") from None
    return loaded.root, loaded.host


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
                    f"{_raised_at(e, Path(ns.file))}: the program's host function raised "
                    f"{type(e).__name__}: {e}"
                ) from None
        else:
            from .runtime.launch import check_root, choose_backend

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
                with _writing(out):
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
        from .backends.opencl.show import kernels_text

        text, errors = kernels_text(root)
        print(text, end="")
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        return 1 if errors else 0
    if ns.fuse_tensors:
        from .tensor import fuse

        root = fuse(root)
    if ns.lowered == "auto":  # where each part runs, as a launch without target= splits it
        from .backends.mixed import split_by_target

        root = split_by_target(root)
    elif ns.lowered is not None:
        from .backends import get_backend
        from .passes import lower

        root = lower(root, get_backend(ns.lowered).lowering)
    if ns.text:
        from .ir.printer import print_program

        print(print_program(root, bodies=_has_body), end="")
        return 0
    return _draw_graph(root, ns.output, ns.engine)


def _has_body(fn: Any) -> bool:
    """Whether ``hpvm show --text`` can print a leaf's body: every kind but a Python leaf
    whose code the file did not carry (text printed without ``--bodies``)."""
    from .ir.bodies import PythonBody
    from .ir.pysource import leaf_module_source

    if not isinstance(fn.body, PythonBody):
        return True
    try:
        leaf_module_source(fn)
    except VerificationError:
        return False
    return True


def _draw_graph(root: Any, output: str | None, engine: str) -> int:
    """Graphviz text on stdout (no output) or in a ``.dot`` file, else a picture."""
    from .viz import render, to_dot

    if output is None or output.endswith(".dot"):
        text = to_dot(root)
        if output is None:
            print(text)
        else:
            with _writing(Path(output)):
                Path(output).write_text(text, encoding="utf-8")
            print(f"wrote {output}")
        return 0
    with _writing(Path(output)):
        render(root, output, engine=engine)
    print(f"wrote {output}")
    return 0


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Writing an output the user named: a missing folder, a read-only file or a full disk is
    an error naming the path (the libraries that write it would raise their own)."""
    try:
        yield
    except OSError as e:
        folder = path.parent
        why = f"the folder {folder} does not exist" if not folder.exists() else (e.strerror or str(e))
        raise CLIError(f"{path}: cannot be written: {why}") from None


def cmd_verify(ns: argparse.Namespace) -> int:
    from .ir.verify import verify

    root, _ = load(ns.file, ns.root)
    verify(root)
    fns = list(functions(root))
    nodes = sum(len(f.graph.nodes) for f in fns if isinstance(f, InternalFunction))
    print(f"{ns.file}: OK — root '{root.name}', {_count(len(fns), 'node function')}, {_count(nodes, 'node')}")
    return 0


# ---------------------------------------------------------------------------------------
# hpvm hbir check|run|show|lower FILE (docs/hbir.md)


def _hbir(path: str) -> Any:
    from . import hbir

    return hbir.load(path)


def cmd_hbir_check(ns: argparse.Namespace) -> int:
    model = _hbir(ns.file).check()
    groups = [g for g in model.groups.values() if g.tile_map is not None]
    print(
        f"{ns.file}: OK — {_count(len(groups), 'group')} of tiles, {_count(len(model.arrays), 'array')}, "
        f"{_count(len(model.blocks), 'code block')}"
    )
    return 0


def cmd_hbir_lower(ns: argparse.Namespace) -> int:
    from .ir.printer import print_program

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
        with _writing(out):
            out.mkdir(parents=True, exist_ok=True)
            for name, value in outputs.items():
                np.save(out / f"{name}.npy", value)
        print(f"arrays written to {out}/")
    return 0


def cmd_hbir_show(ns: argparse.Namespace) -> int:
    _picture(ns.output)
    program = _hbir(ns.file)
    program.check()
    with _writing(Path(ns.output)):
        program.draw(ns.output)
    print(f"wrote {ns.output}")
    return 0


def _hbir_parser(sub: Any) -> None:
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


# ---------------------------------------------------------------------------------------
# hpvm c run|show|lower FILE... (docs/hpvm-c.md)


def _c_program(ns: argparse.Namespace) -> Any:
    from . import c

    return c.compile(ns.files, defines=ns.define, include_dirs=ns.include)


def _c_split(words: list[str]) -> tuple[list[str], list[str]]:
    """``hpvm c run``'s positionals: the program's source files (the first word, and those
    after it named like sources), then its arguments (from the first other word on)."""
    from .c.clang import C_SUFFIXES, CXX_SUFFIXES, LL_SUFFIXES

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
    from .ir.printer import print_program

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
    return _draw_graph(root, ns.output, ns.engine)


def _c_parser(sub: Any) -> None:
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


# ---------------------------------------------------------------------------------------
# hpvm llvm export|import|prepare|opt|extract (docs/llvm.md)


def cmd_llvm_export(ns: argparse.Namespace) -> int:
    from . import llvm

    root, _ = load(ns.file, ns.root)
    if _emit_llvm(llvm.to_hpvm_ir(root), ns.output):
        print(f"{ns.file}: wrote {ns.output} (root '{root.name}')")
    return 0


def _emit_llvm(text: str, output: str | None) -> bool:
    """Print ``text``, or write it to ``output`` (True then)."""
    if output is None:
        print(text, end="")
        return False
    try:
        Path(output).write_text(text)
    except OSError as e:
        raise CLIError(f"{output}: cannot write the LLVM IR: {e.strerror or e}") from None
    return True


def _at_file(path: Path, e: Exception) -> Exception:
    """``e`` (an import error) naming ``path``, unless it names it already (the upgrade of
    older text says ``path:line``)."""
    return e if str(e).startswith(f"{path}:") else type(e)(f"{path}: {e}")


def _read_llvm(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise CLIError(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CLIError(
            f"{path}: not LLVM IR text: not UTF-8 ({e.reason} at byte {e.start}); give a .ll file "
            "(clang -S -emit-llvm, llvm-dis of a .bc)"
        ) from None


#: Files a subcommand other than the one given reads, by suffix (``hpvm run x.hbir``).
_OTHER_READERS = {
    ".hbir": "an HBIR program: use hpvm hbir run|check|show|lower",
    ".c": "an HPVM-C program: use hpvm c run|show|lower",
    ".cc": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".cpp": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".cxx": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".toml": "a machine description: use hpvm svm machine, or hpvm svm map PROGRAM --machine FILE",
}


def _picture(output: str) -> Path:
    """The path of a picture to write: its suffix must name a format the drawing writes."""
    path = Path(output)
    if path.suffix.lower() not in (".svg", ".png", ".pdf"):
        raise CLIError(f"{output}: cannot draw a picture in that format; name a .svg, .png or .pdf file")
    return path


def cmd_llvm_prepare(ns: argparse.Namespace) -> int:
    from . import llvm

    root, _ = load(ns.file, ns.root)
    if _emit_llvm(llvm.prepare(root), ns.output):
        print(f"{ns.file}: wrote {ns.output} (root '{root.name}', directive regions)")
    return 0


def cmd_llvm_extract(ns: argparse.Namespace) -> int:
    from . import llvm
    from .ir.printer import print_program

    path = Path(ns.file)
    try:
        root = llvm.extract(_read_llvm(path))
    except llvm.LLVMImportError as e:
        raise type(e)(f"{path}: {e}") from None
    print(print_program(root, bodies=ns.bodies), end="")
    return 0


def cmd_llvm_import(ns: argparse.Namespace) -> int:
    from . import llvm
    from .ir.printer import print_program

    path = Path(ns.file)
    text = _read_llvm(path)
    try:
        root = llvm.from_hpvm_ir(text, file=str(path), root=ns.root)
    except llvm.LLVMImportError as e:
        raise _at_file(path, e) from None
    print(print_program(root, bodies=ns.bodies), end="")
    return 0


def cmd_llvm_opt(ns: argparse.Namespace) -> int:
    from . import llvm

    path = Path(ns.file)
    try:
        text = llvm.optimize(_read_llvm(path), ns.level)
    except llvm.LLVMImportError as e:
        raise llvm.LLVMImportError(f"{path}: {e}") from None
    if _emit_llvm(text, ns.output):
        print(f"{ns.file}: wrote {ns.output} (-O{ns.level})")
    return 0


def _llvm_parser(sub: Any) -> None:
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


# ---------------------------------------------------------------------------------------
# hpvm svm machine|show|map (docs/svm.md)


def cmd_svm_machine(ns: argparse.Namespace) -> int:
    from . import svm
    from .svm.describe import describe

    if ns.output:
        _picture(ns.output)
    machine = svm.this_computer() if ns.machine == "this" else svm.load_machine(ns.machine)
    print(describe(machine))
    if ns.output:
        with _writing(Path(ns.output)):
            print(f"picture: {svm.draw_machine(machine, ns.output)}")
    return 0


def cmd_svm_show(ns: argparse.Namespace) -> int:
    import runpy

    from . import svm

    path = Path(ns.file)
    if not path.is_file():
        raise CLIError(f"{ns.file}: no such file (give an SVM program, e.g. examples/svm/pipeline.py)")
    _picture(ns.output)
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
            f"{_raised_at(exc, path)}: the SVM program raised {type(exc).__name__}: {exc}"
        ) from None
    finally:
        svm.cleanup()
    with _writing(Path(ns.output)):
        print(f"picture: {svm.draw_program(ns.output)}")
    return status


def cmd_svm_map(ns: argparse.Namespace) -> int:
    from .runtime.svm_target import machine_from_environment, plan

    root, _ = load(ns.file, ns.root)
    if ns.machine is None:
        machine = machine_from_environment()
    else:
        from . import svm

        machine = svm.this_computer() if ns.machine == "this" else svm.load_machine(ns.machine)
    _, mapping = plan(root, machine, ns.capacity)
    print(f"graph '{root.name}' ({root.location})")
    print(mapping.describe())
    if ns.output:
        from .svm.mapping_picture import draw_mapping

        with _writing(_picture(ns.output)):
            print(f"picture: {draw_mapping(mapping, ns.output)}")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
    _hbir_parser(sub)
    _llvm_parser(sub)
    _c_parser(sub)

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


if __name__ == "__main__":
    sys.exit(main())
