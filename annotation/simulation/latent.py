"""The latent truth of a simulated study: every draw is a pure function of (seed, names).

Draws are keyed by names (item id, output position, rater, criterion), never taken in
sequence from one generator, so a simulation gives the same answers whatever order the
assignment engine hands items out in, and the judge side can recompute the same truth.

Quality lives on a z scale (standard-normal units). A value on a criterion's scale is
`lo + Φ(z) · (hi − lo)`, rounded to the scale's step; labels cut z at fixed thresholds.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from statistics import NormalDist

_NORMAL = NormalDist()


def unit(seed: int, *names: object) -> float:
    """A uniform draw in (0, 1), fixed by the seed and the names."""
    digest = hashlib.sha256("/".join([str(seed), *map(str, names)]).encode()).digest()
    return (int.from_bytes(digest[:7], "big") + 0.5) / 2**56


def normal(seed: int, *names: object) -> float:
    """A standard-normal draw, fixed by the seed and the names."""
    return _NORMAL.inv_cdf(unit(seed, *names))


def choose(seed: int, options: list, *names: object):
    return options[int(unit(seed, *names) * len(options))]


@dataclass(frozen=True)
class Knobs:
    """How raters and judges deviate from the truth (all in z units: one unit is one SD of quality)."""

    noise: float = 0.5  # SD of each answer's own error
    rater_bias: float = 0.3  # SD of a rater's (or judge's) constant leniency
    position_bias: float = 0.0  # added to the response shown first
    malformed: float = 0.0  # share of judge answers without a usable verdict


def output_quality(seed: int, system_effect: float, item_id: str, position: int, criterion: str | None = None) -> float:
    """An output's true quality: its system's effect, the output's own draw, and (per criterion) a
    smaller criterion-specific draw. criterion None is the output as a whole (overall, accept)."""
    z = system_effect + 0.7 * normal(seed, "output", item_id, position)
    if criterion is not None:
        z += 0.35 * normal(seed, "criterion", item_id, position, criterion)
    return z


def perceived(z: float, *, seed: int, who: str, knobs: Knobs, item_id: str, position: int, criterion: str,
              shown_first: bool = False) -> float:
    """What one rater or judge (`who`) perceives: truth + their bias + this answer's noise + order effect."""
    z += knobs.rater_bias * normal(seed, "bias", who)
    z += knobs.noise * normal(seed, "noise", who, item_id, position, criterion)
    if shown_first:
        z += knobs.position_bias
    return z


# Raters who are not merely noisy (crowd panels have both): a spammer answers without looking (a draw
# of its own per answer, whatever the output), a strict rater sees everything STRICT_SHIFT worse.
SPAMMER, STRICT = "spammer", "strict"
STRICT_SHIFT = 1.5


def styled(z: float, style: str, *, seed: int, who: str, item_id: str, position: int, criterion: str) -> float:
    """What a rater of `style` ("" for an ordinary one) answers from the perceived `z`."""
    if style == SPAMMER:
        return normal(seed, "spam", who, item_id, position, criterion)
    if style == STRICT:
        return z - STRICT_SHIFT
    if style:
        raise ValueError(f"unknown rater style {style!r}; expected {SPAMMER!r} or {STRICT!r}")
    return z


def to_scale(z: float, lo: float, hi: float, step: float = 1) -> float | int:
    """z -> a value on the scale lo..hi (steps of `step`)."""
    p = _NORMAL.cdf(z)
    n_steps = round((hi - lo) / step)
    k = min(n_steps, max(0, math.floor(p * (n_steps + 1))))
    value = lo + k * step
    return int(value) if float(value).is_integer() else value


def to_label(z: float, labels_best_first: list[str]) -> str:
    """z -> one of the labels, the best for high z, cut at equally likely bands."""
    n = len(labels_best_first)
    band = min(n - 1, int(_NORMAL.cdf(-z) * n))
    return labels_best_first[band]
