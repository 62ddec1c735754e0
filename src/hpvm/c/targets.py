"""Which back end runs an HPVM-C program's graphs.

Why here: an HPVM-C leaf is either LLVM code (``LLVMBody``: the ``cpu`` back end runs it,
``interp`` instance by instance) or a chain of tensor intrinsics (``TensorBody``: the
``tensor`` back end, PyTorch, runs it, and ``interp`` with NumPy). HPVM picks a device per
node by its hint; here the kinds of leaf decide, since only those back ends run them:

- only LLVM leaves: ``cpu`` (GPU and tensor hints fall back to it, with a note);
- only tensor leaves: ``tensor`` when PyTorch is installed, else ``interp`` (with a note);
- both: hpvm's per-hint dispatch (``target=None``) when every tensor leaf is hinted
  ``TENSOR_TARGET``/``CUDNN_TARGET``, every LLVM leaf ``CPU_TARGET`` (or nothing) and PyTorch
  is installed; else ``interp``, which runs both kinds (with a note).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ..ir.bodies import LLVMBody, TensorBody
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction
from .errors import HPVMCError


def leaves(roots: list[InternalFunction]) -> list[LeafFunction]:
    """Every leaf function under ``roots``, once each."""
    found: dict[int, LeafFunction] = {}
    seen: set[int] = set()

    def visit(f: NodeFunction) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, LeafFunction):
            found[id(f)] = f
        elif isinstance(f, InternalFunction):
            for n in f.graph.nodes:
                visit(n.function)

    for r in roots:
        visit(r)
    return list(found.values())


def has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def choose_target(
    path: Path | str, roots: list[InternalFunction], hints: list[tuple[str, str]], target: str | None
) -> str | None:
    """The ``target=`` of every launch: ``target`` checked, or chosen when ``None``."""
    found = leaves(roots)
    tensor = [f for f in found if isinstance(f.body, TensorBody)]
    llvm = [f for f in found if isinstance(f.body, LLVMBody)]
    if target is not None:
        allowed = ["interp"]
        if not tensor:
            allowed.insert(0, "cpu")
        if tensor and not llvm:
            allowed.insert(0, "tensor")
        if target not in allowed:
            kinds = " and ".join(
                k for k, v in (("LLVM functions (cpu, interp)", llvm), ("tensor operations (tensor, interp)", tensor)) if v
            )  # fmt: skip
            raise HPVMCError(
                f"{path}: target {target!r}: this HPVM-C program's leaves are {kinds}; choose "
                f"{' or '.join(repr(a) for a in allowed)} (or None: chosen for you)"
            )
        return target
    if not tensor:
        for name, hint in hints:
            print(
                f"note: {path}: node function {name} is hinted {hint}; the program's leaves are "
                "LLVM code, which runs on cpu here, so it runs on cpu",
                file=sys.stderr,
            )
        return "cpu"
    if not llvm:
        if has_torch():
            return "tensor"
        print(f"note: {path}: PyTorch is not installed: its tensor leaves run on interp", file=sys.stderr)
        return "interp"
    if has_torch() and all(f.hint == "tensor" for f in tensor) and all(f.hint in (None, "cpu") for f in llvm):
        return None
    print(
        f"note: {path}: its graph mixes tensor leaves and LLVM leaves whose hints do not split "
        "them (tensor leaves TENSOR_TARGET, LLVM leaves CPU_TARGET) or PyTorch is missing: it "
        "runs on interp",
        file=sys.stderr,
    )
    return "interp"


__all__ = ["choose_target", "leaves"]
