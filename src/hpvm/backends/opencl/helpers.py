"""OpenCL C helper functions that give translated leaves Python's (Numba's) semantics.

C's ``/`` and ``%`` truncate toward zero; Python floors. C has no integer power, no Python
``min``/``max`` (which keep the first argument on ties and NaNs) and no float atomics. Each
helper is generated only when a leaf needs it, per C type (and address space for atomics),
and emitted once per program.

Division never raises (docs/semantics.md §7): integer ``//`` and ``%`` by zero give 0, and
float ``//`` by zero gives ``a / b`` (``inf``, ``-inf`` or ``nan``), NumPy's results, which
the other back ends give too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Extensions a helper needs, by helper kind (int64 atomics and double precision).
INT64_BASE = "cl_khr_int64_base_atomics"
INT64_EXTENDED = "cl_khr_int64_extended_atomics"
FP64 = "cl_khr_fp64"

_WRAP = """inline long hpvm_wrap(long i, long n) { return i < 0 ? i + n : i; }"""

_SIGNED_DIVMOD = """inline {t} hpvm_floordiv_{t}({t} a, {t} b) {{
    if (b == 0) return 0;
    if (b == -1) return -a;
    {t} q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}}
inline {t} hpvm_mod_{t}({t} a, {t} b) {{
    if (b == 0 || b == -1) return 0;
    {t} r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}}"""

_UNSIGNED_DIVMOD = """inline {t} hpvm_floordiv_{t}({t} a, {t} b) {{ return b == 0 ? 0 : a / b; }}
inline {t} hpvm_mod_{t}({t} a, {t} b) {{ return b == 0 ? 0 : a % b; }}"""

# CPython's float_divmod (which Numba copies): the remainder takes the divisor's sign and
# the quotient is floor((a - mod) / b), corrected for rounding.
_FLOAT_DIVMOD = """inline {t} hpvm_mod_{t}({t} a, {t} b) {{
    {t} m = fmod(a, b);
    if (m != 0) {{
        if ((b < 0) != (m < 0)) m += b;
    }} else {{
        m = copysign(({t})0, b);
    }}
    return m;
}}
inline {t} hpvm_floordiv_{t}({t} a, {t} b) {{
    if (b == 0) return a / b;
    {t} m = fmod(a, b);
    {t} d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    if (d != 0) {{
        {t} f = floor(d);
        if (d - f > ({t})0.5) f += 1;
        return f;
    }}
    return copysign(({t})0, a / b);
}}"""

# Numba's integer power: repeated squaring; a negative exponent gives 0 except for bases 1
# and -1 (Numba does not raise either).
_IPOW = """inline {t} hpvm_ipow_{t}({t} a, {t} b) {{
    if (b < 0) {{
        if (a == 1) return 1;
        if (a == ({t})-1) return (b & 1) ? ({t})-1 : 1;
        return 0;
    }}
    {t} r = 1;
    while (b != 0) {{
        if (b & 1) r *= a;
        a *= a;
        b >>= 1;
    }}
    return r;
}}"""

_UPOW = """inline {t} hpvm_ipow_{t}({t} a, {t} b) {{
    {t} r = 1;
    while (b != 0) {{
        if (b & 1) r *= a;
        a *= a;
        b >>= 1;
    }}
    return r;
}}"""

# Python's min/max: the first argument unless the second compares strictly smaller/larger.
_MINMAX = """inline {t} hpvm_min_{t}({t} a, {t} b) {{ return b < a ? b : a; }}
inline {t} hpvm_max_{t}({t} a, {t} b) {{ return b > a ? b : a; }}"""

# Float atomics: a compare-and-swap loop on the bit pattern. min/max store only when the
# value compares strictly smaller/larger (as the cpu back end and the interpreter do), so
# a NaN never replaces the element.
_FLOAT_ATOMIC = """inline {t} hpvm_atomic_{op}_{t}_{space}(volatile __{space} {t}* p, {t} v) {{
    {u} old = *(volatile __{space} {u}*)p;
    for (;;) {{
        {t} o = {as_t}(old);
        {compute}
        {u} seen = {cas}((volatile __{space} {u}*)p, old, {as_u}(n));
        if (seen == old) return o;
        old = seen;
    }}
}}"""
_FLOAT_COMPUTE = {
    "add": "{t} n = o + v;",
    "sub": "{t} n = o - v;",
    "min": "if (!(v < o)) return o;\n        {t} n = v;",
    "max": "if (!(v > o)) return o;\n        {t} n = v;",
}

# Integer atomics: OpenCL 1.1's atomic_<op> on 32-bit integers, the cl_khr_int64_* atom_<op>
# on 64-bit ones. Subtraction is an addition of the negated value for both.
_INT_ATOMIC = """inline {t} hpvm_atomic_{op}_{t}_{space}(volatile __{space} {t}* p, {t} v) {{
    return {fn}(p, v);
}}"""


@dataclass
class Helpers:
    """The helpers a program needs, in first-use order, and the extensions they need."""

    keys: list[tuple[str, ...]] = field(default_factory=list)
    extensions: set[str] = field(default_factory=set)

    def need(self, *key: str) -> None:
        if key not in self.keys:
            self.keys.append(key)

    def merge(self, other: Helpers) -> None:
        for key in other.keys:
            self.need(*key)
        self.extensions |= other.extensions

    def wrap(self) -> str:
        self.need("wrap")
        return "hpvm_wrap"

    def divmod(self, op: str, ctype: str) -> str:
        self.need("divmod", ctype)
        return f"hpvm_{op}_{ctype}"

    def ipow(self, ctype: str) -> str:
        self.need("ipow", ctype)
        return f"hpvm_ipow_{ctype}"

    def minmax(self, op: str, ctype: str) -> str:
        self.need("minmax", ctype)
        return f"hpvm_{op}_{ctype}"

    def atomic(self, op: str, ctype: str, space: str) -> str:
        """The helper for ``atomic_<op>`` on an element of C type ``ctype`` in ``space``."""
        self.need("atomic", op, ctype, space)
        if ctype in ("long", "ulong", "double"):
            self.extensions.add(INT64_BASE)
            if ctype != "double" and op in ("min", "max", "and", "or", "xor"):
                self.extensions.add(INT64_EXTENDED)
        return f"hpvm_atomic_{op}_{ctype}_{space}"

    def render(self) -> str:
        return "\n".join(_render(key) for key in self.keys)


def _render(key: tuple[str, ...]) -> str:
    kind = key[0]
    if kind == "wrap":
        return _WRAP
    if kind == "divmod":
        t = key[1]
        if t in ("float", "double"):
            return _FLOAT_DIVMOD.format(t=t)
        return (_UNSIGNED_DIVMOD if t.startswith("u") else _SIGNED_DIVMOD).format(t=t)
    if kind == "ipow":
        t = key[1]
        return (_UPOW if t.startswith("u") else _IPOW).format(t=t)
    if kind == "minmax":
        return _MINMAX.format(t=key[1])
    if kind == "atomic":
        op, t, space = key[1:]
        if t in ("float", "double"):
            wide = t == "double"
            return _FLOAT_ATOMIC.format(
                t=t,
                op=op,
                space=space,
                u="ulong" if wide else "uint",
                as_t="as_double" if wide else "as_float",
                as_u="as_ulong" if wide else "as_uint",
                cas="atom_cmpxchg" if wide else "atomic_cmpxchg",
                compute=_FLOAT_COMPUTE[op].format(t=t),
            )
        prefix = "atom" if t in ("long", "ulong") else "atomic"
        return _INT_ATOMIC.format(t=t, op=op, space=space, fn=f"{prefix}_{op}")
    raise ValueError(f"unknown helper {key}")
