"""GenHPVM's part for tensor leaves: HPVM-C's ``__hpvm__tensor_*`` calls become the
``llvm.hpvm.tensor.*`` intrinsics that ``hpvm.llvm`` imports as a ``TensorBody``.

Why a table of its own: HPVM-C's prototypes (hpvm.h) and hpvm's tensor operations
(``ir/tensorops``) do not take the same operands. Most match one to one (convolution,
pooling, add, mul, activations, batchnorm); two differ and are mapped here, each documented
in docs/hpvm-c.md (the operands' shapes are ``tensorports.py``'s business):

- ``__hpvm__tensor_clipped_relu(x)`` has no bounds in HPVM-C: HPVM clips to [0, 6], so the
  intrinsic gets ``double 0.0, double 6.0``;
- ``__hpvm__tensor_group_convolution(x, w, ph, pw, sh, sw, conv_mode, groups)`` carries a
  convolution mode: only 1 (cross-correlation, what every HPVM benchmark passes and what
  hpvm's convolution computes) is accepted, and it is dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from ..llvm import tensorleaf
from ..llvm.tensorleaf import operand_types
from .errors import HPVMCError
from .module import Call

C_PREFIX = "__hpvm__tensor_"

#: HPVM-C name (after the prefix) → (hpvm operation, number of C arguments).
CALLS: dict[str, tuple[str, int]] = {
    "convolution": ("convolution", 6),
    "group_convolution": ("group_convolution", 8),
    "batchnorm": ("batchnorm", 6),
    "add": ("add", 2),
    "mul": ("mul", 2),
    "relu": ("relu", 1),
    "clipped_relu": ("clipped_relu", 1),
    "tanh": ("tanh", 1),
    "sigmoid": ("sigmoid", 1),
    "softmax": ("softmax", 1),
    "pool_max": ("pool_max", 7),
    "pool_min": ("pool_min", 7),
    "pool_mean": ("pool_mean", 7),
}
_ZERO, _SIX = "0x0000000000000000", "0x4018000000000000"  # 0.0 and 6.0 as LLVM doubles


def rewrite_call(call: Call, fail: Callable[[str], HPVMCError]) -> list[str]:
    """The lines replacing ``call`` (a ``__hpvm__tensor_*`` call); ``fail(message)`` makes
    the located error for a misuse."""
    short = call.callee[len(C_PREFIX) :]
    if short not in CALLS:
        raise fail(
            f"{call.callee} is not a tensor intrinsic hpvm builds; HPVM-C's are "
            f"{', '.join(C_PREFIX + n for n in CALLS)}"
        )
    op, count = CALLS[short]
    args = list(call.args)
    if len(args) != count:
        raise fail(f"{call.callee} takes {count} arguments, {len(args)} given")
    if short == "group_convolution":
        mode = args[6].const()
        if mode != 1:
            raise fail(
                f"{call.callee}: conv_mode {mode if mode is not None else '(not a constant)'}; hpvm "
                "computes cross-correlation, conv_mode 1, as HPVM's benchmarks pass"
            )
        args = [*args[:6], args[7]]
    lines: list[str] = []
    operands: list[str] = []
    for k, (want, a) in enumerate(zip(operand_types(op), args)):
        if a.type != want:
            raise fail(
                f"{call.callee}: argument {k + 1} is a {a.type}, where HPVM-C takes a "
                f"{'tensor (void *)' if want == 'ptr' else want}"
            )
        operands.append(f"{want} {a.value}")
    if short == "clipped_relu":
        operands += [f"double {_ZERO}", f"double {_SIX}"]
    result = f"{call.result} = " if call.result else ""
    lines.append(
        f"{call.indent}{result}call ptr @{tensorleaf.intrinsic(op)}({', '.join(operands)}){call.dbg()}"
    )
    return lines


def declarations(text: str) -> list[str]:
    """The declarations of the tensor intrinsics ``text`` calls."""
    used = {op for op, _ in CALLS.values() if f"@{tensorleaf.intrinsic(op)}(" in text}
    return [tensorleaf.declaration(op) for op in sorted(used)]


__all__ = ["CALLS", "C_PREFIX", "declarations", "rewrite_call"]
