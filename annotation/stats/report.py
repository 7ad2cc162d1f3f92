"""The agreement report from a long table of ratings (DESIGN.md's `agreement --json` shape).

Input: a DataFrame with columns item, rater, score and optionally criterion (name `score`
when absent). A criterion's scores are numbers, or text labels (Yes/No, TP/FP3/FP2/FP1,
ACCEPT/REJECT) taken as nominal codes. Each criterion is read at a level of measurement
(nominal, ordinal, interval, ratio; by default nominal for labels, interval for numbers) and
only the statistics that make sense at that level are reported, so a nominal code is never
averaged, correlated or put into an ICC.

Judges, named by rater, are left out of the human statistics and compared with the mean of
the human raters per item (interval data), with their majority label (majority.py), and by
the alternative annotator test (alt_test.py, epsilon 0.2: negative RMSE for interval data,
accuracy for nominal and ordinal). Every statistic that is undefined for the data, or makes
no sense at the level, is None with its reason under "reasons" (keyed by its dotted path).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .agreement import matrix_agreement
from .alt_test import alt_test
from .correlation import judge_vs_humans
from .grouping import unique_ints
from .majority import judge_vs_majority
from .result import Stat, jsonable

JUDGE_KEYS = ("pearson", "spearman", "kendall_tau_b", "lin_ccc", "mae")
LEVELS = ("nominal", "ordinal", "interval", "ratio")

# What each level of measurement adds (dotted paths into a criterion's report). Interval and ratio
# get everything; judges' numeric comparisons use the human mean, so they need interval data.
_NOMINAL = {"krippendorff_alpha.nominal", "fleiss_kappa", "cohen_kappa.unweighted", "percent_agreement",
            "judges.majority_agreement", "judges.majority_kappa",
            "judges.alt_test_advantage_probability", "judges.alt_test_winning_rate"}
_ORDINAL = _NOMINAL | {"krippendorff_alpha.ordinal", "cohen_kappa.linear", "cohen_kappa.quadratic",
                       "mean_pairwise_spearman", "judges.spearman", "judges.kendall_tau_b"}
APPLICABLE: dict[str, set[str] | None] = {"nominal": _NOMINAL, "ordinal": _ORDINAL, "interval": None, "ratio": None}


class LevelError(ValueError):
    """A level of measurement the data cannot have (text labels read as interval numbers)."""


def applicable(level: str, path: str) -> bool:
    """Whether the statistic at a dotted path (e.g. "icc.ICC2", "judges.pearson") makes sense at `level`."""
    allowed = APPLICABLE[level]
    if allowed is None:
        return True
    return path in allowed or path.split(".")[0] in allowed
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
    span = (int(crit_codes.max()) + 1) * n_items * n_raters
    if key.size and int(key.min()) >= 0 and span <= 4 * key.size + 1_000_000:
        # keys in a small range: as many distinct as rows means no repeat, found without hashing
        seen = np.zeros(span, dtype=bool)
        seen[key] = True
        if np.count_nonzero(seen) == key.size:
            return
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


def _factorize_as_text(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Codes and names as text, in order of first appearance; values that read the same as text
    (1 and "1") share a code, as with astype(str)."""
    codes, uniques = pd.factorize(values, sort=False)
    names = [str(v) for v in uniques]
    if len(set(names)) == len(names):
        return codes, pd.Index(names, dtype=object)
    text_codes, text_names = pd.factorize(pd.Series(names, dtype=object), sort=False)
    return np.where(codes >= 0, text_codes[codes], -1), pd.Index(text_names, dtype=object)


def agreement_report(df: pd.DataFrame, judges: Sequence[str] = (), level: str | None = None,
                     levels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """{"criteria": {name: {...}}} with plain floats/None, ready for json.dumps.

    `level` applies to every criterion; without it a criterion's level is `levels[name]` when
    given, else nominal for text labels and interval for numbers. Raises LevelError when text
    labels are asked to be more than nominal.

    Reference: Krippendorff (2011); Shrout & Fleiss (1979); Fleiss (1971); Cohen (1960, 1968); Lin (1989).
    """
    levels = dict(levels or {})
    for name, value in levels.items():
        if value not in LEVELS:
            raise LevelError(f"criterion {name!r}: unknown level {value!r}; choose one of {', '.join(LEVELS)}")
    for col in ("item", "rater", "score"):
        if col not in df.columns:
            raise ValueError(f"missing column {col!r}")
    if level is not None and level not in LEVELS:
        raise LevelError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if df.empty:
        return {"criteria": {}}
    item_codes, _ = pd.factorize(df["item"])
    # Factorize the values as they are and name the few distinct ones as text (not every row).
    rater_codes, rater_names = _factorize_as_text(df["rater"])
    if "criterion" in df.columns:
        crit_codes, crit_names = _factorize_as_text(df["criterion"])
    else:
        crit_codes, crit_names = np.zeros(len(df), dtype=np.int64), pd.Index([DEFAULT_CRITERION])
    check_unique(item_codes, rater_codes, crit_codes, df)
    all_scores, labels = _scores_and_labels(df["score"], crit_codes, len(crit_names))
    rated = ~np.isnan(all_scores)
    scores = all_scores[rated]
    item_codes, rater_codes, crit_codes = item_codes[rated], rater_codes[rated], crit_codes[rated]
    judge_set = {str(j) for j in judges}
    is_judge_rater = np.array([name in judge_set for name in rater_names], dtype=bool)

    order = np.argsort(crit_codes, kind="stable")
    bounds = np.searchsorted(crit_codes[order], np.arange(len(crit_names) + 1))
    criteria = {}
    for c, name in enumerate(crit_names):
        c_level = level or levels.get(str(name)) or ("nominal" if labels[c] is not None else "interval")
        if labels[c] is not None and c_level != "nominal":
            shown = ", ".join(labels[c][:5]) + (", ..." if len(labels[c]) > 5 else "")
            raise LevelError(f"criterion {str(name)!r} has text labels ({shown}): they are nominal codes, "
                             f"so level {c_level} needs numbers instead")
        rows = order[bounds[c]:bounds[c + 1]]
        report = _criterion_report(item_codes[rows], rater_codes[rows], scores[rows], rater_names,
                                   is_judge_rater, judges, c_level)
        if labels[c] is not None:
            report["labels"] = labels[c]
        criteria[str(name)] = report
    return {"criteria": criteria}


def _scores_and_labels(column: pd.Series, crit_codes: np.ndarray,
                       n_criteria: int) -> tuple[np.ndarray, list[list[str] | None]]:
    """Float scores (NaN = not rated) and, per criterion, its text labels when it has them (then the
    scores are the labels' codes, in sorted label order) or None when its scores are numbers."""
    if pd.api.types.is_numeric_dtype(column.dtype):
        return column.to_numpy(dtype=float), [None] * n_criteria
    scores = np.full(len(column), np.nan)
    labels: list[list[str] | None] = []
    raw = column.to_numpy(dtype=object)
    for c in range(n_criteria):
        sel = np.flatnonzero(crit_codes == c)
        values = pd.Series(raw[sel])
        text = values.where(values.notna(), None).map(lambda v: None if v is None else str(v).strip())
        present = text.notna() & (text != "")
        numbers = pd.to_numeric(text.where(present), errors="coerce").to_numpy(dtype=float)
        if np.isfinite(numbers[present.to_numpy()]).all():
            scores[sel] = numbers
            labels.append(None)
            continue
        codes, uniques = pd.factorize(text.where(present), sort=True)
        scores[sel] = np.where(codes >= 0, codes, np.nan)
        labels.append([str(u) for u in uniques])
    return scores, labels


def _criterion_report(items: np.ndarray, raters: np.ndarray, scores: np.ndarray,
                      rater_names: pd.Index, is_judge_rater: np.ndarray,
                      judges: Sequence[str], level: str = "interval") -> dict[str, Any]:
    uitems, item_idx = unique_ints(items)  # (item codes: a table of those present, no sort)
    human = ~is_judge_rater[raters]
    h_raters, h_idx = np.unique(raters[human], return_inverse=True)
    matrix = to_matrix(item_idx[human], h_idx, scores[human], uitems.size, h_raters.size)
    stats = matrix_agreement(matrix)
    out: dict[str, Any] = {
        "level": level,
        "n_items": int(np.count_nonzero(np.bincount(item_idx[human], minlength=uitems.size))),
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
        stats_j.update(judge_vs_majority(jscore, matrix))
        # labels are scored by accuracy against the other humans, numbers by negative RMSE
        scoring = "neg_rmse" if APPLICABLE[level] is None else "accuracy"
        alt = alt_test(matrix, jscore, scoring=scoring, epsilon=ALT_TEST_EPSILON)
        stats_j["alt_test_advantage_probability"] = alt["advantage_probability"]
        stats_j["alt_test_winning_rate"] = alt["winning_rate"]
        judged[str(judge)] = stats_j
    out["judges"] = judged
    out["icc_complete_items"] = int(rated.all(axis=1).sum())  # the ICCs use complete cases only
    out["icc_ci"] = {form: list(s.ci) if s.ci else None for form, s in stats["icc"].items()}
    _keep_applicable(out, level)
    out["reasons"] = _reasons(out)
    return jsonable(out)


def _keep_applicable(out: dict[str, Any], level: str) -> None:
    """Turn every statistic that makes no sense at `level` into an undefined one that says so."""
    if APPLICABLE[level] is None:
        return
    why = Stat.undefined(f"not meaningful at the {level} level of measurement")
    for key, value in out.items():
        if key == "judges":
            for stats in value.values():
                for name in stats:
                    if not applicable(level, f"judges.{name}"):
                        stats[name] = why
        elif isinstance(value, dict) and key != "icc_ci":
            for sub in value:
                if isinstance(value[sub], Stat) and not applicable(level, f"{key}.{sub}"):
                    value[sub] = why
        elif isinstance(value, Stat) and not applicable(level, key):
            out[key] = why
    if not applicable(level, "icc"):
        out["icc_ci"] = {form: None for form in out["icc_ci"]}


def _reasons(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Stat) and value.value is None:
            found[path] = value.reason or "undefined"
        elif isinstance(value, dict):
            found.update(_reasons(value, path + "."))
    return found
