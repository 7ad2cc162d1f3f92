"""System scores from judges on every item, corrected by the humans on some: prediction-powered
inference (Angelopoulos et al., Science 2023) and PPI++ with power tuning (Angelopoulos, Duchi
and Zrnic, 2023), beside the human-only and the judge-only estimates.

For one system: Y = the human value of each item humans rated (the mean of its raters), Ŷ = the
judge's score of the same items, Ũ = the judge's score of the items no human rated.

    PPI      θ = mean(Ũ) + mean(Y − Ŷ)                 se² = var(Ũ)/N + var(Y − Ŷ)/n
    PPI++    θ = λ·mean(Ũ) + mean(Y − λŶ)              se² = λ²var(Ũ)/N + var(Y − λŶ)/n
             λ = cov(Y, Ŷ) / ((1 + n/N) var(Ŷ ∪ Ũ)), clipped to [0, 1]

with normal 95% intervals, as ppi_py computes them (variances with ddof 0, the pooled judge
variance with ddof 1); the tests check these against ppi_py. The interval stays valid however
biased the judge is: a bad judge only makes it wider (λ → 0 gives the human-only interval).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from annotation.stats.tables import TableError, read_table


def _interval(mean: float, se: float, level: float) -> list[float]:
    half = float(norm.ppf((1 + level) / 2) * se)
    return [mean - half, mean + half]


def human_only(y: np.ndarray, level: float = 0.95) -> dict[str, Any]:
    """The classical estimate: the mean of the human values with its CLT interval.

    Reference: the classical CLT interval, as the baseline of Angelopoulos et al. (2023).
    """
    n = int(y.size)
    if n == 0:
        return {"mean": None, "ci": None, "n": 0}
    mean = float(y.mean())
    return {"mean": mean, "ci": _interval(mean, float(y.std() / np.sqrt(n)), level) if n > 1 else None, "n": n}


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising weight of the judge, in [0, 1].

    Reference: Angelopoulos, Duchi & Zrnic (2023), PPI++: Efficient Prediction-Powered Inference.
    """
    n, big_n = y.size, yhat_unlabeled.size
    pooled = np.concatenate([yhat, yhat_unlabeled])
    var_hat = float(np.var(pooled, ddof=1))
    if var_hat == 0:
        return 0.0  # a constant judge carries no information about differences between items
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var_hat), 0.0, 1.0))


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, *, lam: float = 1.0,
             level: float = 0.95) -> dict[str, Any]:
    """The prediction-powered mean and interval for a given judge weight `lam` (1 = classical PPI).

    Reference: Angelopoulos et al. (2023), Science 382(6671).
    """
    n, big_n = y.size, yhat_unlabeled.size
    mean = float(lam * yhat_unlabeled.mean() + (y - lam * yhat).mean())
    se = float(np.sqrt(np.var(lam * yhat_unlabeled) / big_n + np.var(y - lam * yhat) / n))
    return {"mean": mean, "ci": _interval(mean, se, level), "se": se}


def estimate_system(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray,
                    level: float = 0.95) -> dict[str, Any]:
    """Human-only, judge-only, PPI and PPI++ for one system. `y` and `yhat` are paired (the items
    humans rated that the judge scored too); PPI needs at least two of those and one item only
    the judge scored, else it is null with the reason.

    Reference: Angelopoulos et al. (2023), Science 382(6671); PPI++: Angelopoulos, Duchi & Zrnic (2023).
    """
    judge_all = np.concatenate([yhat, yhat_unlabeled])
    out: dict[str, Any] = {
        "human_only": human_only(y, level),
        "judge_only": {"mean": float(judge_all.mean()) if judge_all.size else None, "n": int(judge_all.size)},
    }
    reason = ("PPI needs at least 2 items rated by both humans and the judge" if y.size < 2 else
              "PPI needs items only the judge scored" if yhat_unlabeled.size == 0 else None)
    if reason:
        out["ppi"] = {"mean": None, "ci": None, "reason": reason}
        out["ppi_plus"] = {"mean": None, "ci": None, "lambda": None, "reason": reason}
        return out
    classical = ppi_mean(y, yhat, yhat_unlabeled, lam=1.0, level=level)
    lam = ppi_lambda(y, yhat, yhat_unlabeled)
    tuned = ppi_mean(y, yhat, yhat_unlabeled, lam=lam, level=level)
    out["ppi"] = {"mean": classical["mean"], "ci": classical["ci"]}
    out["ppi_plus"] = {"mean": tuned["mean"], "ci": tuned["ci"], "lambda": lam}
    human_se = float(y.std() / np.sqrt(y.size))
    # How many human-rated items the human-only estimate would need for PPI++'s precision.
    out["ppi_plus"]["effective_n"] = (float(y.size * (human_se / tuned["se"]) ** 2)
                                      if tuned["se"] > 0 else None)
    return out


def read_judged_items(path: str | Path) -> pd.DataFrame:
    """CSV `item,system,human,judge` -> one row per (system, item): human = mean of its raters'
    values (NaN when none), judge = the judge's score (NaN when none). Several rows of one item
    and system are several human raters; their judge values must agree."""
    df = read_table(path, ("item", "system"))
    for col in ("human", "judge"):
        if col not in df.columns:
            raise TableError(f"missing column (found: {', '.join(df.columns)})", row=1, column=col)
    values = {}
    for col in ("human", "judge"):
        raw = df[col].str.strip()
        num = pd.to_numeric(raw, errors="coerce")
        bad = (raw != "") & ~np.isfinite(num.to_numpy(dtype=float))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise TableError(f"not a number: {df[col].iloc[i]!r}", row=i + 2, column=col)
        values[col] = num.where(raw != "")
    table = pd.DataFrame({"item": df["item"].str.strip(), "system": df["system"].str.strip(), **values})
    spread = table.groupby(["system", "item"])["judge"].agg(lambda s: s.dropna().nunique())
    if (spread > 1).any():
        system, item = spread[spread > 1].index[0]
        row = int(table.index[(table["system"] == system) & (table["item"] == item)][1]) + 2
        raise TableError(f"item {item!r}, system {system!r} has two different judge scores", row=row,
                         column="judge")
    return table.groupby(["system", "item"], sort=True).agg(human=("human", "mean"), judge=("judge", "first"))


def estimate_systems(table: pd.DataFrame, level: float = 0.95) -> dict[str, Any]:
    """{system: estimate_system(...)} from read_judged_items' table.

    Reference: Angelopoulos et al. (2023), Science 382(6671).
    """
    out = {}
    for system, rows in table.groupby(level="system", sort=True):
        human, judge = rows["human"].to_numpy(float), rows["judge"].to_numpy(float)
        labelled = ~np.isnan(human)
        both = labelled & ~np.isnan(judge)
        result = estimate_system(human[both], judge[both], judge[~labelled & ~np.isnan(judge)], level)
        result["human_only"] = human_only(human[labelled], level)  # every human-rated item, judged or not
        out[str(system)] = result
    return out
