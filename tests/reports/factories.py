"""Factories for studies with submitted ratings, written straight to the tables.

The annotator workspace has its own services; these tests only need rows that look like
what it stores: a submitted Assignment per (item, rater) with its permutation, and one
Rating per (output, criterion) or per item-level criterion.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from typing import Any, Callable

from django.utils import timezone

from annotation.models import Assignment, Item, Rating, Study

SYSTEMS = ("sys-a", "sys-b", "sys-c")


def items_jsonl(n_items: int, *, systems=SYSTEMS, prefix: str = "it", gold: dict | None = None,
                attention: set[int] = frozenset()) -> str:
    """Items with one output per system; item k is an attention check when k is in `attention`."""
    lines = []
    for k in range(n_items):
        row: dict[str, Any] = {
            "id": f"{prefix}-{k:03d}",
            "context": f"Context {k} with a \"quote\", a comma, and a\nnewline",
            "outputs": [{"system": s, "content": f"Answer {k} from {s}\tç€ \\ end"} for s in systems],
        }
        if k in attention:
            row["attention_check"] = True
        if gold and k in gold:
            row["gold"] = gold[k]
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def _score(criterion: dict, value: Any) -> float | None:
    if criterion["kind"] in {"likert", "numeric", "confidence"}:
        return float(value)
    if criterion["kind"] == "binary":
        return 1.0 if value == criterion["choices"][0]["value"] else 0.0
    return None


def submit(study: Study, rater, item: Item, values: dict[tuple[int | None, str], Any], *,
           permutation: list[int] | None = None, time_ms: int = 30_000, ignored: bool = False,
           ignore_reason: str = "", comment: str = "", reasoning: str = "",
           submitted_at=None) -> Assignment:
    """One submitted assignment; `values` maps (output position or None, criterion) -> value."""
    outputs = {o.position: o for o in item.outputs.all()}
    rubric = {c["key"]: c for c in study.rubric_version.criteria}
    assignment = Assignment.objects.create(
        study=study, item=item, rater=rater, status=Assignment.Status.SUBMITTED,
        permutation=permutation if permutation is not None else sorted(outputs),
        is_attention_check=item.is_attention_check, ignored=ignored, ignore_reason=ignore_reason,
        comment=comment, time_on_task_ms=time_ms, submitted_at=submitted_at or timezone.now())
    Rating.objects.bulk_create([
        Rating(assignment=assignment, output=outputs[pos] if pos is not None else None, criterion=key,
               value=value, score=_score(rubric[key], value), reasoning=reasoning)
        for (pos, key), value in values.items()
    ])
    return assignment


def rate_study(study: Study, raters, value_fn: Callable[[int, int, int, str, random.Random], Any], *,
               criteria: list[str] | None = None, seed: int = 0, ignore: set[tuple[int, int]] = frozenset(),
               shuffle: bool = True) -> list[Assignment]:
    """Every rater rates every item on every output-level criterion (or `criteria`).

    value_fn(item_index, output_position, rater_index, criterion, rng) -> value; (item, rater)
    pairs in `ignore` are submitted as ignored without ratings. Permutations are shuffled
    (seeded), times vary per rater, submissions are spread over a day.
    """
    rng = random.Random(seed)
    keys = criteria or [c["key"] for c in study.rubric_version.criteria
                        if c.get("target", "output") == "output" and c["kind"] not in {"text", "spans"}]
    made = []
    start = timezone.now() - timedelta(days=1)
    items = list(study.items.prefetch_related("outputs").order_by("id"))
    for i, item in enumerate(items):
        positions = [o.position for o in item.outputs.all()]
        for r, rater in enumerate(raters):
            perm = positions[:]
            if shuffle:
                rng.shuffle(perm)
            when = start + timedelta(minutes=i * len(raters) + r)
            if (i, r) in ignore:
                made.append(submit(study, rater, item, {}, permutation=perm, ignored=True,
                                   ignore_reason="Unsuitable review", submitted_at=when))
                continue
            values = {(p, k): value_fn(i, p, r, k, rng) for p in positions for k in keys}
            made.append(submit(study, rater, item, values, permutation=perm,
                               time_ms=10_000 + 5_000 * r + rng.randrange(1000), submitted_at=when,
                               reasoning=f"because {i}/{r}"))
    return made
