"""System comparison: per system and criterion the mean with a t CI over items, accept rate,
pairwise win rates, paired Wilcoxon signed-rank tests on per-item means (Holm-corrected),
and a ranking by mean.

Input: plain rows with columns item, system, criterion, score (one per rating); scores are
first averaged per (item, system, criterion) so that every item counts once.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata, wilcoxon
from scipy.stats import t as t_dist

from .active import hajek_mean
from .grouping import group_agg, group_index


EXACT_FLIPS_UP_TO = 13  # SciPy's wilcoxon(method="auto") enumerates every sign flip up to 13 pairs (2**13 < 9,999)


def wilcoxon_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test of paired a and b: the one scipy.stats.wilcoxon(a, b)
    gives (zero_method "wilcox", method "auto"), computed faster where SciPy is slow.

    With ties or zero differences among up to 13 pairs, SciPy's "auto" takes the exact permutation distribution
    and builds it by calling the statistic on each of the 2**n sign flips in Python: 0.3-0.9 s a pair, most of a
    small study's report. A flip changes no |difference|, so no rank: the sum of the positive ranks over all the
    flips is one product of the flips with the ranks. Every other case is SciPy's own (exact without ties,
    normal approximation above 13 pairs), which is quick.
    """
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    nonzero = d[d != 0]
    ranks = rankdata(np.abs(nonzero))  # average ranks of the ties, zeros left out (Wilcoxon's treatment)
    ties_or_zeros = nonzero.size < d.size or np.unique(np.abs(nonzero)).size < nonzero.size
    if not ties_or_zeros or d.size > EXACT_FLIPS_UP_TO or nonzero.size == 0:
        return float(wilcoxon(a, b).pvalue)
    observed = ranks[nonzero > 0].sum()
    flips = (np.arange(2 ** nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1  # every sign pattern
    null = flips @ ranks  # the sum of the positive ranks under each pattern
    tolerance = abs(observed) * np.finfo(float).eps * 100  # scipy.stats.permutation_test's allowance (gamma)
    less, greater = np.mean(null <= observed + tolerance), np.mean(null >= observed - tolerance)
    return float(min(1.0, 2 * min(less, greater)))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (None stays None).

    Reference: Holm (1979), Scandinavian Journal of Statistics 6(2).
    """
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    order = sorted(idx, key=lambda i: pvalues[i])  # type: ignore[arg-type, return-value]
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))  # type: ignore[arg-type]
        adjusted[i] = running
    return adjusted


def _mean_ci(x: np.ndarray, level: float) -> tuple[float, list[float] | None]:
    mean = float(x.mean())
    if x.size < 2:
        return mean, None
    half = float(t_dist.ppf((1 + level) / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, [mean - half, mean + half]


def _weighted_pair(d: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float | None]:
    """(win a, win b, tie, two-sided p) of paired differences weighted by w: shares of the weight, and
    the normal test of the Hájek mean difference (a design-based test; Wilcoxon's ranks ignore w)."""
    total = w.sum()
    shares = [float(np.sum(w[d > 0]) / total), float(np.sum(w[d < 0]) / total), float(np.sum(w[d == 0]) / total)]
    est = hajek_mean(d, w) if d.size >= 2 and np.any(d != 0) else None
    p = None
    if est is not None and est["se"]:
        p = float(2 * norm.sf(abs(est["mean"]) / est["se"]))
    return (*shares, p)


def compare_systems(ratings: pd.DataFrame, *, accept_criterion: str | None = None,
                    accept_value: object = "ACCEPT", level: float = 0.95,
                    weights: Mapping[int, float] | None = None) -> dict[str, Any]:
    """{criterion: {"systems": {...}, "pairs": [...], "ranking": [...]}} for numeric criteria;
    with `accept_criterion`, the share of its ratings equal to `accept_value` per system.

    `weights`: {item: 1/π} when items were drawn with unequal probabilities (active inference): each
    system's mean is then Hájek's weighted mean over items with its normal interval (hajek_mean), a
    pair's wins are shares of the weight and its p-value the normal test of the weighted mean
    difference, and the accept rate weights each rating by its item's weight. An item without a weight
    counts 1 (π = 1). Entries say which ("weighted": True, a pair's "test").

    Reference: Wilcoxon (1945) signed-rank tests, Holm (1979) for their p-values; t intervals of the means;
    Hájek (1971) for the weighted means.
    """
    out: dict[str, Any] = {}

    def weight_of(items) -> np.ndarray:
        return np.array([weights.get(int(i), 1.0) for i in items], dtype=float)

    if accept_criterion is not None:
        acc = ratings[ratings["criterion"] == accept_criterion]
        out["accept_rate"] = {}
        for s, g in acc.groupby("system"):
            hit = (g["score"].astype(str) == str(accept_value)).to_numpy(float)
            w = weight_of(g["item"]) if weights is not None else np.ones(hit.size)
            out["accept_rate"][str(s)] = float(np.sum(w * hit) / w.sum()) if hit.size else float("nan")
        ratings = ratings[ratings["criterion"] != accept_criterion]
    score = pd.to_numeric(ratings["score"], errors="coerce").to_numpy(dtype=float)
    # Per (criterion, system, item) means, grouped by integer codes (stats.grouping: the groups,
    # their order, their index and their sums are those of a groupby on the three columns, which
    # spent seconds building and sorting ten million keys).
    group, parts, uniques = group_index(ratings["criterion"], ratings["system"], ratings["item"])
    group[np.isnan(score)] = -1
    n_groups = parts[0].size
    seen = np.bincount(group[group >= 0], minlength=n_groups) > 0  # groups with a score
    means = pd.Series(group_agg(score, group, n_groups)[seen], index=pd.MultiIndex.from_arrays(
        [u.take(p[seen]) for u, p in zip(uniques, parts)], names=["criterion", "system", "item"]))
    criteria: dict[str, Any] = {}
    for crit, per in means.groupby(level="criterion"):
        wide = per.droplevel("criterion").unstack("system")  # items x systems
        systems = {}
        w_items = weight_of(wide.index) if weights is not None else None
        for s in wide.columns:
            seen = wide[s].notna().to_numpy()
            x = wide[s].to_numpy()[seen]
            if w_items is None:
                mean, ci = _mean_ci(x, level)
                systems[str(s)] = {"mean": mean, "ci": ci, "n_items": int(x.size)}
            else:
                est = hajek_mean(x, w_items[seen], level=level)
                systems[str(s)] = {"mean": est["mean"], "ci": est["ci"], "n_items": int(x.size), "weighted": True,
                                   "effective_n": est["effective_n"]}
        pairs = []
        for a, b in combinations(wide.columns, 2):
            seen = wide[[a, b]].notna().all(axis=1).to_numpy()
            both = wide[[a, b]].to_numpy()[seen]
            d = both[:, 0] - both[:, 1]
            if w_items is not None:
                win_a, win_b, tie, p = _weighted_pair(d, w_items[seen]) if d.size else (0.0, 0.0, 0.0, None)
                pairs.append({"a": str(a), "b": str(b), "n_items": int(d.size), "win_a": win_a, "win_b": win_b,
                              "tie": tie, "p_value": p, "test": "weighted mean difference (normal)"})
                continue
            p = None
            if d.size > 0 and np.any(d != 0):
                p = wilcoxon_pvalue(both[:, 0], both[:, 1])
            n = max(d.size, 1)
            pairs.append({"a": str(a), "b": str(b), "n_items": int(d.size),
                          "win_a": float(np.sum(d > 0) / n), "win_b": float(np.sum(d < 0) / n),
                          "tie": float(np.sum(d == 0) / n), "p_value": p})
        for pair, adj in zip(pairs, holm([p["p_value"] for p in pairs])):
            pair["p_holm"] = adj
        ranking = sorted(systems, key=lambda s: -systems[s]["mean"])
        criteria[str(crit)] = {"systems": systems, "pairs": pairs, "ranking": ranking}
    out["criteria"] = criteria
    return out
