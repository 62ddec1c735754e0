"""Which stages a stream ran on ``cpu``, and how many of their batches ran at once: what the
replica, whole-item and field pipeline tests count (``runtime/replicas.py``,
``runtime/streaming.py``)."""

from __future__ import annotations

import threading

import pytest

from hpvm.backends import get_backend


class StageOverlap:
    """Wraps ``cpu``'s ``run_stage_batch``: the stages it ran (their nodes' names, in
    ``stages``), and how many batches ran at once at most (``most``) — of the stages whose
    first node is named ``first``, or of any stage."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, first: str | None = None) -> None:
        backend = get_backend("cpu")
        inner = backend.run_stage_batch
        self.most = 0
        self.stages: set[tuple[str, ...]] = set()
        running = [0]
        lock = threading.Lock()

        def counted(root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
            names = tuple(n.name for n in nodes)
            if first is not None and names[0] != first:
                return inner(root, args_list, nodes, upstream_list, ctx)
            with lock:
                self.stages.add(names)
                running[0] += 1
                self.most = max(self.most, running[0])
            try:
                return inner(root, args_list, nodes, upstream_list, ctx)
            finally:
                with lock:
                    running[0] -= 1

        monkeypatch.setattr(backend, "run_stage_batch", counted)
