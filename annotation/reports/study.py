"""The study report: agreement, consensus, rater quality and system comparison, as one
JSON-ready dict built by calling annotation.stats (and annotation.reports.stats, its
vectorised twin for large studies) on the study's ratings.

Scope of the statistics: submitted, not ignored assignments of regular items (training items and
attention checks are left out of every figure, gold accuracy and the counts of raters and ratings
too). Output-level criteria are rated per (item, output) "unit".
Every statistic is {"value", "reason", "ci", "bootstrap_ci"}: value None means undefined
for these data, and `reason` says why; NaN never reaches the dict.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd
from django.core.cache import cache

from annotation.models import Assignment, Study
from annotation.reports.beside import Beside
from annotation.reports.comparisons import comparisons_section
from annotation.reports.stats import (
    add_analysis_value, agreement_bootstraps, consensus_frame, criterion_measure, group_column, majority_frame,
    output_scores_frame, rows_equal_to, slot_matrix,
)
from annotation.reports.large_arrays import large_arrays
from annotation.reports.rater_models import rater_models_csv_rows, rater_models_section
from annotation.reports.ratings import rater_names, ratings_fingerprint, stats_frame
from annotation.reports.step_highlights import highlights_csv_rows, highlights_section
from annotation.reports.steps import per_step_criteria, steps_csv_rows, steps_section
from annotation.services.active_inference import drawn_items
from annotation.stats.consensus import acceptance
from annotation.stats.gold import agrees, gold_for, parse_gold
from annotation.stats.grouping import group_codes, unique_ints
from annotation.stats.icc import icc
from annotation.stats.ranking import compare_systems
from annotation.stats.rater_quality import position_effects, rater_quality
from annotation.stats.report import agreement_report
from annotation.stats.result import Stat, jsonable
from rubrics.schema import SCALE_KINDS

DEFAULT_ICC_THRESHOLD = 0.70  # Cicchetti (1994), seed 002
ICC_FORM = "ICC1"  # seed 002's formula (MSB - MSW) / (MSB + (k-1) MSW): one-way, raters may differ per item
CONSENSUS_ROWS = 500  # rows kept in the report; the full table is a dataset export
HEATMAP_ITEMS = 60
# From this many rated rows the agreement section is computed in a forked child (reports.beside).
# Measured: 300k rows 1.5-1.8 -> 1.3-1.45 s, 1M 3.9-4.1 -> 3.1-4.2 s, 10M 55-59 -> 39-44 s; smaller
# reports take well under a second, and a web worker is not forked for them.
AGREEMENT_BESIDE_ROWS = 250_000
CACHE_SECONDS = 24 * 3600
NO_RATINGS = "no submitted ratings yet"


def stat(s: Stat | None = None, *, value: float | None = None, reason: str | None = None,
         ci: Any = None, bootstrap_ci: Any = None) -> dict[str, Any]:
    """The report's shape of one statistic."""
    if s is not None:
        value, reason, ci = s.value, s.reason, s.ci
    if value is not None and not math.isfinite(value):
        value, reason = None, reason or "undefined for these data"
    if value is None and not reason:
        reason = "undefined for these data"
    return {"value": value, "reason": None if value is not None else reason,
            "ci": list(ci) if ci else None, "bootstrap_ci": list(bootstrap_ci) if bootstrap_ci else None}


def _clean(obj: Any) -> Any:
    """JSON-ready in one walk: Stats become values, numpy scalars Python ones, NaN/inf null."""
    return jsonable(obj)


def analysed_criteria(rubric: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in rubric["criteria"] if criterion_measure(c) is not None]


@large_arrays()
def study_report(study: Study, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The whole report (threshold-independent; see `with_threshold`)."""
    rubric = study.rubric
    criteria = analysed_criteria(rubric)
    by_key = {c["key"]: c for c in criteria}
    df = stats_frame(study, list(by_key))
    report: dict[str, Any] = {
        "study": {"slug": study.slug, "name": study.name, "status": study.status,
                  "rubric": rubric.get("slug"), "rubric_version": study.rubric_version.version,
                  "raters_per_item": study.raters_per_item,
                  "consensus_min_raters": study.consensus_min_raters},
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": {"icc_form": ICC_FORM, "ci_level": level, "n_boot": n_boot, "bootstrap_seed": seed,
                     "bootstrap": "percentile, resampling items with all their outputs"},
        "criteria": [{"key": c["key"], "name": c.get("name", c["key"]), "kind": c["kind"],
                      "measure": criterion_measure(c), "target": c.get("target", "output"),
                      "min": c.get("min"), "max": c.get("max"),
                      "choices": [str(ch["value"]) for ch in c.get("choices", [])],
                      # how raters saw the scale (rubric `widget`): a slider can change answers, so the methods say so
                      "widget": c.get("widget", "buttons") if c["kind"] in SCALE_KINDS else None} for c in criteria],
    }
    df = with_raters_named(study, add_analysis_value(df, criteria))
    # Training items and attention checks (both flagged as checks) are never part of the data: not
    # counted, analysed or scored against gold (their answers are graded by the checks and training).
    if df["is_attention_check"].any():  # (a selection copies every column, items' names included)
        df = df[~df["is_attention_check"]]
    report["counts"] = _counts(study, df)
    gold_rows = df[df["gold"].notna()]
    numeric = [k for k, c in by_key.items() if criterion_measure(c) == "numeric"]
    agreement = lambda: agreement_section(df, by_key, n_boot=n_boot, seed=seed, level=level)  # noqa: E731
    # At millions of rows the agreement section (its bootstrap above all) runs on the second core beside the others.
    beside = Beside(agreement) if len(df) >= AGREEMENT_BESIDE_ROWS else None
    report["agreement"] = None if beside else agreement()
    scores = _output_scores(df, rubric, numeric, level)
    report["consensus"] = _consensus(df, rubric, by_key, scores, level=level,
                                     min_raters=study.consensus_min_raters)
    report["raters"] = _raters(df, gold_rows, numeric)
    report["rater_models"] = rater_models_section(df, criteria)
    report["position_effects"] = _positions(df, numeric, level)
    weights = item_weights(study)
    report["systems"] = systems_section(df, rubric, by_key, level, scores, weights=weights)
    if weights is not None:  # what the page and the methods paragraph say of the figures an active design biases
        report["sampling"] = {"policy": "active_inference", "weighted": "hajek",
                              "items_with_probability": len(weights)}
    report["distributions"] = _distributions(df, by_key)
    report["heatmap"] = _heatmap(df, numeric, by_key)
    report["comparisons"] = comparisons_section(study)
    if per_step_criteria(rubric):  # per-step questions on trajectories (absent otherwise: reports stay as they were)
        report["steps"] = steps_section(study)
        report["step_highlights"] = highlights_section(study)
    if beside:
        report["agreement"] = beside.result()
    return _clean(report)


def with_raters_named(study: Study, df: pd.DataFrame) -> pd.DataFrame:
    """`df` (stats_frame's rows) with column `rater`: each rater's username, as a categorical (one
    category per rater: usernames are unique), as the sections of the report read it."""
    names = rater_names(study)
    codes, ids = pd.factorize(df["rater_id"])
    df["rater"] = pd.Categorical.from_codes(codes, [str(names.get(i, i)) for i in ids])
    return df


def _counts(study: Study, df: pd.DataFrame) -> dict[str, int]:
    submitted = Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
    return {
        "items": study.items.filter(is_attention_check=False).count(),
        "attention_items": study.items.filter(is_attention_check=True).count(),
        "submitted_assignments": submitted.count(),
        "ignored_assignments": submitted.filter(ignored=True).count(),
        "raters": int(df["rater_id"].nunique()),
        "ratings_analysed": int(len(df)),
    }


def _units(df: pd.DataFrame, items: pd.Index | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unit code per row ((item, output) pairs) and the item code of each unit (its place in
    `items`, the item ids shared by several criteria, when given)."""
    key = df["item_id"].to_numpy(np.int64) * 4096 + (df["output"].to_numpy(np.int64) + 1)
    unit, uniq = pd.factorize(key)
    item_codes = items.get_indexer(uniq // 4096) if items is not None else pd.factorize(uniq // 4096)[0]
    return unit.astype(np.int64), item_codes.astype(np.int64)


def icc1_of_units(units: np.ndarray, x: np.ndarray) -> tuple[Stat, int]:
    """(ICC1, k) of one numeric criterion's ratings, a unit per (item, output): the report's figure,
    which the plan's pilot (annotation.planning.pilot) reads too."""
    mat, _, k = slot_matrix(units, x)
    return (icc(mat)["ICC1"] if k >= 2 else Stat.undefined("no unit has two or more ratings")), k


def criterion_icc1(df: pd.DataFrame) -> tuple[Stat, int]:
    """icc1_of_units of the rows of one criterion (columns item_id, output, x; rows without x
    left out, in the frame's order as the report reads them)."""
    has_x = df["x"].notna().to_numpy()
    rated = pd.DataFrame({"item_id": df["item_id"].to_numpy(np.int64)[has_x], "output": df["output"].to_numpy()[has_x]})
    return icc1_of_units(_units(rated)[0], df["x"].to_numpy(float)[has_x])


def agreement_section(df: pd.DataFrame, by_key: dict[str, dict], *, n_boot: int, seed: int,
               level: float) -> dict[str, Any]:
    # Columns as arrays and rows picked by mask: a selection of the whole frame copied every
    # column (the items' names as ten million strings) once for the rated rows and once per criterion.
    has_x = df["x"].notna().to_numpy()
    if not has_x.any():
        return {}
    rated = pd.DataFrame({"item_id": df["item_id"].to_numpy(np.int64)[has_x],
                          "output": df["output"].to_numpy()[has_x]})
    criterion, x_rated = df["criterion"].array[has_x], df["x"].to_numpy(float)[has_x]
    unit, _ = _units(rated)
    details = agreement_report(pd.DataFrame({
        "item": unit, "rater": df["rater_id"].to_numpy()[has_x], "criterion": criterion, "score": x_rated}),
        # choices are nominal codes: no ICC, Pearson or weighted kappa of them in the details
        levels={k: "interval" if criterion_measure(c) == "numeric" else "nominal" for k, c in by_key.items()},
    )["criteria"]
    # One set of item resamples for every criterion (the study's items are what is sampled).
    items = pd.Index(unique_ints(rated["item_id"].to_numpy())[0])
    is_key = rows_equal_to(pd.Series(criterion))
    specs, subs = {}, {}
    for key, c in by_key.items():
        sel = is_key(key)
        if sel.any():
            u, unit_item = _units(rated[sel], items)
            subs[key] = (u, x_rated[sel])
            specs[key] = (u, unit_item, subs[key][1], criterion_measure(c))
    boots = agreement_bootstraps(specs, n_items=len(items), n_boot=n_boot, seed=seed, level=level)
    out: dict[str, Any] = {}
    for key, c in by_key.items():
        if key not in specs:
            continue
        measure = criterion_measure(c)
        u, x = subs[key]
        boot = boots[key]
        full = details[key]
        level_name = "interval" if measure == "numeric" else "nominal"
        alpha_value = full["krippendorff_alpha"][level_name]
        entry: dict[str, Any] = {
            "n_units": full["n_items"], "n_raters": full["n_raters"], "n_ratings": full["n_ratings"],
            "alpha_level": level_name,
            "alpha": stat(value=alpha_value, reason=full["reasons"].get(f"krippendorff_alpha.{level_name}"),
                          bootstrap_ci=boot["alpha"]["bootstrap_ci"]),
            "details": full,
        }
        if measure == "numeric":
            s, k = icc1_of_units(u, x)
            entry["icc1"] = stat(s, bootstrap_ci=boot["icc1"]["bootstrap_ci"])
            entry["icc1"].update({"k": k, "n_units": boot["n_units_icc"]})
        else:
            entry["icc1"] = stat(reason="ICC needs a numeric scale; see alpha (nominal) and kappa")
            entry["icc1"].update({"k": 0, "n_units": 0})
        out[key] = entry
    return out


def _output_scores(df: pd.DataFrame, rubric: Mapping[str, Any], numeric: list[str],
                   level: float) -> pd.DataFrame | None:
    """output_scores_frame of every output with a numeric rating, computed once for the consensus
    and systems sections. Each section keeps whole outputs (those with enough raters, those with
    a system), and an output's scores depend on its own ratings only, so its rows are what the
    section's own call on its subset gave."""
    # Only the columns it reads: a selection of the whole frame copied every column (a gigabyte at 10M ratings)
    rows = df.loc[df["criterion"].isin(numeric) & df["x"].notna(), ["item_id", "output", "criterion", "rater", "x"]]
    if rows.empty:
        return None
    return output_scores_frame(rows.rename(columns={"item_id": "item"}), rubric, level=level)


def _consensus(df: pd.DataFrame, rubric: Mapping[str, Any], by_key: dict[str, dict],
               all_scores: pd.DataFrame | None, *, level: float, min_raters: int) -> dict[str, Any]:
    """Consensus of the outputs rated by at least `min_raters` evaluators (seed 002); the
    others are counted in `left_out`, never shown with a consensus of one vote."""
    df, n_outputs, left_out, kinds = _consensus_rows(df, by_key, min_raters)
    base = {"min_raters": min_raters, "left_out": left_out}
    numeric = df[df["criterion"].isin([k for k, c in by_key.items() if criterion_measure(c) == "numeric"])]
    categorical = df[df["criterion"].isin([k for k, c in by_key.items() if criterion_measure(c) == "categorical"])]
    frames = []
    scores = all_scores.set_index(["item", "output"]) if "numeric" in kinds else None
    if not numeric.empty:
        frames.append(("numeric", consensus_frame(numeric.assign(item=numeric["item_id"]), level=level)))
    if not categorical.empty:
        frames.append(("categorical", majority_frame(categorical.assign(item=categorical["item_id"]))))
    if not kinds:
        reason = (f"no output has ratings from {min_raters} or more raters yet" if left_out else NO_RATINGS)
        return {"rows": [], "n_outputs": 0, "truncated": False, "reason": reason, **base}
    keep = df[["item_id", "item", "output", "system"]].drop_duplicates(["item_id", "output"]).sort_values(
        ["item_id", "output"])
    rows: dict[tuple[int, int], dict[str, Any]] = {
        (int(r.item_id), int(r.output)): {"item": r.item, "output": int(r.output),
                                          "system": None if pd.isna(r.system) else r.system, "criteria": {}}
        for r in keep.itertuples()}
    for kind, frame in frames:
        frame = frame[frame["item"].isin(keep["item_id"])]
        for r in frame.itertuples(index=False):
            row = rows.get((int(r.item), int(r.output)))
            if row is None:
                continue
            if kind == "numeric":
                row["criteria"][r.criterion] = {
                    "consensus": r.consensus, "ci": None if pd.isna(r.ci_low) else [r.ci_low, r.ci_high],
                    "sd": r.sd, "n": int(r.n)}
            else:
                row["criteria"][r.criterion] = {"majority": r.majority, "share": r.share, "n": int(r.n)}
    groups = [g["key"] for g in rubric.get("groups") or []]
    for (item_id, output), row in rows.items():
        if scores is not None and (item_id, output) in scores.index:
            s = scores.loc[(item_id, output)]
            row["groups"] = {g: s.get(group_column(g)) for g in groups}
            row["overall"] = s.get("overall")
            row["overall_ci"] = None if pd.isna(s.get("ci_low")) else [s["ci_low"], s["ci_high"]]
            row["vote_count"] = int(s["vote_count"])
    return {"rows": list(rows.values()), "n_outputs": n_outputs, "truncated": n_outputs > CONSENSUS_ROWS,
            "groups": groups, "ci": "consensus +- 1.96 sd / sqrt(n) (seed 002)", **base}


def _consensus_rows(df: pd.DataFrame, by_key: dict[str, dict],
                    min_raters: int) -> tuple[pd.DataFrame, int, int, set[str]]:
    """(the rated rows of the first CONSENSUS_ROWS outputs by (item_id, output) among those rated
    by at least `min_raters` raters, the number of such outputs, the number of rated outputs with
    fewer raters, the measures ("numeric", "categorical") rated in those outputs).

    with_enough_raters' selection, counted over integer codes; consensus and majorities are then
    computed for the rows shown only (each output's from its own rows, so the same numbers)."""
    rated = df["x"].notna().to_numpy()
    key = df["item_id"].to_numpy(np.int64) * 4096 + (df["output"].to_numpy(np.int64) + 1)
    unit, unit_keys = pd.factorize(key)
    rater, rater_ids = pd.factorize(df["rater_id"])
    _, (pair_unit, _) = group_codes([np.where(rated, unit, -1), rater], [len(unit_keys), len(rater_ids)])
    n_raters = np.bincount(pair_unit, minlength=len(unit_keys))
    short = (np.bincount(unit[rated], minlength=len(unit_keys)) > 0) & (n_raters < min_raters)
    enough = rated & ~short[unit]
    outputs = np.sort(unit_keys[np.bincount(unit[enough], minlength=len(unit_keys)) > 0])
    measure = {k: criterion_measure(c) for k, c in by_key.items()}
    kinds = {m for m in ("numeric", "categorical")
             if (enough & df["criterion"].isin([k for k, v in measure.items() if v == m]).to_numpy()).any()}
    shown = enough & np.isin(key, outputs[:CONSENSUS_ROWS])
    return df[shown], int(outputs.size), int(short.sum()), kinds


def _raters(df: pd.DataFrame, gold_rows: pd.DataFrame, numeric: list[str]) -> dict[str, Any]:
    # Raters as the codes of their categorical (one category per rater), items per rater as
    # distinct (rater, item) code pairs: no groupby or row selection of the whole frame.
    # (Each step's arrays are a helper's locals, freed before the next step: at ten million rows they
    # were held through rater_quality, 0.5 GB on top of its own.)
    out: dict[str, Any] = {}
    rater_code = df["rater"].cat.codes.to_numpy()
    names = [str(n) for n in df["rater"].cat.categories]
    n_items, n_rows = _rater_counts(df, len(names))
    rows_of = {names[k]: k for k in np.flatnonzero(n_rows)}
    mask = (df["criterion"].isin(numeric) & df["x"].notna()).to_numpy()
    quality = rater_quality(_quality_rows(df, mask)) if mask.any() else {}
    gold, gold_reasons = _gold_accuracy(gold_rows, numeric)
    for rater in sorted(set(rows_of) | set(gold) | set(gold_reasons)):
        info = dict(quality.get(rater, {}))
        if not info:
            info = {"bias": None, "pearson_vs_others": None, "mae_vs_others": None, "flags": [],
                    "n_ratings": int(n_rows[rows_of[rater]]) if rater in rows_of else 0}
        reasons = {}
        if info.get("bias") is None:
            reasons["bias"] = ("no numeric criterion in this rubric" if not numeric
                               else "no unit rated by this rater and another")
        if info.get("pearson_vs_others") is None:
            reasons["pearson_vs_others"] = reasons.get("bias") or "fewer than 3 shared units or constant scores"
        info["gold_accuracy"] = gold.get(rater)
        if info["gold_accuracy"] is None:
            reasons["gold_accuracy"] = gold_reasons.get(rater, NO_GOLD)
        info["n_items"] = int(n_items[rows_of[rater]]) if rater in rows_of else 0
        if "median_seconds" not in info:
            sec = pd.Series(df["seconds"].to_numpy()[rater_code == rows_of[rater]]) if rater in rows_of else ()
            info["median_seconds"] = float(sec.median()) if len(sec) else None
        info["reasons"] = reasons
        out[rater] = info
    return out


def _rater_counts(df: pd.DataFrame, n_raters: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct items, rows) per rater code."""
    rater_code = df["rater"].cat.codes.to_numpy().astype(np.int64)
    item_code, item_ids = pd.factorize(df["item_id"])
    _, (pair_rater, _) = group_codes([rater_code, item_code], [n_raters, len(item_ids)])
    return (np.bincount(pair_rater, minlength=n_raters),
            np.bincount(rater_code[rater_code >= 0], minlength=n_raters))


def _quality_rows(df: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """rater_quality's rows: the numeric ratings in `mask`, a unit per (item, output, criterion)."""
    unit, _ = _units(pd.DataFrame({"item_id": df["item_id"].to_numpy()[mask],
                                   "output": df["output"].to_numpy()[mask]}))
    crit_code, _ = pd.factorize(df["criterion"].array[mask])
    rows = pd.DataFrame({"unit": unit * 64 + crit_code, "rater": df["rater"].array[mask],
                         "score": df["x"].to_numpy()[mask], "seconds": df["seconds"].to_numpy()[mask]})
    if df["shown_position"].notna().all():
        rows["position"] = df["shown_position"].to_numpy()[mask]
    return rows


NO_GOLD = "no rated item with a gold answer"
GOLD_NOT_COMPARABLE = ("no rating of this rater has a gold answer it can be compared with (the gold names no "
                       "answer for the outputs rated, or is per output for a question asked of the whole item)")


def _gold_accuracy(rows: pd.DataFrame, numeric: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """(rater -> share of ratings equal to their gold answer, rater -> why there is none).

    Each rating is compared with the gold for what it rates (annotation.stats.gold, the judges'
    gold page's rule too): the item's answer, or the rated output's where the gold is per output;
    a rating whose gold cannot be told counts neither way."""
    if rows.empty:
        return {}, {}
    texts = rows["gold"].astype(object).to_numpy()
    positions = rows["output"].astype("Int64").to_numpy(dtype=object, na_value=None)
    parsed: dict[Any, Any] = {}
    expected_of: dict[tuple, str | None] = {}
    expected = np.empty(len(rows), dtype=object)
    for k, key in enumerate(zip(texts, positions)):
        if key not in expected_of:
            if key[0] not in parsed:
                parsed[key[0]] = parse_gold(key[0])
            expected_of[key] = gold_for(parsed[key[0]], None if key[1] is None else int(key[1]))
        expected[k] = expected_of[key]
    told = np.array([e is not None for e in expected], dtype=bool)
    is_numeric = rows["criterion"].isin(numeric).to_numpy()
    labels, x = rows["label"].astype(object).to_numpy(), rows["x"].to_numpy(float)
    match = np.array([told[k] and (agrees(expected[k], x[k] if not np.isnan(x[k]) else labels[k], numeric=True)
                                   if is_numeric[k] else agrees(expected[k], labels[k]))
                      for k in range(len(rows))], dtype=float)
    raters = rows["rater"].astype(str).to_numpy()
    frame = pd.DataFrame({"rater": raters[told], "match": match[told]})
    accuracy = {str(r): float(v) for r, v in frame.groupby("rater")["match"].mean().items()}
    reasons = {str(r): GOLD_NOT_COMPARABLE for r in set(raters) if str(r) not in accuracy}
    return accuracy, reasons


def _positions(df: pd.DataFrame, numeric: list[str], level: float) -> dict[str, Any]:
    from scipy.stats import t as t_dist

    out: dict[str, Any] = {}
    for key in numeric:
        at = (df["criterion"] == key) & df["shown_position"].notna() & df["x"].notna()
        sub = df.loc[at, ["shown_position", "x"]]
        if sub.empty or sub["shown_position"].nunique() < 2:
            continue
        rows = pd.DataFrame({"position": sub["shown_position"].astype(int), "score": sub["x"]})
        effects = position_effects(rows)
        sd = rows.groupby("position")["score"].std()
        for pos, e in effects.items():
            if e["n"] >= 2 and not pd.isna(sd[pos]):
                half = float(t_dist.ppf((1 + level) / 2, e["n"] - 1) * sd[pos] / math.sqrt(e["n"]))
                e["ci"] = [e["mean"] - half, e["mean"] + half]
            else:
                e["ci"] = None
        out[key] = {str(p): e for p, e in sorted(effects.items())}
    return out


def item_weights(study: Study) -> dict[int, float] | None:
    """{item id: 1/π} of the items drawn under the active_inference policy (π recorded when drawn);
    None under any other design, whose items are a uniform sample of themselves."""
    drawn = drawn_items(study)
    return None if drawn is None else {pk: 1.0 / p for pk, (p, _) in drawn.items() if p}


def systems_section(df: pd.DataFrame, rubric: Mapping[str, Any], by_key: dict[str, dict], level: float,
                    scores: pd.DataFrame | None = None, *,
                    weights: Mapping[int, float] | None = None) -> dict[str, Any]:
    """System comparison; `scores`: _output_scores of `df` when the caller has them already; `weights`:
    {item: 1/π} under an active design (item_weights), which makes each mean, win share, accept rate and
    label share a Hájek-weighted estimate (compare_systems)."""
    out_level = df if df["system"].notna().all() else df[df["system"].notna()]
    numeric = [k for k, c in by_key.items() if criterion_measure(c) == "numeric"]
    rows = out_level.loc[out_level["criterion"].isin(numeric) & out_level["x"].notna(),
                         ["item_id", "output", "system", "criterion", "x"]]
    result: dict[str, Any] = {"criteria": {}, "accept_rate": {}, "labels": {}}
    if not rows.empty:
        if len(numeric) > 1:
            frame = _with_combined(rows, _output_scores(df, rubric, numeric, level) if scores is None else scores)
        else:
            frame = pd.DataFrame({"item": rows["item_id"], "system": rows["system"], "criterion": rows["criterion"],
                                  "score": rows["x"]})
        result["criteria"] = compare_systems(frame, level=level, weights=weights)["criteria"]
    for key, c in by_key.items():
        if criterion_measure(c) != "categorical":
            continue
        sub = out_level[out_level["criterion"] == key]
        if sub.empty:
            continue
        if c["kind"] == "binary":
            accept = str(c["choices"][0]["value"])
            frame = pd.DataFrame({"item": sub["item_id"], "system": sub["system"], "criterion": key,
                                  "score": sub["label"].astype(str)})
            rates = compare_systems(frame, accept_criterion=key, accept_value=accept, weights=weights)["accept_rate"]
            result["accept_rate"][key] = {"value": accept, "systems": rates}
        if weights is None:
            shares = sub.groupby("system")["label"].value_counts(normalize=True)
        else:  # each rating weighted by its item's 1/π, as the means are
            w = pd.Series(sub["item_id"].map(lambda i: weights.get(int(i), 1.0)).to_numpy(float), index=sub.index)
            summed = w.groupby([sub["system"], sub["label"]], observed=True).sum()
            shares = summed / summed.groupby(level=0, observed=True).transform("sum")
        result["labels"][key] = {str(s): {str(lab): float(v) for lab, v in g.droplevel(0).items()}
                                 for s, g in shares.groupby(level=0)}
    return result


def _with_combined(rows: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """compare_systems' rows: each rating, then each output's overall as criterion "combined".
    Systems and criteria stay categoricals, their categories sorted: compare_systems then orders
    them as it ordered the text it was given before (joining categoricals to text turned ten
    million of them into strings)."""
    system, criterion = rows["system"].array, rows["criterion"].array
    systems = sorted(map(str, system.categories))
    criteria = sorted(set(map(str, criterion.categories)) | {"combined"})
    system_code = pd.Index(systems).get_indexer(system.categories)[system.codes]
    # the system of each output (item_id, output) with a numeric rating, looked up for its overall
    key = rows["item_id"].to_numpy(np.int64) * 4096 + (rows["output"].to_numpy(np.int64) + 1)
    unit, first = np.unique(key, return_index=True)
    scores = scores.dropna(subset=["overall"])
    at = pd.Index(unit).get_indexer(scores["item"].to_numpy(np.int64) * 4096
                                    + (scores["output"].to_numpy(np.int64) + 1))
    scores, at = scores[at >= 0], at[at >= 0]  # outputs without a system are not compared
    n = len(scores)
    return pd.DataFrame({
        "item": np.concatenate([rows["item_id"].to_numpy(np.int64), scores["item"].to_numpy(np.int64)]),
        "system": pd.Categorical.from_codes(np.concatenate([system_code, system_code[first[at]]]), systems),
        "criterion": pd.Categorical.from_codes(np.concatenate([
            pd.Index(criteria).get_indexer(criterion.categories)[criterion.codes],
            np.full(n, criteria.index("combined"))]), criteria),
        "score": np.concatenate([rows["x"].to_numpy(float), scores["overall"].to_numpy(float)])})


def _distributions(df: pd.DataFrame, by_key: dict[str, dict]) -> dict[str, Any]:
    """Counts of each scale point (numeric) or option (categorical) per system.

    Counted over integer codes (np.bincount of system x point) rather than a crosstab of ten
    million strings; systems sorted by name and "(item)" for item-level ratings, as the crosstab had them."""
    out: dict[str, Any] = {}
    crit_code, crit_names = _text_codes(df["criterion"])
    system_code, system_names = _text_codes(df["system"])
    has_x = df["x"].notna().to_numpy()
    x_all = df["x"].to_numpy(dtype=float)
    # slot 0: no system ("(item)"), slot k: the system of code k - 1
    slot_names = ["(item)"] + [str(n) for n in system_names]
    systems = sorted(set(slot_names))
    place_of = {n: k for k, n in enumerate(systems)}
    system_of_slot = np.array([place_of[n] for n in slot_names], dtype=np.int64)
    slot_all = system_code.astype(np.int64) + 1
    for key, c in by_key.items():
        rows = has_x & (crit_code == crit_names.get_loc(key)) if key in crit_names else np.zeros(len(df), bool)
        if not rows.any():
            continue
        named = system_of_slot[slot_all[rows]]
        present = np.flatnonzero(np.bincount(named, minlength=len(systems)))  # the systems rated, by name
        rank = np.zeros(len(systems), dtype=np.int64)
        rank[present] = np.arange(present.size)
        system = rank[named]
        x = x_all[rows]
        if criterion_measure(c) == "numeric":
            lo = int(c.get("min", math.floor(x.min())))
            hi = int(c.get("max", math.ceil(x.max())))
            values = list(range(lo, hi + 1))
            point = np.clip(np.rint(x), lo, hi).astype(int) - lo
        else:
            values = [str(ch["value"]) for ch in c.get("choices", [])]
            label_code, label_names = _text_codes(df["label"])
            position = {v: k for k, v in enumerate(values)}
            # a label's place among the choices, compared as text (a missing label reads "nan"), -1 if none
            place = np.array([position.get(str(n), -1) for n in label_names] + [position.get(str(np.nan), -1)])
            point = place[label_code[rows]]
        counted = point >= 0
        counts = np.bincount(system[counted] * len(values) + point[counted],
                             minlength=present.size * len(values)).reshape(present.size, len(values))
        out[key] = {"values": [str(v) for v in values],
                    "systems": {systems[s]: [int(n) for n in counts[k]] for k, s in enumerate(present)}}
    return out


def _text_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """(code per row, -1 where missing; the values as text): a categorical's own codes, else factorized."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), pd.Index([str(v) for v in column.cat.categories], dtype=object)
    codes, uniques = pd.factorize(column)
    return codes, pd.Index([str(v) for v in uniques], dtype=object)


def _heatmap(df: pd.DataFrame, numeric: list[str], by_key: dict[str, dict]) -> dict[str, Any]:
    """Rater x item mean of the first numeric criterion over the item's outputs (first items)."""
    if not numeric:
        return {}
    key = numeric[0]
    sub = df.loc[(df["criterion"] == key) & df["x"].notna(), ["rater", "item_id", "x"]]
    if sub.empty:
        return {}
    first = np.sort(sub["item_id"].unique())[:HEATMAP_ITEMS]
    sub = sub[sub["item_id"].isin(first)]
    sub = sub.assign(item=df.loc[sub.index, "item"])  # names of the shown items only
    wide = sub.groupby(["rater", "item_id"])["x"].mean().unstack("item_id").reindex(columns=first)
    labels = sub.drop_duplicates("item_id").set_index("item_id")["item"].reindex(first)
    return {"criterion": key, "min": by_key[key].get("min"), "max": by_key[key].get("max"),
            "raters": [str(r) for r in wide.index], "items": [str(i) for i in labels],
            "matrix": [[None if pd.isna(v) else float(v) for v in row] for row in wide.to_numpy()],
            "truncated": bool(df.loc[df["criterion"] == key, "item_id"].nunique() > HEATMAP_ITEMS)}


# ---------------------------------------------------------------- threshold, cache, CSV, sections

def with_threshold(report: dict[str, Any], threshold: float = DEFAULT_ICC_THRESHOLD) -> dict[str, Any]:
    """The report with the ICC acceptance flag per criterion for `threshold` (seed 002)."""
    out = dict(report)
    out["settings"] = {**report["settings"], "icc_threshold": threshold}
    flags = acceptance({k: a["icc1"]["value"] for k, a in report.get("agreement", {}).items()}, threshold)
    out["agreement"] = {k: {**a, "accepted": flags[k]} for k, a in report.get("agreement", {}).items()}
    return out


def report_cache_key(study: Study, **kwargs: Any) -> str:
    """The cache key of the study's report as its ratings stand now."""
    # The setting shapes the consensus section: a change to it is a new report (v4: the rater models).
    # The sampling policy decides the weights (v5: Hájek-weighted under active inference; changing it clears draws).
    policy = json.dumps(study.sampling_policy or {}, sort_keys=True)
    raw = f"{ratings_fingerprint(study)}:{study.consensus_min_raters}:{policy}:{sorted(kwargs.items())}"
    return "concord:report:v5:" + hashlib.sha256(raw.encode()).hexdigest()


def cached_study_report(study: Study, **kwargs: Any) -> dict[str, Any]:
    """study_report, recomputed only when the study's ratings change."""
    key = report_cache_key(study, **kwargs)
    report = cache.get(key)
    if report is None:
        report = study_report(study, **kwargs)
        cache.set(key, report, CACHE_SECONDS)
    return report


CSV_HEADER = ["section", "criterion", "subject", "statistic", "value", "ci_low", "ci_high", "reason"]


def report_csv_rows(report: dict[str, Any]) -> Iterator[list[Any]]:
    """The report as tidy rows (CSV_HEADER); undefined statistics keep an empty value and the reason."""
    yield CSV_HEADER

    def row(section, criterion, subject, name, s):
        if isinstance(s, dict) and "value" in s:
            ci = s.get("bootstrap_ci") or s.get("ci") or [None, None]
            return [section, criterion, subject, name, s["value"], ci[0], ci[1], s.get("reason") or ""]
        return [section, criterion, subject, name, s, None, None, ""]

    for key, a in report.get("agreement", {}).items():
        yield row("agreement", key, "", f"krippendorff_alpha_{a['alpha_level']}", a["alpha"])
        yield row("agreement", key, "", "icc1", a["icc1"])
        yield row("agreement", key, "", "icc1_accepted", a.get("accepted"))
        for name, value in _flatten(a["details"], skip={"reasons", "icc_ci", "judges"}):
            reason = a["details"]["reasons"].get(name, "") if value is None else ""
            yield ["agreement", key, "", name, value, None, None, reason]
    consensus = report.get("consensus", {})
    if "left_out" in consensus:
        yield ["consensus", "", "", "outputs_left_out", consensus["left_out"], None, None,
               f"rated by fewer than {consensus['min_raters']} raters (the study's consensus minimum)"]
    for r in consensus.get("rows", []):
        subject = f"{r['item']}#{r['output']}" + (f" ({r['system']})" if r.get("system") else "")
        for crit, c in r["criteria"].items():
            if "consensus" in c:
                ci = c["ci"] or [None, None]
                yield ["consensus", crit, subject, "consensus", c["consensus"], ci[0], ci[1],
                       "" if c["ci"] else "a CI needs at least two ratings"]
            else:
                yield ["consensus", crit, subject, f"majority={c['majority']}", c["share"], None, None, ""]
        if "overall" in r:
            ci = r.get("overall_ci") or [None, None]
            yield ["consensus", "overall", subject, "overall", r["overall"], ci[0], ci[1], ""]
    for rater, info in report.get("raters", {}).items():
        for name in ("n_items", "n_ratings", "bias", "mae_vs_others", "pearson_vs_others", "gold_accuracy",
                     "median_seconds"):
            if name in info:
                yield ["raters", "", rater, name, info[name], None, None, info["reasons"].get(name, "")]
        yield ["raters", "", rater, "flags", " ".join(info.get("flags", [])), None, None, ""]
    yield from rater_models_csv_rows(report.get("rater_models") or {})
    for key, positions in report.get("position_effects", {}).items():
        for pos, e in positions.items():
            ci = e.get("ci") or [None, None]
            yield ["position_effects", key, f"position {pos}", "mean", e["mean"], ci[0], ci[1], ""]
    for key, comp in report.get("systems", {}).get("criteria", {}).items():
        for system, s in comp["systems"].items():
            ci = s["ci"] or [None, None]
            yield ["systems", key, system, "mean", s["mean"], ci[0], ci[1], ""]
        for p in comp["pairs"]:
            subject = f"{p['a']} vs {p['b']}"
            yield ["systems", key, subject, "win_rate_a", p["win_a"], None, None, ""]
            yield ["systems", key, subject, "p_holm", p["p_holm"], None, None,
                   "" if p["p_holm"] is not None else "no paired difference (all ties or no shared items)"]
        yield ["systems", key, "", "ranking", " > ".join(comp["ranking"]), None, None, ""]
    for key, acc in report.get("systems", {}).get("accept_rate", {}).items():
        for system, rate in acc["systems"].items():
            yield ["systems", key, system, f"rate_{acc['value']}", rate, None, None, ""]
    for key, comp in report.get("comparisons", {}).items():
        for system, s in (comp.get("systems") or {}).items():
            ci = s.get("bt_ci") or [None, None]
            yield ["comparisons", key, system, "bradley_terry", s.get("bt"), ci[0], ci[1], comp.get("bt_reason") or ""]
            yield ["comparisons", key, system, "comparisons", s.get("n"), None, None, ""]
        for system, score in (comp.get("bws_count") or {}).items():
            yield ["comparisons", key, system, "best_worst_count", score, None, None, ""]
        for a, row in (comp.get("win_rates") or {}).items():
            for b, rate in row.items():
                yield ["comparisons", key, f"{a} vs {b}", "win_rate", rate, None, None, ""]
        if comp.get("kendall_w"):
            w = comp["kendall_w"]
            yield ["comparisons", key, "", "kendall_w", w.get("w"), None, None, w.get("reason") or ""]
        if comp.get("position"):
            pos = comp["position"]
            name, value = ("first_wins", pos.get("first_wins")) if "first_wins" in pos else ("first_best", pos.get("first_best"))
            yield ["comparisons", key, "", name, value, None, None, ""]
    yield from steps_csv_rows(report.get("steps") or {})
    yield from highlights_csv_rows(report.get("step_highlights") or {})


def _flatten(tree: Mapping[str, Any], prefix: str = "", skip: set[str] = frozenset()) -> Iterator[tuple[str, Any]]:
    for k, v in tree.items():
        if k in skip:
            continue
        if isinstance(v, Mapping):
            yield from _flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v
