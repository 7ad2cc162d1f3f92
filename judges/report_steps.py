"""Judges vs humans on per-step criteria (rubric `scope: assistant_turns | steps`), per step and per
trajectory: part of the report's "Judges vs humans" section (judges.report_section).

A judge's per-step answer is stored with the slot `<key>@<step>`, the criterion a rater's per-step
rating has, so both meet on (output, step). Per step, a unit is one step of one output, compared per
criterion and step kind as whole outputs are (judges.services.humans). Per trajectory, a unit is one
output and each rater's (and each judge's) value is the mean of their answers over its steps: the
score of a scale, or for a choice the share of steps given its first choice (say, "yes, the call was
needed"), so both become numbers compared as a numeric criterion.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from annotation.models import Assignment, Output, Rating, Study
from annotation.reports.ratings import rater_names
from annotation.reports.stats import criterion_measure
from annotation.reports.steps import per_step_criteria
from annotation.step_questions import STEP_SEPARATOR, split_key, step_info
from judges.models import JudgeRun, JudgeScore
from judges.services.humans import compare_criterion

MAX_RUNS = 6


def _code(criterion: dict, value: Any, score: Any) -> float:
    """The number a value is compared as: a scale's score, a choice's index in the rubric's order."""
    if criterion_measure(criterion) == "numeric":
        try:
            return float(score if score is not None else value)
        except (TypeError, ValueError):
            return np.nan
    order = {str(ch["value"]): k for k, ch in enumerate(criterion.get("choices", []))}
    return float(order.get(str(value), np.nan))


def _share(criterion: dict, codes: list[float]) -> float:
    """A trajectory's value from its steps' codes: their mean score, or the share of first choices."""
    if criterion_measure(criterion) == "numeric":
        return float(np.mean(codes))
    return float(np.mean([c == 0 for c in codes]))


def judge_steps(study: Study) -> dict[str, Any] | None:
    """{"per_step": {key: {step kind: comparison}}, "per_trajectory": {key: comparison},
    "per_trajectory_values": {key: {run label: {output id: value}}}, "data": JSON-ready copy};
    None when the rubric asks nothing per step or no finished run judged a per-step criterion."""
    criteria = {k: c for k, c in per_step_criteria(study.rubric).items() if criterion_measure(c)}
    runs = [r for r in JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED).order_by("-finished_at")
            [:MAX_RUNS] if set(r.criteria or ()) & set(criteria)]
    if not criteria or not runs:
        return None
    kinds = {o.pk: step_info(o.content, o.kind) for o in
             Output.objects.filter(item__study=study, kind=Output.Kind.TRAJECTORY).only("content", "kind")}
    humans: dict[str, dict[tuple[int, str], dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    ratings = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                     assignment__is_attention_check=False, criterion__contains=STEP_SEPARATOR)
               .values_list("assignment__rater_id", "output_id", "criterion", "value", "score"))
    for rater, output_id, criterion, value, score in ratings.iterator(chunk_size=5000):
        key, step = split_key(criterion)
        if key in criteria and output_id in kinds:
            code = _code(criteria[key], value, score)
            if not np.isnan(code):
                humans[key][(output_id, step)][rater] = code
    judged: dict[str, dict[str, dict[tuple[int, str], float]]] = defaultdict(lambda: defaultdict(dict))
    labels = {r.pk: f"{r.name} (run {r.pk})" for r in runs}
    scores = (JudgeScore.objects.filter(run__in=runs, status=JudgeScore.Status.SCORED,
                                        criterion__contains=STEP_SEPARATOR)
              .values_list("run_id", "output_id", "criterion", "value", "score"))
    for run_id, output_id, criterion, value, score in scores.iterator(chunk_size=5000):
        key, step = split_key(criterion)
        if key in criteria:
            judged[key][labels[run_id]][(output_id, step)] = _code(criteria[key], value, score)
    names = rater_names(study)
    out: dict[str, Any] = {"per_step": {}, "per_trajectory": {}, "per_trajectory_values": {}}
    for key, c in criteria.items():
        cells = humans.get(key) or {}
        raters = sorted({r for answers in cells.values() for r in answers})
        column = {r: j for j, r in enumerate(raters)}
        rater_labels = [names.get(r, str(r)) for r in raters]
        by_kind: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for unit in sorted(cells):
            by_kind[kinds[unit[0]].get(unit[1], {}).get("kind", "unknown")].append(unit)
        out["per_step"][key] = {}
        for step_kind, units in sorted(by_kind.items()):
            matrix = np.full((len(units), len(raters)), np.nan)
            for i, unit in enumerate(units):
                for rater, code in cells[unit].items():
                    matrix[i, column[rater]] = code
            vecs = {label: np.array([answers.get(u, np.nan) for u in units]) for label, answers in judged[key].items()}
            out["per_step"][key][step_kind] = compare_criterion(matrix, vecs, criterion_measure(c), rater_labels)
        # per trajectory: each rater's and judge's answers over an output's steps, as one number
        per_output: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for (output_id, _step), answers in cells.items():
            for rater, code in answers.items():
                per_output[output_id][rater].append(code)
        outputs = sorted(per_output)
        matrix = np.full((len(outputs), len(raters)), np.nan)
        for i, output_id in enumerate(outputs):
            for rater, codes in per_output[output_id].items():
                matrix[i, column[rater]] = _share(c, codes)
        values: dict[str, dict[int, float]] = {}
        for label, answers in judged[key].items():
            steps_of: dict[int, list[float]] = defaultdict(list)
            for (output_id, _step), code in answers.items():
                if not np.isnan(code):
                    steps_of[output_id].append(code)
            values[label] = {o: _share(c, codes) for o, codes in steps_of.items()}
        vecs = {label: np.array([v.get(o, np.nan) for o in outputs]) for label, v in values.items()}
        out["per_trajectory"][key] = compare_criterion(matrix, vecs, "numeric", rater_labels)
        out["per_trajectory_values"][key] = values
    out["data"] = {"per_step": out["per_step"], "per_trajectory": out["per_trajectory"]}
    return out
