"""Black-box kernels: library kernels known by name. The metadata lists the names a
processor supports (``supported_kernels``); control code instantiates one by name.

A black box is a ``Kernel`` subclass with ``setup(self, *args)`` (its init arguments)
and ``work(self)``; ``register_black_box(name, cls)`` makes it known. Two ship with hpvm:
``rle`` (run-length encoding) and ``zip`` (zlib), enough for the seed's control example.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from .errors import SVMError
from .kernels import Kernel, kernel_init
from .streams import STREAM_LENGTH_ALL, IStream, OStream, Stream, stream_pop_many, stream_push_many
from .where import caller_line

_REGISTRY: dict[str, type[Kernel]] = {}


def register_black_box(name: str, cls: type[Kernel]) -> type[Kernel]:
    """Make ``cls`` (a ``Kernel`` subclass with ``setup`` and ``work`` methods) the black
    box ``name``; processors run it if their ``supported_kernels`` list ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, Kernel)):
        raise SVMError(f"register_black_box({name!r}): {cls!r} is not an svm.Kernel subclass")
    for method in ("setup", "work"):
        if not callable(getattr(cls, method, None)):
            raise SVMError(f"register_black_box({name!r}): {cls.__name__} has no {method}() method")
    cls.kind = name
    _REGISTRY[name] = cls
    return cls


def black_boxes() -> list[str]:
    """Names of the registered black-box kernels."""
    return sorted(_REGISTRY)


def black_box(name: str) -> Kernel:
    """A new, uninitialised instance of black box ``name``."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise SVMError(
            f"no black-box kernel {name!r} (registered: {', '.join(black_boxes()) or 'none'}); "
            "register one with svm.register_black_box(name, cls)"
        )
    return cls()


def black_box_init(k: Kernel, location: str, scratch: Any, *args: Any) -> None:
    """Initialise black box ``k`` on processor ``location`` with its own arguments."""
    if type(k).kind not in _REGISTRY or _REGISTRY[type(k).kind] is not type(k):
        raise SVMError(
            f"black_box_init: {type(k).__name__} is not a registered black box (at {caller_line()})"
        )
    kernel_init(k, location, scratch, type(k).work)
    k.setup(*args)


def _streams(name: str, *streams: Any) -> None:
    for s in streams:
        if not isinstance(s, Stream):
            raise SVMError(
                f"{name}: expected svm.Stream arguments, got {type(s).__name__} (at {caller_line()})"
            )


class RLE(Kernel):
    """Run-length encoding of integer elements: pops ``in_`` through its EOS, pushes
    ``value, count`` pairs onto ``out`` (the last tagged EOS); ``output_length`` is the
    number of elements pushed."""

    in_: IStream  # the roles it declares (restriction A7)
    out: OStream

    def setup(self, in_: Stream, out: Stream) -> None:
        _streams("rle_init", in_, out)
        self.in_, self.out = in_, out
        self.output_length = 0

    def work(self) -> None:
        data = stream_pop_many(self.in_, STREAM_LENGTH_ALL)
        if data.dtype.kind not in "iu":
            raise SVMError(f"rle: stream {self.in_.name} must hold integers, it holds {data.dtype}")
        if len(data) == 0:
            self.output_length = 0
            return
        starts = np.flatnonzero(np.concatenate(([True], data[1:] != data[:-1])))
        counts = np.diff(np.append(starts, len(data)))
        pairs = np.empty(2 * len(starts), dtype=data.dtype)
        pairs[0::2], pairs[1::2] = data[starts], counts
        stream_push_many(self.out, pairs, eos=True)
        self.output_length = len(pairs)


class Zip(Kernel):
    """zlib compression: pops ``in_`` through its EOS, pushes the compressed bytes padded
    to whole elements of ``out`` (the last tagged EOS); ``output_length`` counts elements,
    ``compressed_bytes`` the bytes before padding."""

    in_: IStream
    out: OStream

    def setup(self, in_: Stream, out: Stream) -> None:
        _streams("zip_init", in_, out)
        self.in_, self.out = in_, out
        self.output_length = self.compressed_bytes = 0

    def work(self) -> None:
        data = stream_pop_many(self.in_, STREAM_LENGTH_ALL)
        packed = zlib.compress(data.tobytes())
        dtype = self.out.dtype
        padded = packed + bytes(-len(packed) % dtype.itemsize)
        elements = np.frombuffer(padded, dtype.base).reshape((-1, *dtype.shape))  # reinterpret, not convert
        stream_push_many(self.out, elements, eos=True)
        self.compressed_bytes = len(packed)
        self.output_length = len(padded) // dtype.itemsize


register_black_box("rle", RLE)
register_black_box("zip", Zip)


def rle_init(k: RLE, location: str, scratch: Any, in_: Stream, out: Stream) -> None:
    """The seed's ``rleInit(&rle, PROC1, &scratch, &s1, &s2)``."""
    black_box_init(k, location, scratch, in_, out)


def zip_init(k: Zip, location: str, scratch: Any, in_: Stream, out: Stream) -> None:
    """The seed's ``zipInit(&zip, PROC1, &scratch2, &s2, &s3)``."""
    black_box_init(k, location, scratch, in_, out)
