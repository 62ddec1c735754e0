"""Pictures of the benchmark results (matplotlib, drawn off-screen with ``Figure``, no pyplot).

- ``scaling``: time against problem size for each implementation (log-log), with the
  ratio of the HPVM back end to hand-written Numba underneath;
- ``overhead``: launch + wait time against the number of instances of a leaf that does
  nothing and of one that writes its id (log-log), with the same Numba ``prange`` loops;
- ``ratios``: hpvm / hand-written Numba per kernel, against the 1.10× target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

# One colour per implementation, the same in every picture (matched by label prefix).
STYLE = {
    "hpvm cpu": {"color": "tab:blue", "marker": "o"},
    "hpvm interp": {"color": "tab:gray", "marker": "x"},
    "Numba": {"color": "tab:orange", "marker": "s"},
    "NumPy": {"color": "tab:green", "marker": "^", "linestyle": "--"},
}
REFERENCE = "Numba (hand-written)"


def _style(label: str) -> dict:
    """The colour of the label's implementation; dashed for the second series of one (``…, writes``)."""
    for prefix, style in STYLE.items():
        if label.startswith(prefix):
            return {**style, "linestyle": "--"} if "writes" in label else dict(style)
    return {"marker": "."}


def scaling(
    path: Path,
    title: str,
    xlabel: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    target_ratio: float | None = 1.10,
) -> Path:
    """Time against size, one line per implementation; below, each HPVM line / Numba.

    ``series`` maps a label to (size, seconds) points; missing points are simply absent.
    """
    fig = Figure(figsize=(7, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.4))
    for label, points in series.items():
        if points:
            xs, ys = zip(*points)
            top.plot(xs, ys, label=label, **_style(label))
    top.set(xscale="log", yscale="log", ylabel="time per run (s)", title=title)
    top.grid(True, which="both", alpha=0.3)
    top.legend()

    reference = dict(series.get(REFERENCE, ()))
    for label, points in series.items():
        if not label.startswith("hpvm"):
            continue
        ratios = [(x, y / reference[x]) for x, y in points if reference.get(x)]
        if ratios:
            xs, ys = zip(*ratios)
            bottom.plot(xs, ys, label=f"{label} / Numba", **_style(label))
    if target_ratio is not None:
        bottom.axhline(target_ratio, color="tab:red", linestyle=":", label=f"target ≤ {target_ratio:.2f}×")
    bottom.axhline(1.0, color="black", linewidth=0.6)
    bottom.set(xscale="log", xlabel=xlabel, ylabel="ratio to Numba")
    bottom.grid(True, which="both", alpha=0.3)
    bottom.legend(fontsize="small")
    fig.savefig(path)
    return path


def overhead(path: Path, series: Mapping[str, Sequence[tuple[int, float]]], target_s: float = 50e-6) -> Path:
    """Launch + wait time against the number of instances (``series``: label -> (N, seconds))."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    for label, points in series.items():
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, [y * 1e6 for y in ys], label=label, **_style(label))
    ax.axhline(
        target_s * 1e6, color="tab:red", linestyle=":", label=f"one-instance target ≤ {target_s * 1e6:.0f} µs"
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="leaf instances (N)",
        ylabel="launch + wait (µs)",
        title="Launch overhead against the number of instances",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(path)
    return path


def ratios(path: Path, values: Mapping[str, float], target: float = 1.10) -> Path:
    """A bar per kernel: hpvm cpu time / hand-written Numba time."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    names = list(values)
    heights = [values[n] for n in names]
    colours = ["tab:blue" if h <= target else "tab:red" for h in heights]
    ax.bar(names, heights, color=colours)
    for i, h in enumerate(heights):
        ax.annotate(f"{h:.2f}×", (i, h), ha="center", va="bottom", fontsize="small")
    ax.axhline(target, color="tab:red", linestyle=":", label=f"target ≤ {target:.2f}×")
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set(
        ylabel="hpvm cpu / hand-written Numba", title="Time relative to hand-written Numba (lower is better)"
    )
    if heights and max(heights) > 10 * min(heights):
        ax.set_yscale("log")
    ax.legend()
    ax.tick_params(axis="x", labelrotation=20)
    fig.savefig(path)
    return path
