"""The study report's "Judges vs humans" section (registered in settings.REPORT_SECTIONS).

`judges_vs_humans(study, report)` returns None when the study has no finished judge run,
else {"title", "template", "context", "data"}: per analysed criterion, each finished run
(the latest MAX_RUNS) against the human ratings, with the human ceiling and a verdict
(judges.services.humans), a scatter or confusion plot as inline SVG, and the same numbers
as plain data for the report's JSON download.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from django.db.models import Count
from matplotlib.figure import Figure

from annotation.models import Item, Study
from annotation.reports.plots import COLORS, to_svg
from annotation.reports.rater_models import modelled_consensus
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.reports.ratings import rater_names, stats_frame
from rubrics.schema import step_kinds
from judges import score_arrays
from judges.models import JudgeRun, JudgeScore
from judges.report_steps import judge_steps
from judges.services.humans import compare_criterion, consensus

TITLE = "Judges vs humans"
MAX_RUNS = 6
MAX_PLOTTED = 4  # judges per plot
# Outputs in a scatter plot and in the table beside it, at most: a sample beyond (a table of every
# output was 2.5 million rows of HTML at 500,000 outputs); the statistics use every output.
MAX_PLOTTED_OUTPUTS = 2000


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


def _run_label(run: JudgeRun) -> str:
    return f"{run.name} (run {run.pk})"


def _no_verdict(counts: Mapping[str, int]) -> int:
    return counts.get(JudgeScore.Status.UNPARSED, 0) + counts.get(JudgeScore.Status.REFUSAL, 0)


def answer_counts(runs: Sequence[JudgeRun]) -> list[dict[str, Any]]:
    """Per run: how many answers were scored, unparsed, refused or failed, in all and per criterion.

    Unparsed answers never enter the statistics; this is where they are counted and shown."""
    per: dict[int, dict[str, dict[str, int]]] = {r.pk: {} for r in runs}
    rows = (JudgeScore.objects.filter(run__in=runs).values("run_id", "criterion", "status")
            .annotate(n=Count("id")).order_by())
    for row in rows:
        per[row["run_id"]].setdefault(row["criterion"], {})[row["status"]] = row["n"]
    return [{"run": r, "label": _run_label(r), "expected": r.n_expected, "scored": r.n_scored,
             "unparsed": r.n_unparsed, "refusal": r.n_refusal, "error": r.n_error, "by_criterion": per[r.pk]}
            for r in runs]


def _matrices(criterion: Mapping[str, Any], humans_df, runs: Sequence[JudgeRun],
              judged: Mapping[tuple[int, str], pd.DataFrame], names: Mapping[int, str],
              ) -> tuple[np.ndarray, dict[str, np.ndarray], list[str], np.ndarray]:
    """(outputs x raters matrix of the humans' values, per run its values by output, the raters'
    names, the outputs as units (score_arrays)), outputs and raters in sorted order. Built from arrays:
    a Python step per rating (and one per judge answer per criterion and run) took minutes at ten
    million ratings."""
    key, measure = criterion["key"], criterion_measure(criterion)
    df = humans_df[(humans_df["criterion"] == key) & ~humans_df["is_attention_check"].astype(bool)]
    df = df[~np.isnan(df["x"].to_numpy(dtype=float))]
    unit_keys = score_arrays.units_of(df["item_id"].to_numpy(np.int64), df["output"].to_numpy(np.int64))
    unit_set, unit_of = np.unique(unit_keys, return_inverse=True)
    raters, rater_of = np.unique(df["rater_id"].to_numpy(np.int64), return_inverse=True)
    humans = np.full((unit_set.size, raters.size), np.nan)
    humans[unit_of, rater_of] = df["x"].to_numpy(dtype=float)
    judges: dict[str, np.ndarray] = {}
    for run in runs:
        if key not in (run.criteria or []):
            continue
        vec = np.full(unit_set.size, np.nan)
        rows = judged.get((run.pk, key))
        if rows is not None and len(rows) and unit_set.size:
            wanted = rows["unit"].to_numpy()
            at = np.minimum(np.searchsorted(unit_set, wanted), unit_set.size - 1)
            hit = unit_set[at] == wanted
            vec[at[hit]] = _judge_codes(criterion, measure, rows["value"].to_numpy(object)[hit],
                                        rows["score"].to_numpy(float)[hit])
        judges[_run_label(run)] = vec
    return humans, judges, [names.get(int(r), str(r)) for r in raters], unit_set


def _judge_codes(criterion: Mapping[str, Any], measure: str, values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """_judge_code of many answers: each distinct value (JSON text) is read once."""
    codes, distinct = pd.factorize(values)  # -1: no value
    per_value = np.array([_judge_code(criterion, measure, json.loads(v), None) for v in distinct] + [np.nan])
    out = per_value[codes]
    if measure == "numeric":
        out = np.where(np.isnan(scores), out, scores)
    return out


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


def _plot_sample(n: int) -> np.ndarray:
    """The outputs a plot and its table show: all, or MAX_PLOTTED_OUTPUTS drawn at random (the same
    for every view of the same data), in their order."""
    if n <= MAX_PLOTTED_OUTPUTS:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, MAX_PLOTTED_OUTPUTS, replace=False))


def _outputs_named(units: np.ndarray) -> list[str]:
    """Each unit as the table names it: the item's id in the study, with "#position" for an output."""
    items, positions = units // score_arrays.UNIT_BASE, units % score_arrays.UNIT_BASE - 1
    names = dict(Item.objects.filter(id__in=np.unique(items).tolist()).values_list("id", "external_id"))
    return [names.get(int(i), str(i)) + (f" #{p}" if p >= 0 else "") for i, p in zip(items, positions)]


def _plot_table(humans: np.ndarray, judges: Mapping[str, np.ndarray], criterion: Mapping[str, Any], measure: str,
                outputs: Sequence[str]) -> dict[str, Any]:
    """The plot's data as a table: per output, the humans' mean (or majority) and each plotted judge."""
    shown = list(judges.items())[:MAX_PLOTTED]
    choices = [str(ch["value"]) for ch in criterion.get("choices", [])]
    human = consensus(humans, measure)

    def cell(v: float) -> str | None:
        if np.isnan(v):
            return None
        return f"{v:.2f}" if measure == "numeric" else choices[int(v)]

    rows = [[name, cell(human[k])] + [cell(vec[k]) for _, vec in shown] for k, name in enumerate(outputs)]
    return {"columns": ["Output", "Human mean" if measure == "numeric" else "Human majority"] + [n for n, _ in shown],
            "rows": rows}


def finished_runs_inputs(study: Study) -> str:
    """What the judges' report sections read besides the ratings (annotation.reports.sections): the
    study's finished runs as they stand (a run finished again, after a resume, has a new finish time)."""
    return repr(list(JudgeRun.objects.filter(study=study, status__in=(*JudgeRun.FINISHED, JudgeRun.Status.FAILED))
                     .order_by("pk").values_list("pk", "status", "finished_at", "n_scored", "n_unparsed", "n_refusal",
                                                 "n_error", "criteria", "config")))


def failed_runs(study: Study) -> list[dict[str, Any]]:
    """The failed runs the section leaves out, each with why: the latest of each judge that has
    not finished a run since (a failed run has no verdict to compare; a later finished one speaks)."""
    finished_after: dict[str, Any] = {}
    for name, at in JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED).values_list(
            "config__name", "created_at"):
        finished_after[name] = max(at, finished_after.get(name, at))
    out, seen = [], set()
    for run in JudgeRun.objects.filter(study=study, status=JudgeRun.Status.FAILED).order_by("-created_at"):
        if run.name in seen or (run.name in finished_after and finished_after[run.name] > run.created_at):
            continue
        seen.add(run.name)
        out.append({"id": run.pk, "judge": run.name, "status": run.status,
                    "reason": (run.error_shown or "no call succeeded").splitlines()[0][:300]})
    return out[:MAX_RUNS]


def _against_modelled(humans: np.ndarray, judges: Mapping[str, np.ndarray], n_classes: int) -> dict[str, Any] | None:
    """Each judge's agreement with the humans' consensus as the report's rater models make it (the
    majority unless a model of the raters fits clearly better): the human answer the section names."""
    fit = modelled_consensus(humans, n_classes)
    if fit is None:
        return None
    out = {"method": fit["method"], "reason": fit["reason"], "judges": {}}
    for name, vec in judges.items():
        both = ~np.isnan(vec) & ~np.isnan(fit["labels"])
        n = int(both.sum())
        out["judges"][name] = {"n": n, "agreement": float(np.mean(vec[both] == fit["labels"][both])) if n else None}
    return out


def _step_rows(steps: Mapping[str, Any] | None, rubric: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per per-step criterion, one row per (judge, step kind) and per (judge, whole trajectory)."""
    if not steps:
        return []
    names = {c["key"]: c.get("name", c["key"]) for c in rubric.get("criteria", [])}
    out = []
    for key, by_kind in steps["per_step"].items():
        rows = [{"unit": f"each {kind.replace('_', ' ')}", "measure": res["measure"], "judge": name, **r}
                for kind, res in by_kind.items() for name, r in res["judges"].items()]
        whole = steps["per_trajectory"][key]
        rows += [{"unit": "per trajectory", "measure": "numeric", "judge": name, **r}
                 for name, r in whole["judges"].items()]
        out.append({"key": key, "name": names.get(key, key), "rows": rows})
    return out


def judges_vs_humans(study: Study, report: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    runs = list(JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED).order_by("-finished_at")[:MAX_RUNS])
    left_out = failed_runs(study)
    if not runs and not left_out:
        return None
    if not runs:
        return {"title": TITLE, "template": "judges/report_section.html",
                "context": {"runs": [], "criteria": [], "answers": [], "left_out": left_out,
                            "note": "No judge run finished: the failed ones below are left out."},
                "data": {"runs": [], "criteria": {}, "left_out": left_out}}
    judged = {k for r in runs for k in (r.criteria or [])}
    crits = [c for c in study.rubric.get("criteria", []) if criterion_measure(c) and c["key"] in judged
             and step_kinds(c) is None]  # per-step ones are compared per step and per trajectory below
    answers = answer_counts(runs)
    steps = judge_steps(study)
    context: dict[str, Any] = {"runs": runs, "criteria": [], "answers": answers, "left_out": left_out,
                               "steps": _step_rows(steps, study.rubric)}
    data: dict[str, Any] = {"runs": [{"id": r.pk, "judge": r.name, "method": r.config.get("method"),
                                      "model": r.config.get("model"),
                                      "answers": {k: v for k, v in a.items() if k != "run"}}
                                     for r, a in zip(runs, answers)], "criteria": {}, "left_out": left_out}
    if steps:
        data["steps"] = steps["data"]
    if not crits and steps:
        return {"title": TITLE, "template": "judges/report_section.html", "context": context, "data": data}
    if not crits:
        context["note"] = "The finished judge runs score no criterion that the report analyses."
        return {"title": TITLE, "template": "judges/report_section.html", "context": context, "data": data}
    humans_df = add_analysis_value(stats_frame(study, [c["key"] for c in crits]), crits)
    judged = {key: part for key, part in score_arrays.scored(
        runs, [c["key"] for c in crits], values=True).groupby(["run_id", "criterion"], sort=False)}
    rater_of = rater_names(study)
    for c in crits:
        measure = criterion_measure(c)
        humans, judges, names, unit_set = _matrices(c, humans_df, runs, judged, rater_of)
        if humans.size == 0:
            context["criteria"].append({"key": c["key"], "name": c.get("name", c["key"]), "measure": measure,
                                        "empty": True})
            continue
        result = compare_criterion(humans, judges, measure, names)
        if measure == "categorical":
            result["modelled"] = _against_modelled(humans, judges, len(c.get("choices", [])))
        shown = _plot_sample(unit_set.size)
        some_humans, some_judges = humans[shown], {n: v[shown] for n, v in judges.items()}
        plot = _scatter(some_humans, some_judges, c) if measure == "numeric" else _confusion(humans, judges, c)
        table = _plot_table(some_humans, some_judges, c, measure, _outputs_named(unit_set[shown])) if plot else None
        sample = {"shown": len(shown), "of": unit_set.size} if len(shown) < unit_set.size else None
        unparsed = {_run_label(a["run"]): a["by_criterion"].get(c["key"], {}) for a in answers}
        context["criteria"].append({"key": c["key"], "name": c.get("name", c["key"]), "measure": measure,
                                    "result": result, "plot": plot, "plot_table": table, "plot_sample": sample,
                                    "rows": [{"name": n, **r, "unparsed": _no_verdict(unparsed.get(n, {}))}
                                             for n, r in result["judges"].items()]})
        data["criteria"][c["key"]] = result
    return {"title": TITLE, "template": "judges/report_section.html", "context": context, "data": data}


judges_vs_humans.inputs = finished_runs_inputs
