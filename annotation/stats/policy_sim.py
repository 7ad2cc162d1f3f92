"""Sampling policies against planted truth, before any money is spent (`manage.py simulate_policy`).

Active sampling (§1): each study has `items` outputs scored 1–5 by a jury of unequal judges
(annotation/stats/jury_model.py: a strong judge whose score f the estimate uses, two weaker ones,
errors mostly zero and sometimes 1 or 2 levels); the judges' uncertainty u is the jury's spread.
The correlation of u with the strong judge's |error| is lowered from the base model's 0.78 to each
level asked for by one of three mechanisms (noisier weak judges, shared mistakes, human noise), and
measured again in every study (realised_correlation). Correlation 0 is the jury that shares every
mistake of the strong judge ("uninformative").

The active design rates a share `pilot` of the items uniformly (B/n each), then the rest in
`batches` batches, each with calibrated_probabilities (π ∝ the predicted residual size learned from
every rating so far, floor `floor`): the batch's expected ratings are its items·B/n, so the budget is
B in expectation and its realised count is what the saving is charged. The estimate is ipw_ppi_mean
(IPW PPI with power tuning). The oracle design knows the map u → E[r²|u] (from one large sample of
the same model) and needs no pilot: what a perfect calibration would save.

The uniform designs rate m items chosen at random, m from UNIFORM_MULTIPLES of the budget: with PPI++
(annotation/stats/ppi.py, λ tuned: the product's estimator) and with ipw_ppi_mean at π = m/n; their
mean widths give, by log-log interpolation, the m that matches the active design's mean width, and
the saving is 1 − (active ratings)/(the smaller of the two m): against the best uniform design.
Coverage is of E[Y], known exactly from the model.

Peeking (§4): null studies of ratings in {0, ½, 1} with mean ½ (system A wins, tie, B wins), each
checked after every rating from the 10th on; "significant" = the interval excludes ½.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.stats.active import active_probabilities, ipw_ppi_mean
from annotation.stats.active_design import calibrated_probabilities
from annotation.stats.jury_model import MECHANISMS, UNINFORMATIVE, JuryModel, knob_for
from annotation.stats.ppi import ppi_lambda, ppi_mean
from annotation.stats.sequential import asymptotic_cs, confidence_sequence, fixed_sample_interval

UNIFORM_MULTIPLES = (0.6, 0.8, 1.0, 1.25, 1.6, 2.0, 2.5, 3.2, 4.0)


def _weighted_residual(y, f, pi) -> np.ndarray:
    """r = (Y − ȳ) − (f − f̄) on the rated items, means weighted by 1/π: the residual the map learns
    (λ = 1; the estimate tunes its own λ, close to 1 when the judge is right on most items)."""
    w = 1 / pi
    yb, fb = np.sum(w * y) / w.sum(), np.sum(w * f) / w.sum()
    return (y - yb) - (f - fb)


def _active_study(rng, y, f, u, budget: float, pilot: float, batches: int, floor: float, oracle_map=None):
    """One study under the active design: (ipw_ppi_mean's answer, ratings)."""
    n = y.size
    share = budget / n
    order = rng.permutation(n)
    pi, rated = np.empty(n), np.zeros(n, dtype=bool)
    n_pilot = 0 if oracle_map is not None else int(round(pilot * n))
    head = order[:n_pilot]
    pi[head], rated[head] = share, rng.random(n_pilot) < share
    done = n_pilot
    for batch in np.array_split(order[n_pilot:], 1 if oracle_map is not None else batches):
        seen = order[:done]
        k = seen[rated[seen]]
        if oracle_map is not None:
            pi[batch] = active_probabilities(np.sqrt(oracle_map(u[batch])), share * batch.size, floor)
        elif k.size >= 2:
            resid = _weighted_residual(y[k], f[k], pi[k])
            pi[batch] = calibrated_probabilities(u[batch], share * batch.size, u[k], resid, floor=floor)
        else:
            pi[batch] = share
        rated[batch] = rng.random(batch.size) < pi[batch]
        done += batch.size
    return ipw_ppi_mean(np.where(rated, y, np.nan), f, pi, rated), int(rated.sum())


def _oracle_map(model: JuryModel):
    """u → E[r²|u] of the model (λ = 1, r centred), one value per distinct jury spread, from one large sample."""
    y, f, u = model.draw(np.random.default_rng(12345), 400_000)
    r2 = ((y - y.mean()) - (f - f.mean())) ** 2
    values, which = np.unique(np.round(u, 9), return_inverse=True)
    means = np.bincount(which, weights=r2) / np.bincount(which)
    return lambda uu: means[np.clip(np.searchsorted(values, np.round(uu, 9)), 0, values.size - 1)]


def _uniform(rng, y, f, m: int, truth: float, level: float) -> tuple[float, float, float]:
    """(mean width with PPI++, its coverage, mean width with ipw_ppi_mean at π = m/n) over the studies."""
    reps, items = y.shape
    ppi_w, ipw_w, covered = np.empty(reps), np.empty(reps), np.empty(reps, dtype=bool)
    pi = np.full(items, m / items)
    for r in range(reps):
        order = rng.permutation(items)
        lab, unl = order[:m], order[m:]
        est = ppi_mean(y[r, lab], f[r, lab], f[r, unl], lam=ppi_lambda(y[r, lab], f[r, lab], f[r, unl]), level=level)
        ppi_w[r] = est["ci"][1] - est["ci"][0]
        covered[r] = est["ci"][0] <= truth <= est["ci"][1]
        rated = rng.random(items) < pi
        ci = ipw_ppi_mean(np.where(rated, y[r], np.nan), f[r], pi, rated, level=level)["ci"]
        ipw_w[r] = ci[1] - ci[0]
    return float(ppi_w.mean()), float(covered.mean()), float(ipw_w.mean())


def _ratings_for_width(ms: np.ndarray, widths: np.ndarray, target: float) -> tuple[float, bool]:
    """Uniform ratings whose mean width is `target`: log-log interpolation (width ~ m^-1/2); False
    when the target lies outside the simulated range (the answer is then the nearest end)."""
    order = np.argsort(-widths)
    lw, lm = np.log(widths[order]), np.log(ms[order])
    inside = lw[-1] <= np.log(target) <= lw[0]
    return float(np.exp(np.interp(-np.log(target), -lw, lm))), bool(inside)


def _row(rng, model: JuryModel, *, replications: int, items: int, budget: int, pilot: float, batches: int,
         floor: float, level: float, oracle: bool) -> dict[str, Any]:
    y, f, u = model.draw(rng, (replications, items))
    truth = model.human_mean()
    realised = float(np.mean([np.corrcoef(u[r], np.abs(f[r] - y[r]))[0, 1] for r in range(replications)]))
    runs = [_active_study(rng, y[r], f[r], u[r], budget, pilot, batches, floor) for r in range(replications)]
    width = float(np.mean([o["ci"][1] - o["ci"][0] for o, _ in runs]))
    coverage = float(np.mean([o["ci"][0] <= truth <= o["ci"][1] for o, _ in runs]))
    ratings = float(np.mean([k for _, k in runs]))
    ms = np.array([int(round(budget * k)) for k in UNIFORM_MULTIPLES if budget * k < items], dtype=float)
    uniform = [_uniform(rng, y, f, int(m), truth, level) for m in ms]
    need_ppi, inside_ppi = _ratings_for_width(ms, np.array([w for w, _, _ in uniform]), width)
    need_ipw, inside_ipw = _ratings_for_width(ms, np.array([w for _, _, w in uniform]), width)
    at_budget = uniform[list(ms).index(budget)]
    row = {"realised_correlation": realised, "active_ratings": ratings, "active_width": width,
           "active_coverage": coverage, "uniform_ppi_ratings_same_width": need_ppi,
           "uniform_ipw_ratings_same_width": need_ipw, "best_uniform_ratings_same_width": min(need_ppi, need_ipw),
           "within_simulated_range": inside_ppi and inside_ipw, "saving": 1 - ratings / min(need_ppi, need_ipw),
           "saving_vs_ppi": 1 - ratings / need_ppi, "uniform_width_at_budget": at_budget[0],
           "uniform_coverage_at_budget": at_budget[1], "model": model.__dict__.copy()}
    if oracle:
        known = _oracle_map(model)
        o_runs = [_active_study(rng, y[r], f[r], u[r], budget, pilot, batches, floor, oracle_map=known)
                  for r in range(replications)]
        o_width = float(np.mean([o["ci"][1] - o["ci"][0] for o, _ in o_runs]))
        o_need = min(_ratings_for_width(ms, np.array([w for w, _, _ in uniform]), o_width)[0],
                     _ratings_for_width(ms, np.array([w for _, _, w in uniform]), o_width)[0])
        row["oracle_saving"] = 1 - float(np.mean([k for _, k in o_runs])) / o_need
        row["oracle_coverage"] = float(np.mean([o["ci"][0] <= truth <= o["ci"][1] for o, _ in o_runs]))
    return row


def simulate_active(*, correlations=(0.0, 0.25, 0.5, 0.75), mechanisms=tuple(MECHANISMS), replications: int = 500,
                    items: int = 2000, budget: int = 200, pilot: float = 0.1, batches: int = 6, floor: float = 0.2,
                    level: float = 0.95, oracle: bool = True, seed: int = 58) -> dict[str, Any]:
    """Active vs the best uniform PPI++ design, one row per (correlation, mechanism that lowers the
    correlation to it); correlation 0 is one row, the uninformative jury. Rows a mechanism cannot
    reach are listed with "reachable": False.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (the budget-saving comparison).
    """
    if not 0 < budget < items:
        raise ValueError(f"budget must be between 0 and items ({items}), got {budget}")
    if not 0 < pilot < 1:
        raise ValueError(f"pilot must be a share in (0, 1), got {pilot}")
    if unknown := [m for m in mechanisms if m not in MECHANISMS]:
        raise ValueError(f"mechanisms: one of {', '.join(MECHANISMS)}, got {unknown[0]!r}")
    cells = [(rho, UNINFORMATIVE) if rho == 0 else (rho, m) for rho in correlations
             for m in (mechanisms if rho else [UNINFORMATIVE])]
    rows = []
    for i, (rho, mechanism) in enumerate(cells):
        model = knob_for(mechanism, float(rho))
        head = {"correlation": rho, "mechanism": mechanism, "seed": [seed, i], "reachable": model is not None}
        if model is None:
            rows.append(head)
            continue
        rows.append({**head, **_row(np.random.default_rng([seed, i]), model, replications=replications, items=items,
                                    budget=budget, pilot=pilot, batches=batches, floor=floor, level=level,
                                    oracle=oracle)})
    return {"replications": replications, "items": items, "budget": budget, "pilot": pilot, "batches": batches,
            "floor": floor, "level": level, "seed": seed, "rows": rows}


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
