"""Send the items judges are unsure about to a human study (see judges.services.doubt for why a copy)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from annotation.models import Item, Study
from annotation.services.items import items_import
from judges.models import JudgeRun, JudgeScore
from judges.services.doubt import SIGNALS, Thresholds, doubtful_items, why_no_doubt


class HandoffError(ValueError):
    pass


@dataclass
class HandoffResult:
    sent: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)
    why_none: str = ""  # when nothing was sent: why, in words an admin can act on

    @property
    def summary(self) -> str:
        if not self.sent:
            return f"Sent 0 items: {self.why_none}."
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.reasons.items()))
        return (f"Sent {len(self.sent)} item{'s' if len(self.sent) != 1 else ''}" + (f" ({reasons})" if reasons else "")
                + (f"; {len(self.already_there)} were already there" if self.already_there else ""))


def doubt_rows(runs: Sequence[JudgeRun]) -> list[dict]:
    return [{"item": item_id, "output": output_id, "criterion": crit, "run": run_id, "status": status,
             "value": value, "score": score, "doubt": doubt}
            for item_id, output_id, crit, run_id, status, value, score, doubt in
            JudgeScore.objects.filter(run__in=runs).values_list(
                "item_id", "output_id", "criterion", "run_id", "status", "value", "score", "doubt").iterator()]


def find_doubtful(runs: Sequence[JudgeRun], thresholds: Thresholds = Thresholds(),
                  signals: Iterable[str] = SIGNALS) -> dict[int, dict]:
    """item id -> {"reasons": [...], "slots": [...]} over the given runs."""
    return doubtful_items(doubt_rows(runs), thresholds, signals)


def _payload(item: Item, source: Study, reasons: list[str], runs: Sequence[JudgeRun]) -> dict:
    meta = dict(item.metadata or {})
    meta["concord_doubt"] = {"source_study": source.slug, "source_item": item.external_id, "reasons": reasons,
                             "runs": [r.pk for r in runs]}
    return {"id": item.external_id, "context": item.context, "context_kind": item.context_kind, "metadata": meta,
            "gold": item.gold or {},
            "outputs": [{"system": o.system, "content": o.content, "kind": o.kind, "metadata": o.metadata or {}}
                        for o in sorted(item.outputs.all(), key=lambda o: o.position)]}


def doubtful_send_to_study(*, source: Study, runs: Sequence[JudgeRun], target: Study,
                           thresholds: Thresholds = Thresholds(), signals: Iterable[str] = SIGNALS) -> HandoffResult:
    """Copy the doubtful items of `runs` into `target` (all or nothing); skip those already there."""
    if target.pk == source.pk:
        raise HandoffError("pick another study: these items are already in this one")
    if target.rubric_version.rubric_id != source.rubric_version.rubric_id:
        raise HandoffError(f"study {target.slug} uses another rubric ({target.rubric_version}); "
                           f"the humans must rate with {source.rubric_version.rubric.slug}")
    if target.status == Study.Status.CLOSED:
        raise HandoffError(f"study {target.slug} is closed")
    runs = [r for r in runs if r.study_id == source.pk]
    if not runs:
        raise HandoffError("no judge runs of this study were chosen")
    rows = doubt_rows(runs)
    flagged = doubtful_items(rows, thresholds, signals)
    result = HandoffResult()
    if not flagged:
        result.why_none = "no item was doubtful (" + "; ".join(why_no_doubt(rows, thresholds, signals)) + ")"
        return result
    items = list(Item.objects.filter(pk__in=flagged).prefetch_related("outputs").order_by("pk"))
    present = set(target.items.filter(external_id__in=[i.external_id for i in items])
                  .values_list("external_id", flat=True))
    lines = []
    for item in items:
        reasons = flagged[item.pk]["reasons"]
        if item.external_id in present:
            result.already_there.append(item.external_id)
            continue
        result.sent.append(item.external_id)
        result.reasons.update(reasons)
        lines.append(json.dumps(_payload(item, source, reasons, runs), ensure_ascii=False))
    if not lines:
        result.why_none = f"all {len(result.already_there)} doubtful items are already in {target.slug}"
    if lines:
        items_import(study=target, text="\n".join(lines) + "\n", filename="doubtful.jsonl", fmt="jsonl")
    return result
