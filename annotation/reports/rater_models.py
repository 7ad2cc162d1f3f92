"""Consensus that models the raters, for the study report and the releases.

Per categorical criterion every label model of annotation.stats.raters is fitted to all the study's
labels at once (a model pools every item) and the best-fitting one (lowest BIC) is the consensus,
with the reason; per numeric criterion the rater-effects model gives each rater's bias and noise.
The report gets a section of plain data (`rater_models_section`); a release gets each output's
modelled label and posterior and each rater's estimates (`study_rater_models`).

A rater is named "to check" when the estimates say so (accuracy near chance, spamming, one label given
far more often than the majority gives it, a bias of a scale point or more, noise twice the median rater's): a prompt for a look, never a rejection — payment
decisions stay with the study's written attention policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from annotation.labels import CONVERGED, NOT_CONVERGED
from annotation.models import Study
from annotation.reports.ratings import rater_names, stats_frame
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.stats.raters import METHODS, best_label_model, label_data, rater_effects

# Flags need this many of the rater's answers: with fewer every estimate is mostly its prior.
MIN_ANSWERS_TO_FLAG = 20
BIC_MARGIN = 10.0         # a model replaces majority vote only with a BIC this much lower (Kass & Raftery 1995)
NEAR_CHANCE = 0.10        # accuracy within this of 1/K: the labels carry almost nothing
SPAMMING = 0.30           # MACE competence below this: most answers are the rater's own strategy
OVERUSED = 0.40           # a class given this much more often than the majority gives it on the same outputs
BIAS_POINTS = 1.0         # a rater's shift from the median rater, in scale points, and at least
BIAS_SHARE = 0.25         # this share of the scale's range (1.5 points of a 1-7 scale, 25 of 0-100)
NOISE_TIMES = 2.0         # a rater's noise SD this many times the median rater's
GLAD_MAX_LABELS = 50_000  # GLAD run to convergence: 2 s at 25,000 labels, 7 s at 100,000 here
EFFECTS_MAX_RATINGS = 50_000
EFFECTS_MAX_ITER = 100      # EM steps past 10,000 ratings: 0.17 s a step at 50,000 ratings by 1,000 raters here
RATERS_SHOWN = 200        # rows per criterion kept in the report (the flagged ones first)
METHOD_NAMES = {"majority": "majority vote", "dawid_skene": "Dawid–Skene", "one_coin": "one-coin Dawid–Skene",
                "glad": "GLAD", "mace": "MACE", "rater_effects": "rater effects"}

RATERS_SCHEMA = pa.schema([
    ("rater", pa.string()), ("criterion", pa.string()), ("method", pa.string()), ("n", pa.int64()),
    ("agreement", pa.float64()), ("distance", pa.float64()), ("accuracy", pa.float64()), ("competence", pa.float64()),
    ("bias", pa.float64()), ("noise_sd", pa.float64()), ("to_check", pa.string()),
])


class UnitKeys(Sequence):
    """The (item_id, output) of each unit code, made as read: a numeric criterion needs only their number,
    and the tuples of a million ratings' units cost half a second a criterion."""

    def __init__(self, keys: np.ndarray):
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> tuple[int, int]:
        k = int(self.keys[i])
        return k // 4096, k % 4096 - 1

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((k // 4096, k % 4096 - 1) for k in self.keys.tolist())

    def take(self, codes: np.ndarray) -> "UnitKeys":
        return UnitKeys(self.keys[codes])


def _codes(df: pd.DataFrame, key: str) -> dict[str, Any] | None:
    """The criterion's rated rows as codes: unit (an (item_id, output)), rater (the `rater`
    categorical's code) and x (class index or score)."""
    rows = (df["criterion"] == key).to_numpy() & df["x"].notna().to_numpy()
    if not rows.any():
        return None
    key_ = df["item_id"].to_numpy(np.int64)[rows] * 4096 + (df["output"].to_numpy(np.int64)[rows] + 1)
    names = np.asarray(df["rater"].cat.categories, dtype=object)
    by_name = np.argsort(names, kind="stable")
    rank = np.empty(len(names), np.int64)
    rank[by_name] = np.arange(len(names))
    rater_rank = rank[df["rater"].cat.codes.to_numpy()[rows]]
    # The database returns the rows, and so the raters' categories, in no set order; the fits' sums run in
    # array order, so in SQL's order a release's rater estimates differed in the last bits from one build to
    # the next. By (unit, rater name) they are the same arrays every time.
    order = np.argsort(key_ * len(names) + rater_rank, kind="stable")
    unit, unit_keys = pd.factorize(key_[order])
    rater, rater_ranks = pd.factorize(rater_rank[order], sort=True)
    return {"unit": unit.astype(np.int64), "rater": rater.astype(np.int64), "x": df["x"].to_numpy(float)[rows][order],
            "units": UnitKeys(np.asarray(unit_keys)),
            "raters": [str(names[by_name[r]]) for r in rater_ranks]}


def _chosen(choice: Any) -> tuple[Any, str]:
    """(the model used, why): the lowest BIC, but majority vote unless another model's BIC is at least
    BIC_MARGIN lower. On a small study a rater model's likelihood can peak where one rater is taken for
    the truth (one-coin on the demo's 33 outputs: the strict rater "perfect"); only a clear gain
    overturns the raters' majority."""
    majority, best = choice.fits["majority"], choice.best
    if best.method == "majority":
        return majority, choice.reason
    gain = majority.bic - best.bic
    k = best.posteriors.shape[1]
    typical = float(np.median(best.rater_accuracy)) if len(best.rater_accuracy) else 1.0
    if gain >= BIC_MARGIN and typical <= 1 / k + NEAR_CHANCE:
        # a truth that makes the median rater a guesser is one of the likelihood's other peaks (on the demo's
        # 33 outputs one-coin sided with the spammer and the strict rater now and then), not the raters' answer
        return majority, (f"{best.method} fits best (BIC {best.bic:.1f}, {gain:.1f} below majority vote's) but "
                          f"would put the median rater's accuracy at {typical:.2f}, near chance: the majority is kept")
    if gain >= BIC_MARGIN:
        return best, f"{choice.reason}; {gain:.1f} below majority vote's, at least {BIC_MARGIN:g}"
    return majority, (f"{best.method} fits best (BIC {best.bic:.1f}) but only {gain:.1f} below majority vote's, "
                      f"under {BIC_MARGIN:g} (Kass & Raftery's very strong evidence): the majority is kept")


def _categorical(codes: Mapping[str, Any], choices: list[str]) -> tuple[dict[str, Any], Any]:
    k = len(choices)
    data = label_data(codes["unit"], codes["rater"], codes["x"].astype(np.int64), n_classes=k,
                      n_items=len(codes["units"]), n_raters=len(codes["raters"]))
    # GLAD fits a difficulty per output: the slowest by far (run until it converges), and its BIC pays
    # for every output, so on a large study it is left out rather than holding the report up.
    methods = tuple(m for m in METHODS if m != "glad" or data.n <= GLAD_MAX_LABELS)
    choice = best_label_model(data, methods)
    best, reason = _chosen(choice)
    majority = choice.fits["majority"]
    differ = best.labels != majority.labels
    n = best.rater_n
    # agreement beside the estimate: the share of the rater's labels equal to the unit's majority
    agree = np.bincount(data.rater, weights=(data.label == majority.labels[data.item]).astype(float),
                        minlength=data.n_raters) / np.maximum(n, 1)
    mace = choice.fits["mace"]
    competence = mace.rater["competence"]
    # majority vote has one accuracy for everyone: then each rater's is MACE's, the spammer model's
    estimates = mace if best.method == "majority" else best
    # a rater who gives one class far more often than the majority does on the same outputs
    said = np.zeros((data.n_raters, k))
    np.add.at(said, (data.rater, data.label), 1)
    fitted = np.zeros((data.n_raters, k))
    np.add.at(fitted, (data.rater, majority.labels[data.item]), 1)
    excess = (said - fitted) / np.maximum(n, 1)[:, None]
    enough = n >= MIN_ANSWERS_TO_FLAG
    median_agreement = float(np.median(agree[enough])) if enough.any() else 0.0
    raters = []
    for r, name in enumerate(codes["raters"]):
        accuracy, comp = float(estimates.rater_accuracy[r]), float(competence[r])
        why = []
        if n[r] >= MIN_ANSWERS_TO_FLAG:
            if accuracy <= 1 / k + NEAR_CHANCE:
                why.append(f"accuracy {accuracy:.2f}, near chance ({1 / k:.2f})")
            # MACE's competence alone is unsteady on a small study (a rater who agreed with the majority as often
            # as most came out "71% without looking" in some of the demo's draws): named only for a rater who also
            # agrees with the majority less often than the median rater does
            if comp < SPAMMING and agree[r] < median_agreement:
                why.append(f"MACE: answers without looking {1 - comp:.0%} of the time")
            over = int(excess[r].argmax())
            if excess[r, over] >= OVERUSED:
                why.append(f"says {choices[over]} {said[r, over] / n[r]:.0%} of the time, "
                           f"the majority {fitted[r, over] / n[r]:.0%}")
        raters.append({"rater": name, "n": int(n[r]), "agreement": float(agree[r]), "distance": None,
                       "accuracy": accuracy, "competence": comp, "bias": None, "noise_sd": None,
                       "to_check": "; ".join(why)})
    if not best.converged:
        reason += f"; {METHOD_NAMES.get(best.method, best.method)} stopped after {best.iterations} steps, {NOT_CONVERGED}"
    entry = {
        "measure": "categorical", "method": best.method, "reason": reason,
        "state": CONVERGED if best.converged else NOT_CONVERGED,
        "fits": [{**row, "chosen": row["method"] == best.method} for row in choice.table()],
        "accuracy_from": estimates.method, "n_units": data.n_items, "n_answers": data.n,
        "differs_from_majority": int(differ.sum()), "differs_share": float(differ.mean()),
        "raters": raters,
    }
    post = best.posteriors
    chosen = best.labels
    labels = {"method": best.method, "labels": {
        u: (choices[chosen[i]], float(post[i, chosen[i]])) for i, u in enumerate(codes["units"])}}
    return entry, labels


def _effects_sample(codes: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The ratings the rater-effects model is fitted on: all of them, or past EFFECTS_MAX_RATINGS every
    rating of a seeded sample of outputs (each EM step solves the whole system: 0.2 s at 100,000 ratings
    here). A rater's bias needs their ratings, not every output's."""
    n = codes["x"].size
    if n <= EFFECTS_MAX_RATINGS:
        return dict(codes), ""
    n_units = len(codes["units"])
    keep_units = np.random.default_rng(0).random(n_units) < EFFECTS_MAX_RATINGS / n
    rows = keep_units[codes["unit"]]
    unit, kept = pd.factorize(codes["unit"][rows])
    out = {"unit": unit.astype(np.int64), "rater": codes["rater"][rows], "x": codes["x"][rows],
           "units": codes["units"].take(kept), "raters": codes["raters"]}
    return out, f"; fitted on the {rows.sum():,} ratings of a seeded sample of {kept.size:,} of {n_units:,} outputs"


def modelled_consensus(matrix: np.ndarray, n_classes: int) -> dict[str, Any] | None:
    """The label consensus of a (units x raters) matrix of class codes (NaN: not rated) as the report's
    section chooses it (lowest BIC, majority unless clearly beaten): {"method", "reason", "labels": class
    code per unit, NaN for a unit nobody labelled}. For other apps' sections (judges vs humans)."""
    rated = ~np.isnan(matrix)
    unit, rater = np.nonzero(rated)
    if unit.size == 0 or n_classes < 2 or matrix.shape[1] < 2:
        return None
    data = label_data(unit, rater, matrix[rated].astype(np.int64), n_classes=n_classes, n_items=matrix.shape[0],
                      n_raters=matrix.shape[1])
    used, reason = _chosen(best_label_model(data, tuple(m for m in METHODS if m != "glad"
                                                        or data.n <= GLAD_MAX_LABELS)))
    labels = used.labels.astype(float)
    labels[~rated.any(axis=1)] = np.nan
    return {"method": used.method, "reason": reason, "labels": labels}


def _bias_limits(fit: Any, criterion: Mapping[str, Any]) -> tuple[float, float]:
    """How far (scale points) a rater's bias must be from the median rater's to flag them, and that median."""
    n = fit.rater_n
    points = BIAS_POINTS if criterion.get("min") is None else max(
        BIAS_POINTS, (float(criterion["max"]) - float(criterion["min"])) * BIAS_SHARE)
    # Against the median rater: one far-off rater moves the mean of the biases, not their median.
    centre = float(np.median(fit.rater_bias[n > 0])) if (n > 0).any() else 0.0
    return points, centre


def modelled_means(unit: np.ndarray, rater: np.ndarray, x: np.ndarray, criterion: Mapping[str, Any]
                   ) -> dict[str, Any] | None:
    """The scale consensus other apps' sections may use as the human answer (judges' PPI estimates):
    per unit code (0..max) the rater-effects adjusted mean, what an average rater would give, when the
    model names a rater lenient or strict as this report's section does; else None and the plain mean
    stands (no such rater, fewer than two raters, or past EFFECTS_MAX_RATINGS: the section then fits
    a sample, and a sample has no mean for every output)."""
    if x.size == 0 or x.size > EFFECTS_MAX_RATINGS or np.unique(rater).size < 2:
        return None
    fit = rater_effects(unit, rater, x, max_iter=EFFECTS_MAX_ITER if x.size > 10_000 else 1000)
    points, centre = _bias_limits(fit, criterion)
    off = (fit.rater_n >= MIN_ANSWERS_TO_FLAG) & (np.abs(fit.rater_bias - centre) >= points)
    if not off.any():
        return None
    return {"method": "rater_effects", "means": fit.output_mean,
            "reason": f"{int(off.sum())} rater(s) lenient or strict by {points:g} points or more against the median "
                      "rater: the rater-effects adjusted mean (REML) corrects for who rated what"}


def _numeric(codes: Mapping[str, Any], criterion: Mapping[str, Any]) -> dict[str, Any]:
    codes, sampled = _effects_sample(codes)
    fit = rater_effects(codes["unit"], codes["rater"], codes["x"], n_outputs=len(codes["units"]),
                        n_raters=len(codes["raters"]),
                        # a small study's steps cost nothing: there the fit runs to convergence
                        max_iter=EFFECTS_MAX_ITER if codes["x"].size > 10_000 else 1000)
    n_units = len(codes["units"])
    plain = np.bincount(codes["unit"], weights=codes["x"], minlength=n_units) / np.maximum(fit.output_n, 1)
    shift = fit.output_mean - plain
    # beside the estimate: the rater's mean absolute distance from the outputs' plain means
    n = fit.rater_n
    dist = np.bincount(codes["rater"], weights=np.abs(codes["x"] - plain[codes["unit"]]),
                       minlength=len(codes["raters"])) / np.maximum(n, 1)
    points, centre = _bias_limits(fit, criterion)
    typical_sd = float(np.median(fit.rater_sd[n > 0])) if (n > 0).any() else fit.noise_sd
    raters = []
    for r, name in enumerate(codes["raters"]):
        bias, sd = float(fit.rater_bias[r]), float(fit.rater_sd[r])
        off = bias - centre
        why = []
        if n[r] >= MIN_ANSWERS_TO_FLAG:
            if abs(off) >= points:
                why.append(f"{'lenient' if off > 0 else 'strict'} by {abs(off):.1f} points against the median rater")
            if sd >= NOISE_TIMES * typical_sd:
                why.append(f"noise SD {sd:.2f}, {sd / typical_sd:.1f}× the median rater's")
        raters.append({"rater": name, "n": int(n[r]), "agreement": None, "distance": float(dist[r]), "accuracy": None,
                       "competence": None, "bias": bias, "noise_sd": sd, "to_check": "; ".join(why)})
    moved = np.abs(shift) >= 0.5
    return {
        "measure": "numeric", "method": "rater_effects",
        "reason": "score = output level + rater bias + the rater's own noise (REML); the adjusted mean is what "
                  "an average rater would give" + sampled
                  + ("" if fit.converged else f"; stopped after {fit.iterations} EM steps, {NOT_CONVERGED}"),
        "converged": fit.converged, "state": CONVERGED if fit.converged else NOT_CONVERGED,
        "n_units": n_units, "n_answers": int(codes["x"].size), "bias_sd": fit.bias_sd, "noise_sd": fit.noise_sd,
        "differs_from_majority": int(moved.sum()), "differs_share": float(moved.mean()),
        "max_shift": float(np.nanmax(np.abs(shift))) if n_units else None,
        "raters": raters,
    }


def _fits(df: pd.DataFrame, criteria: list[Mapping[str, Any]]) -> Iterator[tuple[Mapping, dict, Any]]:
    for c in criteria:
        codes = _codes(df, c["key"])
        if codes is None or len(codes["raters"]) < 2:
            continue
        if criterion_measure(c) == "categorical":
            choices = [str(ch["value"]) for ch in c.get("choices", [])]
            if len(choices) < 2:
                continue
            entry, labels = _categorical(codes, choices)
            yield c, entry, labels
        else:
            yield c, _numeric(codes, c), None


def rater_models_section(df: pd.DataFrame, criteria: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's section: per criterion the model used and why, how often it departs from the
    plain consensus, and the raters (flagged first), with the raters to check over all criteria.
    `df`: the report's rated rows with `x` and the `rater` categorical, attention checks left out."""
    out: dict[str, Any] = {"criteria": {}, "to_check": [],
                           "settings": {"min_answers": MIN_ANSWERS_TO_FLAG, "near_chance": NEAR_CHANCE,
                                        "spamming": SPAMMING, "overused": OVERUSED, "bias_points": BIAS_POINTS, "bias_share": BIAS_SHARE,
                                        "noise_times": NOISE_TIMES, "bic_margin": BIC_MARGIN}}
    flagged: dict[str, list[str]] = {}
    for c, entry, _ in _fits(df, criteria):
        raters = sorted(entry["raters"], key=lambda r: (not r["to_check"], r["rater"]))
        entry["n_raters"] = len(raters)
        entry["raters"], entry["truncated"] = raters[:RATERS_SHOWN], len(raters) > RATERS_SHOWN
        entry["name"] = c.get("name", c["key"])
        out["criteria"][c["key"]] = entry
        for r in raters:
            if r["to_check"]:
                flagged.setdefault(r["rater"], []).append(f"{c['key']}: {r['to_check']}")
    out["to_check"] = [{"rater": k, "reasons": v} for k, v in sorted(flagged.items())]
    return out


def study_rater_models(study: Study) -> dict[str, Any]:
    """{"labels": {key: {"method", "labels": {(item_id, output): (label, posterior)}}}, "raters": rows of
    RATERS_SCHEMA} from the study's stored ratings (a release's tables)."""
    criteria = [c for c in study.rubric["criteria"] if criterion_measure(c) is not None]
    out: dict[str, Any] = {"labels": {}, "raters": []}
    if not criteria:
        return out
    df = stats_frame(study, [c["key"] for c in criteria])
    df = add_analysis_value(df[~df["is_attention_check"].to_numpy()], criteria)
    names = rater_names(study)
    codes, ids = pd.factorize(df["rater_id"])
    df["rater"] = pd.Categorical.from_codes(codes, [str(names.get(i, i)) for i in ids])
    for c, entry, labels in _fits(df, criteria):
        if labels is not None:
            out["labels"][c["key"]] = labels
        out["raters"] += [{"criterion": c["key"], "method": entry["method"], **r} for r in entry["raters"]]
    return out


def modelled_labels(study: Study) -> dict[str, Any]:
    return study_rater_models(study)["labels"]


def rater_batches(models: Mapping[str, Any]) -> Iterator[pa.RecordBatch]:
    if models["raters"]:
        yield pa.RecordBatch.from_pylist(models["raters"], schema=RATERS_SCHEMA)


def rater_models_csv_rows(section: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The section as the report CSV's rows (section `rater_models`)."""
    for key, c in (section.get("criteria") or {}).items():
        yield ["rater_models", key, "", f"method={c['method']}", None, None, None, c["reason"]]
        yield ["rater_models", key, "", "differs_from_plain_consensus", c["differs_from_majority"], None, None,
               "labels unlike the majority's" if c["measure"] == "categorical"
               else "outputs whose adjusted mean moved by 0.5 points or more"]
        for r in c["raters"]:
            for name in ("n", "agreement", "distance", "accuracy", "competence", "bias", "noise_sd"):
                if r.get(name) is not None:
                    yield ["rater_models", key, r["rater"], name, r[name], None, None, ""]
            if r["to_check"]:
                yield ["rater_models", key, r["rater"], "to_check", None, None, None, r["to_check"]]


def rater_models_view(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The section for the page: per criterion its raters with a bar each (accuracy from 0 to 1,
    or bias either side of zero over the largest bias shown)."""
    out = []
    for key, c in ((report.get("rater_models") or {}).get("criteria") or {}).items():
        widest = max([abs(r["bias"]) for r in c["raters"] if r.get("bias") is not None] + [1e-9])
        rows = []
        for r in c["raters"]:
            bar = {}
            if r.get("accuracy") is not None:
                bar = {"width": round(100 * max(0.0, min(1.0, r["accuracy"])))}
            elif r.get("bias") is not None:
                bar = {"width": round(50 * abs(r["bias"]) / widest), "negative": r["bias"] < 0}
            rows.append({**r, "bar": bar})
        out.append({"key": key, **c, "rows": rows, "method_name": METHOD_NAMES.get(c["method"], c["method"]),
                    "accuracy_from_name": METHOD_NAMES.get(c.get("accuracy_from"), c.get("accuracy_from"))})
    return out
