"""Per-rater quality: bias against the leave-one-out consensus, agreement with the others,
gold accuracy, time per item, response-position effects, and outlier flags.

Input: plain rows with columns unit (what is rated: e.g. item/output/criterion joined),
rater, score, and optionally seconds (time spent), position (the response's shown position,
from the stored permutation), gold (the unit's gold value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .gold import agrees, answer_text
from .pairwise import pearson


def rater_quality(rows: pd.DataFrame, *, bias_z: float = 2.0, min_pearson: float = 0.3,
                  fast_fraction: float = 0.25) -> dict[str, dict[str, Any]]:
    """{rater: {...}}; flags: "bias" (|robust z of bias| > bias_z among raters), "low_agreement"
    (Pearson with the others' mean < min_pearson), "fast" (median seconds < fast_fraction of
    the median over all raters)."""
    df = rows.copy(deep=False)  # copy-on-write: the caller's frame stays as it is, its columns are not copied
    df["score"] = df["score"].astype(float)
    g = df.groupby("unit")["score"]
    total, count = g.transform("sum"), g.transform("count")
    others = count - 1
    df["loo"] = np.where(others > 0, (total - df["score"]) / others.where(others > 0, 1), np.nan)
    all_median_time = float(df["seconds"].median()) if "seconds" in df.columns else None
    out: dict[str, dict[str, Any]] = {}
    for rater, r in df.groupby("rater", sort=True):
        paired = r.dropna(subset=["loo"])
        diff = paired["score"] - paired["loo"]
        corr = pearson(paired["score"].to_numpy(), paired["loo"].to_numpy())
        info: dict[str, Any] = {
            "n_ratings": int(len(r)),
            "bias": float(diff.mean()) if len(diff) else None,
            "mae_vs_others": float(diff.abs().mean()) if len(diff) else None,
            "pearson_vs_others": corr.value,
            "exact_vs_others": float(np.mean(np.rint(paired["score"]) == np.rint(paired["loo"])))
            if len(paired) else None,
        }
        if "gold" in r.columns:
            gold = r.dropna(subset=["gold"])
            info["gold_accuracy"] = (float(np.mean([agrees(answer_text(g), v, numeric=True)
                                                    for g, v in zip(gold["gold"], gold["score"])]))
                                     if len(gold) else None)
        if "seconds" in r.columns:
            info["median_seconds"] = float(r["seconds"].median())
        if "position" in r.columns:
            info["position_means"] = {int(p): float(s.mean()) for p, s in r.groupby("position")["score"]}
        out[str(rater)] = info
    _flag(out, bias_z, min_pearson, fast_fraction, all_median_time)
    return out


def _flag(out: dict[str, dict[str, Any]], bias_z: float, min_pearson: float,
          fast_fraction: float, all_median_time: float | None) -> None:
    biases = np.array([v["bias"] for v in out.values() if v["bias"] is not None])
    med = float(np.median(biases)) if biases.size else 0.0
    mad = float(np.median(np.abs(biases - med))) * 1.4826 if biases.size else 0.0
    for info in out.values():
        flags = []
        if info["bias"] is not None and biases.size >= 3 and mad > 0 and abs(info["bias"] - med) / mad > bias_z:
            flags.append("bias")
        if info["pearson_vs_others"] is not None and info["pearson_vs_others"] < min_pearson:
            flags.append("low_agreement")
        if all_median_time and info.get("median_seconds") is not None \
                and info["median_seconds"] < fast_fraction * all_median_time:
            flags.append("fast")
        info["flags"] = flags


def position_effects(rows: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Mean score and count per shown position over all raters (columns position, score)."""
    g = rows.groupby("position")["score"]
    return {int(p): {"mean": float(s.mean()), "n": int(s.size)} for p, s in g}
