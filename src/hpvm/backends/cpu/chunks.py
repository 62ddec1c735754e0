"""Parallel loops of generated code, written as calls of chunk functions (``loop_errors.py``).

A graph function's parallel loop ``for i in range(n): BODY`` (``BODY`` a ``block.Block``) is
written, where the loop is generated, as a loop over one chunk per thread, each chunk an
ordinary compiled function called through ``__hpvm_try_call``, and the first failure raised
after the loop::

    __hpo0_n = n
    __hpo0_nc = max(min(np.int64(__hpvm_num_threads()), np.int64(__hpo0_n)), 0)
    __hpo0_err = np.empty((__hpo0_nc, 2), np.int64)
    __hpvm_parallel_for(f_task0, __hpo0_nc, __hpo0_err, __hpo0_n, __hpo0_nc, a, b, ...)
    __hpvm_reraise(__hpo0_err)

    def f_task0(__hpo0_c, __hpvm_pack):
        (__hpo0_err, __hpo0_n, __hpo0_nc, a, b, ..., ) = __hpvm_pack
        __hpvm_try_call(f_chunk0, (a, b, ..., lo, hi), __hpo0_err, __hpo0_c)

    def f_chunk0(a, b, ..., __hpvm_lo, __hpvm_hi):
        for i in range(__hpvm_lo, __hpvm_hi):
            BODY

The chunk function takes the loop's free variables, ``BODY.free()``: the graph function's
locals the body reads and does not assign, which the generator recorded as it wrote each
line (``block.py``) — nothing is read back from the generated text. A local read in the body
was bound before the loop wherever the loop runs (the plain code read it there too), so
passing it is always legal; a name assigned only in another branch (the private copies of
``privloops.py``) is never read by this branch's body, so it is never passed.

Why outlined at all: exceptions in a chunk reach the launching thread (``loop_errors.py``);
the loop over chunks has nothing but the call, which ``__hpvm_parallel_for`` hands to
Numba's threading layer (``parallel_for.py``). Leaves stay inlined in the chunk's loop
(that is where LLVM vectorizes them). The schedule is the one Numba gives a ``prange``:
balanced contiguous chunks, one per thread, with no product that could overflow.
"""

from __future__ import annotations

from .block import INDENT, Block, Read, blocked_loop

LO, HI = "__hpvm_lo", "__hpvm_hi"
PACK = "__hpvm_pack"  # a task function's locals (parallel_for.py)


def chunk_count(n: str) -> str:
    """How many chunks ``n`` iterations run in: one per thread, none for an empty range."""
    return f"max(min(np.int64(__hpvm_num_threads()), np.int64({n})), 0)"


def chunk_bounds(c: str, n: str, nc: str) -> tuple[str, str]:
    """Chunk ``c`` of ``nc`` over ``n`` iterations: [c*q + min(c, r), (c+1)*q + min(c+1, r))
    with q, r = divmod(n, nc) — contiguous and balanced, with no product that could
    overflow. ``c`` is cast to int64, which the task's chunk index already is; it was not
    when ``c`` was a ``prange`` index, which Numba's parfor pass retyped as uint64 (uint64
    mixed with int64 is float64 in Numba: the chunk function, the costliest of a graph,
    compiled twice, tests/cpu/test_cpu_warm_start.py), and the cast keeps the bounds int64
    whatever integer a caller passes."""
    c = f"np.int64({c})"
    return (
        f"{c} * ({n} // {nc}) + min({c}, {n} % {nc})",
        f"({c} + 1) * ({n} // {nc}) + min({c} + 1, {n} % {nc})",
    )


class Chunks:
    """The chunk functions of one graph function ``symbol``, in the order its parallel
    loops are written (``symbol_chunk0``, ``symbol_chunk1``...)."""

    def __init__(self, symbol: str):
        self.symbol = symbol
        self.sources: list[str] = []
        self.loops = 0  # (a loop may have two chunk functions: ``wide``)
        # The chunk functions compiled with noalias arrays, inlined (``restrict.py``).
        self.restricted: list[str] = []
        self.symbols: list[str] = []  # every chunk function's name

    def loop(
        self,
        var: str,
        count: Read,
        body: Block,
        wide: tuple[str, Block] | None = None,
        around: tuple[Block, Block] | None = None,
        split: tuple[str, Block] | None = None,
        jammed: tuple[int, Block] | None = None,
    ) -> Block:
        """``for var in range(count): body`` run in parallel: the lines that call the new
        chunk function (kept in ``sources``) for each chunk, then raise the first failure.
        ``wide``: ``(flag, other)`` — the chunks run ``body`` where the local ``flag`` is
        true and the body's arrays are apart in memory, else ``other``, a chunk function of
        its own (``loopnest.py``: the innermost loop bounded below 2^32, or not). ``body``'s
        function is then compiled with ``noalias`` arrays and inlined (``restrict.py``);
        ``other``'s as any chunk function, called through ``__hpvm_try_call_noinline``: the
        rare path is not inlined into the task, and LLVM does not optimize it a second
        time there.
        ``around``: (before, after) — lines every chunk function runs before its loop and
        after it (``scratch.py``: buffers made once per chunk); ``split``: ``(flag, other)`` —
        where the local ``flag`` (set by ``around``'s lines) is true, the chunk function
        calls a chunk function of its own (``<symbol>z``, not inlined) running ``other``
        over the chunk, else it runs its own loop over ``body``; ``jammed``: ``(width, block)``
        — each chunk runs ``block`` (``var`` its first instance) on its whole blocks of
        ``width`` iterations, then ``body`` on the rest (``jam.py``)."""
        k = self.loops
        self.loops += 1
        symbol = f"{self.symbol}_chunk{k}"
        free = self._function(symbol, var, body, around, split, jammed)
        p = f"__hpo{k}"
        n, nc, err, c = f"{p}_n", f"{p}_nc", f"{p}_err", f"{p}_c"
        lo, hi = chunk_bounds(c, n, nc)
        call = Block().add(
            f"__hpvm_try_call({symbol}, ({', '.join([*free, lo, hi])},), {err}, {c})", [*free, n, nc, err, c]
        )
        out = Block()
        if wide is not None:
            flag, other = wide
            self.restricted.append(symbol)
            free_wide = self._function(f"{symbol}w", var, other, around)
            call_wide = (
                f"__hpvm_try_call_noinline({symbol}w, ({', '.join([*free_wide, lo, hi])},), {err}, {c})"
            )
            fast = f"{p}_fast"
            arrays = "".join(f"{name}, " for name in free)  # (the non-arrays are skipped)
            out.add(f"{fast} = {flag} and __hpvm_disjoint(({arrays}))", [flag, *free], [fast])
            call = (
                Block()
                .nest(f"if {fast}:", call, [fast])
                .nest("else:", Block().add(call_wide, [*free_wide, n, nc, err, c]))
            )
        out.add(f"{n} = {count.text}", count.names, [n])
        out.add(f"{nc} = {chunk_count(n)}", [n], [nc])
        out.add(f"{err} = np.empty(({nc}, 2), np.int64)", [nc], [err])  # (np.zeros: one more loop)
        packed = self._task(f"{self.symbol}_task{k}", c, call)
        out.add(f"__hpvm_parallel_for({', '.join([f'{self.symbol}_task{k}', nc, *packed])})", packed)
        return out.add(f"__hpvm_reraise({err})", [err])

    def _task(self, symbol: str, c: str, call: Block) -> list[str]:
        """Keep the source of task function ``symbol``: chunk ``c``'s ``call`` lines, the
        locals they read packed in one tuple (``parallel_for.py``); return those locals."""
        self.symbols.append(symbol)
        packed = sorted(call.reads - call.stores - {c})
        lines = [f"({''.join(f'{v}, ' for v in packed)}) = {PACK}", *call.lines]
        self.sources.append("\n".join([f"def {symbol}({c}, {PACK}):", *(INDENT + s for s in lines)]) + "\n")
        return packed

    def _function(
        self,
        symbol: str,
        var: str,
        body: Block,
        around: tuple[Block, Block] | None = None,
        split: tuple[str, Block] | None = None,
        jammed: tuple[int, Block] | None = None,
    ) -> list[str]:
        """Keep the source of chunk function ``symbol`` running ``body`` for ``var`` in
        its range (between ``around``'s lines; ``jammed``: ``loop``'s); its parameters
        before the bounds (the free locals of what it runs)."""
        self.symbols.append(symbol)
        if jammed is None:
            inner = Block().nest(f"for {var} in range({LO}, {HI}):", body, stores=[var])
        else:
            width, block = jammed
            inner = blocked_loop(var, Read(LO, (LO,)), Read(HI, (HI,)), width, block, body)
        if split is not None:  # (``other``'s loop a function of its own, called where ``flag`` is true)
            flag, other = split
            rare = f"{symbol}z"
            free_rare = self._function(rare, var, other)
            call = Block().add(f"{rare}({', '.join([*free_rare, LO, HI])})", free_rare)
            inner = Block().nest(f"if {flag}:", call, [flag]).nest("else:", inner)
        if around is not None:
            inner = Block().extend(around[0]).extend(inner).extend(around[1])
        free = sorted(inner.reads - inner.stores - {LO, HI})
        self.sources.append(
            "\n".join([f"def {symbol}({', '.join([*free, LO, HI])}):", *(INDENT + s for s in inner.lines)])
            + "\n"
        )
        return free
