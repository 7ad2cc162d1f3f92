"""The study report's "Judges vs humans" section (registered in settings.REPORT_SECTIONS).

`judges_vs_humans(study, report)` returns None when the study has no finished judge run,
else {"title", "template", "context", "data"}: per analysed criterion, each finished run
(the latest MAX_RUNS) against the human ratings, with the human ceiling and a verdict
(judges.services.humans), a scatter or confusion plot as inline SVG, and the same numbers
as plain data for the report's JSON download.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from annotation.models import Study
from annotation.reports.plots import COLORS, to_svg
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.reports.ratings import rater_names, stats_frame
from judges.models import JudgeRun, JudgeScore
from judges.services.humans import compare_criterion, consensus

TITLE = "Judges vs humans"
MAX_RUNS = 6
MAX_PLOTTED = 4  # judges per plot


def _judge_code(criterion: Mapping[str, Any], measure: str, value: Any, score: float | None) -> float:
    if measure == "numeric":
        if score is not None:
            return float(score)
        try:
            return float(value)
        except (TypeError, ValueError):
            return np.nan
    order = {str(ch["value"]): k for k, ch in enumerate(criterion.get("choices", []))}
    return float(order.get(str(value), np.nan))


def _matrices(study: Study, criterion: Mapping[str, Any], humans_df, runs: Sequence[JudgeRun],
              judge_rows: Sequence[tuple]) -> tuple[np.ndarray, dict[str, np.ndarray], list[str], list[tuple]]:
    key, measure = criterion["key"], criterion_measure(criterion)
    df = humans_df[(humans_df["criterion"] == key) & ~humans_df["is_attention_check"].astype(bool)]
    df = df[~np.isnan(df["x"].to_numpy(dtype=float))]
    units = sorted(set(zip(df["item_id"].astype(int), df["output"].astype(int))))
    raters = sorted(set(df["rater_id"].astype(int)))
    u_index = {u: i for i, u in enumerate(units)}
    r_index = {r: j for j, r in enumerate(raters)}
    humans = np.full((len(units), len(raters)), np.nan)
    for item, out, rater, x in zip(df["item_id"].astype(int), df["output"].astype(int), df["rater_id"].astype(int),
                                   df["x"].to_numpy(dtype=float)):
        humans[u_index[(item, out)], r_index[rater]] = x
    judges: dict[str, np.ndarray] = {}
    for run in runs:
        if key not in (run.criteria or []):
            continue
        vec = np.full(len(units), np.nan)
        for run_id, item_id, position, crit, value, score in judge_rows:
            if run_id == run.pk and crit == key:
                unit = (item_id, -1 if position is None else position)
                if unit in u_index:
                    vec[u_index[unit]] = _judge_code(criterion, measure, value, score)
        judges[f"{run.name} (run {run.pk})"] = vec
    names = rater_names(study)
    return humans, judges, [names.get(r, str(r)) for r in raters], units


def _scatter(humans: np.ndarray, judges: Mapping[str, np.ndarray], criterion: Mapping[str, Any]) -> str | None:
    mean = consensus(humans, "numeric")
    shown = list(judges.items())[:MAX_PLOTTED]
    if not shown or np.isnan(mean).all():
        return None
    lo, hi = criterion.get("min", np.nanmin(mean)), criterion.get("max", np.nanmax(mean))
    fig = Figure(figsize=(3.0 * len(shown), 2.9))
    rng = np.random.default_rng(0)
    for k, (name, vec) in enumerate(shown):
        ax = fig.add_subplot(1, len(shown), k + 1)
        ok = ~np.isnan(vec) & ~np.isnan(mean)
        jitter = rng.uniform(-0.12, 0.12, int(ok.sum()))
        ax.scatter(mean[ok], vec[ok] + jitter, s=14, alpha=0.6, color=COLORS[k % len(COLORS)], edgecolors="none")
        ax.plot([lo, hi], [lo, hi], color="#999", lw=0.8, ls="--")
        ax.set_xlim(lo - 0.5, hi + 0.5)
        ax.set_ylim(lo - 0.5, hi + 0.5)
        ax.set_xlabel("human mean")
        if k == 0:
            ax.set_ylabel("judge")
        ax.set_title(name, fontsize=8)
    fig.tight_layout()
    return to_svg(fig, f"judges-scatter-{criterion['key']}")


def _confusion(humans: np.ndarray, judges: Mapping[str, np.ndarray], criterion: Mapping[str, Any]) -> str | None:
    labels = [str(c["value"]) for c in criterion.get("choices", [])]
    maj = consensus(humans, "categorical")
    shown = list(judges.items())[:MAX_PLOTTED]
    if not shown or not labels or np.isnan(maj).all():
        return None
    n = len(labels)
    fig = Figure(figsize=(max(2.6, 0.5 * n + 1.6) * len(shown), max(2.4, 0.5 * n + 1.4)))
    for k, (name, vec) in enumerate(shown):
        ax = fig.add_subplot(1, len(shown), k + 1)
        ok = ~np.isnan(vec) & ~np.isnan(maj)
        cm = np.zeros((n, n), dtype=int)
        for h, j in zip(maj[ok].astype(int), vec[ok].astype(int)):
            cm[h, j] += 1
        ax.imshow(cm, cmap="Blues")
        for a in range(n):
            for b in range(n):
                ax.text(b, a, str(cm[a, b]), ha="center", va="center", fontsize=8,
                        color="white" if cm[a, b] > cm.max() / 2 else "black")
        ax.set_xticks(range(n), labels, fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
        ax.set_xlabel("judge")
        if k == 0:
            ax.set_ylabel("human majority")
        ax.set_title(name, fontsize=8)
    fig.tight_layout()
    return to_svg(fig, f"judges-confusion-{criterion['key']}")


def judges_vs_humans(study: Study, report: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    runs = list(JudgeRun.objects.filter(study=study, status=JudgeRun.Status.DONE).order_by("-finished_at")[:MAX_RUNS])
    if not runs:
        return None
    judged = {k for r in runs for k in (r.criteria or [])}
    crits = [c for c in study.rubric.get("criteria", []) if criterion_measure(c) and c["key"] in judged]
    context: dict[str, Any] = {"runs": runs, "criteria": []}
    data: dict[str, Any] = {"runs": [{"id": r.pk, "judge": r.name, "method": r.config.get("method"),
                                      "model": r.config.get("model")} for r in runs], "criteria": {}}
    if not crits:
        context["note"] = "The finished judge runs score no criterion that the report analyses."
        return {"title": TITLE, "template": "judges/report_section.html", "context": context, "data": data}
    humans_df = add_analysis_value(stats_frame(study, [c["key"] for c in crits]), crits)
    judge_rows = list(JudgeScore.objects.filter(run__in=runs, status=JudgeScore.Status.SCORED,
                                                criterion__in=[c["key"] for c in crits])
                      .values_list("run_id", "item_id", "output__position", "criterion", "value", "score"))
    for c in crits:
        measure = criterion_measure(c)
        humans, judges, names, _ = _matrices(study, c, humans_df, runs, judge_rows)
        if humans.size == 0:
            context["criteria"].append({"key": c["key"], "name": c.get("name", c["key"]), "measure": measure,
                                        "empty": True})
            continue
        result = compare_criterion(humans, judges, measure, names)
        plot = _scatter(humans, judges, c) if measure == "numeric" else _confusion(humans, judges, c)
        context["criteria"].append({"key": c["key"], "name": c.get("name", c["key"]), "measure": measure,
                                    "result": result, "plot": plot,
                                    "rows": [{"name": n, **r} for n, r in result["judges"].items()]})
        data["criteria"][c["key"]] = result
    return {"title": TITLE, "template": "judges/report_section.html", "context": context, "data": data}
