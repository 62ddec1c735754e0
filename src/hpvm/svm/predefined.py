"""The seed's predefined kernels — Move and the strided / indexed scatter and gather —
as bulk NumPy copies: each step moves as many elements as both sides allow in one slice
or fancy-index copy, never element by element."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from . import checks
from .blocks import Block
from .errors import SVMError
from .kernels import Kernel, kernel_init
from .ring import Ring
from .runtime import Context, context
from .streams import STREAM_LENGTH_ALL, Stream, _push_values, _ring
from .where import caller_line


def _check_stream(s: Any, what: str, function: str) -> Stream:
    if not isinstance(s, Stream):
        raise SVMError(
            f"{function}: {what} must be an svm.Stream, got {type(s).__name__} (at {caller_line()})"
        )
    return s


def _check_block(b: Any, what: str, function: str) -> Block:
    if not isinstance(b, Block):
        raise SVMError(
            f"{function}: {what} must be an svm.Block, got {type(b).__name__} (at {caller_line()})"
        )
    return b


def _check_length(length: int, function: str) -> int:
    if not isinstance(length, int | np.integer) or (length < 0 and length != STREAM_LENGTH_ALL):
        raise SVMError(
            f"{function}: length must be >= 0 or STREAM_LENGTH_ALL, got {length!r} (at {caller_line()})"
        )
    return int(length)


def _positive(value: int, what: str, function: str) -> int:
    if not isinstance(value, int | np.integer) or value <= 0:
        raise SVMError(
            f"{function}: {what} must be a positive number of elements, got {value!r} (at {caller_line()})"
        )
    return int(value)


def _take(
    ctx: Context, src: Stream, ring: Ring, limit: int | None, up_to_eos: bool
) -> tuple[np.ndarray, bool]:
    """Pop what is available from ``src`` (at most ``limit``; with ``up_to_eos`` through
    the first EOS-tagged element): (values, whether the EOS element was reached)."""
    ctx.wait_until(lambda: ring.count > 0, lambda: f"waits to pop from stream {src.name} (empty)", (ring,))
    n = ring.count if limit is None else min(ring.count, limit)
    reached = False
    if up_to_eos:
        end = ring.first_eos(n)
        if end >= 0:
            n, reached = end + 1, True
    values, _ = ring.pop(n)
    ctx.notify()
    return values, reached


class Move(Kernel):
    """Moves ``length`` elements (or through the first EOS: ``STREAM_LENGTH_ALL``) from
    ``src_str`` to ``dest_str``; ``set_eos`` tags the last one pushed."""

    kind = "Move"

    def _stream_roles(self) -> list[tuple[Stream, str]]:
        return [(self.src_str, "reader"), (self.dest_str, "writer")]

    def _work(self) -> None:
        ctx = context()
        with ctx.cond:
            src = _ring(ctx, self.src_str, "Move", "reader")
            dst = _ring(ctx, self.dest_str, "Move", "writer")
            if src.dtype.itemsize != dst.dtype.itemsize:
                raise SVMError(
                    f"Move {self._svm.name}: stream {self.src_str.name} has {src.dtype.itemsize}-byte elements, "
                    f"{self.dest_str.name} {dst.dtype.itemsize}-byte ones"
                )
            all_ = self.length == STREAM_LENGTH_ALL
            remaining = None if all_ else self.length
            while remaining is None or remaining > 0:
                ctx.wait_until(
                    lambda: src.count > 0 and dst.space > 0,
                    lambda: (
                        f"waits to move from stream {self.src_str.name} ({src.count} stored) to "
                        f"{self.dest_str.name} ({dst.space} free)"
                    ),
                    (src, dst),
                )
                n = min(src.count, dst.space if remaining is None else min(dst.space, remaining))
                reached = False
                if all_:
                    end = src.first_eos(n)
                    if end >= 0:
                        n, reached = end + 1, True
                if remaining is not None:
                    remaining -= n
                eos = self.set_eos and (reached or remaining == 0)
                if ctx.check:
                    checks.push_flags(self.dest_str, dst, n, eos)
                src.move_to(dst, n, eos_last=eos)
                ctx.notify()
                if reached:
                    break


def move_init(
    move: Move, location: str, src_str: Stream, dest_str: Stream, length: int, set_eos: bool
) -> None:
    """Set up (not run) a Move on processor ``location``."""
    f = "move_init"
    _check_stream(src_str, "src_str", f)
    _check_stream(dest_str, "dest_str", f)
    length = _check_length(length, f)
    kernel_init(move, location, None, Move._work)
    move.src_str, move.dest_str, move.length, move.set_eos = src_str, dest_str, length, bool(set_eos)


def _strided_indices(start: int, n: int, stride: int, per: int) -> np.ndarray:
    i = np.arange(start, start + n, dtype=np.int64)
    return (i // per) * stride + i % per


def _strided_count(capacity: int, stride: int, per: int) -> int:
    """Elements a gather takes "up to the end of the block"."""
    full, rest = divmod(capacity, stride)
    return full * per + min(per, rest)


class StridedScatter(Kernel):
    """Pops ``length`` elements (or through the first EOS) from ``src_str`` and stores them
    in ``dest_block`` in runs of ``elements_per_stride``, runs ``dest_stride`` apart."""

    kind = "StridedScatter"

    def _stream_roles(self) -> list[tuple[Stream, str]]:
        return [(self.src_str, "reader")]

    def _work(self) -> None:
        ctx = context()
        block = self.dest_block
        with ctx.cond:
            ctx.observe(block, "block", "writer", self)
            src = _ring(ctx, self.src_str, "StridedScatter", "reader")
            all_ = self.length == STREAM_LENGTH_ALL
            done = 0
            while all_ or done < self.length:
                values, reached = _take(ctx, self.src_str, src, None if all_ else self.length - done, all_)
                idx = _strided_indices(done, len(values), self.dest_stride, self.elements_per_stride)
                if len(idx) and idx[-1] >= block.capacity:
                    raise SVMError(
                        f"StridedScatter {self._svm.name}: element {done + len(idx) - 1} goes to index {idx[-1]}, "
                        f"outside block {block.name} (capacity {block.capacity})"
                    )
                block.data[idx] = values.view(block.dtype.base).reshape((-1, *block.dtype.shape))
                done += len(values)
                if reached:
                    break


def strided_scatter_init(
    k: StridedScatter,
    location: str,
    src_str: Stream,
    dest_block: Block,
    length: int,
    dest_stride: int,
    elements_per_stride: int,
    set_eos: bool,
) -> None:
    """Set up a strided scatter (``set_eos`` is accepted for the seed's signature; a scatter
    pushes nothing, so it has no effect)."""
    f = "strided_scatter_init"
    _check_stream(src_str, "src_str", f)
    _check_block(dest_block, "dest_block", f)
    length = _check_length(length, f)
    per = _positive(elements_per_stride, "elements_per_stride", f)
    stride = _positive(dest_stride, "dest_stride", f)
    if dest_block.data is not None and length > 0:
        last = int(_strided_indices(length - 1, 1, stride, per)[0])
        if last >= dest_block.capacity:
            raise SVMError(
                f"{f}: {length} elements in runs of {per}, {stride} apart, reach index {last}, outside block "
                f"{dest_block.name} (capacity {dest_block.capacity}) (at {caller_line()})"
            )
    kernel_init(k, location, None, StridedScatter._work)
    k.src_str, k.dest_block, k.length = src_str, dest_block, length
    k.dest_stride, k.elements_per_stride, k.set_eos = stride, per, bool(set_eos)


class StridedGather(Kernel):
    """Pushes ``length`` elements (or to the end of the block) read from ``src_block`` in
    runs of ``elements_per_stride``, runs ``src_stride`` apart, onto ``dest_str``."""

    kind = "StridedGather"

    def _stream_roles(self) -> list[tuple[Stream, str]]:
        return [(self.dest_str, "writer")]

    def _work(self) -> None:
        ctx = context()
        block = self.src_block
        n = (
            _strided_count(block.capacity, self.src_stride, self.elements_per_stride)
            if self.length == STREAM_LENGTH_ALL
            else self.length
        )
        idx = _strided_indices(0, n, self.src_stride, self.elements_per_stride)
        with ctx.cond:
            ctx.observe(block, "block", "reader", self)
            dst = _ring(ctx, self.dest_str, "StridedGather", "writer")
            values = block.data[idx].view(dst.dtype.base).reshape((-1, *dst.dtype.shape))
            _push_values(ctx, [self.dest_str], values, self.set_eos, "StridedGather")


def strided_gather_init(
    k: StridedGather,
    location: str,
    src_block: Block,
    dest_str: Stream,
    length: int,
    src_stride: int,
    elements_per_stride: int,
    set_eos: bool,
) -> None:
    """Set up a strided gather."""
    f = "strided_gather_init"
    _check_block(src_block, "src_block", f)
    _check_stream(dest_str, "dest_str", f)
    length = _check_length(length, f)
    per = _positive(elements_per_stride, "elements_per_stride", f)
    stride = _positive(src_stride, "src_stride", f)
    if src_block.data is not None and length > 0:
        last = int(_strided_indices(length - 1, 1, stride, per)[0])
        if last >= src_block.capacity:
            raise SVMError(
                f"{f}: {length} elements in runs of {per}, {stride} apart, reach index {last}, outside block "
                f"{src_block.name} (capacity {src_block.capacity}) (at {caller_line()})"
            )
    kernel_init(k, location, None, StridedGather._work)
    k.src_block, k.dest_str, k.length = src_block, dest_str, length
    k.src_stride, k.elements_per_stride, k.set_eos = stride, per, bool(set_eos)


def _record_indices(positions: np.ndarray, per: int, block: Block, who: str) -> np.ndarray:
    positions = positions.astype(np.int64).reshape(-1)
    bad = (positions < 0) | (positions + per > block.capacity)
    if bad.any():
        p = int(positions[np.argmax(bad)])
        raise SVMError(
            f"{who}: index {p} (a record of {per} elements) is outside block {block.name} (capacity {block.capacity})"
        )
    return (positions[:, None] + np.arange(per)).reshape(-1)


def _check_index_stream(ring: Ring, s: Stream, who: str) -> None:
    if ring.dtype.kind not in "iu":
        raise SVMError(f"{who}: index stream {s.name} must hold integers, it holds {ring.dtype}")


def _index_batches(
    ctx: Context, k: Any, ind: Ring, block: Block, who: str
) -> Iterator[tuple[np.ndarray, bool]]:
    """The element positions of ``block`` an indexed kernel ``k`` visits, a batch at a time
    as indices arrive on ``k.index_str`` (``k.elements_per_index`` elements from each,
    ``k.length`` elements in all or up to the end of the stream), each with whether it is
    the last batch. Holds ``cond``."""
    _check_index_stream(ind, k.index_str, who)
    per, all_ = k.elements_per_index, k.length == STREAM_LENGTH_ALL
    done = 0
    while all_ or done < k.length:
        want = None if all_ else -(-(k.length - done) // per)
        positions, reached = _take(ctx, k.index_str, ind, want, all_)
        idx = _record_indices(positions, per, block, who)
        if not all_:
            idx = idx[: k.length - done]
        done += len(idx)
        yield idx, reached or (not all_ and done >= k.length)
        if reached:
            return


class IndexedScatter(Kernel):
    """For each index popped from ``index_str``, stores the next ``elements_per_index``
    elements of ``src_str`` at that element position of ``dest_block``."""

    kind = "IndexedScatter"

    def _stream_roles(self) -> list[tuple[Stream, str]]:
        return [(self.src_str, "reader"), (self.index_str, "reader")]

    def _work(self) -> None:
        ctx = context()
        block = self.dest_block
        who = f"IndexedScatter {self._svm.name}"
        with ctx.cond:
            ctx.observe(block, "block", "writer", self)
            src = _ring(ctx, self.src_str, "IndexedScatter", "reader")
            ind = _ring(ctx, self.index_str, "IndexedScatter", "reader")
            for idx, _ in _index_batches(ctx, self, ind, block, who):
                got = 0
                while got < len(idx):
                    values, _ = _take(ctx, self.src_str, src, len(idx) - got, False)
                    block.data[idx[got : got + len(values)]] = values.view(block.dtype.base).reshape(
                        (-1, *block.dtype.shape)
                    )
                    got += len(values)


def indexed_scatter_init(
    k: IndexedScatter,
    location: str,
    src_str: Stream,
    index_str: Stream,
    dest_block: Block,
    length: int,
    elements_per_index: int,
    set_eos: bool,
) -> None:
    """Set up an indexed scatter (``set_eos`` has no effect: a scatter pushes nothing)."""
    f = "indexed_scatter_init"
    _check_stream(src_str, "src_str", f)
    _check_stream(index_str, "index_str", f)
    _check_block(dest_block, "dest_block", f)
    length = _check_length(length, f)
    per = _positive(elements_per_index, "elements_per_index", f)
    kernel_init(k, location, None, IndexedScatter._work)
    k.src_str, k.index_str, k.dest_block, k.length = src_str, index_str, dest_block, length
    k.elements_per_index, k.set_eos = per, bool(set_eos)


class IndexedGather(Kernel):
    """For each index popped from ``index_str``, pushes the ``elements_per_index``
    elements of ``src_block`` at that element position onto ``dest_str``."""

    kind = "IndexedGather"

    def _stream_roles(self) -> list[tuple[Stream, str]]:
        return [(self.index_str, "reader"), (self.dest_str, "writer")]

    def _work(self) -> None:
        ctx = context()
        block = self.src_block
        who = f"IndexedGather {self._svm.name}"
        with ctx.cond:
            ctx.observe(block, "block", "reader", self)
            ind = _ring(ctx, self.index_str, "IndexedGather", "reader")
            dst = _ring(ctx, self.dest_str, "IndexedGather", "writer")
            for idx, last in _index_batches(ctx, self, ind, block, who):
                values = block.data[idx].view(dst.dtype.base).reshape((-1, *dst.dtype.shape))
                _push_values(ctx, [self.dest_str], values, self.set_eos and last, "IndexedGather")


def indexed_gather_init(
    k: IndexedGather,
    location: str,
    src_block: Block,
    index_str: Stream,
    dest_str: Stream,
    length: int,
    elements_per_index: int,
    set_eos: bool,
) -> None:
    """Set up an indexed gather."""
    f = "indexed_gather_init"
    _check_block(src_block, "src_block", f)
    _check_stream(index_str, "index_str", f)
    _check_stream(dest_str, "dest_str", f)
    length = _check_length(length, f)
    per = _positive(elements_per_index, "elements_per_index", f)
    kernel_init(k, location, None, IndexedGather._work)
    k.src_block, k.index_str, k.dest_str, k.length = src_block, index_str, dest_str, length
    k.elements_per_index, k.set_eos = per, bool(set_eos)
