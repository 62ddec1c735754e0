"""outline.py: parallel loops of generated code become chunk functions called per chunk.

A property test run in plain Python (``prange`` as ``range``, the try-call intrinsic as a
call): the outlined function computes what the loop did, for any loop count and thread
count, so the chunks cover every index exactly once and see the loop's free variables.
And the chunk bounds are cast to ``int64``: Numba's parfor pass types a ``prange`` index
as ``uint64``, and bounds mixed from it would be ``float64`` (a second compile of every
chunk: ``test_cpu_warm_start.py`` sees that from Numba's side).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.backends.cpu.outline import outline


@st.composite
def _loops(draw: st.DrawFn) -> str:
    """A generated-style function: locals set before, one or two parallel loops (one
    possibly under an ``if``) reading them, writing ``out``."""
    pre = draw(st.integers(0, 3))
    lines = ["def f(out, n, k):"]
    lines += [f"    v{j} = k * {draw(st.integers(-3, 3))} + {j}" for j in range(pre)]
    names = ["k", *(f"v{j}" for j in range(pre))]
    for loop in range(draw(st.integers(1, 2))):
        indent = "    "
        if draw(st.booleans()):
            lines.append(f"{indent}if n > {draw(st.integers(-1, 3))}:")
            indent += "    "
        lines.append(f"{indent}for i in prange(n):")
        used = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
        lines.append(f"{indent}    t = i * {loop + 2} + {' + '.join(used)}")
        lines.append(f"{indent}    out[i] += t")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _run(source: str, n: int, k: int, threads: int) -> np.ndarray:
    names = {
        "np": np,
        "prange": range,
        "__hpvm_num_threads": lambda: threads,
        "__hpvm_try_call": lambda func, args, table, row: func(*args),
        "__hpvm_reraise": lambda table: None,
    }
    exec(compile(source, "<generated>", "exec"), names)
    return names["f"](np.zeros(max(n, 1), np.int64), n, k)


@settings(max_examples=60, deadline=None)
@given(_loops(), st.integers(0, 40), st.integers(-5, 5), st.integers(1, 9))
def test_the_outlined_function_computes_what_the_loop_did(source: str, n: int, k: int, threads: int) -> None:
    sources = outline(source)
    assert len(sources) == 1 + source.count("prange(")  # the function, then a chunk per loop
    assert "prange(" not in "".join(sources[1:])  # chunks run sequential loops
    outlined = "\n".join(sources)
    np.testing.assert_array_equal(_run(outlined, n, k, threads), _run(source, n, k, threads))


def test_the_chunk_bounds_are_int64() -> None:
    function = outline("def f(out, n):\n    for i in prange(n):\n        out[i] = i\n")[0]
    call = next(line for line in function.splitlines() if "__hpvm_try_call" in line)
    assert call.count("np.int64(__hpo0_c)") == 4  # lo and hi: the index, cast, twice each
    assert "__hpo0_c *" not in call and "__hpo0_c +" not in call
