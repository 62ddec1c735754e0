"""GenHPVM's part for a node function's signature: ``__hpvm__hint`` as the attribute
``"hpvm.hint"``, ``__hpvm__attributes`` as ``"in"`` / ``"out"`` on parameters, the C name
as ``"hpvm.name"``, the return type as the struct of its outputs; node handles renamed.

Why a class of its own: the ``define`` line is the node's contract with the importer (its
ports and outputs), rewritten from what the body's calls said; this is the one place that
writes it.
"""

from __future__ import annotations

import re

from .genplace import Locator
from .module import Call, Function, split_top

#: HPVM's target enumeration (HPVMHint.h) → hpvm's hint. FPGA has no back end here.
TARGETS = {0: None, 1: "cpu", 2: "gpu", 3: "tensor", 4: "tensor", 5: "gpu"}
TARGET_NAMES = {0: "None", 1: "CPU_TARGET", 2: "GPU_TARGET", 3: "CUDNN_TARGET", 4: "TENSOR_TARGET",
                5: "CPU_OR_GPU_TARGET", 6: "FPGA_TARGET"}  # fmt: skip


class SignatureRewriter:
    """Reads a node function's hint and attributes, and writes its new ``define``."""

    def __init__(self, loc: Locator):
        self.loc = loc

    @staticmethod
    def rename(line: str, renames: dict[str, str]) -> str:
        for old, new in renames.items():
            line = re.sub(re.escape(old) + r"(?![-\w.$])", new, line)
        return line

    def hint(self, fn: Function, call: Call) -> str | None:
        value = call.args[0].const() if call.args else None
        if value not in TARGETS:
            raise self.loc.fail(
                call.line, fn,
                f"__hpvm__hint({TARGET_NAMES.get(value, value)}): hpvm runs CPU_TARGET, GPU_TARGET, "  # type: ignore[arg-type]
                "CPU_OR_GPU_TARGET, CUDNN_TARGET and TENSOR_TARGET nodes (FPGA has no back end here)",
            )  # fmt: skip
        return TARGETS[value]  # type: ignore[index]

    def attributes(self, fn: Function, call: Call) -> dict[str, set[str]]:
        args = call.args
        names = {p.value for p in fn.params}
        marks: dict[str, set[str]] = {}
        try:
            n_in = args[0].const()
            ins = args[1 : 1 + n_in]  # type: ignore[operator]
            n_out = args[1 + n_in].const()  # type: ignore[operator]
            outs = args[2 + n_in : 2 + n_in + n_out]  # type: ignore[operator]
            if n_in is None or n_out is None or len(args) != 2 + n_in + n_out:
                raise IndexError
        except (IndexError, TypeError):
            raise self.loc.fail(call.line, fn, "__hpvm__attributes(nIn, in pointers..., nOut, out pointers...): "
                            "the counts do not match the pointers given") from None  # fmt: skip
        for mark, group in (("in", ins), ("out", outs)):
            for a in group:
                if a.value not in names:
                    raise self.loc.fail(
                        call.line, fn,
                        f"__hpvm__attributes names {a.value}, which is not a pointer parameter of "
                        f"{self.loc.c(fn.name)}; list the function's own pointer parameters",
                    )  # fmt: skip
                marks.setdefault(a.value, set()).add(mark)
        return marks

    def define(self, fn: Function, ret_type: str, marks: dict[str, set[str]], hint: str | None,
               renames: dict[str, str]) -> str:  # fmt: skip
        head, rest = fn.define.split(f"@{fn.name}(", 1)
        words = head.split()
        words[-1] = ret_type
        params = []
        for p in fn.params:
            extra = [f'"{m}"' for m in sorted(marks.get(p.value, ()))]
            params.append(" ".join([p.type, *p.attrs, *extra, p.value]))
        _, after = _split_params(rest)
        attrs = []
        if hint:
            attrs.append(f'"hpvm.hint"="{hint}"')
        c_name = self.loc.c(fn.name)
        if c_name != fn.name:
            attrs.append(f'"hpvm.name"="{c_name}"')
        after = after.replace(" #", " " + " ".join(attrs) + " #", 1) if attrs and " #" in after else (
            " " + " ".join(attrs) + after if attrs else after)  # fmt: skip
        return f"{' '.join(words)} @{fn.name}({', '.join(params)}){after}"


def _split_params(rest: str) -> tuple[list[str], str]:
    return split_top(rest)
