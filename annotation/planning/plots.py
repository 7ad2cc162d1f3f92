"""The plan page's figure: power against the number of items for a few R, and against the
number of decided judgements for the pairwise test (its saw-tooth is why the plan asks the
power to stay above target)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from annotation.reports.plots import COLORS, to_svg
from annotation.stats.power import STAY_ABOVE, binomial_power, paired_power_curve

CURVE_RATERS = (1, 2, 3, 6)


def power_curves(plan: dict[str, Any]) -> str | None:
    scores, pairwise = plan.get("scores"), plan.get("pairwise")
    panels = [p for p in (scores, pairwise) if p]
    if not panels:
        return None
    fig = Figure(figsize=(4.6 * len(panels), 3.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    if scores:
        _scores_panel(axes[0], scores)
    if pairwise:
        _pairwise_panel(axes[-1], pairwise)
    fig.tight_layout()
    return to_svg(fig, "Power curves")


def _scores_panel(ax, scores: dict[str, Any]) -> None:
    i = scores["inputs"]
    target = i["power"]
    raters = sorted(set(CURVE_RATERS) | {i["raters"]})
    most = max(r["items"] for r in scores["table"] if r["raters"] == 1)
    most = max(most, scores["items"])
    ns = np.unique(np.linspace(2, max(10, int(most * 1.6)), 120).astype(int))
    for k, r in enumerate(raters):
        power = paired_power_curve(ns, delta=i["delta"], sd=i["sd"], icc=i["icc"], corr=i["corr"], raters=r,
                                   alpha=i["alpha"])
        ax.plot(ns, power, color=COLORS[k % len(COLORS)], lw=2 if r == i["raters"] else 1.2, label=f"R = {r}")
    ax.axhline(target, color="#333", ls="--", lw=0.8)
    ax.axvline(scores["items"], color=COLORS[3], ls=":", lw=1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("items")
    ax.set_ylabel("power")
    ax.set_title("Scores: paired t-test")
    ax.legend(frameon=False, fontsize=8, loc="lower right")


def _pairwise_panel(ax, pairwise: dict[str, Any]) -> None:
    i = pairwise["inputs"]
    n = pairwise["decided"]
    ns = np.arange(1, int(n * 1.5) + STAY_ABOVE + 1)
    ax.plot(ns, binomial_power(ns, win_prob=pairwise["win_prob"], alpha=i["alpha"]), color=COLORS[0], lw=1)
    ax.axhline(i["power"], color="#333", ls="--", lw=0.8)
    ax.axvline(n, color=COLORS[3], ls=":", lw=1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("decided judgements per pair")
    ax.set_ylabel("power")
    ax.set_title(f"Pairwise: exact binomial test, p = {pairwise['win_prob']:.3f}")
