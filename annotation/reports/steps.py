"""The report's per-step section: agreement of per-step questions (rubric `scope: assistant_turns |
steps`, stored as ratings with criterion `<key>@<step>`), per criterion x step kind, and how often
each answer was given per system; plus the step map that exports join on (item, output, step ->
step kind, tool, tool call id, span id, trace id).

A unit is one step of one output; its raters' answers are its row of the units x raters matrix,
and Krippendorff's alpha is computed as for whole outputs (nominal for choices, interval for scales).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from annotation.models import Assignment, Output, Rating, Study
from annotation.step_questions import STEP_SEPARATOR, split_key, step_info
from annotation.stats.krippendorff import krippendorff_alpha
from rubrics.schema import SCALE_KINDS, step_kinds


def per_step_criteria(rubric: dict) -> dict[str, dict]:
    return {c["key"]: c for c in rubric["criteria"] if step_kinds(c) is not None}


def step_map(study: Study) -> list[dict[str, Any]]:
    """One row per step of every trajectory output: what a per-step rating's step key stands for."""
    rows = []
    outputs = (Output.objects.filter(item__study=study, kind=Output.Kind.TRAJECTORY)
               .select_related("item").order_by("item_id", "position"))
    for o in outputs.iterator(chunk_size=500):
        for key, info in step_info(o.content, o.kind).items():
            rows.append({"item": o.item.external_id, "output": o.position, "system": o.system, "step": key, **info})
    return rows


def _stat(s) -> dict[str, Any]:
    return {"value": s.value, "reason": s.reason}


def steps_section(study: Study) -> dict[str, Any]:
    """{criterion key: {step kind: {n_units, n_ratings, alpha, alpha_level, percent_agreement, answers,
    by_system}}}; empty when the rubric asks nothing per step."""
    # Highlights (spans) have no answer to agree on here; exports carry them per step.
    criteria = {k: c for k, c in per_step_criteria(study.rubric).items() if c["kind"] != "spans"}
    if not criteria:
        return {}
    ratings = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                     assignment__is_attention_check=False, criterion__contains=STEP_SEPARATOR)
               .values_list("assignment__rater_id", "output_id", "criterion", "value", "score"))
    outputs = Output.objects.filter(item__study=study, kind=Output.Kind.TRAJECTORY).only("content", "kind", "system")
    kinds = {o.pk: step_info(o.content, o.kind) for o in outputs.iterator(chunk_size=500)}
    systems = dict(Output.objects.filter(pk__in=list(kinds)).values_list("pk", "system"))
    cells: dict[tuple[str, str], dict[tuple[int, str], dict[int, Any]]] = defaultdict(lambda: defaultdict(dict))
    for rater, output_id, criterion, value, score in ratings.iterator(chunk_size=5000):
        key, step = split_key(criterion)
        if key not in criteria or output_id not in kinds:
            continue
        step_kind = kinds[output_id].get(step, {}).get("kind", "unknown")
        cells[(key, step_kind)][(output_id, step)][rater] = value if criteria[key]["kind"] not in SCALE_KINDS else score
    out: dict[str, Any] = {}
    for (key, step_kind), units in sorted(cells.items()):
        c = criteria[key]
        numeric = c["kind"] in SCALE_KINDS
        raters = sorted({r for answers in units.values() for r in answers})
        column = {r: j for j, r in enumerate(raters)}
        codes: dict[str, int] = {}
        matrix = np.full((len(units), len(raters)), np.nan)
        agree, pairs = 0, 0
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for i, ((output_id, _step), answers) in enumerate(units.items()):
            for rater, value in answers.items():
                matrix[i, column[rater]] = float(value) if numeric else codes.setdefault(str(value), len(codes))
                counts[systems[output_id]][str(value)] += 1
            values = [str(v) for v in answers.values()]
            for a in range(len(values)):
                for b in range(a + 1, len(values)):
                    pairs += 1
                    agree += values[a] == values[b]
        level = "interval" if numeric else "nominal"
        out.setdefault(key, {"name": c["name"], "kind": c["kind"], "by_step_kind": {}})
        out[key]["by_step_kind"][step_kind] = {
            "n_units": len(units), "n_ratings": int(np.isfinite(matrix).sum()), "n_raters": len(raters),
            "alpha_level": level, "alpha": _stat(krippendorff_alpha(matrix, level)),
            "percent_agreement": agree / pairs if pairs else None,
            "answers_by_system": {s: dict(v) for s, v in sorted(counts.items())},
        }
    return out


def steps_csv_rows(section: dict[str, Any]):
    """The section as the report CSV's rows: [section, criterion, subject, statistic, value, lo, hi, note]."""
    for key, entry in section.items():
        for step_kind, e in entry["by_step_kind"].items():
            yield ["steps", key, step_kind, f"krippendorff_alpha_{e['alpha_level']}", e["alpha"]["value"], None, None,
                   e["alpha"]["reason"] or ""]
            yield ["steps", key, step_kind, "percent_agreement", e["percent_agreement"], None, None, ""]
            yield ["steps", key, step_kind, "n_units", e["n_units"], None, None, ""]
            for system, answers in e["answers_by_system"].items():
                for value, n in answers.items():
                    yield ["steps", key, f"{step_kind} · {system}", f"answer={value}", n, None, None, ""]
