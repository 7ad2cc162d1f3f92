"""A study's items and judge scores as Label Studio tasks with predictions, and the labeling config
they fit (Label Studio's documented import format: a list of {data, predictions: [{model_version,
score, result: [{from_name, to_name, type, value}]}]}).

Each item's task has data {id, context, output_1..K}; each judge run that scored it gives one
prediction (model_version "<judge> run <id>", score the mean of its scores on scale criteria, 0
without any) with one region per scored (output, criterion): `<criterion>_r<n>` on `output_<n>`. Judge scores are read through the
app registry: annotation does not import judges (judges -> annotation), but a researcher's export
holds what the judges said about the study.
"""

from __future__ import annotations

import json
from collections import defaultdict
from statistics import fmean
from typing import Iterator
from xml.sax.saxutils import quoteattr

from django.apps import apps

from annotation.models import Item, Study

SCALES = ("likert", "numeric", "confidence")
CONTROL = {"likert": "rating", "numeric": "number", "confidence": "number", "binary": "choices", "choice": "choices",
           "text": "textarea"}


def control_name(key: str, response: int | None) -> str:
    return f"{key}_r{response}" if response is not None else key


def _to_name(response: int | None) -> str:
    return f"output_{response}" if response is not None else "context"


def _region(criterion: dict, response: int | None, value) -> dict | None:
    kind = CONTROL.get(criterion["kind"])
    if kind is None or value is None:
        return None
    inner = {"rating": {"rating": value}, "number": {"number": value}, "choices": {"choices": [str(value)]},
             "textarea": {"text": [str(value)]}}[kind]
    return {"from_name": control_name(criterion["key"], response), "to_name": _to_name(response), "type": kind,
            "value": inner}


def labeling_config(study: Study) -> str:
    """The XML config whose controls the tasks' predictions name (criteria Label Studio has no control
    for, such as highlights and comparisons, are left out)."""
    rubric = study.rubric_version.definition
    n = max((i.outputs.count() for i in study.items.all()[:1]), default=0)
    lines = ["<View>", '  <Text name="context" value="$context"/>']
    places = [None, *range(1, n + 1)]
    for response in places:
        if response is not None:
            lines += [f'  <Header value="Output {response}"/>', f'  <Text name="output_{response}" value="$output_{response}"/>']
        for c in rubric["criteria"]:
            if (c["target"] == "item") != (response is None) or c["kind"] not in CONTROL:
                continue
            attrs = f'name={quoteattr(control_name(c["key"], response))} toName="{_to_name(response)}"'
            kind = CONTROL[c["kind"]]
            if kind == "rating":
                lines.append(f'  <Rating {attrs} maxRating="{int(c["max"])}"/>')
            elif kind == "number":
                lines.append(f'  <Number {attrs} min="{c["min"]}" max="{c["max"]}"/>')
            elif kind == "choices":
                options = "".join(f"<Choice value={quoteattr(str(o['value']))}/>" for o in c["choices"])
                lines.append(f'  <Choices {attrs} choice="single">{options}</Choices>')
            else:
                lines.append(f"  <TextArea {attrs}/>")
    return "\n".join([*lines, "</View>"]) + "\n"


def label_studio_tasks(study: Study) -> list[dict]:
    JudgeScore = apps.get_model("judges", "JudgeScore")
    criteria = {c["key"]: c for c in study.rubric_version.definition["criteria"]}
    scores = defaultdict(lambda: defaultdict(list))  # item id -> run -> [(position, criterion, value, score)]
    runs = {}
    for s in (JudgeScore.objects.filter(run__study=study, status="scored").select_related("run__judge", "output")
              .order_by("run_id", "item_id", "output__position", "criterion")):
        runs[s.run_id] = s.run
        scores[s.item_id][s.run_id].append((s.output.position if s.output else None, s.criterion, s.value, s.score))
    tasks = []
    for item in Item.objects.filter(study=study).prefetch_related("outputs").order_by("id"):
        outputs = sorted(item.outputs.all(), key=lambda o: o.position)
        data = {"id": item.external_id, "context": item.context}
        data.update({f"output_{o.position + 1}": o.content for o in outputs})
        predictions = []
        for run_id, rows in scores[item.pk].items():
            run = runs[run_id]
            regions = [r for position, key, value, _ in rows if key in criteria
                       if (r := _region(criteria[key], None if position is None else position + 1, value))]
            numeric = [score for _, key, _, score in rows
                       if score is not None and criteria.get(key, {}).get("kind") in SCALES]
            name = run.judge.name if run.judge else run.config.get("name", "judge")
            predictions.append({"model_version": f"{name} run {run_id}",
                                "score": fmean(numeric) if numeric else 0.0, "result": regions})
        tasks.append({"data": data, "predictions": predictions})
    return tasks


def label_studio_chunks(study: Study, **_options) -> Iterator[bytes]:
    yield json.dumps(label_studio_tasks(study), indent=1, ensure_ascii=False).encode() + b"\n"
