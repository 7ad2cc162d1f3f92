"""Judge juries: several finished runs (models, prompts or both) combined into one verdict per
slot, written as a run of its own so that the jury is a judge in every report, beside its
members.

- combine: mean or median (scales), majority (labels; scales fall back to it too), or
  weighted: each member weighted by its agreement with the gold answers of the study (accuracy
  for labels, 1 / (1 + MAE) for scales), a weighted vote or mean;
- quorum: how many members must have answered a slot; fewer is unparsed, saying so;
- pairwise slots: a member's verdict counts only when it survived the swap (both orders agreed);
- no majority (a tie of labels) is unparsed, never an arbitrary pick;
- inter-judge agreement (Krippendorff's α of the members, per criterion) is stored with the jury.

No model is asked: the jury's scores come from its members' stored scores.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Study
from annotation.stats.krippendorff import krippendorff_alpha
from judges.models import JudgeRun, JudgeScore
from judges.prompts.base import LABEL_KINDS
from judges.services.engine import numeric_score
from annotation.stats.gold import agrees
from judges.services.gold import gold_value

COMBINE = ("mean", "median", "majority", "weighted")


class JuryError(ValueError):
    pass


def _is_label(criterion: Mapping[str, Any] | None, slot_criterion: str) -> bool:
    return slot_criterion.startswith("pair:") or criterion is None or criterion.get("kind") in LABEL_KINDS


def _majority(values: Sequence[Any], weights: Sequence[float]) -> tuple[Any, str | None]:
    tally: dict[str, float] = defaultdict(float)
    original: dict[str, Any] = {}
    for v, w in zip(values, weights):
        tally[str(v)] += w
        original[str(v)] = v
    ranked = sorted(tally.items(), key=lambda kv: -kv[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None, f"no majority ({', '.join(f'{k}: {v:g}' for k, v in ranked)})"
    return original[ranked[0][0]], None


def gold_weights(study: Study, runs: Sequence[JudgeRun], criteria: Sequence[str]) -> dict[int, float]:
    """Each member's agreement with the study's gold answers over the slots it scored."""
    crits = {c["key"]: c for c in study.rubric.get("criteria", [])}
    weights = {}
    for run in runs:
        hits, errors = [], []
        for score in JudgeScore.objects.filter(run=run, criterion__in=criteria, status="scored").select_related(
                "item", "output"):
            gold = gold_value(score.item.gold, score.criterion, score.output.position if score.output else None)
            if gold is None:
                continue
            if _is_label(crits.get(score.criterion), score.criterion):
                hits.append(agrees(gold, score.value))
            else:
                try:
                    errors.append(abs(float(score.value) - float(gold)))
                except (TypeError, ValueError):
                    continue
        if not hits and not errors:
            raise JuryError(f"run {run.pk} ({run.name}) scored no item with a gold answer: weights cannot be learnt")
        weights[run.pk] = float(np.mean(hits)) if hits else 1.0 / (1.0 + float(np.mean(errors)))
    return weights


def _member_alpha(slots: Mapping[tuple, Mapping[int, Any]], runs: Sequence[JudgeRun], criterion: str,
                  label: bool) -> float | None:
    rows = [(slot, votes) for slot, votes in slots.items() if slot[2] == criterion]
    if not rows:
        return None
    codes: dict[str, int] = {}
    matrix = np.full((len(rows), len(runs)), np.nan)
    for i, (_, votes) in enumerate(rows):
        for j, run in enumerate(runs):
            if run.pk in votes:
                v = votes[run.pk]
                matrix[i, j] = codes.setdefault(str(v), len(codes)) if label else float(v)
    return krippendorff_alpha(matrix, "nominal" if label else "interval").value


def jury_create(*, study: Study, runs: Sequence[JudgeRun], combine: str = "mean", quorum: int | None = None,
                name: str = "", user=None) -> JudgeRun:
    """A finished run whose scores combine `runs` (finished runs of `study`)."""
    if combine not in COMBINE:
        raise JuryError(f"unknown way to combine {combine!r}; choose one of {', '.join(COMBINE)}")
    runs = list(runs)
    if len(runs) < 2:
        raise JuryError("a jury needs at least two finished runs")
    for run in runs:
        if run.study_id != study.pk or run.status not in JudgeRun.FINISHED:
            raise JuryError(f"run {run.pk} is not a finished run of this study")
    quorum = len(runs) if quorum is None else quorum
    if not 1 <= quorum <= len(runs):
        raise JuryError(f"quorum must be between 1 and {len(runs)} (the number of members)")
    criteria = sorted(set.intersection(*(set(r.criteria or []) for r in runs)))
    pair_slots = all(r.config.get("method") == "pairwise" for r in runs)
    if not criteria and not pair_slots:
        raise JuryError("the runs share no criterion to combine")
    crits = {c["key"]: c for c in study.rubric.get("criteria", [])}
    weights = gold_weights(study, runs, criteria) if combine == "weighted" else {r.pk: 1.0 for r in runs}

    slots: dict[tuple, dict[int, Any]] = defaultdict(dict)  # (item, output, criterion) -> run -> value
    failed: dict[tuple, list[str]] = defaultdict(list)
    member_rows = JudgeScore.objects.filter(run__in=runs).values_list(
        "run_id", "item_id", "output_id", "criterion", "value", "status", "doubt")
    for run_id, item_id, output_id, criterion, value, status, doubt in member_rows.iterator():
        slot = (item_id, output_id, criterion)
        if not (criterion in criteria or (pair_slots and criterion.startswith("pair:"))):
            continue
        if status != "scored":
            failed[slot].append(f"run {run_id} {status}")
        elif criterion.startswith("pair:") and (doubt or {}).get("swap_disagreement"):
            failed[slot].append(f"run {run_id} flipped on the swap")
        else:
            slots[slot][run_id] = value
    for slot in failed:
        slots.setdefault(slot, {})

    names = ", ".join(r.name for r in runs)
    config = {"name": name or f"jury-{combine}", "method": "jury", "model": f"jury of {names}",
              "backend": "jury", "members": [{"run": r.pk, "name": r.name, "model": r.config.get("model"),
                                              "weight": weights[r.pk]} for r in runs],
              "combine": combine, "quorum": quorum}
    scores = []
    for (item_id, output_id, criterion), votes in sorted(slots.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0,
                                                                                          kv[0][2])):
        crit = crits.get(criterion)
        label = _is_label(crit, criterion)
        detail: dict[str, Any] = {"votes": {str(k): v for k, v in votes.items()}}
        if failed.get((item_id, output_id, criterion)):
            detail["not_counted"] = failed[(item_id, output_id, criterion)]
        value, why = None, None
        if len(votes) < quorum:
            why = f"quorum not met: {len(votes)} of {len(runs)} members answered, {quorum} needed"
        else:
            vals, w = list(votes.values()), [weights[r] for r in votes]
            if label or combine == "majority":
                value, why = _majority(vals, w)
            elif combine == "median":
                value = float(statistics.median(float(v) for v in vals))
            else:
                value = float(np.average([float(v) for v in vals], weights=w))
        spread = (float(np.std([float(v) for v in votes.values()])) if votes and not label else None)
        doubt = {"spread": spread} if spread is not None else {
            "agreement": max(Counter(map(str, votes.values())).values()) / len(votes)} if votes else {}
        if why:
            detail["why"] = why
        scores.append(dict(item_id=item_id, output_id=output_id, criterion=criterion, value=value,
                           score=numeric_score(crit, value) if value is not None else None,
                           status="scored" if value is not None else "unparsed",
                           raw_text=why or "", doubt=doubt, detail=detail))
    agreement = {c: _member_alpha(slots, runs, c, _is_label(crits.get(c), c)) for c in criteria}
    config["inter_judge_alpha"] = agreement
    now = timezone.now()
    with transaction.atomic():
        jury = JudgeRun.objects.create(study=study, config=config, criteria=criteria, status=JudgeRun.Status.DONE,
                                       n_outputs=max(r.n_outputs for r in runs), n_expected=len(scores),
                                       created_by=user, started_at=now, finished_at=now)
        JudgeScore.objects.bulk_create([JudgeScore(run=jury, **s) for s in scores], batch_size=2000)
    from judges.services.files import write_run_files
    from judges.services.run_scores import judge_run_refresh_totals

    jury = judge_run_refresh_totals(run=jury)
    try:
        write_run_files(jury)
    except OSError:
        pass  # rebuilt from the database when first downloaded
    return jury
