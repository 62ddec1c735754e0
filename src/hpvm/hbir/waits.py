"""Which loops of a code block *wait*: loops only another group can end.

A wait loop is a ``while`` (or a C ``for`` that is not a plain counting loop) whose
condition reads shared memory — a global or a data array — and whose body changes
nothing its condition reads: it writes no global and no data array, assigns no variable
the condition reads, and does not leave the block (``bsg_finish``). Such a loop spins
until some *other* tile writes what it reads (``while (flag == 0) { }``); when every tile
still running sits in one and shared memory stops changing, nothing can ever end them —
what the run's watchdog (``program.py``) reports as groups waiting on each other. The
generated code marks each tile's entry to and exit from these loops (``codegen.py``), and
a program with one runs each group on a thread of its own.

The test is syntactic and conservative: a loop that also counts in a global while it
waits (``while (flag == 0) { spins += 1; }``) is not recognised, and runs as any loop does.
"""

from __future__ import annotations

from . import ast as A


def _written(s: A.Stmt) -> str | None:
    """The name an assignment writes (the array, for an element)."""
    if isinstance(s, A.Assign):
        base, _ = A.index_chain(s.target)
        return base.parts[-1] if isinstance(base, A.Ref) else None
    if isinstance(s, A.VarDecl):
        return s.name
    return None


def is_wait(loop: A.While | A.For, shared: set[str]) -> bool:
    """Whether ``loop`` waits for another tile (module doc); ``shared``: the names of the
    globals and data arrays."""
    if loop.cond is None:
        return False
    read = A.ref_names(loop.cond)
    if not read & shared:
        return False
    body = loop.body + ((loop.step,) if isinstance(loop, A.For) and loop.step is not None else ())
    for s in A.walk_stmts(body):
        if isinstance(s, A.ExprStmt) and isinstance(s.expr, A.Call) and s.expr.name == "bsg_finish":
            return False
        name = _written(s)
        if name is not None and (name in shared or name in read):
            return False
    return True


def wait_loops(stmts: tuple[A.Stmt, ...], shared: set[str]) -> list[A.While | A.For]:
    """The wait loops among ``stmts``, at any depth, in program order."""
    return [s for s in A.walk_stmts(stmts) if isinstance(s, (A.While, A.For)) and is_wait(s, shared)]


__all__ = ["is_wait", "wait_loops"]
