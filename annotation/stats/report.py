"""The agreement report from a long table of ratings (DESIGN.md's `agreement --json` shape).

Input: a DataFrame with columns item, rater, score and optionally criterion (name `score`
when absent). Judges, named by rater, are left out of the human statistics and compared
with the mean of the human raters per item (and by the alternative annotator test,
alt_test.py, on negative RMSE with epsilon 0.2). Every statistic that is undefined for the
data is None, with its reason under "reasons" (keyed by the statistic's dotted path).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .agreement import matrix_agreement
from .alt_test import alt_test
from .correlation import judge_vs_humans
from .result import Stat, jsonable

JUDGE_KEYS = ("pearson", "spearman", "kendall_tau_b", "lin_ccc", "mae")
DEFAULT_CRITERION = "score"
ALT_TEST_EPSILON = 0.2  # Calderon et al. 2025's rule of thumb for expert raters


class DuplicateRating(ValueError):
    """The same rater rated the same item (and criterion) twice; `row` is the 0-based row."""

    def __init__(self, row: int, item: object, rater: object, criterion: object):
        self.row = row
        super().__init__(f"rater {rater!r} rated item {item!r} (criterion {criterion!r}) "
                         f"more than once (data row {row})")


def check_unique(item_codes: np.ndarray, rater_codes: np.ndarray, crit_codes: np.ndarray,
                 df: pd.DataFrame) -> None:
    """Raise DuplicateRating at the first repeated (item, rater, criterion)."""
    n_items, n_raters = int(item_codes.max()) + 1, int(rater_codes.max()) + 1
    key = (crit_codes.astype(np.int64) * n_items + item_codes) * n_raters + rater_codes
    dup = pd.Series(key).duplicated().to_numpy()
    if dup.any():
        pos = int(np.flatnonzero(dup)[0])
        row = df.iloc[pos]
        raise DuplicateRating(pos, row["item"], row["rater"], row.get("criterion", DEFAULT_CRITERION))


def to_matrix(items: np.ndarray, raters: np.ndarray, scores: np.ndarray,
              n_items: int, n_raters: int) -> np.ndarray:
    """Items x raters matrix (NaN = not rated) from integer codes."""
    m = np.full((n_items, n_raters), np.nan)
    m[items, raters] = scores
    return m


def agreement_report(df: pd.DataFrame, judges: Sequence[str] = ()) -> dict[str, Any]:
    """{"criteria": {name: {...}}} with plain floats/None, ready for json.dumps."""
    for col in ("item", "rater", "score"):
        if col not in df.columns:
            raise ValueError(f"missing column {col!r}")
    if df.empty:
        return {"criteria": {}}
    item_codes, _ = pd.factorize(df["item"])
    rater_codes, rater_names = pd.factorize(df["rater"].astype(str))
    if "criterion" in df.columns:
        crit_codes, crit_names = pd.factorize(df["criterion"].astype(str), sort=False)
    else:
        crit_codes, crit_names = np.zeros(len(df), dtype=np.int64), pd.Index([DEFAULT_CRITERION])
    check_unique(item_codes, rater_codes, crit_codes, df)
    rated = df["score"].notna().to_numpy()
    scores = df["score"].to_numpy(dtype=float)[rated]
    item_codes, rater_codes, crit_codes = item_codes[rated], rater_codes[rated], crit_codes[rated]
    judge_set = {str(j) for j in judges}
    is_judge_rater = np.array([name in judge_set for name in rater_names], dtype=bool)

    order = np.argsort(crit_codes, kind="stable")
    bounds = np.searchsorted(crit_codes[order], np.arange(len(crit_names) + 1))
    criteria = {}
    for c, name in enumerate(crit_names):
        rows = order[bounds[c]:bounds[c + 1]]
        criteria[str(name)] = _criterion_report(
            item_codes[rows], rater_codes[rows], scores[rows], rater_names, is_judge_rater, judges)
    return {"criteria": criteria}


def _criterion_report(items: np.ndarray, raters: np.ndarray, scores: np.ndarray,
                      rater_names: pd.Index, is_judge_rater: np.ndarray,
                      judges: Sequence[str]) -> dict[str, Any]:
    uitems, item_idx = np.unique(items, return_inverse=True)
    human = ~is_judge_rater[raters]
    h_raters, h_idx = np.unique(raters[human], return_inverse=True)
    matrix = to_matrix(item_idx[human], h_idx, scores[human], uitems.size, h_raters.size)
    stats = matrix_agreement(matrix)
    out: dict[str, Any] = {
        "n_items": int(np.unique(item_idx[human]).size),
        "n_raters": int(h_raters.size),
        "n_ratings": int(human.sum()),
        **stats,
    }
    rated = ~np.isnan(matrix)
    with np.errstate(invalid="ignore", divide="ignore"):
        human_mean = np.where(rated.any(axis=1),
                              np.where(rated, matrix, 0.0).sum(axis=1) / rated.sum(axis=1), np.nan)
    code_of = {name: i for i, name in enumerate(rater_names)}
    judged: dict[str, Any] = {}
    for judge in judges:
        sel = raters == code_of.get(str(judge), -1)
        jscore = np.full(uitems.size, np.nan)
        jscore[item_idx[sel]] = scores[sel]
        stats_j: dict[str, Any] = dict(judge_vs_humans(jscore, human_mean))
        alt = alt_test(matrix, jscore, scoring="neg_rmse", epsilon=ALT_TEST_EPSILON)
        stats_j["alt_test_advantage_probability"] = alt["advantage_probability"]
        stats_j["alt_test_winning_rate"] = alt["winning_rate"]
        judged[str(judge)] = stats_j
    out["judges"] = judged
    out["icc_complete_items"] = int(rated.all(axis=1).sum())  # the ICCs use complete cases only
    out["icc_ci"] = {form: list(s.ci) if s.ci else None for form, s in stats["icc"].items()}
    out["reasons"] = _reasons(out)
    return jsonable(out)


def _reasons(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Stat) and value.value is None:
            found[path] = value.reason or "undefined"
        elif isinstance(value, dict):
            found.update(_reasons(value, path + "."))
    return found
