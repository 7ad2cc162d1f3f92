"""Planted crowds: labels, comparisons and scores drawn from raters whose behaviour is known.

For the tests (do the models find what was planted?), the bench (a million labels) and the
demo (a spammer and a biased rater to be found). Every draw comes from numpy's Generator
seeded with `seed`, so a crowd is the same on every machine.

Rater kinds for labels: "good" (a confusion matrix with `accuracy` on its diagonal, the rest of
each column spread at random), "spammer" (a fixed answer: always the same class), "random"
(uniform answers), "adversarial" (the true class with probability 1 - accuracy, else a wrong
one: mostly wrong on purpose).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data import Labels, label_data

KINDS = ("good", "spammer", "random", "adversarial")


@dataclass(frozen=True)
class PlantedLabels:
    data: Labels
    truth: np.ndarray       # true class per unit
    kind: np.ndarray        # rater kind per rater (KINDS)
    confusion: np.ndarray   # (n_raters, observed, true): the matrices the labels were drawn from


def _design(n_units: int, n_raters: int, per_unit: int, rng: np.random.Generator):
    """(unit, rater) of each rating: unit u goes to per_unit raters in a row of a shuffled ring of
    raters from a random start (distinct raters; O(ratings), so a million is instant)."""
    if per_unit > n_raters:
        raise ValueError(f"per_item ({per_unit}) exceeds n_raters ({n_raters})")
    ring = rng.permutation(n_raters)
    start = rng.integers(n_raters, size=n_units)
    raters = ring[(start[:, None] + np.arange(per_unit)[None, :]) % n_raters].ravel()
    return np.repeat(np.arange(n_units), per_unit), raters


def _confusion(kind: str, k: int, accuracy: float, rng: np.random.Generator) -> np.ndarray:
    if kind == "spammer":
        m = np.zeros((k, k))
        m[rng.integers(k), :] = 1.0
        return m
    if kind == "random":
        return np.full((k, k), 1.0 / k)
    right = accuracy if kind == "good" else 1.0 - accuracy
    m = rng.dirichlet(np.ones(k - 1), size=k) * (1.0 - right)  # row t: wrong classes for true class t
    out = np.zeros((k, k))
    for t in range(k):  # a loop over classes
        out[np.arange(k) != t, t] = m[t]
        out[t, t] = right
    return out


def planted_labels(*, n_items: int, n_raters: int, per_item: int, n_classes: int = 2,
                   kinds: dict[str, int] | None = None, accuracy: tuple[float, float] = (0.65, 0.95),
                   class_prior: np.ndarray | None = None, seed: int = 0) -> PlantedLabels:
    """`per_item` distinct raters label each unit; `kinds` counts the non-good raters (e.g.
    {"spammer": 2, "adversarial": 1}), the rest are good with accuracy drawn in `accuracy`."""
    rng = np.random.default_rng(seed)
    kinds = dict(kinds or {})
    kind = np.array(sum(([k] * kinds.get(k, 0) for k in KINDS[1:]), []), dtype=object)
    kind = np.concatenate([kind, np.array(["good"] * (n_raters - kind.size), dtype=object)])
    rng.shuffle(kind)
    k = n_classes
    prior = np.full(k, 1.0 / k) if class_prior is None else np.asarray(class_prior, dtype=float)
    truth = rng.choice(k, size=n_items, p=prior)
    acc = rng.uniform(*accuracy, size=n_raters)
    confusion = np.stack([_confusion(kind[r], k, acc[r], rng) for r in range(n_raters)])
    items, raters = _design(n_items, n_raters, per_item, rng)
    # inverse-CDF draw of each label from its rater's column for the true class
    cdf = np.cumsum(confusion[raters, :, truth[items]], axis=1)
    labels = np.minimum((rng.random(items.size)[:, None] > cdf).sum(axis=1), k - 1)
    return PlantedLabels(label_data(items, raters, labels, n_classes=k, n_items=n_items, n_raters=n_raters),
                         truth, kind, confusion)


@dataclass(frozen=True)
class PlantedComparisons:
    raters: np.ndarray
    left: np.ndarray
    right: np.ndarray
    left_wins: np.ndarray
    strength: np.ndarray
    reliability: np.ndarray
    left_bias: np.ndarray


def planted_comparisons(*, n_outputs: int, n_raters: int, n: int, spammers: int = 0,
                        seed: int = 0) -> PlantedComparisons:
    """Comparisons of random pairs; spammers guess (reliability 0) with a strong left bias."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1.0, n_outputs)
    reliability = rng.uniform(0.8, 1.0, n_raters)
    left_bias = rng.uniform(0.4, 0.6, n_raters)
    spam = rng.choice(n_raters, size=spammers, replace=False)
    reliability[spam], left_bias[spam] = 0.0, 0.9
    r = rng.integers(n_raters, size=n)
    left = rng.integers(n_outputs, size=n)
    right = (left + rng.integers(1, n_outputs, size=n)) % n_outputs
    p = reliability[r] / (1 + np.exp(-(strength[left] - strength[right]))) + (1 - reliability[r]) * left_bias[r]
    return PlantedComparisons(r, left, right, (rng.random(n) < p).astype(float), strength, reliability, left_bias)


@dataclass(frozen=True)
class PlantedScores:
    outputs: np.ndarray
    raters: np.ndarray
    scores: np.ndarray
    level: np.ndarray
    bias: np.ndarray
    noise_sd: np.ndarray


def planted_scores(*, n_outputs: int, n_raters: int, per_output: int, bias_sd: float = 0.5,
                   noise_sd: tuple[float, float] = (0.3, 1.2), seed: int = 0) -> PlantedScores:
    """score = level[o] + bias[r] + N(0, noise_sd[r]^2); `per_output` distinct raters per output.
    noise_sd (lo, hi) draws each rater's SD uniformly; lo == hi gives the homoscedastic case."""
    rng = np.random.default_rng(seed)
    level = rng.normal(3.0, 1.0, n_outputs)
    bias = rng.normal(0, bias_sd, n_raters)
    sd = rng.uniform(*noise_sd, size=n_raters)
    outputs, raters = _design(n_outputs, n_raters, per_output, rng)
    scores = level[outputs] + bias[raters] + rng.normal(0, 1, outputs.size) * sd[raters]
    return PlantedScores(outputs, raters, scores, level, bias, sd)
