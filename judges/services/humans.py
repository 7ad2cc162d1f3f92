"""Judges against humans on one criterion: pure numpy over an units x raters matrix. No Django.

A unit is one rated thing (an output, or an item for item-level criteria). `humans` holds
the human raters' values (NaN where a rater did not rate the unit); each judge is a vector
over the same units (NaN where it has no score). Numeric criteria use the values; choice
criteria are coded as the index of the choice.

- numeric: the judge against the human mean per unit (annotation.stats.correlation);
  categorical: against the human majority (ties left out), with Cohen's kappa.
- alpha: Krippendorff's alpha of the humans, and of the humans plus the judge as one more
  rater, on the units the judge scored (interval for numeric, nominal for categorical).
- human ceiling: each human against the mean (majority) of the OTHER humans on the same
  units, averaged over humans weighted by units: how well one human predicts the rest.
- verdict: the alternative annotator test (annotation.stats.alt_test) when it can run;
  otherwise the rule "a judge is comparable to a human when its agreement with the human
  consensus lies within the human-human interval" (from the least to the most agreeing
  human: Pearson and MAE for numeric, agreement for categorical); beyond the interval's
  better end it is "above human agreement". Never comparable (nor passing) at an
  agreement of 0, a Pearson <= 0, or an undefined one.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from annotation.stats.alt_test import alt_test
from annotation.stats.correlation import judge_vs_humans
from annotation.stats.kappa import cohen_kappa
from annotation.stats.krippendorff import krippendorff_alpha
from annotation.stats.result import Stat

ALT_EPSILON = 0.2  # the paper's value for expert annotators
ALT_MIN_ITEMS = 30


def as_dict(s: Stat) -> dict[str, Any]:
    return {"value": s.value, "reason": None if s.value is not None else (s.reason or "undefined"),
            "ci": list(s.ci) if s.ci else None}


def majority(humans: np.ndarray) -> np.ndarray:
    """The most frequent code per row; NaN for empty rows and ties."""
    out = np.full(humans.shape[0], np.nan)
    for i, row in enumerate(humans):
        vals = row[~np.isnan(row)]
        if vals.size == 0:
            continue
        codes, counts = np.unique(vals, return_counts=True)
        top = counts == counts.max()
        if top.sum() == 1:
            out[i] = codes[top][0]
    return out


def consensus(humans: np.ndarray, measure: str) -> np.ndarray:
    if measure == "numeric":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a unit nobody rated: NaN, as meant
            return np.nanmean(humans, axis=1)
    return majority(humans)


def human_ceiling(humans: np.ndarray, measure: str) -> dict[str, Any]:
    """Leave-one-out: every human against the consensus of the others, pooled over humans."""
    per: list[tuple[int, dict[str, float | None]]] = []
    for j in range(humans.shape[1]):
        others = np.delete(humans, j, axis=1)
        rest = consensus(others, measure)
        mine = humans[:, j]
        ok = ~np.isnan(mine) & ~np.isnan(rest)
        n = int(ok.sum())
        if n < 2:
            continue
        if measure == "numeric":
            s = judge_vs_humans(mine[ok], rest[ok])
            per.append((n, {"pearson": s["pearson"].value, "mae": s["mae"].value,
                            "exact_agreement": s["exact_agreement"].value}))
        else:
            per.append((n, {"agreement": float(np.mean(mine[ok] == rest[ok])),
                            "kappa": cohen_kappa(mine[ok], rest[ok]).value}))
    if not per:
        return {"n_humans": 0, "reason": "needs units rated by at least two humans"}
    out: dict[str, Any] = {"n_humans": len(per)}
    for key in per[0][1]:
        vals = [(n, d[key]) for n, d in per if d[key] is not None]
        total = sum(n for n, _ in vals)
        out[key] = sum(n * v for n, v in vals) / total if total else None
        # the human-human interval: from the least to the most agreeing human
        out[f"{key}_range"] = [min(v for _, v in vals), max(v for _, v in vals)] if vals else None
    return out


def _alphas(humans: np.ndarray, judge: np.ndarray, measure: str) -> dict[str, Any]:
    rows = ~np.isnan(judge)
    level = "interval" if measure == "numeric" else "nominal"
    h = humans[rows]
    return {"level": level,
            "humans": as_dict(krippendorff_alpha(h, level)) if h.size else as_dict(Stat.undefined("no units")),
            "with_judge": as_dict(krippendorff_alpha(np.column_stack([h, judge[rows]]), level)) if h.size
            else as_dict(Stat.undefined("no units"))}


def _undetermined(why: str, method: str = "rule") -> dict[str, Any]:
    return {"label": "undetermined", "method": method, "passed": None, "why": why}


def _no_agreement(stats: Mapping[str, Any], measure: str) -> str | None:
    """Why the judge cannot be comparable to a human whatever else holds: its agreement is
    undefined, or nil (0 agreement, or a Pearson at or below 0)."""
    key = "pearson" if measure == "numeric" else "agreement"
    value = stats[key]["value"]
    if value is None:
        return f"the judge's {key} with the humans is undefined"
    if value <= 0:
        return f"the judge's {key} with the humans is {value:.2f}"
    return None


def _place(value: float, interval: Sequence[float], higher_is_better: bool = True) -> str:
    """below | within | above the human-human interval (above = agrees better than every human)."""
    lo, hi = interval
    if not higher_is_better:
        value, lo, hi = -value, -hi, -lo
    return "below" if value < lo else ("above" if value > hi else "within")


_LABELS = {"within": "comparable to a human", "above": "above human agreement", "below": "below human agreement"}


def _verdict(stats: Mapping[str, Any], ceiling: Mapping[str, Any], alt: Mapping[str, Any] | None,
             measure: str) -> dict[str, Any]:
    nil = _no_agreement(stats, measure)
    if alt is not None and alt.get("passed") is not None:
        rate = alt["winning_rate"]
        why = (f"winning rate {rate:.2f} (pass at 0.50) with epsilon {alt['epsilon']}, "
               f"advantage probability {alt['advantage_probability']:.2f}")
        if nil and alt["passed"]:
            return {"label": "fails the alt-test", "method": "alt-test", "passed": False,
                    "why": f"{nil}, so it cannot pass ({why})"}
        return {"label": "passes the alt-test" if alt["passed"] else "fails the alt-test", "method": "alt-test",
                "passed": alt["passed"], "why": why}
    if not ceiling.get("n_humans"):
        return _undetermined("no unit has two human ratings, so there is no human agreement to compare with")
    if nil and stats[("pearson" if measure == "numeric" else "agreement")]["value"] is None:
        return _undetermined(nil)
    note = " (alt-test not run: too few units or humans)"
    if measure == "numeric":
        r, mae = stats["pearson"]["value"], stats["mae"]["value"]
        r_int, mae_int = ceiling.get("pearson_range"), ceiling.get("mae_range")
        if None in (r, mae) or not r_int or not mae_int:
            return _undetermined("a correlation is undefined on these data")
        if nil:
            return {"label": _LABELS["below"], "method": "rule", "passed": False, "why": nil + note}
        places = {_place(r, r_int), _place(mae, mae_int, higher_is_better=False)}
        place = "below" if "below" in places else ("above" if "above" in places else "within")
        return {"label": _LABELS[place], "method": "rule", "passed": place != "below",
                "why": f"Pearson {r:.2f} vs the humans' {r_int[0]:.2f}–{r_int[1]:.2f}; "
                       f"MAE {mae:.2f} vs {mae_int[0]:.2f}–{mae_int[1]:.2f}" + note}
    acc, a_int = stats["agreement"]["value"], ceiling.get("agreement_range")
    if not a_int:
        return _undetermined("no comparable units")
    if nil:
        return {"label": _LABELS["below"], "method": "rule", "passed": False, "why": nil + note}
    place = _place(acc, a_int)
    return {"label": _LABELS[place], "method": "rule", "passed": place != "below",
            "why": f"agreement with the majority {acc:.2f} vs the humans' {a_int[0]:.2f}–{a_int[1]:.2f}" + note}


def compare_judge(humans: np.ndarray, judge: np.ndarray, measure: str, ceiling: Mapping[str, Any],
                  names: Sequence[str] | None = None) -> dict[str, Any]:
    """Every statistic of one judge on one criterion (plain JSON-ready values)."""
    cons = consensus(humans, measure)
    ok = ~np.isnan(judge) & ~np.isnan(cons)
    out: dict[str, Any] = {"n_units": int(ok.sum()), "n_judged": int((~np.isnan(judge)).sum())}
    if measure == "numeric":
        s = judge_vs_humans(judge[ok], cons[ok])
        out.update({k: as_dict(v) for k, v in s.items()})
    else:
        agree = float(np.mean(judge[ok] == cons[ok])) if ok.any() else None
        out["agreement"] = {"value": agree, "reason": None if agree is not None else "no comparable units", "ci": None}
        out["kappa"] = as_dict(cohen_kappa(judge[ok], cons[ok]) if ok.sum() >= 2 else Stat.undefined("too few units"))
    out["alpha"] = _alphas(humans, judge, measure)
    alt = None
    if humans.shape[1] >= 2:
        alt = alt_test(humans, judge, scoring="neg_rmse" if measure == "numeric" else "accuracy",
                       epsilon=ALT_EPSILON, min_items=ALT_MIN_ITEMS, names=list(names) if names else None)
    out["alt_test"] = alt
    out["verdict"] = _verdict(out, ceiling, alt, measure)
    return out


def compare_criterion(humans: np.ndarray, judges: Mapping[str, np.ndarray], measure: str,
                      names: Sequence[str] | None = None) -> dict[str, Any]:
    ceiling = human_ceiling(humans, measure)
    return {"measure": measure, "n_units": int(humans.shape[0]), "n_humans": int(humans.shape[1]),
            "ceiling": ceiling,
            "judges": {name: compare_judge(humans, vec, measure, ceiling, names) for name, vec in judges.items()}}

