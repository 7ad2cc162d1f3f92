"""The study report's "By participants' answers" section (settings.REPORT_SECTIONS): agreement and
system scores split by a questionnaire answer (e.g. native speakers against the others), with the
report's own agreement and system computations (annotation.reports.study) run on each group's ratings.

`answer_facets(study, report)` is None when no single-choice or Likert question was answered, else
{"title", "template", "context", "data"}; per question, per answer: the raters, per criterion
Krippendorff's alpha with its bootstrap interval, and each system's mean with its interval.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.db import connection

from annotation.models import PhaseRecord, Study
from annotation.reports.ratings import stats_frame
from annotation.reports.stats import add_analysis_value
from annotation.reports.study import (
    agreement_section, analysed_criteria, item_weights, systems_section, with_raters_named,
)

TITLE = "By participants' answers"
FACET_KINDS = ("single", "likert")
N_BOOT = 200


def facet_questions(phases: dict) -> list[tuple[str, dict]]:
    """(column, question) for each question whose answers split raters into groups."""
    out = []
    for prefix, section in (("pre", "pre_questionnaire"), ("post", "post_questionnaire")):
        out += [(f"{prefix}.{q['key']}", q) for q in phases.get(section, {}).get("questions", [])
                if q["kind"] in FACET_KINDS]
    return out


def is_group(value: Any) -> bool:
    """Whether a stored answer names a group: one text or number. Answers to the other kinds (a
    multiple choice's list) and answers stored before the admin changed a question's kind are left
    out of the split, so that no participant's answer breaks the report."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def answer_facets(study: Study, report: dict[str, Any]) -> dict[str, Any] | None:
    questions = facet_questions(study.phases)
    if not questions:
        return None
    columns = {column for column, _ in questions}
    answers: dict[str, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(list))
    for rater_id, phase, given in PhaseRecord.objects.filter(study=study, phase__in=("pre", "post")).values_list(
            "rater_id", "phase", "answers"):
        for key, value in given.items():
            if f"{phase}.{key}" in columns and is_group(value):
                answers[f"{phase}.{key}"][value].append(rater_id)
    if not any(answers[column] for column, _ in questions):
        return None
    criteria = analysed_criteria(study.rubric)
    by_key = {c["key"]: c for c in criteria}
    df = with_raters_named(study, add_analysis_value(stats_frame(study, list(by_key)), criteria))
    df = df[~df["is_attention_check"]]
    names = {c["key"]: c.get("name", c["key"]) for c in criteria}
    weights = item_weights(study)  # under active inference, each facet's means are Hájek-weighted too
    facets = []
    for column, q in questions:
        groups = []
        for value, raters in sorted(answers[column].items(), key=lambda kv: str(kv[0])):
            sub = df[df["rater_id"].isin(raters)]
            agreement = agreement_section(sub, by_key, n_boot=N_BOOT, seed=0, level=0.95) if not sub.empty else {}
            systems = (systems_section(sub, study.rubric, by_key, 0.95, weights=weights)["criteria"]
                       if not sub.empty else {})
            groups.append({
                "answer": value, "label": q.get("labels", {}).get(str(value), str(value)), "n_raters": len(raters),
                "n_ratings": int(len(sub)),
                "criteria": [{"key": k, "name": names.get(k, k), "alpha": a["alpha"],
                              "systems": {s: v["mean"] for s, v in systems.get(k, {}).get("systems", {}).items()}}
                             for k, a in agreement.items()]})
        facets.append({"question": column, "text": q["text"], "groups": groups})
    data = {f["question"]: {str(g["answer"]): {"n_raters": g["n_raters"], "n_ratings": g["n_ratings"], "criteria": {
        c["key"]: {"alpha": c["alpha"], "system_means": c["systems"]} for c in g["criteria"]}}
        for g in f["groups"]} for f in facets}
    return {"title": TITLE, "template": "annotation/report_facets.html", "context": {"facets": facets},
            "data": data}


def answers_inputs(study: Study) -> str:
    """What answer_facets reads besides the ratings (annotation.reports.sections): the study's
    questionnaires and every pre- and post-study answer, as a digest computed by PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT md5(string_agg(id || ':' || rater_id || ':' || answers::text, E'\\n' ORDER BY id))"
                       f" FROM {PhaseRecord._meta.db_table} WHERE study_id = %s AND phase IN ('pre', 'post')", [study.pk])
        digest = cursor.fetchone()[0]
    return f"{json.dumps(study.phases, sort_keys=True)}:{digest}"


answer_facets.inputs = answers_inputs
