"""Generated lines that know which local names they read and assign.

Why. A parallel loop of a graph function becomes a call of a chunk function
(``chunks.py``), which must take as parameters the loop's free variables: the graph
function's locals the loop reads and does not assign itself (Python's own scoping rule).
Rather than read them back out of the generated text, the code that writes a line records
them as it writes it: every expression a loop body uses is built from names the generator
chose (the scope's inputs ``Scope.read``, the sizes, the ids, the context and pool
parameters, the names the loop itself assigns), so it knows them by construction.

Only the graph function's *locals* are recorded (its parameters and the names its lines
assign); globals — the callees, dtypes, ``np`` and the ``__hpvm_*`` helpers — never are, so
``reads - stores`` of a loop body is exactly the set of names the chunk function must take.
Only code that can end up inside a parallel loop is written as ``Block``\\ s (the instance
loops and bodies, ``loopnest.py``; the private-copy loop, ``privloops.py``); the rest of a
graph function is plain lines, whose names no chunk needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

INDENT = "    "


class Read(NamedTuple):
    """An expression of generated code and the local names it reads."""

    text: str
    names: tuple[str, ...]


def local(name: str) -> Read:
    """The expression that is just the local ``name``."""
    return Read(name, (name,))


@dataclass
class Block:
    """Lines of generated code (relative indentation), the locals they read and the locals
    they assign (loop variables included), recorded as the lines are written."""

    lines: list[str] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)
    stores: set[str] = field(default_factory=set)

    def add(self, line: str, reads: Iterable[str] = (), stores: Iterable[str] = ()) -> Block:
        """Append ``line``, which reads ``reads`` and assigns ``stores``."""
        self.lines.append(line)
        self.reads.update(reads)
        self.stores.update(stores)
        return self

    def extend(self, other: Block) -> Block:
        """Append ``other``'s lines, at this block's indentation."""
        self.lines += other.lines
        self.reads |= other.reads
        self.stores |= other.stores
        return self

    def nest(self, header: str, body: Block, reads: Iterable[str] = (), stores: Iterable[str] = ()) -> Block:
        """Append ``header`` (a ``for``/``if`` line reading ``reads``, assigning ``stores``)
        and ``body`` one level inside it."""
        self.add(header, reads, stores)
        self.lines += [INDENT + line for line in body.lines]
        self.reads |= body.reads
        self.stores |= body.stores
        return self

    def free(self) -> list[str]:
        """The locals these lines read but do not assign, sorted: what a function running
        them must be given."""
        return sorted(self.reads - self.stores)


def blocked_loop(var: str, start: Read, stop: Read, width: int, blocks: Block, rest: Block) -> Block:
    """``for var in range(start, stop)`` as whole blocks of ``width`` iterations, each one
    run of ``blocks`` with ``var`` its first, then the rest one by one in ``rest`` (the
    cpu back end's jammed instances, ``jam.py``)."""
    count, block = f"{var}_jn", f"{var}_jb"
    names = (*start.names, *stop.names)
    out = Block().add(f"{count} = ({stop.text} - {start.text}) // {width}", names, [count])
    first = Block().add(f"{var} = {start.text} + {block} * {width}", [block, *start.names], [var])
    out.nest(f"for {block} in range({count}):", first.extend(blocks), [count], [block])
    tail = f"for {var} in range({start.text} + {count} * {width}, {stop.text}):"
    return out.nest(tail, rest, [count, *names], [var])
