"""Agreement statistics: the full report on a long table, and each statistic beside the
fastest reference library on the same data (DESIGN.md: full report on 1M ratings
(50k items x 4 raters x 5 criteria) < 10 s; each statistic no slower than the reference).

Default size: 10k items x 4 raters x 5 criteria = 200k ratings; full: 1M ratings.
"""

from __future__ import annotations

import resource
import time
import tracemalloc
import warnings
from itertools import combinations
from typing import Any, Callable

import numpy as np
import pandas as pd

from annotation.stats.agreement import (
    cohen_kappa, fleiss_kappa, icc, krippendorff_alpha, pairwise_correlations,
)
from annotation.stats.krippendorff import LEVELS
from annotation.stats.report import agreement_report

N_RATERS, N_CRITERIA = 4, 5


def make_ratings(n_items: int, seed: int = 0) -> pd.DataFrame:
    """Likert 1-5 ratings with a shared item effect, so that agreement is moderate."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 1, (n_items, 1, N_CRITERIA))
    scores = np.clip(np.rint(truth + rng.normal(0, 0.8, (n_items, N_RATERS, N_CRITERIA))), 1, 5)
    item, rater, crit = np.meshgrid(np.arange(n_items), np.arange(N_RATERS), np.arange(N_CRITERIA), indexing="ij")
    return pd.DataFrame({
        "item": pd.Categorical.from_codes(item.ravel(), [f"item-{i}" for i in range(n_items)]).astype(str),
        "rater": np.array([f"rater-{r}" for r in range(N_RATERS)])[rater.ravel()],
        "criterion": np.array([f"criterion-{c}" for c in range(N_CRITERIA)])[crit.ravel()],
        "score": scores.ravel(),
    })


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def _row(metric: str, value: float, unit: str = "s", target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 6), "unit": unit, "target": target, "ok": ok}


def _compare(rows: list[dict], name: str, ref_name: str, ours: Callable[[], Any], ref: Callable[[], Any],
             diff: Callable[[Any, Any], float], repeat: int) -> None:
    t_ours, v_ours = best_of(ours, repeat)
    t_ref, v_ref = best_of(ref, repeat)
    rows.append(_row(f"{name}: concord", t_ours, "s", f"<= {ref_name}", t_ours <= t_ref))
    rows.append(_row(f"{name}: {ref_name}", t_ref))
    d = diff(v_ours, v_ref)
    rows.append(_row(f"{name}: max |concord - {ref_name}|", d, "", "< 1e-9", d < 1e-9))


def statistic_rows(matrix: np.ndarray, repeat: int) -> list[dict]:
    """Each statistic on one criterion's items x raters matrix, ours vs the reference."""
    import krippendorff
    import pingouin
    from scipy import stats as sps
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rows: list[dict] = []
    n, k = matrix.shape
    long = pd.DataFrame({"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n),
                         "score": matrix.ravel()})
    forms = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]

    def ref_icc():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score")["ICC"].to_numpy()

    # pingouin rounds its ICCs to 3 decimals; the difference row allows for that
    t_ours, v_ours = best_of(lambda: np.array([icc(matrix)[f].value for f in forms]), repeat)
    t_ref, v_ref = best_of(ref_icc, repeat)
    rows.append(_row("ICC (6 forms + CIs): concord", t_ours, "s", "<= pingouin", t_ours <= t_ref))
    rows.append(_row("ICC (6 forms + CIs): pingouin", t_ref))
    d = float(np.max(np.abs(v_ours - v_ref)))
    rows.append(_row("ICC: max |concord - pingouin (3 decimals)|", d, "", "<= 5e-4", d <= 5e-4))

    for level in LEVELS:
        _compare(rows, f"alpha {level}", "krippendorff",
                 lambda level=level: krippendorff_alpha(matrix, level).value,
                 lambda level=level: krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level),
                 lambda a, b: abs(a - b), repeat)

    _compare(rows, "Fleiss kappa", "statsmodels",
             lambda: fleiss_kappa(_counts(matrix)).value,
             lambda: sm_fleiss(aggregate_raters(matrix.astype(int))[0]),
             lambda a, b: abs(a - b), repeat)

    pairs = list(combinations(range(k), 2))
    for w in ("unweighted", "linear", "quadratic"):
        _compare(rows, f"Cohen kappa {w} ({len(pairs)} pairs)", "sklearn",
                 lambda w=w: [cohen_kappa(matrix[:, i], matrix[:, j], w).value for i, j in pairs],
                 lambda w=w: [cohen_kappa_score(matrix[:, i], matrix[:, j],
                                                weights=None if w == "unweighted" else w) for i, j in pairs],
                 lambda a, b: float(np.max(np.abs(np.subtract(a, b)))), repeat)

    _compare(rows, f"Pearson + Spearman ({len(pairs)} pairs)", "scipy",
             lambda: [s.value for d in pairwise_correlations(matrix).values() for s in d.values()],
             lambda: ([sps.pearsonr(matrix[:, i], matrix[:, j]).statistic for i, j in pairs]
                      + [sps.spearmanr(matrix[:, i], matrix[:, j]).statistic for i, j in pairs]),
             lambda a, b: float(np.max(np.abs(np.subtract(a, b)))), repeat)
    return rows


def _counts(matrix: np.ndarray) -> np.ndarray:
    """Items x categories counts (what Fleiss' kappa takes), built the same way for both sides' inputs."""
    values, codes = np.unique(matrix, return_inverse=True)
    codes = codes.reshape(matrix.shape)
    out = np.zeros((matrix.shape[0], values.size))
    np.add.at(out, (np.repeat(np.arange(matrix.shape[0]), matrix.shape[1]), codes.ravel()), 1)
    return out


def run(full: bool = False) -> dict:
    n_items = 50_000 if full else 10_000
    df = make_ratings(n_items)
    n_ratings = len(df)
    rows: list[dict] = []

    t_report, _ = best_of(lambda: agreement_report(df, judges=["rater-3"]), 1 if full else 3)
    rows.append(_row(f"full agreement report ({n_ratings:,} ratings, 1 judge)", t_report, "s",
                     "< 10 s (at 1M ratings)", t_report < 10))
    rows.append(_row("report throughput", n_ratings / t_report / 1e6, "M ratings/s"))

    tracemalloc.start()
    agreement_report(df, judges=["rater-3"])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(_row("report peak traced memory", peak / 2**20, "MiB"))
    rows.append(_row("process max RSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "MiB"))

    first = df[df["criterion"] == "criterion-0"]
    matrix = first["score"].to_numpy().reshape(n_items, N_RATERS)  # rows are item-major, raters in order
    rows += statistic_rows(matrix, repeat=1 if full else 2)
    return {"name": "stats", "rows": rows,
            "size": {"items": n_items, "raters": N_RATERS, "criteria": N_CRITERIA, "ratings": n_ratings,
                     "per_statistic": f"{n_items} items x {N_RATERS} raters (one criterion)"}}


if __name__ == "__main__":
    import sys

    for r in run(full="--full" in sys.argv)["rows"]:
        print(f"{r['metric']:<55}{r['value']:>14.6g} {r['unit']:<12}{r['target'] or '':<24}{r['ok']}")
