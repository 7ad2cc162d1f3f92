"""Seed 002 consensus: weighted consensus per output per criterion with a 95% CI, group and
overall scores, the ICC acceptance flag, and RLHF preference pairs.

Consensus = sum(w_i * s_i) / sum(w_i) (uniform w_i = 1 by default). CI methods:
- "normal": the seed's consensus +- 1.96 * sd / sqrt(n) (sd with ddof=1);
- "t": the same with Student's t quantile (n - 1 df), better for the usual 2-5 raters;
- "bootstrap": percentile bootstrap over the raters' scores.
With unequal weights, sd is the weighted (reliability-weights) sd and n the effective n
(sum w)^2 / sum w^2; both reduce to the plain ones for uniform weights.
The overall CI is computed the same way from each rater's own overall score.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm
from scipy.stats import t as t_dist

CIMethod = Literal["normal", "t", "bootstrap"]


def weighted_consensus(scores: Sequence[float], weights: Sequence[float] | None = None, *,
                       method: CIMethod = "normal", level: float = 0.95, n_boot: int = 2000,
                       seed: int = 0) -> dict[str, Any]:
    """{"consensus", "ci": [lo, hi] | None, "sd", "n"} of one output's scores on one criterion.

    Reference: Kish (1965), Survey Sampling (effective sample size of a weighted mean).
    """
    s = np.asarray(scores, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    ok = ~np.isnan(s)
    s, w = s[ok], w[ok]
    if s.size == 0 or w.sum() <= 0:
        return {"consensus": None, "ci": None, "sd": None, "n": int(s.size),
                "reason": "no ratings"}
    mean = float(np.sum(w * s) / np.sum(w))
    out: dict[str, Any] = {"consensus": mean, "ci": None, "sd": None, "n": int(s.size)}
    if s.size < 2:
        out["reason"] = "a CI needs at least two ratings"
        return out
    v1, v2 = w.sum(), np.sum(w * w)
    sd = float(np.sqrt(np.sum(w * (s - mean) ** 2) / (v1 - v2 / v1)))
    n_eff = v1 * v1 / v2
    out["sd"] = sd
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, s.size, size=(n_boot, s.size))
        draws = np.sum(w[idx] * s[idx], axis=1) / np.sum(w[idx], axis=1)
        tail = (1 - level) / 2 * 100
        lo, hi = np.percentile(draws, [tail, 100 - tail])
        out["ci"] = [float(lo), float(hi)]
        return out
    if method == "normal":
        q = float(norm.ppf((1 + level) / 2))  # 1.96 at 95%, as in the seed
    elif method == "t":
        q = float(t_dist.ppf((1 + level) / 2, n_eff - 1))
    else:
        raise ValueError(f"unknown CI method {method!r}")
    half = q * sd / np.sqrt(n_eff)
    out["ci"] = [mean - half, mean + half]
    return out


def consensus_table(ratings: pd.DataFrame, *, rater_weights: Mapping[str, float] | None = None,
                    method: CIMethod = "normal", level: float = 0.95) -> pd.DataFrame:
    """Per (item, output, criterion): consensus, ci_low, ci_high, sd, n.

    `ratings` has columns item, output, rater, criterion, score (plain rows). Uniform weights
    with a normal or t CI are computed over whole columns (1M ratings in well under a second);
    rater weights and the bootstrap go group by group through weighted_consensus.
    """
    columns = ["item", "output", "criterion", "consensus", "ci_low", "ci_high", "sd", "n"]
    if rater_weights is None and method in ("normal", "t"):
        g = ratings.groupby(["item", "output", "criterion"], sort=True, observed=True)["score"]
        out = g.agg(consensus="mean", sd="std", n="count").reset_index()
        q = (norm.ppf((1 + level) / 2) if method == "normal"
             else t_dist.ppf((1 + level) / 2, np.maximum(out["n"] - 1, 1)))
        half = q * out["sd"] / np.sqrt(out["n"])
        ok = out["n"] >= 2
        out["ci_low"] = (out["consensus"] - half).where(ok)
        out["ci_high"] = (out["consensus"] + half).where(ok)
        out["sd"] = out["sd"].where(ok)
        return out[columns]
    rows = []
    for (item, output, criterion), g in ratings.groupby(["item", "output", "criterion"], sort=True):
        w = None if rater_weights is None else [rater_weights.get(r, 1.0) for r in g["rater"]]
        c = weighted_consensus(g["score"].to_numpy(float), w, method=method, level=level)
        ci = c["ci"] or [None, None]
        rows.append({"item": item, "output": output, "criterion": criterion, "consensus": c["consensus"],
                     "ci_low": ci[0], "ci_high": ci[1], "sd": c["sd"], "n": c["n"]})
    return pd.DataFrame(rows, columns=columns)


def combine(scores: Mapping[str, float], rubric: Mapping[str, Any]) -> dict[str, float | None]:
    """Group scores (weighted mean of their criteria) and the overall (weighted mean of groups).

    Criteria with `overall: true` or a non-numeric kind are left out of the combination.
    Without groups, the overall is the weighted mean of the criteria.
    """
    present = {k: float(v) for k, v in scores.items() if v is not None}
    row = combine_frame(pd.DataFrame([present], dtype=float), rubric).iloc[0]
    return {k: (None if np.isnan(v) else float(v)) for k, v in row.items()}


def combine_frame(wide: pd.DataFrame, rubric: Mapping[str, Any]) -> pd.DataFrame:
    """`combine` on every row of a (rows x criterion keys) frame at once; NaN where undefined.
    Columns: the group keys, then `overall` (see combine_parts when a key may be `overall`)."""
    groups, overall = combine_parts(wide, rubric)
    out = pd.DataFrame(groups, index=wide.index)
    out["overall"] = overall
    return out


def combine_parts(wide: pd.DataFrame, rubric: Mapping[str, Any]) -> tuple[dict[str, pd.Series], pd.Series]:
    """({group key: group score}, overall) of every row of a (rows x criterion keys) frame.

    Kept apart rather than as columns of one frame, so that a group or criterion keyed
    `overall` (seed 000 has a rated "Overall Rating") never meets the computed overall.
    """
    criteria = [c for c in rubric.get("criteria", []) if not c.get("overall") and c["key"] in wide.columns]

    def wmean(keys: list[str], weights: list[float]) -> pd.Series:
        if not keys:
            return pd.Series(np.nan, index=wide.index)
        vals = wide[keys].to_numpy(dtype=float)
        w = np.where(np.isnan(vals), 0.0, np.asarray(weights, dtype=float))
        den = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return pd.Series(np.where(den > 0, np.nansum(vals * w, axis=1) / den, np.nan), index=wide.index)

    groups = rubric.get("groups") or []
    if not groups:
        return {}, wmean([c["key"] for c in criteria], [float(c.get("weight", 1.0)) for c in criteria])
    scores: dict[str, pd.Series] = {}
    num = pd.Series(0.0, index=wide.index)
    den = pd.Series(0.0, index=wide.index)
    for g in groups:
        members = [c for c in criteria if c.get("group") == g["key"]]
        s = wmean([c["key"] for c in members], [float(c.get("weight", 1.0)) for c in members])
        scores[g["key"]] = s
        gw = float(g.get("weight", 1.0))
        num += (s * gw).fillna(0.0)
        den += s.notna() * gw
    return scores, (num / den).where(den > 0)


def output_scores(ratings: pd.DataFrame, rubric: Mapping[str, Any], *,
                  rater_weights: Mapping[str, float] | None = None, method: CIMethod = "normal",
                  level: float = 0.95) -> list[dict[str, Any]]:
    """Per (item, output): group scores, overall, the overall's CI and the vote count (seed schema).

    Group scores combine the criterion consensuses; the CI comes from the raters' own overall
    scores (each rater's criteria combined the same way), weighted like the consensus.
    """
    out = []
    for (item, output), g in ratings.groupby(["item", "output"], sort=True):
        per_crit = g.groupby("criterion")
        consensus = {}
        for crit, gc in per_crit:
            w = None if rater_weights is None else [rater_weights.get(r, 1.0) for r in gc["rater"]]
            consensus[str(crit)] = weighted_consensus(gc["score"].to_numpy(float), w)["consensus"]
        combined = combine(consensus, rubric)
        per_rater = []
        raters = []
        for rater, gr in g.groupby("rater", sort=True):
            own = combine(dict(zip(gr["criterion"].astype(str), gr["score"].astype(float))), rubric)
            if own["overall"] is not None:
                per_rater.append(own["overall"])
                raters.append(rater)
        w = None if rater_weights is None else [rater_weights.get(r, 1.0) for r in raters]
        ci = weighted_consensus(per_rater, w, method=method, level=level)["ci"] if per_rater else None
        out.append({"item": item, "output": output, "criteria": consensus, **combined,
                    "confidence_interval": ci, "vote_count": int(g["rater"].nunique())})
    return out


def acceptance(icc_by_criterion: Mapping[str, float | None], threshold: float = 0.70) -> dict[str, bool | None]:
    """ICC >= threshold per criterion (seed 002, Cicchetti 1994); None when the ICC is undefined.

    The seed's formula, (MSB - MSW) / (MSB + (k-1) MSW), is ICC1; pass the form you report.
    """
    return {k: (None if v is None else bool(v >= threshold)) for k, v in icc_by_criterion.items()}


def preference_pairs(outputs: Iterable[Mapping[str, Any]], *, min_delta: float = 0.5,
                     score_key: str = "overall", dataset_version: str = "1.0.0",
                     evaluation_date: str | None = None,
                     score_fields: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """RLHF preference pairs in seed 002's JSON schema, from every pair of outputs of an item.

    Each output row: {"item", "prompt", "system", "content", score_key: float, and the score
    fields (e.g. "technical", "aesthetic"), "confidence_interval", "vote_count"}. Pairs whose
    difference is below `min_delta` (ties and near-ties) are excluded.

    Reference: Ouyang et al. (2022), InstructGPT, NeurIPS; seed 002's pair schema.
    """
    by_item: dict[Any, list[Mapping[str, Any]]] = {}
    for row in outputs:
        if row.get(score_key) is not None:
            by_item.setdefault(row["item"], []).append(row)
    pairs = []
    for item, rows in by_item.items():
        for a, b in combinations(rows, 2):
            delta = float(a[score_key]) - float(b[score_key])
            if abs(delta) < min_delta:
                continue
            chosen, rejected = (a, b) if delta > 0 else (b, a)
            pairs.append({
                "prompt": chosen.get("prompt", ""),
                "chosen": chosen.get("content", ""),
                "rejected": rejected.get("content", ""),
                "metadata": {
                    "challenge": item,
                    "chosen_model": chosen.get("system"),
                    "rejected_model": rejected.get("system"),
                    "chosen_scores": _scores(chosen, score_key, score_fields),
                    "rejected_scores": _scores(rejected, score_key, score_fields),
                    "score_difference": round(abs(delta), 10),
                    "dataset_version": dataset_version,
                    "evaluation_date": evaluation_date,
                },
            })
    return pairs


def _scores(row: Mapping[str, Any], score_key: str, fields: Sequence[str] | None) -> dict[str, Any]:
    skip = {"item", "prompt", "system", "content", "criteria", "output", "confidence_interval",
            "vote_count", score_key}
    names = list(fields) if fields is not None else [k for k, v in row.items()
                                                     if k not in skip and isinstance(v, (int, float))]
    out: dict[str, Any] = {k: row.get(k) for k in names}
    out[score_key] = row[score_key]
    out["confidence_interval"] = row.get("confidence_interval")
    out["vote_count"] = row.get("vote_count")
    return out
