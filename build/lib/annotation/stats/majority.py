"""A judge against the human majority label per item: the comparison that suits nominal codes
(TP/FP, ACCEPT/REJECT), where the human mean used for numbers means nothing.

An item's majority is the code most of its human raters gave; an item whose top codes tie, or
that no human rated, has none and is left out (no tie is broken by a made-up rule).
"""

from __future__ import annotations

import numpy as np

from .kappa import cohen_kappa
from .result import Stat


def majority_labels(matrix: np.ndarray) -> np.ndarray:
    """Per item (row), the code most human raters gave; NaN for a tie or an unrated item."""
    x = np.asarray(matrix, dtype=float)
    out = np.full(x.shape[0], np.nan)
    rated = ~np.isnan(x)
    if not rated.any():
        return out
    rows, _ = np.nonzero(rated)
    values, codes = np.unique(x[rated], return_inverse=True)
    counts = np.zeros((x.shape[0], values.size), dtype=np.int64)
    np.add.at(counts, (rows, codes), 1)
    top = counts.max(axis=1)
    winners = (counts == top[:, None]).sum(axis=1)
    clear = (top > 0) & (winners == 1)
    out[clear] = values[counts[clear].argmax(axis=1)]
    return out


def judge_vs_majority(judge: np.ndarray, matrix: np.ndarray) -> dict[str, Stat]:
    """Share of items where the judge gave the human majority's code, and Cohen's kappa between them,
    over the items that have both a judge code and a clear majority."""
    j = np.asarray(judge, dtype=float)
    m = majority_labels(matrix)
    ok = ~(np.isnan(j) | np.isnan(m))
    if not ok.any():
        empty = Stat.undefined("no item has both a judge label and a clear human majority")
        return {"majority_agreement": empty, "majority_kappa": empty}
    return {"majority_agreement": Stat.of(float(np.mean(j[ok] == m[ok]))),
            "majority_kappa": cohen_kappa(j[ok], m[ok])}
