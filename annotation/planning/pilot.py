"""Planning inputs read from a study used as a pilot: σ, ρ and c of a numeric criterion, R (the
study's raters per output by its design), and the tie share and win rate of its pairwise question.
A selector: reads only.

ρ is the report's ICC1 of the criterion (annotation.reports.study.criterion_icc1: the same function
on the same ratings, so the plan and the report show one figure). It counts the systems'
differences as true-score variance, so σ is the SD of single ratings over every system (not
within one): then (1 − ρ)σ² is the raters' noise as the report measures it, and ρσ² overstates the
outputs' true spread by the systems' gap, which makes the plan ask for more items, not fewer.
c is the systems' per-item correlation corrected for rater noise
(annotation.stats.pilot.disattenuate); the observed one is `corr_observed`.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np
import pandas as pd
from django.db.models import Count

from annotation.models import Item, Output, Study
from annotation.reports.ratings import stats_frame
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.reports.study import criterion_icc1
from annotation.services.comparative import shown_design
from annotation.stats.pilot import disattenuate, pairwise_summary, system_correlations
from annotation.stats.power import InvalidArgument
from annotation.stats.result import Stat

FEW_ITEMS = 10  # below this many rated items the estimates are rough; the page says so


def score_criteria(study: Study) -> list[dict[str, Any]]:
    """Numeric criteria asked of each output: the ones a score plan can be about."""
    return [c for c in study.rubric_version.criteria
            if criterion_measure(c) == "numeric" and c.get("target", "output") == "output"]


def pairwise_criteria(study: Study) -> list[dict[str, Any]]:
    return [c for c in study.rubric_version.criteria if c["kind"] == "pairwise"]


def _stat(s: Stat) -> dict[str, Any]:
    return {"value": s.value, "reason": s.reason}


def raters_per_output(study: Study) -> int:
    """The study's raters per output by its design: each of an item's `raters_per_item` raters rates
    every output, unless the rubric shows a pair or a tuple of them (shown_design): then an output has
    raters_per_item × shown / the item's outputs, on average over the items (rounded, at least 1)."""
    _, shown = shown_design(study.rubric)
    if not shown:
        return study.raters_per_item
    outputs = [n for n in Item.objects.filter(study=study, is_attention_check=False, is_training=False)
               .annotate(n=Count("outputs")).values_list("n", flat=True) if n]
    share = float(np.mean([min(shown, n) / n for n in outputs])) if outputs else 1.0
    return max(1, int(study.raters_per_item * share + 0.5))


def _rating_sd(x: np.ndarray) -> Stat:
    if x.size < 2:
        return Stat.undefined(f"too little data: {x.size} rating(s)")
    sd = float(np.std(x, ddof=1))
    return Stat.of(sd) if sd > 0 else Stat.undefined("every rating is the same (no spread)")


def _score_estimates(study: Study, criterion: Mapping[str, Any]) -> dict[str, Any]:
    df = stats_frame(study, [criterion["key"]])
    df = add_analysis_value(df[~df["is_attention_check"]], [criterion])
    df = df[df["x"].notna()]  # as the report reads them (criterion_icc1)
    out: dict[str, Any] = {"criterion": criterion["key"], "n_ratings": int(len(df)),
                           "n_items": int(df["item_id"].nunique()), "n_raters": int(df["rater_id"].nunique())}
    if df.empty:
        reason = "too little data: no ratings of this criterion yet"
        return {**out, "corr_pairs": [], "ratings_per_output": 0.0,
                **{k: {"value": None, "reason": reason} for k in ("sd", "icc", "corr", "corr_observed")}}
    icc1, k = criterion_icc1(df)
    out["icc"] = _stat(icc1 if k >= 2 else Stat.undefined("too little data: no output has two or more ratings"))
    x = df["x"].to_numpy(float)
    out["sd"] = _stat(_rating_sd(x))
    df = df[df["system"].notna()]
    x, systems = df["x"].to_numpy(float), df["system"].to_numpy()
    units = pd.MultiIndex.from_arrays([df["item_id"], df["output"]]).factorize()[0].astype(np.int64)
    corr = system_correlations(df["item_id"].to_numpy(), systems, x)
    out["corr_observed"] = {"value": corr["value"], "reason": corr["reason"]}
    out["corr_pairs"] = corr["pairs"]
    out["ratings_per_output"] = float(np.bincount(units).mean()) if units.size else 0.0
    out["corr"] = _stat(disattenuate(corr["value"], out["icc"]["value"], out["ratings_per_output"])
                        if corr["value"] is not None else Stat.undefined(corr["reason"]))
    return out


def _pairwise_estimates(study: Study, criterion: Mapping[str, Any]) -> dict[str, Any]:
    df = stats_frame(study, [criterion["key"]])
    df = df[~df["is_attention_check"]]
    values = [json.loads(v) for v in df["label"].dropna()]
    shown_ids = {i for v in values for i in v.get("shown", [])}
    system_of = dict(Output.objects.filter(item__study=study, id__in=shown_ids).values_list("id", "system"))
    judgements = []
    for v in values:
        shown = v.get("shown") or []
        if len(shown) != 2 or any(i not in system_of for i in shown):
            continue
        winner = v.get("winner")
        judgements.append((system_of[shown[0]], system_of[shown[1]],
                           "tie" if winner == "tie" else system_of.get(winner, "tie")))
    return {"criterion": criterion["key"], **pairwise_summary(judgements)}


def pilot_estimates(study: Study, *, criterion: str | None = None) -> dict[str, Any]:
    """σ, ρ, c of `criterion` (default: the first numeric output criterion) and the pairwise
    summary of the rubric's pairwise question, each with a reason when the pilot has too little
    data. Raises InvalidArgument (a ValueError) naming `criterion` when it is not a numeric output criterion."""
    scores = {c["key"]: c for c in score_criteria(study)}
    if criterion is not None and criterion not in scores:
        known = ", ".join(scores) or "none"
        raise InvalidArgument("criterion", f"{criterion!r} is not a numeric criterion of each output in "
                                           f"{study.slug} (numeric ones: {known})")
    key = criterion or next(iter(scores), None)
    out: dict[str, Any] = {"study": study.slug, "raters_per_output": raters_per_output(study), "scores": None,
                           "pairwise": None, "notes": []}
    if key is not None:
        out["scores"] = _score_estimates(study, scores[key])
        if 0 < out["scores"]["n_items"] < FEW_ITEMS:
            out["notes"].append(f"only {out['scores']['n_items']} items rated on {key}: the estimates are rough")
    pairwise = pairwise_criteria(study)
    if pairwise:
        out["pairwise"] = _pairwise_estimates(study, pairwise[0])
    if key is None and not pairwise:
        out["notes"].append("the rubric has no numeric criterion of each output and no pairwise question")
    return out


def has_ratings(estimates: Mapping[str, Any]) -> bool:
    return bool((estimates.get("scores") or {}).get("n_ratings") or (estimates.get("pairwise") or {}).get("judgements"))
