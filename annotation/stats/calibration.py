"""How well a judge's stated probabilities match what the humans said.

Input per output: the judge's distribution over answers (G-Eval's renormalised score-token
probabilities, or the share of self-consistency samples giving each answer) and the human
answer (the human majority label, or for scales the human mean rounded to the nearest scale
point). Top-label calibration, as in Guo et al. (2017):

- expected calibration error: Σ_b (n_b / n) · |accuracy_b − confidence_b| over equal-width bins
  of the judge's top probability;
- Brier score: mean over outputs of Σ_k (p_k − 1[human = k])², over the union of the answers
  the judge gave probability to and the human answer (0 = perfect, 2 = confidently wrong);
- reliability diagram: per bin, mean confidence, accuracy and count.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd


def _key(value: Any) -> str:
    """Answers compared as text, so that 4, 4.0 and "4" are one answer."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def calibration(distributions: Sequence[Mapping[Any, float]], human: Sequence[Any],
                bins: int = 10) -> dict[str, Any]:
    """ECE, Brier score and the reliability diagram's bins; None with a reason when no output has both.

    Reference: Guo et al. (2017), On Calibration of Modern Neural Networks, ICML; Brier (1950).
    """
    pairs = [({_key(k): float(p) for k, p in d.items()}, _key(h))
             for d, h in zip(distributions, human) if d and h is not None]
    confidence, correct, brier = [], [], []
    for dist, truth in pairs:
        total = sum(dist.values())
        dist = {k: p / total for k, p in dist.items()} if total > 0 else dist
        top = max(dist, key=lambda k: (dist[k], k))
        confidence.append(dist[top])
        correct.append(top == truth)
        support = set(dist) | {truth}
        brier.append(sum((dist.get(k, 0.0) - (k == truth)) ** 2 for k in support))
    return _binned(np.array(confidence), np.array(correct, dtype=float), np.array(brier), bins)


def calibration_long(row: np.ndarray, answer: np.ndarray, weight: np.ndarray, truth: Sequence[Any],
                     bins: int = 10) -> dict[str, Any]:
    """`calibration` of distributions given in long form, with arrays (millions of outputs):
    output `row[j]` (0 to len(truth) - 1) gives weight `weight[j]` (a probability or a count) to
    the answer `answer[j]` (text, each at most once per output); `truth[r]` is output r's human
    answer, None when it has none. The same figures as `calibration` of the same pairs."""
    truth_code_of, truth_names = pd.factorize(pd.Series(truth, dtype=object))  # -1: no human answer
    row = np.asarray(row, dtype=np.int64)
    keep = truth_code_of[row] >= 0
    row, weight = row[keep], np.asarray(weight, float)[keep]
    if not row.size:
        return _binned(np.zeros(0), np.zeros(0), np.zeros(0), bins)
    answer_code, seen = pd.factorize(np.asarray(answer, dtype=object)[keep])
    names = pd.Index(sorted({str(a) for a in seen}), dtype=object)  # a tie of weights goes to the answer
    code = names.get_indexer([str(a) for a in seen])[answer_code]  # that sorts last, as Python sorts text
    pairs, row = np.unique(row, return_inverse=True)  # the outputs with both, in order
    truth_text = pd.Index([_key(t) for t in truth_names], dtype=object)
    truth_code = names.get_indexer(truth_text)[truth_code_of[pairs]]  # -1: no weight on the human answer
    total = np.bincount(row, weights=weight, minlength=pairs.size)
    p = np.where(total[row] > 0, weight / np.where(total[row] > 0, total[row], 1.0), weight)
    order = np.lexsort((code, p, row))  # the top answer is a row's last: highest weight, then highest text
    last = order[np.r_[np.flatnonzero(np.diff(row[order])), order.size - 1]]
    is_truth = code == truth_code[row]
    brier = (np.bincount(row, weights=(p - is_truth) ** 2, minlength=pairs.size)
             + (np.bincount(row, weights=is_truth, minlength=pairs.size) == 0))  # (0 − 1)² for an unnamed answer
    return _binned(p[last], is_truth[last].astype(float), brier, bins)


def _binned(conf: np.ndarray, hit: np.ndarray, brier: np.ndarray, bins: int) -> dict[str, Any]:
    if not conf.size:
        return {"n": 0, "ece": None, "brier": None, "bins": [], "reason": "no output has both a judge distribution "
                                                                       "and a human answer"}
    # Bin b holds confidences in ((b-1)/B, b/B]; a confidence of exactly 0 goes to the first bin.
    which = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)
    out_bins, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        if not mask.any():
            continue
        acc, mean_conf = float(hit[mask].mean()), float(conf[mask].mean())
        ece += mask.sum() / conf.size * abs(acc - mean_conf)
        out_bins.append({"low": b / bins, "high": (b + 1) / bins, "confidence": mean_conf, "accuracy": acc,
                         "n": int(mask.sum())})
    return {"n": int(conf.size), "ece": float(ece), "brier": float(np.mean(brier)),
            "accuracy": float(hit.mean()), "mean_confidence": float(conf.mean()), "bins": out_bins}


def human_answer_for_scale(mean: float | None, points: Sequence[float]) -> float | None:
    """The scale point nearest the human mean (halves go up), to compare with a distribution over points."""
    if mean is None or not points:
        return None
    return float(nearest_points(np.array([mean], dtype=float), points)[0])


def nearest_points(means: np.ndarray, points: Sequence[float]) -> np.ndarray:
    """`human_answer_for_scale` of many means at once: the nearest point to each, the higher of two as near."""
    pts = np.sort(np.asarray(points, dtype=float))
    hi = np.clip(np.searchsorted(pts, means), 0, pts.size - 1)
    lo = np.clip(hi - 1, 0, pts.size - 1)
    return np.where(np.abs(pts[hi] - means) <= np.abs(pts[lo] - means), pts[hi], pts[lo])
