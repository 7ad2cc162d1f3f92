"""The agreement plot keeps its threshold label just above the axes however few rows it has: with one
criterion and α alone (the demo's aqua-003) the label sat 0.7 rows above the first, which at that height
was far outside the axes: matplotlib refused the layout and the saved figure was 517 pt tall, nearly all
blank, with the label alone at the top."""

from __future__ import annotations

import re
import warnings

import pytest

from annotation.reports.plots import agreement_intervals


def _report(criteria: int) -> dict:
    alpha = {"value": 0.5, "bootstrap_ci": [0.3, 0.7]}
    agreement = {f"c{i}": {"alpha_level": "nominal", "alpha": alpha, "icc1": {"value": None}} for i in range(criteria)}
    return {"agreement": agreement, "settings": {"icc_threshold": 0.6},
            "criteria": [{"key": f"c{i}", "name": f"Criterion {i}"} for i in range(criteria)]}


@pytest.mark.parametrize("criteria", [1, 2, 6])
def test_the_layout_is_applied_for_any_number_of_rows(criteria):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Tight layout not applied" is a UserWarning
        svg = agreement_intervals(_report(criteria))
    assert svg.startswith("<svg") and 'aria-label="Agreement with confidence intervals"' in svg
    height_pt = float(re.search(r'height="([0-9.]+)pt"', svg).group(1))
    assert height_pt < 72 * (1.2 + 0.32 * criteria)  # no more than the figure's own size: nothing far outside


def _every_plot_report() -> dict:
    """A report with something for each of report_plots' figures, the score distributions' legend below its
    panels and the heat map's colour bar beside it (artists outside the axes, which the crop must keep)."""
    systems, raters, items = ["sys-A", "sys-B", "sys-C"], [f"rater-{i}" for i in range(6)], [f"item-{j}" for j in range(30)]
    criteria = [{"key": f"c{i}", "name": f"Criterion {i}"} for i in range(4)]
    ci = {"value": 0.55, "bootstrap_ci": [0.3, 0.8], "ci": [0.3, 0.8]}
    return {
        "criteria": criteria, "settings": {"icc_threshold": 0.6},
        "distributions": {c["key"]: {"values": [1, 2, 3, 4, 5], "systems": {s: [k + i for i in range(5)]
                                                                            for k, s in enumerate(systems)}}
                          for c in criteria},
        "agreement": {c["key"]: {"alpha_level": "interval", "alpha": ci, "icc1": ci} for c in criteria},
        "heatmap": {"matrix": [[None if (r + j) % 7 == 0 else 1 + (r * j) % 5 for j in range(len(items))]
                               for r in range(len(raters))],
                    "raters": raters, "items": items, "min": 1, "max": 5, "criterion": "c0"},
        "raters": {r: {"bias": (i - 2.5) / 3, "flags": ["bias"] if i == 0 else []} for i, r in enumerate(raters)},
        "position_effects": {"c0": {str(p): {"mean": 3 + p / 10, "ci": [2.5, 3.8]} for p in (1, 2, 3)}},
        "comparisons": {"pairwise": {"n_answers": 40,
                                     "systems": {s: {"bt": k - 1.0, "bt_ci": [k - 1.6, k - 0.4]} for k, s in enumerate(systems)},
                                     "win_rates": {a: {b: 0.25 + 0.25 * (a > b) for b in systems if b != a} for a in systems}}},
    }


def _size_pt(svg: str) -> tuple[float, float]:
    return (float(re.search(r'width="([0-9.]+)pt"', svg).group(1)),
            float(re.search(r'height="([0-9.]+)pt"', svg).group(1)))


def test_each_plot_is_cropped_where_matplotlibs_own_tight_crop_puts_it():
    """to_svg finds the tight box without savefig's throw-away draw: the size of every figure must be what
    savefig(bbox_inches="tight") gives the same figure."""
    import io

    from annotation.reports.plots import captured_figures, report_plots

    with captured_figures() as figures:
        drawn = report_plots(_every_plot_report())
    svgs = {"Agreement with confidence intervals": drawn["agreement"], "Score distributions per system":
            drawn["distributions"], "Rater by item heatmap": drawn["heatmap"], "Rater bias": drawn["bias"],
            "Position effects": drawn["positions"], "Strengths pairwise": drawn["comparisons"]["pairwise"]["strengths"],
            "Win rates pairwise": drawn["comparisons"]["pairwise"]["heatmap"]}
    assert set(svgs) == set(figures) and all(svgs.values())
    for name, fig in figures.items():
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
        ours, theirs = _size_pt(svgs[name]), _size_pt(buf.getvalue())
        assert ours == pytest.approx(theirs, abs=0.01), (name, ours, theirs)
