"""An exception raised by compiled code, reported as a ``NodeExecutionError`` naming its node.

Compiled code does not know which node it is running, but Numba gives an exception raised
by a ``raise`` statement a traceback entry with that statement's file and line (the clones
keep the user's lines). The leaf whose source holds the line raised it; the nodes that use
the leaf are where — one, usually; all of them, said as such, when several nodes share it.
The instance stays unknown (the interpreter names it), but for checked mode's indices
(``checked.py``), whose guards pass it. Exceptions Numba raises itself
(integer division by zero) carry no such entry: then only the graph is named.

An LLVM leaf has no Python lines: when one raised (an exported Python leaf's ``raise``),
its wrapper raises ``LeafRaised`` with its clone's digest and what the clone recorded
(``llvm_native/leaf_errors.py``), and the leaves with that clone are where.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ...errors import NodeExecutionError, OutOfBoundsError
from ...ir.bodies import GeneratedBody, LLVMBody
from ...ir.graph import InternalFunction, LeafFunction, Node
from ..llvm_native.leaf_errors import LeafRaised, recorded
from ..numba_shared.messages import leaf_at
from .checked import Failed, access_of, instance_levels

if TYPE_CHECKING:
    from ..llvm_native.checked import Access as LLVMAccess

_INTERP = "run it with target='interp' to find out"


def node_error(
    root: InternalFunction, leaves: Sequence[tuple[LeafFunction, LeafFunction]], error: Exception
) -> NodeExecutionError:
    """What to raise for ``error`` from ``root``'s compiled code; ``leaves`` pairs each leaf
    as written (whose lines tracebacks name) with the leaf the graph's nodes hold."""
    if isinstance(error, LeafRaised):
        return _llvm_leaf_error(root, leaves, error)
    checked = access_of(error)
    if checked is not None:
        return _index_error(root, leaves, checked)
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
        return _message(root, [], "", what)
    user, line, _ = found
    # A generated body's clone runs under its origin's file name with lines of the generated
    # text: map them (LeafFunction.where); a Python leaf's frame is its own place.
    where = (
        user.where(line) if isinstance(user.body, GeneratedBody) else user.locate(frames[-1].filename, line)
    )
    return _message(root, paths, f"leaf '{user.name}', {where}", what)


def _index_error(
    root: InternalFunction, leaves: Sequence[tuple[LeafFunction, LeafFunction]], failed: Failed
) -> NodeExecutionError:
    """A checked index (checked mode: ``checked.py``) out of bounds: the interpreter's
    message, the instance in the node's path where the guard passed its context."""
    access, index = failed.access, failed.index
    held = [leaf for written, leaf in leaves if written is access.leaf]
    paths = [path for path, node in _nodes(root, root.name) if any(node.function is h for h in held)]
    hint = " (negative indices are out of bounds in HPVM leaves)" if index < 0 else ""
    what = f"index {index} is out of bounds for axis {access.axis} of '{access.array}' with size {failed.size}{hint}"
    place = f"leaf '{access.leaf.name}', {access.where}"
    return _message(root, paths, place, what, OutOfBoundsError, failed.levels)


def _llvm_leaf_error(
    root: InternalFunction, leaves: Sequence[tuple[LeafFunction, LeafFunction]], error: LeafRaised
) -> NodeExecutionError:
    """An LLVM leaf raised: the nodes holding a leaf with the clone that recorded it."""
    from ..llvm_native.native import native_leaf  # (only LLVM leaves load it)

    digest, slot, address, *checked = error.args  # checked code: (offset, size, context)
    raised = recorded(slot, address)
    from ..llvm_native.checked import failed_access  # (only LLVM leaves load it)

    access = failed_access(raised.exception)
    if access is not None and len(checked) == 3:  # (only checked code checks accesses)
        offset, size, context = checked
        return _llvm_index_error(root, leaves, access, offset, size, instance_levels(context))
    llvm = [leaf for _, leaf in leaves if isinstance(leaf.body, LLVMBody)]
    held = [leaf for leaf in llvm if native_leaf(leaf).digest == digest]
    if not held:  # (a checked clone raised: checked mode, llvm_native/checked.py)
        held = [leaf for leaf in llvm if native_leaf(leaf, checked=True).digest == digest]
    paths = [path for path, node in _nodes(root, root.name) if any(node.function is h for h in held)]
    place = f"leaf '{held[0].name}', {held[0].location}" if held else ""
    result = _message(root, paths, place, raised.message())
    if raised.exception is not None:
        result.__cause__ = raised.exception
        result.__suppress_context__ = True
    return result


def _llvm_index_error(
    root: InternalFunction,
    leaves: Sequence[tuple[LeafFunction, LeafFunction]],
    access: LLVMAccess,
    offset: int,
    size: int,
    levels: list[list[int]] | None,
) -> NodeExecutionError:
    """A checked LLVM access past its array: the nodes holding the leaf's module, and the
    failing instance's ids by level when the leaf's wrapper passed its context
    (``numba_call._instance``)."""
    held = [
        leaf
        for _, leaf in leaves
        if isinstance(leaf.body, LLVMBody)
        and (leaf.body.module, leaf.body.function) == (access.module, access.function)
    ]
    paths = [path for path, node in _nodes(root, root.name) if any(node.function is h for h in held)]
    place = f"leaf '{held[0].name}', {held[0].location}" if held else ""
    from ..llvm_native.checked import access_problem

    kind, what = access_problem(access, offset, size, "checked mode")
    return _message(root, paths, place, what, kind, levels)


def _with_instances(path: str, levels: list[list[int]]) -> str:
    """``path`` (``root/tiles/element``) with the ids of the failing instance and of its
    ancestors' instances, as far as ``levels`` (its own first) go, written as the
    interpreter writes them (``root/tiles[0, 1]/element[3, 7]``); the root's ids are not
    known here."""
    parts = path.split("/")
    for level, ids in enumerate(levels):
        at = len(parts) - 1 - level
        if at < 1:
            break
        if ids:
            parts[at] += str(ids)
    return "/".join(parts)


def _message(
    root: InternalFunction,
    paths: list[str],
    place: str,
    what: str,
    kind: type[NodeExecutionError] = NodeExecutionError,
    levels: list[list[int]] | None = None,
) -> NodeExecutionError:
    """The ``kind`` naming the nodes at ``paths`` (none: only the graph) and ``place``;
    ``levels``: the failing instance's ids, its own level's first (``_with_instances``)."""
    if not paths:
        return kind(
            f"graph '{root.name}' on the cpu back end {what} (compiled code does not say which "
            f"node: {_INTERP})"
        )
    if len(paths) == 1:
        if levels is not None:
            return kind(f"node {_with_instances(paths[0], levels)} ({place}): {what}")
        return kind(
            f"node {paths[0]} ({place}): {what} (the cpu back end does not say which instance: {_INTERP})"
        )
    unsaid = "node or instance"
    if levels is not None:
        what, unsaid = (f"{what} in instance {levels[0]}" if levels and levels[0] else what), "node"
    return kind(
        f"node {', '.join(paths[:-1])} or {paths[-1]} ({place}, used by all {len(paths)}): {what} "
        f"(the cpu back end does not say which {unsaid}: {_INTERP})"
    )


def _nodes(fn: InternalFunction, path: str) -> Iterator[tuple[str, Node]]:
    """Every node under ``fn`` with its path from the root (``root/tiles/element``)."""
    for node in fn.graph.nodes:
        here = f"{path}/{node.name}"
        yield here, node
        if isinstance(node.function, InternalFunction):
            yield from _nodes(node.function, here)
