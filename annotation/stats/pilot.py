"""Planning inputs estimated from a pilot study's ratings: plain arrays in, Stats out.

- σ: the pooled within-system SD of single ratings (each rating minus its system's mean),
  so that the difference between systems, which the plan is to detect, does not count as spread;
- c: the Pearson correlation of two systems' per-item mean scores, over items both have;
  with more than two systems the mean over the pairs (each pair is listed too). Rater noise
  in the means attenuates it: the planner's c is corrected by the reliability of a mean of k
  ratings, ρk = kρ/(1+(k−1)ρ) (Spearman's correction, `disattenuate`);
- pairwise judgements: the tie share and, per pair of systems, the first system's win rate
  among decided judgements.

ρ, the inter-rater reliability, is the report's ICC1 (annotation.planning.pilot reads it with
annotation.reports.study.criterion_icc1), and the planner's σ is then the SD of single ratings over
every system (within_system_sd stays for a planner that wants the spread within one).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from .correlation import pearson
from .result import Stat

MIN_COMMON_ITEMS = 3
MAX_CORR = 0.99  # the planner needs c < 1; a corrected correlation above this is capped
MIN_DECIDED = 10  # a pair's win rate from fewer decided judgements is not worth planning with


def within_system_sd(scores: Sequence[float], systems: Sequence[str]) -> Stat:
    """√(Σ (x − mean of its system)² / (N − number of systems))."""
    frame = pd.DataFrame({"x": np.asarray(scores, dtype=float), "s": list(systems)}).dropna()
    n_groups = frame["s"].nunique()
    if len(frame) - n_groups < 1:
        return Stat.undefined(f"too little data: {len(frame)} ratings of {n_groups} system(s)")
    resid = frame["x"] - frame.groupby("s")["x"].transform("mean")
    sd = float(np.sqrt((resid**2).sum() / (len(frame) - n_groups)))
    if sd == 0:
        return Stat.undefined("every system's ratings are all equal (no spread)")
    return Stat.of(sd)


def system_correlations(items: Sequence[Any], systems: Sequence[str], scores: Sequence[float]) -> dict[str, Any]:
    """Pearson of per-item mean scores for every pair of systems; `value` is their mean."""
    frame = pd.DataFrame({"item": list(items), "s": list(systems), "x": np.asarray(scores, dtype=float)}).dropna()
    means = frame.groupby(["item", "s"])["x"].mean().unstack("s")
    pairs = []
    for a, b in combinations(sorted(means.columns), 2):
        both = means[[a, b]].dropna()
        r = pearson(both[a].to_numpy(), both[b].to_numpy()) if len(both) >= MIN_COMMON_ITEMS else \
            Stat.undefined(f"fewer than {MIN_COMMON_ITEMS} items rated for both")
        pairs.append({"systems": [a, b], "n_items": len(both), "corr": r.value, "reason": r.reason})
    defined = [p["corr"] for p in pairs if p["corr"] is not None]
    if len(means.columns) < 2:
        stat = Stat.undefined("too little data: needs outputs of at least two systems")
    elif not defined:
        stat = Stat.undefined(f"too little data: no two systems have {MIN_COMMON_ITEMS} items rated in common"
                              " with varying scores")
    else:
        stat = Stat.of(float(np.mean(defined)))
    return {"value": stat.value, "reason": stat.reason, "pairs": pairs}


def disattenuate(r: float | None, icc: float | None, k: float) -> Stat:
    """The true-score correlation c from the correlation r of means of k ratings each:
    c = r / ρk with ρk = kρ/(1+(k−1)ρ), capped to [−MAX_CORR, MAX_CORR]."""
    if r is None:
        return Stat.undefined("no observed correlation")
    if icc is None or icc <= 0:
        return Stat.undefined("needs a positive reliability ρ to correct the correlation for rater noise")
    reliability = k * icc / (1 + (k - 1) * icc)
    return Stat.of(float(np.clip(r / reliability, -MAX_CORR, MAX_CORR)))


def pairwise_summary(judgements: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """(system shown first, system shown second, winner system or 'tie') per judgement.

    Returns the tie share, each pair's decided count and win rate (of the pair's first system,
    alphabetically), and `win_rate`: the pair closest to an even split among those with at least
    MIN_DECIDED decided judgements, the hardest pair to tell apart (None, with `reason`, if none).
    """
    total = ties = 0
    wins: Counter = Counter()
    decided: Counter = Counter()
    for first, second, winner in judgements:
        total += 1
        a, b = sorted((first, second))
        if winner == "tie":
            ties += 1
            continue
        decided[(a, b)] += 1
        wins[(a, b)] += winner == a
    pairs = [{"systems": [a, b], "decided": n, "win_rate": wins[(a, b)] / n} for (a, b), n in sorted(decided.items())]
    usable = [p for p in pairs if p["decided"] >= MIN_DECIDED]
    out: dict[str, Any] = {"judgements": total, "tie_share": ties / total if total else None,
                           "pairs": pairs, "win_rate": None, "win_rate_pair": None, "reason": None}
    if not total:
        out["reason"] = "too little data: no pairwise judgements yet"
    elif not usable:
        out["reason"] = f"too little data: no pair of systems has {MIN_DECIDED} decided judgements yet"
    else:
        best = min(usable, key=lambda p: (abs(p["win_rate"] - 0.5), -p["decided"]))
        # as a win probability above ½ (the planner is symmetric)
        out["win_rate"] = max(best["win_rate"], 1 - best["win_rate"])
        out["win_rate_pair"] = best["systems"]
        if best["win_rate"] == 0.5:
            out["reason"] = "the closest pair splits evenly: enter the win probability worth detecting"
    return out
