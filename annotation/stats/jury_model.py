"""Planted truth for active sampling: a jury of unequal judges scoring on a 1–5 scale.

Each item has a true level T in 1..5 (P_TRUE). Its human value Y is T, except that with probability
`human_noise` the rater is off (one rater's own slip, which no judge can see). Judges are exactly
right on most items and off by 1 (70%) or 2 (30%) levels on a few, reflected at the ends of the
scale:

- the strong judge (its score f is the one the estimate uses) errs on `hard_share` of the items
  with probability `strong_hard`, on the rest with `strong_easy`;
- `weak_judges` weaker judges each err with probability `weak_error` on any item, independently;
- on a share `shared` of the items the weak judges start from the strong judge's score instead of
  T: they make the same mistake, and their disagreement only shows their own errors.

The judges' uncertainty u is the jury's spread (judge_uncertainty(jury=...), the SD of the three
scores). How well u predicts the strong judge's |error| falls three ways from the base model
(corr ≈ 0.78): noisier weak judges (false alarms: disagreement where the strong judge is right),
shared mistakes (misses: agreement where it is wrong), human noise (errors no jury can see).
MECHANISMS names the parameter each moves; knob_for finds the value that gives a correlation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from annotation.stats.active import judge_uncertainty

LEVELS = np.arange(1, 6)
P_TRUE = np.array([0.08, 0.17, 0.30, 0.30, 0.15])
OFF_BY, P_OFF_BY = np.array([1, 2]), np.array([0.7, 0.3])
MECHANISMS = {"unequal_jury": "weak_error", "shared_mistakes": "shared", "human_noise": "human_noise"}
UNINFORMATIVE = "uninformative"  # shared = 1: the jury's spread is the weak judges' own noise only


@dataclass(frozen=True)
class JuryModel:
    hard_share: float = 0.2
    strong_easy: float = 0.05
    strong_hard: float = 0.6
    weak_error: float = 0.05
    weak_judges: int = 2
    shared: float = 0.0
    human_noise: float = 0.0

    def draw(self, rng: np.random.Generator, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(human value Y, the strong judge's score f, the jury's spread u), each of `shape`."""
        t = rng.choice(LEVELS, size=shape, p=P_TRUE)
        y = _slip(rng, t, self.human_noise)
        hard = rng.random(shape) < self.hard_share
        f = _slip(rng, t, np.where(hard, self.strong_hard, self.strong_easy))
        anchor = np.where(rng.random(shape) < self.shared, f, t)
        jury = np.stack([f] + [_slip(rng, anchor, self.weak_error) for _ in range(self.weak_judges)], axis=-1)
        u = judge_uncertainty(jury=jury.reshape(-1, jury.shape[-1]).astype(float)).reshape(shape)
        return y.astype(float), f.astype(float), u

    def human_mean(self) -> float:
        """E[Y], exactly: a slip moves the mean only where the scale's end reflects it."""
        moved = [sum(p * (t + d if 1 <= t + d <= 5 else t - d) / 2 + p * (t - d if 1 <= t - d <= 5 else t + d) / 2
                     for d, p in zip(OFF_BY, P_OFF_BY)) for t in LEVELS]
        return float(P_TRUE @ ((1 - self.human_noise) * LEVELS + self.human_noise * np.array(moved)))


def _slip(rng: np.random.Generator, t: np.ndarray, rate: Any) -> np.ndarray:
    """t, off by ±1 or ±2 with probability `rate` (reflected at the ends of 1..5)."""
    d = rng.choice(OFF_BY, size=t.shape, p=P_OFF_BY) * np.where(rng.random(t.shape) < 0.5, -1, 1)
    moved = np.where((t + d < 1) | (t + d > 5), t - d, t + d)
    return np.where(rng.random(t.shape) < rate, moved, t)


def error_correlation(model: JuryModel, *, items: int = 100_000, seed: int = 0) -> float:
    """Pearson's corr(u, |f − Y|) over one large sample (common random numbers for every model)."""
    y, f, u = model.draw(np.random.default_rng(seed), items)
    return float(np.corrcoef(u, np.abs(f - y))[0, 1])


@lru_cache(maxsize=64)
def knob_for(mechanism: str, correlation: float, base: JuryModel = JuryModel()) -> JuryModel | None:
    """The model whose `mechanism` parameter gives that corr(u, |error|) (bisection on [base, 1]);
    None when the mechanism cannot lower the correlation that far (or the base is below it)."""
    if mechanism == UNINFORMATIVE:
        return replace(base, shared=1.0)
    field = MECHANISMS[mechanism]
    lo, hi = getattr(base, field), 1.0
    if not error_correlation(replace(base, **{field: hi})) <= correlation <= error_correlation(base):
        return None
    for _ in range(12):  # the knob to 1/4096 of its range: the correlation to about 0.001
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if error_correlation(replace(base, **{field: mid})) > correlation else (lo, mid)
    return replace(base, **{field: (lo + hi) / 2})
