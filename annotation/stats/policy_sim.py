"""Sampling policies against planted truth, before any money is spent (`manage.py simulate_policy`).

Active sampling (§1): each study has `items` outputs with a human value Y ~ N(5, 2²) and a judge
score f = Y + 0.3 + s·e, e ~ N(0, 1): a biased judge, close (s = 0.15) on most items and far off
(s = 1.2) on 15% of them. The judges' uncertainty u = exp(ρ'·log|error| + sqrt(1 − ρ'²)·log|an
independent error of the same law|), with ρ' set so that Pearson's corr(u, |error|) is the level
asked for. The active design rates the first share `pilot` of the items uniformly (budget/items
each), picks its design on them (choose_design) and samples the rest with active_probabilities; the
estimate is ipw_ppi_mean. The uniform design rates m items chosen at random, with PPI++
(annotation/stats/ppi.py) on the rest; its width at several m gives, by log-log interpolation, the
m that matches the active design's mean width: the saving is 1 − (active ratings)/m. The same is
done for uniform sampling with the active design's own estimator (ipw_ppi_mean, π = m/n), which
isolates what the sampling design alone saves.

Peeking (§4): null studies of ratings in {0, ½, 1} with mean ½ (system A wins, tie, B wins), each
checked after every rating from the 10th on; "significant" = the interval excludes ½.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.stats.active import active_probabilities, choose_design, ipw_ppi_mean
from annotation.stats.ppi import ppi_lambda, ppi_mean
from annotation.stats.sequential import asymptotic_cs, confidence_sequence, fixed_sample_interval

TRUE_MEAN, HUMAN_SD = 5.0, 2.0  # human values of items on a 1–10-like scale
UNIFORM_MULTIPLES = (0.8, 1.0, 1.25, 1.6, 2.0)


# The judge is close to the humans on most items and far off on a few (its error SD per item).
EASY_SD, HARD_SD, HARD_SHARE = 0.15, 1.2, 0.15


def _log_error_size(rng: np.random.Generator, shape) -> tuple[np.ndarray, np.ndarray]:
    """log |error| and its sign: error = s·z, s = HARD_SD on a share HARD_SHARE of items else EASY_SD."""
    z = rng.normal(size=shape)
    s = np.where(rng.random(shape) < HARD_SHARE, HARD_SD, EASY_SD)
    return np.log(s) + np.log(np.abs(z)), np.sign(z)


def _copula_weight(correlation: float) -> float:
    """ρ' such that u = exp(ρ'·log|e| + sqrt(1 − ρ'²)·(an independent copy)) has Pearson corr(u, |e|) =
    correlation, found by bisection on one large fixed sample (the law is heavy-tailed, so Pearson's
    correlation is not ρ')."""
    if correlation <= 0:
        return 0.0
    rng = np.random.default_rng(0)
    log_e, _ = _log_error_size(rng, 400_000)
    other, _ = _log_error_size(rng, 400_000)
    centre = 0.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        u = np.exp(centre + mid * (log_e - centre) + np.sqrt(1 - mid ** 2) * (other - centre))
        lo, hi = (mid, hi) if np.corrcoef(u, np.exp(log_e))[0, 1] < correlation else (lo, mid)
    return (lo + hi) / 2


def _studies(rng: np.random.Generator, reps: int, items: int, correlation: float):
    y = rng.normal(TRUE_MEAN, HUMAN_SD, (reps, items))
    log_e, sign = _log_error_size(rng, (reps, items))
    other, _ = _log_error_size(rng, (reps, items))
    w = _copula_weight(correlation)
    centre = 0.0  # a constant factor of u changes neither π nor the correlation
    u = np.exp(centre + w * (log_e - centre) + np.sqrt(1 - w ** 2) * (other - centre))
    error = sign * np.exp(log_e)
    return y, y + 0.3 + error, u, error


def _active(rng, y, f, u, budget: float, pilot: float, level: float):
    reps, items = y.shape
    n_pilot = int(round(pilot * items))
    share = budget / items
    pilot_rated = rng.random((reps, n_pilot)) < share
    # The pilot's residuals with the PPI++ weight of its own ratings (NaN where not rated).
    resid = np.full((reps, n_pilot), np.nan)
    for r in range(reps):
        k = pilot_rated[r]
        lam = ppi_lambda(y[r, :n_pilot][k], f[r, :n_pilot][k], f[r, n_pilot:]) if k.sum() >= 2 else 1.0
        resid[r, k] = y[r, :n_pilot][k] - lam * f[r, :n_pilot][k]
    rest_budget = share * (items - n_pilot)
    powers, floors = choose_design(u[:, n_pilot:], rest_budget, u[:, :n_pilot], resid)
    pi = np.concatenate([np.full((reps, n_pilot), share),
                         active_probabilities(u[:, n_pilot:] ** powers[:, None], rest_budget, floors)], axis=1)
    rated = np.concatenate([pilot_rated, rng.random((reps, items - n_pilot)) < pi[:, n_pilot:]], axis=1)
    out = [ipw_ppi_mean(np.where(rated[r], y[r], np.nan), f[r], pi[r], rated[r], level=level) for r in range(reps)]
    widths = np.array([o["ci"][1] - o["ci"][0] for o in out])
    covered = np.array([o["ci"][0] <= TRUE_MEAN <= o["ci"][1] for o in out])
    return {"width": float(widths.mean()), "coverage": float(covered.mean()),
            "ratings": float(rated.sum(axis=1).mean()), "floor_mean": float(np.mean(floors)),
            "floor_uniform_share": float(np.mean(floors == 1.0)), "power_mean": float(np.mean(powers))}


def _uniform(rng, y, f, m: int, level: float):
    reps, items = y.shape
    widths, covered = np.empty(reps), np.empty(reps, dtype=bool)
    for r in range(reps):
        order = rng.permutation(items)
        lab, unl = order[:m], order[m:]
        lam = ppi_lambda(y[r, lab], f[r, lab], f[r, unl])
        est = ppi_mean(y[r, lab], f[r, lab], f[r, unl], lam=lam, level=level)
        widths[r] = est["ci"][1] - est["ci"][0]
        covered[r] = est["ci"][0] <= TRUE_MEAN <= est["ci"][1]
    return float(widths.mean()), float(covered.mean())


def _uniform_ipw(rng, y, f, m: int, level: float):
    reps, items = y.shape
    pi = np.full(items, m / items)
    widths = np.empty(reps)
    for r in range(reps):
        rated = rng.random(items) < pi
        ci = ipw_ppi_mean(np.where(rated, y[r], np.nan), f[r], pi, rated, level=level)["ci"]
        widths[r] = ci[1] - ci[0]
    return float(widths.mean())


def _ratings_for_width(ms: np.ndarray, widths: np.ndarray, target: float) -> tuple[float, bool]:
    """Uniform ratings whose mean width is `target`: log-log interpolation (width ~ m^-1/2); False
    when the target lies outside the simulated range (the answer is then the nearest end)."""
    order = np.argsort(-widths)
    lw, lm = np.log(widths[order]), np.log(ms[order])
    inside = lw[-1] <= np.log(target) <= lw[0]
    return float(np.exp(np.interp(-np.log(target), -lw, lm))), bool(inside)


def simulate_active(*, correlations=(0.0, 0.25, 0.5, 0.75), replications: int = 500, items: int = 2000,
                    budget: int = 200, pilot: float = 0.25, level: float = 0.95, seed: int = 58) -> dict[str, Any]:
    """Active vs uniform PPI++ at each level of how well the uncertainty predicts the error.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (the budget-saving comparison).
    """
    if not 0 < budget < items:
        raise ValueError(f"budget must be between 0 and items ({items}), got {budget}")
    if not 0 < pilot < 1:
        raise ValueError(f"pilot must be a share in (0, 1), got {pilot}")
    rows = []
    for i, rho in enumerate(correlations):
        rng = np.random.default_rng([seed, i])
        y, f, u, error = _studies(rng, replications, items, rho)
        realised = float(np.mean([np.corrcoef(u[r], np.abs(error[r]))[0, 1] for r in range(replications)]))
        active = _active(rng, y, f, u, budget, pilot, level)
        ms = np.array([int(round(budget * k)) for k in UNIFORM_MULTIPLES if budget * k < items])
        uniform = [_uniform(rng, y, f, int(m), level) for m in ms]
        widths = np.array([w for w, _ in uniform])
        needed, inside = _ratings_for_width(ms.astype(float), widths, active["width"])
        at_budget = dict(zip(ms.tolist(), uniform))[budget]
        same_estimator, same_inside = _ratings_for_width(
            ms.astype(float), np.array([_uniform_ipw(rng, y, f, int(m), level) for m in ms]), active["width"])
        rows.append({"correlation": rho, "realised_correlation": realised, "active_ratings": active["ratings"],
                     "active_width": active["width"], "active_coverage": active["coverage"],
                     "uniform_ratings_same_width": needed, "within_simulated_range": inside,
                     "saving": 1 - active["ratings"] / needed,
                     "design_saving": 1 - active["ratings"] / same_estimator,
                     "design_within_simulated_range": same_inside, "uniform_width_at_budget": at_budget[0],
                     "uniform_coverage_at_budget": at_budget[1], "floor_mean": active["floor_mean"],
                     "floor_uniform_share": active["floor_uniform_share"], "seed": [seed, i]})
    return {"replications": replications, "items": items, "budget": budget, "pilot": pilot, "level": level,
            "seed": seed, "rows": rows}


def simulate_peeking(*, studies: int = 1000, ratings: int = 500, first_look: int = 10, alpha: float = 0.05,
                     seed: int = 58) -> dict[str, Any]:
    """False "significant" verdicts when null studies are checked after every rating.

    Reference: Howard et al. (2021), Annals of Statistics 49(2); Waudby-Smith & Ramdas (2023), JRSS B.
    """
    if not 1 <= first_look <= ratings:
        raise ValueError(f"first_look must be between 1 and ratings ({ratings})")
    rng = np.random.default_rng(seed)
    x = rng.choice([0.0, 0.5, 1.0], size=(studies, ratings), p=[0.4, 0.2, 0.4])
    look = slice(first_look - 1, None)

    def false_rate(iv):
        wrong = (iv["lower"][:, look] > 0.5) | (iv["upper"][:, look] < 0.5)
        return float(np.mean(np.any(wrong, axis=1)))

    fixed = fixed_sample_interval(x, level=1 - alpha)
    at_end = (fixed["lower"][:, -1] > 0.5) | (fixed["upper"][:, -1] < 0.5)
    return {"studies": studies, "ratings": ratings, "first_look": first_look, "alpha": alpha, "seed": seed,
            "confidence_sequence": false_rate(confidence_sequence(x, alpha=alpha)),
            "asymptotic_cs": false_rate(asymptotic_cs(x, alpha=alpha, t_opt=ratings / 2)),
            "fixed_sample_every_look": false_rate(fixed),
            "fixed_sample_once_at_end": float(np.mean(at_end))}
