"""Types of a barrier leaf's locals, from Numba's inference on the leaf with its barriers
stubbed out (``barriers.py``).

The group function keeps a varying local that crosses a barrier in an array slot per
instance, so it needs the local's type before it writes any code; and a mutable object
(an array, a list) that every instance creates cannot cross a barrier at all. Numba's own
type inference on the leaf, with no-op stand-ins for the barrier and the atomics, answers
both without a second type system.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ...errors import CompileError
from ...ir import instance_context as ictx
from ...ir import pyast
from ...ir.leafinfo import leaf_namespace
from ...ir.types import ArrayType, PortType, ScalarType
from ...passes.clone_leaves import BARRIER_MARKER, LeafClone

# ---------------------------------------------------------------------------------------
# Types of locals, from Numba's inference on the leaf with barriers stubbed out

_STUBS: dict[str, Any] = {}


def _typing_stubs() -> dict[str, Any]:
    """No-op barrier and non-atomic stand-ins: only their types matter for inference."""
    if not _STUBS:
        import numba
        import numpy as np

        _STUBS[BARRIER_MARKER] = numba.njit(lambda: None)
        _STUBS["__hpvm_malloc"] = numba.njit(lambda n: np.zeros(n, np.uint8))
        old_value = numba.njit(lambda a, i, v: a[i])
        for op in ("add", "sub", "min", "max", "xchg", "and", "or", "xor"):
            _STUBS[f"__hpvm_atomic_{op}"] = old_value
    return _STUBS


def _numba_type(t: PortType) -> Any:
    import numba
    from numba.core import types

    if isinstance(t, ArrayType):
        return types.Array(numba.from_dtype(t.dtype), t.rank, "A")
    if isinstance(t, ScalarType):
        return numba.from_dtype(t.dtype)
    raise TypeError(f"no Numba type for port type {t}")


def infer_types(clone: LeafClone, param_types: list[PortType], ctx_levels: int) -> dict[str, Any]:
    """Each local's Numba type (the unified type of its SSA versions ``x``, ``x.1``…)."""
    import numba
    from numba.core import types

    leaf = clone.user
    namespace = {**leaf_namespace(leaf), **_typing_stubs()}
    exec(
        pyast.compile_tree(ast.Module(body=[clone.func], type_ignores=[]), leaf.location.file, "exec"),
        namespace,
    )
    argtypes = (*(_numba_type(t) for t in param_types), types.UniTuple(types.int64, ictx.STRIDE * ctx_levels))
    dispatcher = numba.njit(nogil=True)(namespace[clone.symbol])
    try:
        dispatcher.compile(argtypes)
    except Exception as e:  # Numba's typing and lowering errors
        raise CompileError(
            f"leaf '{leaf.name}' ({leaf.location}): Numba cannot compile it for the cpu back end — "
            f"try target='interp'\n{e}"
        ) from e
    found: dict[str, list[Any]] = {}
    for name, t in dispatcher.overloads[argtypes].type_annotation.typemap.items():
        m = re.fullmatch(r"([A-Za-z_]\w*)(?:\.\d+)?", name)
        if m:
            found.setdefault(m.group(1), []).append(types.unliteral(t))
    context = dispatcher.typingctx
    unified = {}
    for name, ts in found.items():
        u = context.unify_types(*ts) if len(ts) > 1 else ts[0]
        unified[name] = u if u is not None else ts[0]
    return unified


def is_scalar(t: Any) -> bool:
    from numba.core import types

    return isinstance(t, (types.Number, types.Boolean))


def is_mutable(t: Any) -> bool:
    """Whether a value of type ``t`` has an identity instances could tell apart (arrays, lists)."""
    from numba.core import types

    if isinstance(t, types.BaseTuple):
        return any(is_mutable(e) for e in t.types)
    return isinstance(t, (types.ArrayCompatible, types.List, types.Set, types.DictType, types.ListType))
