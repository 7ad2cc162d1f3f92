"""The report's per-step highlights: for a `spans` criterion asked per step of a trajectory (highlights
inside a turn, e.g. "mark any claim the tool results do not support"), per step kind and system, how
many steps the raters marked, with how many highlights, and how many raters marked something. An
empty answer is not stored, so the counts are of what was marked; the ratings download holds every
span with its offsets.

    {criterion key: {"name", "by_step_kind": {step kind: {system: {"steps_marked", "highlights",
                                                                    "raters"}}}}}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotation.models import Assignment, Output, Rating, Study
from annotation.reports.steps import per_step_criteria
from annotation.step_questions import STEP_SEPARATOR, split_key, step_info


def highlights_section(study: Study) -> dict[str, Any]:
    criteria = {k: c for k, c in per_step_criteria(study.rubric).items() if c["kind"] == "spans"}
    if not criteria:
        return {}
    ratings = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                     assignment__is_attention_check=False, criterion__contains=STEP_SEPARATOR)
               .values_list("assignment__rater_id", "output_id", "criterion", "value"))
    marked = [(rater, output_id, *split_key(criterion), value)
              for rater, output_id, criterion, value in ratings.iterator(chunk_size=5000)
              if split_key(criterion)[0] in criteria and isinstance(value, list) and value]
    outputs = Output.objects.filter(pk__in={m[1] for m in marked}).only("content", "kind", "system")
    steps = {o.pk: (step_info(o.content, o.kind), o.system) for o in outputs}
    cells: dict[tuple[str, str, str], dict[str, Any]] = defaultdict(
        lambda: {"steps": set(), "highlights": 0, "raters": set()})
    for rater, output_id, key, step, value in marked:
        info, system = steps[output_id]
        cell = cells[(key, info.get(step, {}).get("kind", "unknown"), system)]
        cell["steps"].add((output_id, step))
        cell["highlights"] += len(value)
        cell["raters"].add(rater)
    out: dict[str, Any] = {}
    for (key, step_kind, system), cell in sorted(cells.items()):
        entry = out.setdefault(key, {"name": criteria[key]["name"], "by_step_kind": {}})
        entry["by_step_kind"].setdefault(step_kind, {})[system] = {
            "steps_marked": len(cell["steps"]), "highlights": cell["highlights"], "raters": len(cell["raters"])}
    return out


def highlights_csv_rows(section: dict[str, Any]):
    """The section as the report CSV's rows: [section, criterion, subject, statistic, value, lo, hi, note]."""
    for key, entry in section.items():
        for step_kind, by_system in entry["by_step_kind"].items():
            for system, e in by_system.items():
                for statistic in ("steps_marked", "highlights", "raters"):
                    yield ["highlights", key, f"{step_kind} · {system}", statistic, e[statistic], None, None, ""]
