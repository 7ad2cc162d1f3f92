"""The alternative annotator test (Calderon, Reichart & Dror, ACL 2025, "The Alternative
Annotator Test for LLM-as-a-Judge"): may a judge replace the human raters?

For each human j (leave-one-out), on every item j rated that the judge scored and at least
one other human rated: score the judge's and j's annotation against the other humans
(accuracy for labels, negative RMSE for scores). W_f = 1 when the judge scores at least as
well as j, W_h = 1 when j scores at least as well as the judge. One-sided one-sample t-test
of W_h - W_f against epsilon (H1: mean < epsilon, i.e. the judge's advantage probability
exceeds j's minus epsilon). p-values are corrected with Benjamini-Yekutieli at q; the
winning rate is the share of humans whose null is rejected; the judge passes at >= 0.5.
rho (advantage probability) is the mean over humans of mean(W_f).
Rule of thumb from the paper: epsilon 0.2 for experts, 0.15 skilled, 0.1 crowd workers.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from scipy.stats import ttest_1samp

Scoring = Literal["accuracy", "neg_rmse"]


def benjamini_yekutieli(pvalues: np.ndarray, q: float = 0.05) -> np.ndarray:
    """Rejections under the Benjamini-Yekutieli FDR procedure (valid under any dependence).

    Reference: Benjamini & Yekutieli (2001), Annals of Statistics 29(4).
    """
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool)
    c_m = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(p)
    below = p[order] <= np.arange(1, m + 1) * q / (m * c_m)
    reject = np.zeros(m, dtype=bool)
    if below.any():
        reject[order[: int(np.flatnonzero(below).max()) + 1]] = True
    return reject


def _score(pred: np.ndarray, others: np.ndarray, scoring: Scoring) -> np.ndarray:
    present = ~np.isnan(others)
    count = present.sum(axis=1)
    if scoring == "accuracy":
        return np.sum((others == pred[:, None]) & present, axis=1) / count
    sq = np.where(present, (others - pred[:, None]) ** 2, 0.0)
    return -np.sqrt(sq.sum(axis=1) / count)


def alt_test(humans: np.ndarray, judge: np.ndarray, *, scoring: Scoring = "neg_rmse",
             epsilon: float = 0.2, q: float = 0.05, min_items: int = 30,
             names: list[str] | None = None) -> dict[str, Any]:
    """Run the alt-test on an items x humans matrix (NaN = not rated) and the judge's scores
    per item (NaN = not scored); categorical labels must be coded as numbers.

    Reference: Calderon, Reichart & Dror (2025), The Alternative Annotator Test for LLM-as-a-Judge, ACL.
    """
    h = np.asarray(humans, dtype=float)
    f = np.asarray(judge, dtype=float)
    names = names or [str(j) for j in range(h.shape[1])]
    per_human: dict[str, Any] = {}
    tested, pvalues = [], []
    for j in range(h.shape[1]):
        others = np.delete(h, j, axis=1)
        rows = ~np.isnan(h[:, j]) & ~np.isnan(f) & (~np.isnan(others)).any(axis=1)
        n = int(rows.sum())
        info: dict[str, Any] = {"n_items": n, "p_value": None, "rejected": None,
                                "advantage_probability": None}
        if n >= 2:
            s_judge = _score(f[rows], others[rows], scoring)
            s_human = _score(h[rows, j], others[rows], scoring)
            w_f = (s_judge >= s_human).astype(float)
            w_h = (s_human >= s_judge).astype(float)
            info["advantage_probability"] = float(w_f.mean())
            if n >= min_items:
                d = w_h - w_f
                # all differences equal: the t statistic is undefined; decide by the sign
                p = (float(ttest_1samp(d, popmean=epsilon, alternative="less").pvalue)
                     if np.ptp(d) > 0 else (0.0 if d[0] < epsilon else 1.0))
                info["p_value"] = p
                tested.append(names[j])
                pvalues.append(p)
            else:
                info["reason"] = f"fewer than {min_items} items (the t-test needs about 30)"
        else:
            info["reason"] = "fewer than two items shared with the judge and another human"
        per_human[names[j]] = info
    rejected = benjamini_yekutieli(np.array(pvalues), q)
    for name, rej in zip(tested, rejected):
        per_human[name]["rejected"] = bool(rej)
    rhos = [v["advantage_probability"] for v in per_human.values() if v["advantage_probability"] is not None]
    winning = float(np.mean(rejected)) if tested else None
    return {
        "epsilon": epsilon, "q": q, "scoring": scoring,
        "humans": per_human,
        "winning_rate": winning,
        "advantage_probability": float(np.mean(rhos)) if rhos else None,
        "passed": None if winning is None else bool(winning >= 0.5),
    }
