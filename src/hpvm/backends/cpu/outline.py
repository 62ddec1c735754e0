"""Parallel loops of generated code become calls of chunk functions (``loop_errors.py``).

A graph function's parallel loop, as ``graphgen.py`` writes it::

    for i in prange(n):
        BODY

becomes a loop over one chunk per thread, each chunk an ordinary compiled function called
through ``__hpvm_try_call``, and the first failure raised after the loop::

    __hpo0_n = n
    __hpo0_nc = max(min(np.int64(__hpvm_num_threads()), np.int64(__hpo0_n)), 0)
    __hpo0_err = np.empty((__hpo0_nc, 2), np.int64)
    for __hpo0_c in prange(__hpo0_nc):
        __hpvm_try_call(f_chunk0, (a, b, ..., lo, hi), __hpo0_err, __hpo0_c)
    __hpvm_reraise(__hpo0_err)

    def f_chunk0(a, b, ..., __hpvm_lo, __hpvm_hi):
        for i in range(__hpvm_lo, __hpvm_hi):
            BODY

The chunk function takes the loop's free variables: the names it reads that are locals of
the graph function (its parameters and anything it assigns) and that the loop does not
assign itself — Python's own scoping rule, decided on the AST. Leaves stay inlined in the
chunk's loop (that is where LLVM vectorizes them); the schedule is Numba's own for a
``prange`` (equal contiguous chunks, one per thread), and the loop over chunks has nothing
but the call, so Numba always parallelizes it.
"""

from __future__ import annotations

import ast

from ...ir import pyast

LO, HI = "__hpvm_lo", "__hpvm_hi"


def outline(source: str) -> list[str]:
    """``source`` (one generated function) with its ``prange`` loops outlined, then the
    chunk functions: sources, the graph function first."""
    func = pyast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    local = {a.arg for a in func.args.args} | _stored(func)
    outliner = _Outliner(func.name, local)
    func.body = outliner.statements(func.body)
    return [ast.unparse(ast.fix_missing_locations(func)) + "\n"] + [
        ast.unparse(ast.fix_missing_locations(chunk)) + "\n" for chunk in outliner.chunks
    ]


def _stored(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _is_prange(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.For)
        and isinstance(node.iter, ast.Call)
        and isinstance(node.iter.func, ast.Name)
        and node.iter.func.id == "prange"
        and len(node.iter.args) == 1
    )


class _Outliner:
    def __init__(self, symbol: str, local: set[str]):
        self.symbol = symbol
        self.local = local
        self.chunks: list[ast.FunctionDef] = []

    def statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if _is_prange(stmt):
                out += self._outline(stmt)  # type: ignore[arg-type]
                continue
            if isinstance(stmt, (ast.If, ast.For, ast.While)):  # may hold a parallel loop
                stmt.body = self.statements(stmt.body)
                stmt.orelse = self.statements(stmt.orelse)
            out.append(stmt)
        return out

    def _outline(self, loop: ast.For) -> list[ast.stmt]:
        k = len(self.chunks)
        symbol = f"{self.symbol}_chunk{k}"
        stored = _stored(loop)
        loaded = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        free = sorted((loaded & self.local) - stored)
        count = ast.unparse(loop.iter.args[0])  # type: ignore[attr-defined]
        chunk = pyast.parse(
            f"def {symbol}({', '.join([*free, LO, HI])}):\n"
            f"    for {ast.unparse(loop.target)} in range({LO}, {HI}):\n"
            "        pass\n"
        ).body[0]
        chunk.body[0].body = loop.body  # type: ignore[attr-defined]
        self.chunks.append(chunk)  # type: ignore[arg-type]
        p = f"__hpo{k}"
        # Chunk c covers [c*q + min(c, r), (c+1)*q + min(c+1, r)) with q, r = divmod(n, nc):
        # contiguous and balanced, with no product that could overflow. The index is cast:
        # Numba's parfor pass retypes a prange index as uint64, and uint64 mixed with int64
        # is float64 in Numba, so the bounds (and the chunk's signature) would change type
        # between the first typing and the parfor lowering: the chunk compiled twice.
        c = f"np.int64({p}_c)"
        lo = f"{c} * ({p}_n // {p}_nc) + min({c}, {p}_n % {p}_nc)"
        hi = f"({c} + 1) * ({p}_n // {p}_nc) + min({c} + 1, {p}_n % {p}_nc)"
        args = ", ".join([*free, lo, hi])
        return pyast.parse(
            f"{p}_n = {count}\n"
            f"{p}_nc = max(min(np.int64(__hpvm_num_threads()), np.int64({p}_n)), 0)\n"
            f"{p}_err = np.empty(({p}_nc, 2), np.int64)\n"  # (np.zeros: one more parallel loop)
            f"for {p}_c in prange({p}_nc):\n"
            f"    __hpvm_try_call({symbol}, ({args},), {p}_err, {p}_c)\n"
            f"__hpvm_reraise({p}_err)\n"
        ).body
