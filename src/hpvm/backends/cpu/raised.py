"""An exception raised by compiled code, reported as a ``NodeExecutionError`` naming its node.

Compiled code does not know which node it is running, but Numba gives an exception raised
by a ``raise`` statement a traceback entry with that statement's file and line (the clones
keep the user's lines). The leaf whose source holds the line raised it; the nodes that use
the leaf are where — one, usually; all of them, said as such, when several nodes share it.
The instance stays unknown (the interpreter names it). Exceptions Numba raises itself
(integer division by zero) carry no such entry: then only the graph is named.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Sequence

from ...errors import NodeExecutionError
from ...ir.bodies import GeneratedBody
from ...ir.graph import InternalFunction, LeafFunction, Node
from ..numba_shared.messages import leaf_at

_INTERP = "run it with target='interp' to find out"


def node_error(
    root: InternalFunction, leaves: Sequence[tuple[LeafFunction, LeafFunction]], error: Exception
) -> NodeExecutionError:
    """What to raise for ``error`` from ``root``'s compiled code; ``leaves`` pairs each leaf
    as written (whose lines tracebacks name) with the leaf the graph's nodes hold."""
    what = f"raised {type(error).__name__}: {error}"
    frames = traceback.extract_tb(error.__traceback__)
    found = None
    if frames:
        found = leaf_at(frames[-1].filename, frames[-1].lineno or 0, [user for user, _ in leaves])
    paths: list[str] = []
    if found is not None:
        held = next(leaf for written, leaf in leaves if written is found[0])
        paths = [path for path, node in _nodes(root, root.name) if node.function is held]
    if found is None or not paths:
        return NodeExecutionError(
            f"graph '{root.name}' on the cpu back end {what} (compiled code does not say which "
            f"node: {_INTERP})"
        )
    user, line, _ = found
    # A generated body's clone runs under its origin's file name with lines of the generated
    # text: map them (LeafFunction.where); a Python leaf's frame is its own place.
    where = (
        user.where(line) if isinstance(user.body, GeneratedBody) else user.locate(frames[-1].filename, line)
    )
    place = f"leaf '{user.name}', {where}"
    if len(paths) == 1:
        return NodeExecutionError(
            f"node {paths[0]} ({place}): {what} (the cpu back end does not say which instance: {_INTERP})"
        )
    return NodeExecutionError(
        f"node {', '.join(paths[:-1])} or {paths[-1]} ({place}, used by all {len(paths)}): {what} "
        f"(the cpu back end does not say which node or instance: {_INTERP})"
    )


def _nodes(fn: InternalFunction, path: str) -> Iterator[tuple[str, Node]]:
    """Every node under ``fn`` with its path from the root (``root/tiles/element``)."""
    for node in fn.graph.nodes:
        here = f"{path}/{node.name}"
        yield here, node
        if isinstance(node.function, InternalFunction):
            yield from _nodes(node.function, here)
