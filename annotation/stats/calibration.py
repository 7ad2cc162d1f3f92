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
    if not pairs:
        return {"n": 0, "ece": None, "brier": None, "bins": [], "reason": "no output has both a judge distribution "
                                                                       "and a human answer"}
    confidence, correct, brier = [], [], []
    for dist, truth in pairs:
        total = sum(dist.values())
        dist = {k: p / total for k, p in dist.items()} if total > 0 else dist
        top = max(dist, key=lambda k: (dist[k], k))
        confidence.append(dist[top])
        correct.append(top == truth)
        support = set(dist) | {truth}
        brier.append(sum((dist.get(k, 0.0) - (k == truth)) ** 2 for k in support))
    conf, hit = np.array(confidence), np.array(correct, dtype=float)
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
    pts = np.asarray(sorted(points), dtype=float)
    dist = np.abs(pts - mean)
    best = np.flatnonzero(dist == dist.min())
    return float(pts[best[-1]])
