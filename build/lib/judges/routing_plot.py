"""The routing card's plot: each named comparison's 95% interval as human ratings come in."""

from __future__ import annotations

from typing import Any, Mapping

from matplotlib.figure import Figure

from annotation.reports.plots import COLORS, to_svg


def intervals_over_time(state: Mapping[str, Any]) -> str | None:
    history = [h for h in state.get("history", []) if h.get("comparisons")]
    names = sorted({name for h in history for name, ci in h["comparisons"].items() if ci})
    if not names:
        return None  # no comparison has an interval yet
    fig = Figure(figsize=(5.6, 2.8))
    ax = fig.add_subplot(1, 1, 1)
    for k, name in enumerate(names):
        points = [(h["n_rated"], h["comparisons"][name]) for h in history if h["comparisons"].get(name)]
        if not points:
            continue
        xs = [n for n, _ in points]
        lo = [ci[0] for _, ci in points]
        hi = [ci[1] for _, ci in points]
        color = COLORS[k % len(COLORS)]
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2, step="post" if len(xs) > 1 else None)
        ax.plot(xs, [(a + b) / 2 for a, b in zip(lo, hi)], color=color, lw=1.2, marker="o", ms=3, label=name)
    ax.axhline(0, color="#999", lw=0.8, ls="--")
    ax.set_xlabel("human-rated items")
    ax.set_ylabel("difference (95% interval)")
    ax.legend(fontsize=7, frameon=False, loc="upper right")
    fig.tight_layout()
    return to_svg(fig, "routing-intervals")
