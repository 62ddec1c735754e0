"""Reading the FILE of ``hpvm run|show|verify`` (and of ``llvm export|prepare``, ``svm
map``): a saved program, HPVM IR in LLVM form, or a Python file whose root is found.

Why a module of its own: every subcommand that takes a program reads it the same way, and
says the same things about a file it cannot read (missing, a folder, another
subcommand's kind, a Python file that raises while it is imported).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from ..errors import HPVMError
from ..ir.graph import InternalFunction, functions

#: ``--checked`` of the run commands (``main`` turns it on before the command runs).
CHECKED_HELP = (
    "compile cpu leaves with every array index checked: an index out of bounds raises "
    'OutOfBoundsError instead of reading other memory (slower; docs/backends/cpu.md, "Checked mode")'
)


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
        raise CLIError(f"{raised_at(e, path)}: importing the file raised {type(e).__name__}: {e}") from None
    finally:
        sys.path.pop(0)
    return module


def raised_at(e: BaseException, path: Path) -> str:
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
        from .. import llvm

        try:
            return llvm.from_hpvm_ir(read_llvm(path), file=str(path), root=root_name), None
        except llvm.LLVMImportError as e:
            raise at_file(path, e) from None
    from ..ir.program_file import load_program

    try:
        loaded = load_program(path)
    except OSError as e:
        raise CLIError(f"{path}: cannot be read: {e.strerror or e}") from None
    return loaded.root, loaded.host


def read_llvm(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise CLIError(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CLIError(
            f"{path}: not LLVM IR text: not UTF-8 ({e.reason} at byte {e.start}); give a .ll file "
            "(clang -S -emit-llvm, llvm-dis of a .bc)"
        ) from None


def at_file(path: Path, e: Exception) -> Exception:
    """``e`` (an import error) naming ``path``, unless it names it already (the upgrade of
    older text says ``path:line``)."""
    return e if str(e).startswith(f"{path}:") else type(e)(f"{path}: {e}")


#: Files a subcommand other than the one given reads, by suffix (``hpvm run x.hbir``).
_OTHER_READERS = {
    ".hbir": "an HBIR program: use hpvm hbir run|check|show|lower",
    ".c": "an HPVM-C program: use hpvm c run|show|lower",
    ".cc": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".cpp": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".cxx": "an HPVM-C program (C++): use hpvm c run|show|lower",
    ".toml": "a machine description: use hpvm svm machine, or hpvm svm map PROGRAM --machine FILE",
}
