"""Adaptive redundancy: as many raters as each item needs (issue 58 §2).

After each label the item's posterior under the study's rater model (Dawid–Skene: one confusion
matrix per rater and the class frequencies) decides whether it needs another rater: it does while
it has fewer than `min_raters` labels, or while its most likely class is below `target` and it has
fewer than `max_raters`. The posterior of one item given the current matrices is a sum of log
matrix entries, so the decision costs nothing next to a refit (Dawid & Skene 1979, eq. 2.5).

    AdaptivePolicy(min_raters, max_raters, target)            # validated; ValueError names the field
    item_posterior(raters, labels, confusion=, prior=) -> p    # one item, current matrices
    needs_another(posterior, n_labels, policy) -> bool
    simulate_adaptive_redundancy(...) -> dict                  # against a fixed number per item

The simulation draws a planted crowd with spammers (crowd-kit's benchmark setting: good raters with
accuracy in a range, spammers who always give one class, raters who answer at random), reveals an
item's labels in a random order of raters, and compares Dawid–Skene on a fixed `fixed` labels per
item with the adaptive policy (the matrices refitted after each round of labels) on the same labels.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .raters.data import EPS, label_data
from .raters.dawid_skene import dawid_skene
from .raters.simulate import planted_labels


@dataclass(frozen=True)
class AdaptivePolicy:
    min_raters: int = 2
    max_raters: int = 7
    target: float = 0.95

    def __post_init__(self):
        if not isinstance(self.min_raters, int) or self.min_raters < 1:
            raise ValueError(f"min_raters: must be a whole number of at least 1, got {self.min_raters!r}")
        if not isinstance(self.max_raters, int) or self.max_raters < self.min_raters:
            raise ValueError(f"max_raters: must be a whole number of at least min_raters ({self.min_raters}), "
                             f"got {self.max_raters!r}")
        if not isinstance(self.target, (int, float)) or not 0.5 <= float(self.target) < 1:
            raise ValueError(f"target: must be a probability from 0.5 to below 1, got {self.target!r}")

    def as_dict(self) -> dict:
        return {"name": "adaptive_redundancy", **asdict(self)}


def item_posterior(raters, labels, *, confusion: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """P(true class | this item's labels) under fixed confusion[r, observed, true] and class prior.
    A rater the model has no matrix for (index -1 or beyond the array) counts as uninformative."""
    log_p = np.log(np.clip(np.asarray(prior, dtype=float), EPS, None))
    for r, label in zip(raters, labels):
        if 0 <= r < confusion.shape[0]:
            log_p = log_p + np.log(np.clip(confusion[r, label, :], EPS, None))
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def needs_another(posterior: np.ndarray, n_labels: int, policy: AdaptivePolicy) -> bool:
    """Whether the item should be served to one more rater."""
    if n_labels < policy.min_raters:
        return True
    if n_labels >= policy.max_raters:
        return False
    return float(np.max(posterior)) < policy.target


def _accuracy(items, raters, labels, truth, n_raters, k) -> float:
    fit = dawid_skene(label_data(items, raters, labels, n_classes=k, n_items=truth.size, n_raters=n_raters))
    return float((fit.labels == truth).mean())


def simulate_adaptive_redundancy(*, policy: AdaptivePolicy = AdaptivePolicy(), fixed: int = 5, n_items: int = 400,
                                 n_raters: int = 40, n_classes: int = 2, spammers: int = 8, random_raters: int = 4,
                                 accuracy: tuple[float, float] = (0.6, 0.9), seeds=range(10)) -> dict:
    """Per seed: one planted crowd, every item's raters in a random order; the fixed design takes the
    first `fixed` labels of each item, the adaptive design takes the first `min_raters`, then after
    each round refits Dawid–Skene and gives one more label to each item that `needs_another`. Both are
    scored by Dawid–Skene's most likely class against the planted truth. Returns the per-seed figures
    and their means."""
    runs = []
    for seed in seeds:
        crowd = planted_labels(n_items=n_items, n_raters=n_raters, per_item=n_raters, n_classes=n_classes,
                               kinds={"spammer": spammers, "random": random_raters}, accuracy=accuracy, seed=seed)
        d = crowd.data
        dense = np.empty((n_items, n_raters), dtype=np.int64)
        dense[d.item, d.rater] = d.label
        rng = np.random.default_rng(10_000 + seed)
        order = np.argsort(rng.random((n_items, n_raters)), axis=1)  # each item's raters, in arrival order
        rows = np.arange(n_items)[:, None]

        def take(counts):
            mask = np.arange(n_raters)[None, :] < counts[:, None]
            items = np.broadcast_to(rows, mask.shape)[mask]
            raters = order[mask]
            return items, raters, dense[items, raters]

        fixed_acc = _accuracy(*take(np.full(n_items, fixed)), crowd.truth, n_raters, n_classes)
        counts = np.full(n_items, policy.min_raters)
        rounds = 0
        while True:
            items, raters, labels = take(counts)
            fit = dawid_skene(label_data(items, raters, labels, n_classes=n_classes, n_items=n_items,
                                         n_raters=n_raters))
            more = np.array([needs_another(fit.posteriors[i], counts[i], policy) for i in range(n_items)])
            if not more.any():
                break
            counts = counts + more
            rounds += 1
        adaptive_acc = float((fit.labels == crowd.truth).mean())
        runs.append({"seed": int(seed), "fixed_accuracy": fixed_acc, "adaptive_accuracy": adaptive_acc,
                     "adaptive_mean_labels": float(counts.mean()), "rounds": rounds})
    mean = {key: float(np.mean([r[key] for r in runs]))
            for key in ("fixed_accuracy", "adaptive_accuracy", "adaptive_mean_labels")}
    return {"policy": policy.as_dict(), "fixed": fixed, "n_items": n_items, "n_raters": n_raters,
            "spammers": spammers, "random_raters": random_raters, "seeds": [r["seed"] for r in runs],
            "runs": runs, **mean, "saving": 1.0 - mean["adaptive_mean_labels"] / fixed}
