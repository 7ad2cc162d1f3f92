"""The report's plots: matplotlib figures drawn from the report dict, returned as inline SVG.

No pyplot (its global state is not for web processes): Figure objects rendered by the SVG
backend, text kept as text, ids salted per plot so several SVGs can share one page.
Each function returns None when the report has nothing to draw.
"""

from __future__ import annotations

import contextlib
import io
import math
from contextvars import ContextVar
from typing import Any, Iterator

import matplotlib

matplotlib.use("Agg")
from matplotlib.backend_bases import _get_renderer  # noqa: E402  (savefig's own way to its renderer)
from matplotlib.backends.backend_svg import FigureCanvasSVG  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

COLORS = ["#2456c8", "#d9822b", "#1f7a3f", "#b42318", "#7a4fc2", "#0f8b8d", "#9c6b30", "#5b6474"]
matplotlib.rcParams.update({
    "svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
    "axes.titlesize": 10, "axes.titleweight": "bold",
})


# While set (captured_figures), every figure drawn is also kept by name, for other file formats.
_captured: ContextVar[dict[str, Figure] | None] = ContextVar("captured_figures", default=None)


@contextlib.contextmanager
def captured_figures() -> Iterator[dict[str, Figure]]:
    """Keep the figures report_plots draws inside this block, by plot name (annotation.reports.paper)."""
    kept: dict[str, Figure] = {}
    token = _captured.set(kept)
    try:
        yield kept
    finally:
        _captured.reset(token)


def to_svg(fig: Figure, name: str) -> str:
    """The figure as an <svg> element (no XML prolog) for inlining in HTML."""
    kept = _captured.get()
    if kept is not None:
        kept[name] = fig
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": name}):
        # No creation date in the metadata: the same report gives the same bytes.
        fig.savefig(buf, format="svg", bbox_inches=_tight_bbox(fig), metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    # Natural size (text stays at the page's scale), shrunk only when the container is narrower.
    svg = svg.replace("<svg", f'<svg role="img" aria-label="{name}" style="max-width:100%;height:auto"', 1)
    return svg


def _tight_bbox(fig: Figure) -> Bbox:
    """What savefig(bbox_inches="tight") crops to, without the whole draw it makes first to find it.

    That draw (its output thrown away) is for layout engines that place artists as they draw; the figures here
    are laid out by tight_layout() already, and their extents come out the same to a millionth of a point
    (tests/reports/test_plots_layout.py). It was about a fifth of drawing a report's plots. The renderer is the
    one savefig uses for SVG, found the way savefig finds it, at the 72 dpi vector formats use."""
    dpi = fig.dpi
    fig.set_layout_engine(None)  # tight_layout() leaves a placeholder engine, which makes savefig draw first
    try:
        renderer = _get_renderer(fig, FigureCanvasSVG(fig).print_svg)
        return fig.get_tightbbox(renderer).padded(matplotlib.rcParams["savefig.pad_inches"])
    finally:
        fig.dpi = dpi


def _criterion_names(report: dict[str, Any]) -> dict[str, str]:
    return {c["key"]: c["name"] for c in report.get("criteria", [])}


def score_distributions(report: dict[str, Any]) -> str | None:
    """Share of each scale point or option per system, one panel per criterion."""
    dist = report.get("distributions") or {}
    if not dist:
        return None
    names = _criterion_names(report)
    keys = list(dist)
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(3.6 * cols, 2.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, key in zip(axes.flat, keys):
        d = dist[key]
        systems = list(d["systems"])
        width = 0.8 / max(len(systems), 1)
        for s_i, system in enumerate(systems):
            counts = d["systems"][system]
            total = sum(counts) or 1
            xs = [v + (s_i - (len(systems) - 1) / 2) * width for v in range(len(d["values"]))]
            ax.bar(xs, [c / total for c in counts], width=width, color=COLORS[s_i % len(COLORS)], label=system)
        ax.set_xticks(range(len(d["values"])), d["values"])
        ax.set_title(names.get(key, key))
        ax.set_ylabel("share of ratings")
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return to_svg(fig, "Score distributions per system")


def rater_item_heatmap(report: dict[str, Any]) -> str | None:
    h = report.get("heatmap") or {}
    if not h.get("matrix"):
        return None
    import numpy as np

    m = np.array([[np.nan if v is None else v for v in row] for row in h["matrix"]], dtype=float)
    n_r, n_i = m.shape
    fig = Figure(figsize=(min(max(5.0, 2 + 0.16 * n_i), 12), 1.4 + 0.28 * n_r))
    ax = fig.subplots()
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#eeeeee")
    im = ax.imshow(np.ma.masked_invalid(m), aspect="auto", cmap=cmap, vmin=h.get("min"), vmax=h.get("max"),
                   interpolation="nearest")
    ax.set_yticks(range(n_r), h["raters"])
    step = max(1, n_i // 30)
    ax.set_xticks(range(0, n_i, step), h["items"][::step], rotation=90, fontsize=7)
    ax.set_xlabel("item" + (" (first items)" if h.get("truncated") else ""))
    ax.set_title(f"{_criterion_names(report).get(h['criterion'], h['criterion'])}: each rater's score per item")
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01, label="score (grey: not rated)")
    return to_svg(fig, "Rater by item heatmap")


def agreement_intervals(report: dict[str, Any]) -> str | None:
    """Alpha and ICC1 per criterion with their bootstrap CIs and the acceptance threshold."""
    agreement = report.get("agreement") or {}
    names = _criterion_names(report)
    rows = []
    for key, a in agreement.items():
        for label, s in ((f"α ({a['alpha_level']})", a["alpha"]), ("ICC1", a["icc1"])):
            if s["value"] is not None:
                rows.append((f"{names.get(key, key)} · {label}", s["value"], s.get("bootstrap_ci") or s.get("ci")))
    if not rows:
        return None
    fig = Figure(figsize=(7, 1.2 + 0.32 * len(rows)))
    ax = fig.subplots()
    for y, (label, value, ci) in enumerate(rows):
        color = COLORS[0] if "α" in label else COLORS[1]
        if ci:
            ax.plot(ci, [y, y], color=color, lw=2, alpha=0.6)
        ax.plot([value], [y], "o", color=color)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top, half a row of room around each
    threshold = report.get("settings", {}).get("icc_threshold")
    if threshold is not None:
        ax.axvline(threshold, color=COLORS[3], ls="--", lw=1)
        # Just above the axes whatever the number of rows (x in data, y in axes units).
        ax.text(threshold, 1.0, f" ICC ≥ {threshold:g}", color=COLORS[3], va="bottom",
                transform=ax.get_xaxis_transform())
    lo = min(0.0, min(min(r[2]) if r[2] else r[1] for r in rows))
    ax.set_xlim(lo - 0.05, 1.02)
    ax.set_xlabel("agreement (95% bootstrap CI)")
    fig.tight_layout()
    return to_svg(fig, "Agreement with confidence intervals")


def rater_bias(report: dict[str, Any]) -> str | None:
    raters = {r: i for r, i in (report.get("raters") or {}).items() if i.get("bias") is not None}
    if not raters:
        return None
    names = list(raters)
    fig = Figure(figsize=(7, 0.9 + 0.3 * len(names)))
    ax = fig.subplots()
    colors = [COLORS[3] if "bias" in raters[r]["flags"] else COLORS[0] for r in names]
    ax.barh(range(len(names)), [raters[r]["bias"] for r in names], color=colors)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.axvline(0, color="#333", lw=0.8)
    ax.set_xlabel("mean score minus the others' mean on the same units (red: flagged)")
    fig.tight_layout()
    return to_svg(fig, "Rater bias")


def position_effects(report: dict[str, Any]) -> str | None:
    effects = report.get("position_effects") or {}
    if not effects:
        return None
    names = _criterion_names(report)
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    for k, (key, per) in enumerate(effects.items()):
        xs = [int(p) for p in per]
        means = [per[p]["mean"] for p in per]
        err = [[m - (per[p]["ci"] or [m, m])[0] for p, m in zip(per, means)],
               [(per[p]["ci"] or [m, m])[1] - m for p, m in zip(per, means)]]
        ax.errorbar([x + 0.05 * k for x in xs], means, yerr=err, marker="o", capsize=3,
                    color=COLORS[k % len(COLORS)], label=names.get(key, key))
    ax.set_xlabel("position at which the output was shown")
    ax.set_ylabel("mean score (95% CI)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(frameon=False, fontsize=8, loc="best")
    fig.tight_layout()
    return to_svg(fig, "Position effects")


def win_rate_heatmap(rates: dict[str, dict[str, float]], name: str) -> str | None:
    """Row system's share of wins against each column system (ties half), as a heat map."""
    import numpy as np

    systems = sorted(rates)
    if len(systems) < 2:
        return None
    grid = np.full((len(systems), len(systems)), np.nan)
    for i, a in enumerate(systems):
        for j, b in enumerate(systems):
            if b in rates[a]:
                grid[i, j] = rates[a][b]
    fig = Figure(figsize=(0.8 * len(systems) + 2.2, 0.7 * len(systems) + 1.2))
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(grid, cmap="RdBu", vmin=0, vmax=1)
    for i in range(len(systems)):
        for j in range(len(systems)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(systems)), systems, fontsize=7, rotation=30, ha="right")
    ax.set_yticks(range(len(systems)), systems, fontsize=7)
    ax.set_xlabel("against")
    ax.set_ylabel("wins of")
    fig.tight_layout()
    return to_svg(fig, name)


def strengths_plot(systems: dict[str, dict[str, Any]], name: str) -> str | None:
    """Bradley–Terry log-strengths with their 95% intervals, strongest on top."""
    rows = sorted(((s, v) for s, v in systems.items() if v.get("bt") is not None), key=lambda kv: kv[1]["bt"])
    if len(rows) < 2:
        return None
    fig = Figure(figsize=(6, 0.35 * len(rows) + 1.1))
    ax = fig.subplots()
    ys = range(len(rows))
    means = [v["bt"] for _, v in rows]
    err = [[m - v["bt_ci"][0] for m, (_, v) in zip(means, rows)], [v["bt_ci"][1] - m for m, (_, v) in zip(means, rows)]]
    ax.errorbar(means, list(ys), xerr=err, fmt="o", capsize=3, color=COLORS[0])
    ax.axvline(0, color="#999", lw=0.8, ls="--")
    ax.set_yticks(list(ys), [s for s, _ in rows], fontsize=8)
    ax.set_xlabel("Bradley–Terry log-strength, mean 0 (95% CI)")
    fig.tight_layout()
    return to_svg(fig, name)


def comparison_plots(report: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    return {key: {"strengths": strengths_plot(c.get("systems") or {}, f"Strengths {key}"),
                  "heatmap": win_rate_heatmap(c.get("win_rates") or {}, f"Win rates {key}")}
            for key, c in (report.get("comparisons") or {}).items() if c.get("n_answers")}


def report_plots(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "agreement": agreement_intervals(report),
        "distributions": score_distributions(report),
        "heatmap": rater_item_heatmap(report),
        "bias": rater_bias(report),
        "positions": position_effects(report),
        "comparisons": comparison_plots(report),
    }
