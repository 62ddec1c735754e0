"""A picture of a traced run: one row per kernel, a bar for each stretch it spent
WAITING, RUNNING or PAUSED (``svm.init(..., trace=True)``, then ``svm.draw_trace``).
matplotlib is imported here only, when a picture is asked for."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import SVMError
from .picture import save
from .runtime import TraceEvent, trace_events

COLOURS = {"WAITING": "#f2c14e", "RUNNING": "#3c8d2f", "PAUSED": "#9aa5b1"}


def intervals(events: list[TraceEvent]) -> dict[tuple[str, str], list[tuple[float, float, str]]]:
    """(kernel, processor) → [(start, end, status), ...] for the live states; a state still
    open at the last event ends there."""
    end_time = events[-1].time if events else 0.0
    open_: dict[tuple[str, str], tuple[float, str]] = {}
    rows: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for event in events:
        key = (event.kernel, event.processor)
        rows.setdefault(key, [])
        if key in open_:
            start, status = open_.pop(key)
            rows[key].append((start, event.time, status))
        if event.status in COLOURS:
            open_[key] = (event.time, event.status)
    for key, (start, status) in open_.items():
        rows[key].append((start, end_time, status))
    return rows


def draw_trace(path: str | os.PathLike[str], events: list[TraceEvent] | None = None) -> Path:
    """Draw the kernel states of a traced run (default: ``svm.trace_events()``) as a
    timeline into ``path`` (PNG, SVG or PDF by its suffix); returns the path."""
    events = trace_events() if events is None else events
    if not events:
        raise SVMError("draw_trace: the trace is empty: no kernel changed state while tracing")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = intervals(events)
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * len(rows)))
    for y, bars in enumerate(rows.values()):
        for start, end, status in bars:
            ax.barh(y, max(end - start, 1e-6), left=start, color=COLOURS[status], height=0.6)
    ax.set_yticks(range(len(rows)), [f"{kernel} @ {proc}" for kernel, proc in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since svm.init")
    ax.legend(
        handles=[Patch(color=c, label=s) for s, c in COLOURS.items()],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
    )
    ax.set_title("SVM kernel states")
    return save(fig, path, "draw_trace")
