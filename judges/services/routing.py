"""Routing inside one study, on the judges' and the raters' combined uncertainty.

Instead of copying doubtful items into another study (judges.services.handoff), an item gets a
priority in its own study, and the assignment engine serves higher priorities first:

- judges unsure, failed or disagreeing: the doubt signals of judges.services.doubt over the
  study's finished runs;
- humans disagreeing: two ratings of one output on a scale `HUMAN_SPREAD` or more apart, or
  different labels. Such an item is served first while it still has a free rater slot.

The admin sets a budget of human-rated items, and may name system comparisons ("A vs B") to
decide on one criterion: a comparison is decided when the 95% interval of the paired
difference of the systems' human means excludes 0. When the budget is spent or every named
comparison is decided, the study is paused (the change log says why). Each refresh keeps the
intervals, so the page shows them narrowing as ratings come in.

Refreshed by the Celery task judges.tasks.routing_refresh: after a judge run ends, and a few
seconds after submits (debounced through the cache).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Sequence

import numpy as np
import pandas as pd
from django.db import connection, transaction
from django.utils import timezone
from scipy.stats import t as t_dist

from annotation.models import Assignment, Item, Rating, Study, StudyChange
from annotation.reports.ratings import stats_frame
from annotation.reports.stats import criterion_measure
from annotation.services.routing_flag import routing_flag_set
from judges.models import JudgeRun, StudyRouting
from judges.services.doubt import SIGNALS
from judges.services.handoff import find_doubtful

HUMAN_SPREAD = 2.0
HISTORY = 200


class RoutingError(ValueError):
    pass


def parse_comparisons(text: str, systems: Sequence[str]) -> list[list[str]]:
    """'A vs B' per line -> [[A, B], ...]; names must be systems of the study."""
    out = []
    for n, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.replace(" VS ", " vs ").split(" vs ")]
        if len(parts) != 2 or not all(parts):
            raise RoutingError(f"comparisons, line {n}: write two systems as 'A vs B' (got {line.strip()!r})")
        unknown = [p for p in parts if p not in systems]
        if unknown:
            raise RoutingError(f"comparisons, line {n}: no system {unknown[0]!r} in this study "
                               f"(systems: {', '.join(systems)})")
        if parts[0] == parts[1]:
            raise RoutingError(f"comparisons, line {n}: a system compared with itself")
        out.append(parts)
    return out


def study_systems(study: Study) -> list[str]:
    from annotation.models import Output

    return sorted(set(Output.objects.filter(item__study=study).values_list("system", flat=True)) - {""})


def routing_configure(*, study: Study, enabled: bool, human_budget: int | None, comparisons: list[list[str]],
                      criterion: str = "", auto_pause: bool = True) -> StudyRouting:
    keys = [c["key"] for c in study.rubric.get("criteria", []) if criterion_measure(c) == "numeric"]
    if criterion and criterion not in keys:
        raise RoutingError(f"criterion: {criterion!r} is not a scale of this rubric ({', '.join(keys)})")
    if human_budget is not None and human_budget < 1:
        raise RoutingError("human budget: a whole number of items, 1 or more (or empty for no limit)")
    routing, _ = StudyRouting.objects.update_or_create(
        study=study, defaults={"enabled": enabled, "human_budget": human_budget, "comparisons": comparisons,
                               "criterion": criterion, "auto_pause": auto_pause})
    routing_flag_set(study.pk, enabled)
    if not enabled:
        Item.objects.filter(study=study, priority__gt=0).update(priority=0)
    return routing


def human_disagreement(study: Study) -> dict[int, set[str]]:
    """item id -> {"humans_disagree"} where two ratings of one output disagree."""
    crits = [c for c in study.rubric.get("criteria", []) if criterion_measure(c)]
    if not crits:
        return {}
    df = stats_frame(study, [c["key"] for c in crits])
    df = df[~df["is_attention_check"].astype(bool)]
    out: dict[int, set[str]] = {}
    measures = {c["key"]: criterion_measure(c) for c in crits}
    for (item, output, criterion), g in df.groupby(["item_id", "output", "criterion"]):
        if len(g) < 2:
            continue
        if measures[criterion] == "numeric":
            scores = g["score"].dropna().to_numpy(float)
            split = scores.size >= 2 and np.ptp(scores) >= HUMAN_SPREAD
        else:
            split = g["label"].dropna().nunique() > 1
        if split:
            out.setdefault(int(item), set()).add("humans_disagree")
    return out


def _comparison(df, a: str, b: str, level: float = 0.95) -> dict[str, Any]:
    means = df.groupby(["item_id", "system"])["score"].mean().unstack("system")
    if a not in means or b not in means:
        return {"a": a, "b": b, "n": 0, "diff": None, "ci": None, "decided": False}
    d = (means[a] - means[b]).dropna().to_numpy(float)
    if d.size < 2:
        return {"a": a, "b": b, "n": int(d.size), "diff": None, "ci": None, "decided": False}
    diff = float(d.mean())
    half = float(t_dist.ppf((1 + level) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    ci = [diff - half, diff + half]
    return {"a": a, "b": b, "n": int(d.size), "diff": diff, "ci": ci, "decided": bool(ci[0] > 0 or ci[1] < 0)}


def _backfill(study: Study, comparisons: list[list[str]], key: str, points: int = 12) -> list[dict[str, Any]]:
    """The comparisons' intervals as they stood after the first n human-rated items, at up to
    `points` n so far: a study that starts routing mid-way shows how its intervals narrowed."""
    rows = list(Rating.objects.filter(
        assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
        assignment__is_attention_check=False, assignment__ignored=False, criterion=key, output__isnull=False,
        score__isnull=False).values_list("assignment_id", "assignment__submitted_at", "assignment__item_id",
                                         "output__system", "score"))
    if not rows:
        return []
    df = pd.DataFrame(rows, columns=["assignment", "at", "item_id", "system", "score"])
    order = df.groupby("assignment")["at"].min().sort_values()
    total = len(order)
    cuts = sorted({c for c in (round(total * k / points) for k in range(1, points + 1)) if 2 <= c < total})
    history = []
    for n in cuts:
        kept = set(order.index[:n])
        part = df[df["assignment"].isin(kept)]
        found = [_comparison(part, a, b) for a, b in comparisons]
        history.append({"at": order.iloc[n - 1].isoformat(timespec="seconds"), "n_rated": n,
                        "comparisons": {f"{c['a']} vs {c['b']}": c["ci"] for c in found}})
    return history


def _criterion(study: Study, routing: StudyRouting) -> str | None:
    if routing.criterion:
        return routing.criterion
    numeric = [c["key"] for c in study.rubric.get("criteria", []) if criterion_measure(c) == "numeric"]
    return "overall" if "overall" in numeric else (numeric[0] if numeric else None)


def _set_priorities(study: Study, reasons: dict[int, set[str]]) -> None:
    table = Item._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET priority = 0 WHERE study_id = %s AND priority <> 0", [study.pk])
        if reasons:
            ids = sorted(reasons)
            cursor.execute(
                f"UPDATE {table} i SET priority = u.p FROM unnest(%s::bigint[], %s::int[]) AS u(id, p)"
                f" WHERE i.id = u.id AND i.study_id = %s",
                [ids, [min(len(reasons[i]), 100) for i in ids], study.pk])


def _examples(reasons: dict[int, set[str]], open_items: set[int], limit: int = 20) -> list[dict[str, Any]]:
    """Some routed items still waiting for a rater, with why (for the page; never shown to raters)."""
    ids = sorted(i for i in reasons if i in open_items)[:limit]
    names = dict(Item.objects.filter(pk__in=ids).values_list("pk", "external_id"))
    return [{"item": names.get(i, str(i)), "reasons": sorted(reasons[i])} for i in ids]


def routing_refresh(*, study: Study) -> dict[str, Any]:
    """Recompute priorities, the budget and the named comparisons; pause the study when done."""
    routing = StudyRouting.objects.filter(study=study).first()
    if routing is None or not routing.enabled:
        return {}
    runs = list(JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED))
    reasons: dict[int, set[str]] = defaultdict(set)
    for item_id, found in (find_doubtful(runs) if runs else {}).items():
        reasons[int(item_id)].update(found["reasons"])
    for item_id, found in human_disagreement(study).items():
        reasons[item_id].update(found)
    with transaction.atomic():
        _set_priorities(study, reasons)
    open_items = set(Item.objects.filter(study=study, is_attention_check=False,
                                         slots_taken__lt=study.raters_per_item).values_list("id", flat=True))
    counted = Counter(r for item, rs in reasons.items() for r in rs)
    n_rated = Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED,
                                        is_attention_check=False).count()
    key = _criterion(study, routing)
    comparisons = []
    if routing.comparisons and key:
        df = stats_frame(study, [key])
        df = df[~df["is_attention_check"].astype(bool)]
        comparisons = [_comparison(df, a, b) for a, b in routing.comparisons]
    stopped = None
    if routing.human_budget is not None and n_rated >= routing.human_budget:
        stopped = f"the budget of {routing.human_budget} human-rated items is spent"
    elif comparisons and all(c["decided"] for c in comparisons):
        stopped = "every named comparison is decided (its interval excludes 0)"
    history = list((routing.state or {}).get("history", []))
    if not history and comparisons:
        history = _backfill(study, routing.comparisons, key)
    history.append({"at": timezone.now().isoformat(timespec="seconds"), "n_rated": n_rated,
                    "comparisons": {f"{c['a']} vs {c['b']}": c["ci"] for c in comparisons}})
    state = {"refreshed_at": timezone.now().isoformat(timespec="seconds"), "n_rated": n_rated,
             "budget": routing.human_budget, "criterion": key,
             "routed": {"items": len(reasons), "still_open": len(open_items & set(reasons)),
                        "reasons": dict(sorted(counted.items())), "examples": _examples(reasons, open_items)},
             "comparisons": comparisons, "stopped": stopped,
             "paused": bool(stopped) and routing.auto_pause, "history": history[-HISTORY:]}
    routing.state = state
    routing.save(update_fields=["state", "updated_at"])
    if stopped and routing.auto_pause and study.status == Study.Status.OPEN:
        from annotation.services.studies import study_set_status

        study_set_status(study=study, status=Study.Status.PAUSED)
        StudyChange.objects.create(study=study, field="routing", old="", new=f"paused: {stopped}")
    return state


REASON_WORDS = {**{s: s.replace("_", " ") for s in SIGNALS}, "humans_disagree": "human raters disagree"}
