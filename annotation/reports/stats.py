"""Vectorised pieces of the study report that annotation.stats does per group in Python.

Pure numpy/pandas (no Django). Each function here computes what a stats function computes
(tests check equality on the same data) but over whole columns, so that a report on 1M
ratings stays within seconds:
- `consensus_frame`: stats.consensus.consensus_table on the analysis column x;
- `output_scores_frame` = stats.consensus.output_scores (group scores, overall, the overall's
  CI from each rater's own overall, vote count);
- `agreement_bootstrap`: cluster bootstrap (resampling items) of Krippendorff's alpha and the
  one-way ICC1 of stats.krippendorff / stats.icc, from per-unit sufficient statistics, so
  a resample is one sparse weighted sum instead of a recomputation.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm

from annotation.stats.blas import one_blas_thread
from annotation.stats.consensus import combine_parts, consensus_table
from annotation.stats.grouping import group_agg, group_codes, group_index, unique_ints

NUMERIC_KINDS = {"likert", "numeric"}
CATEGORICAL_KINDS = {"binary", "choice"}


def criterion_measure(criterion: Mapping[str, Any]) -> str | None:
    """'numeric' (scales), 'categorical' (choices) or None (confidence, text, spans: not analysed)."""
    if criterion["kind"] in NUMERIC_KINDS:
        return "numeric"
    if criterion["kind"] in CATEGORICAL_KINDS:
        return "categorical"
    return None


def add_analysis_value(df: pd.DataFrame, criteria: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Column `x`: the score of a numeric criterion (its value when no score was stored), or
    the index of the chosen option of a categorical one (in the rubric's order)."""
    x = pd.to_numeric(df["score"], errors="coerce").to_numpy(dtype=float, copy=True)
    is_key = rows_equal_to(df["criterion"])
    for c in criteria:
        rows = is_key(c["key"])
        if not rows.any():
            continue
        if criterion_measure(c) == "numeric":
            missing = rows & np.isnan(x)  # a stored score is the value; parse the text only where none is
            if missing.any():
                x[missing] = pd.to_numeric(pd.Series(_values_at(df["label"], missing)),
                                           errors="coerce").to_numpy(dtype=float)
        elif criterion_measure(c) == "categorical":
            order = {str(ch["value"]): k for k, ch in enumerate(c.get("choices", []))}
            x[rows] = [order.get(str(v), np.nan) for v in _values_at(df["label"], rows)]
    return df.assign(x=x)


def rows_equal_to(column: pd.Series):
    """value -> boolean mask of the rows equal to it; on a categorical, a comparison of integer
    codes (ten million rows as Python strings cost seconds and a gigabyte)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, categories = column.cat.codes.to_numpy(), column.cat.categories
        return lambda value: codes == categories.get_loc(value) if value in categories else np.zeros(codes.size, bool)
    values = column.to_numpy(dtype=object)
    return lambda value: values == value


def _values_at(column: pd.Series, mask: np.ndarray) -> np.ndarray:
    """The column's values (objects; missing as None or NaN, as astype(object) gives them) at the rows of `mask`."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()[mask]
        categories = np.append(column.cat.categories.to_numpy(dtype=object), np.nan)
        return categories[np.where(codes >= 0, codes, -1)]
    return column.astype(object).to_numpy()[mask]


# ---------------------------------------------------------------- consensus

def min_raters_for_pairs(consensus_min_raters: int) -> int:
    """Evaluators an output needs before it enters a preference pair: the study's setting,
    and never fewer than two (seed 002: a pair is never made from one vote)."""
    return max(2, int(consensus_min_raters))


def raters_per_output(df: pd.DataFrame) -> pd.Series:
    """Distinct raters per (item_id, output) among rows with an analysis value `x`."""
    rated = df[df["x"].notna()]
    pairs = rated[["item_id", "output", "rater_id"]].drop_duplicates()
    return pairs.groupby(["item_id", "output"], sort=True).size().rename("raters")


def with_enough_raters(df: pd.DataFrame, min_raters: int) -> tuple[pd.DataFrame, pd.Series]:
    """(rows with `x` of the outputs rated by at least `min_raters` distinct raters, the
    outputs left out for having fewer: their rater count per (item_id, output))."""
    rated = df[df["x"].notna()]
    counts = raters_per_output(rated)
    short = counts[counts < min_raters]
    if short.empty:
        return rated, short
    key = rated["item_id"].to_numpy(np.int64) * 4096 + (rated["output"].to_numpy(np.int64) + 1)
    short_keys = (short.index.get_level_values(0).to_numpy(np.int64) * 4096
                  + short.index.get_level_values(1).to_numpy(np.int64) + 1)
    return rated[~np.isin(key, short_keys)], short


def consensus_frame(df: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """stats.consensus.consensus_table of column x (uniform weights, the seed's normal CI)."""
    rows = df[["item", "output", "criterion", "rater", "x"]].rename(columns={"x": "score"})
    return consensus_table(rows, level=level)


def majority_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Per (item, output, criterion) of categorical labels: the most chosen label (ties: the
    first in sort order), its share and the number of ratings."""
    counts = df.groupby(["item", "output", "criterion", "label"], sort=True, observed=True).size()
    counts = counts.rename("votes").reset_index()
    totals = counts.groupby(["item", "output", "criterion"], observed=True)["votes"].transform("sum")
    counts["share"] = counts["votes"] / totals
    counts["n"] = totals
    top = counts.sort_values(["item", "output", "criterion", "votes", "label"],
                             ascending=[True, True, True, False, True], kind="stable")
    top = top.drop_duplicates(["item", "output", "criterion"])
    return top.rename(columns={"label": "majority"})[["item", "output", "criterion", "majority", "share", "n"]]


def criterion_column(key: str) -> str:
    """output_scores_frame's column of a criterion's consensus."""
    return f"criterion:{key}"


def group_column(key: str) -> str:
    """output_scores_frame's column of a group's score."""
    return f"group:{key}"


# output_scores_frame's computed columns; criterion and group columns carry a prefix, so no
# rubric key (seed 000 rates a criterion keyed `overall`) can collide with one of these.
SCORE_COLUMNS = ("overall", "ci_low", "ci_high", "vote_count")


def output_scores_frame(df: pd.DataFrame, rubric: Mapping[str, Any], *, level: float = 0.95) -> pd.DataFrame:
    """Per (item, output): each criterion's consensus (criterion_column), each group's score
    (group_column), the computed overall, ci_low/ci_high of the overall (from each rater's own
    overall) and vote_count (the number of raters).

    Grouped by integer codes (stats.grouping): the groups, their order and every sum are those of
    the groupbys by (item, output, criterion) and (item, output, rater, criterion) it replaces."""
    unit, (item_of, output_of), (items, outputs) = group_index(df["item"], df["output"])
    n_units = item_of.size
    crit, crit_names = pd.factorize(df["criterion"], sort=True)
    rater, _ = pd.factorize(df["rater"], sort=True)
    x = df["x"].to_numpy(dtype=float)
    index = pd.MultiIndex.from_arrays([items.take(item_of), outputs.take(output_of)], names=["item", "output"])
    # consensus per (unit, criterion)
    cell, (cell_unit, cell_crit) = group_codes([unit, crit], [n_units, len(crit_names)])
    rows_units, wide = _unstack(cell_unit, cell_crit, group_agg(x, cell, cell_unit.size))
    del cell  # (each row's codes are freed once used: ten million rows' worth each)
    wide = pd.DataFrame(wide, index=index[rows_units], columns=_names(crit_names, cell_crit))
    groups, overall = combine_parts(wide, rubric)
    # each rater's own overall per unit, then its mean, sd and count per unit
    n_raters = int(rater.max()) + 1 if rater.size else 1
    own_cell, (own_unit, own_rater, own_crit) = group_codes([unit, rater, crit], [n_units, n_raters,
                                                                                 len(crit_names)])
    del unit, rater, crit
    pair, (pair_unit, _) = group_codes([own_unit, own_rater], [n_units, n_raters])
    _, per_rater = _unstack(pair, own_crit, group_agg(x, own_cell, own_unit.size))
    per_rater = pd.DataFrame(per_rater, columns=_names(crit_names, own_crit))
    own = combine_parts(per_rater, rubric)[1].to_numpy()
    own_unit = np.where(np.isnan(own), -1, pair_unit)
    mean, sd, n = (group_agg(own, own_unit, n_units, how) for how in ("mean", "std", "count"))
    z = float(norm.ppf((1 + level) / 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        half = z * sd / np.sqrt(n)
    ok = n >= 2
    out = wide.rename(columns=criterion_column)
    for key, series in groups.items():
        out[group_column(key)] = series
    out["overall"] = overall
    out["ci_low"] = np.where(ok, mean - half, np.nan)[rows_units]
    out["ci_high"] = np.where(ok, mean + half, np.nan)[rows_units]
    raters = np.bincount(pair_unit, minlength=n_units)  # distinct raters (a missing rater is none)
    out["vote_count"] = raters[rows_units]
    return out.reset_index()


def _unstack(row: np.ndarray, col: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the row codes present, sorted; rows x columns-present matrix, NaN where no value), as
    Series.unstack gives a sorted two-level index of these codes."""
    rows, r = unique_ints(row)
    c = unique_ints(col)[1]
    mat = np.full((rows.size, int(c.max()) + 1 if c.size else 0), np.nan)
    mat[r, c] = values
    return rows, mat


def _names(names: pd.Index, codes: np.ndarray) -> list[str]:
    return [str(names[c]) for c in np.unique(codes)]


# ---------------------------------------------------------------- agreement bootstrap

def _unit_features(units: np.ndarray, x: np.ndarray, measure: str, n_units: int) -> tuple[np.ndarray, list[str]]:
    """Per-unit sums from which alpha is a ratio of totals; units with one value get zeros."""
    m = np.bincount(units, minlength=n_units).astype(float)
    pair = m >= 2
    if measure == "numeric":
        s1 = np.bincount(units, weights=x, minlength=n_units)
        s2 = np.bincount(units, weights=x * x, minlength=n_units)
        with np.errstate(invalid="ignore", divide="ignore"):
            o = np.where(pair, 2.0 * (m * s2 - s1 * s1) / (m - 1.0), 0.0)
        cols = [np.where(pair, m, 0.0), np.where(pair, s1, 0.0), np.where(pair, s2, 0.0), o]
        return np.column_stack(cols), ["m", "s1", "s2", "o"]
    codes = x.astype(np.int64)
    n_cat = int(codes.max()) + 1 if codes.size else 1
    nuc = np.zeros((n_units, n_cat))
    np.add.at(nuc, (units, codes), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = np.where(pair, (m * m - (nuc * nuc).sum(axis=1)) / (m - 1.0), 0.0)
    nuc[~pair] = 0.0
    return np.column_stack([np.where(pair, m, 0.0), o, nuc]), ["m", "o"] + [f"c{k}" for k in range(n_cat)]


def _alpha_from_totals(t: np.ndarray, measure: str) -> np.ndarray:
    """Alpha per row of totals (rows = resamples)."""
    n, o = t[:, 0], (t[:, 3] if measure == "numeric" else t[:, 1])
    if measure == "numeric":
        s1, s2 = t[:, 1], t[:, 2]
        expected = 2.0 * n * s2 - 2.0 * s1 * s1
    else:
        expected = n * n - (t[:, 2:] ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 1e-12 * np.maximum(n * n, 1), 1.0 - (n - 1.0) * o / expected, np.nan)


def slot_matrix(units: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Units x k matrix of the first k ratings of each unit with at least k ratings, k being
    the most common number of ratings per unit (>= 2). One-way ICC1 ignores which rater sat
    in which column, so this is the matrix for crowd designs where raters differ per unit.
    Returns (matrix, unit ids of its rows, k)."""
    counts = np.bincount(units)
    multi = counts[counts >= 2]
    if multi.size == 0:
        return np.empty((0, 0)), np.empty(0, dtype=np.int64), 0
    k = int(np.bincount(multi).argmax())
    # (rows usually come unit by unit: then the stable sort is the identity, and is skipped)
    order = np.arange(units.size) if np.all(units[1:] >= units[:-1]) else np.argsort(units, kind="stable")
    su, sx = units[order], x[order]
    starts = np.searchsorted(su, su)  # first row of each unit
    slot = np.arange(su.size) - starts
    keep = (counts[su] >= k) & (slot < k)
    kept = su[keep]  # sorted: its distinct values are where it changes
    rows_units = kept[np.r_[True, kept[1:] != kept[:-1]]] if kept.size else kept
    row_of = np.full(counts.size, -1)
    row_of[rows_units] = np.arange(rows_units.size)
    mat = np.full((rows_units.size, k), np.nan)
    mat[row_of[su[keep]], slot[keep]] = sx[keep]
    return mat, rows_units, k


def _icc1_from_totals(t: np.ndarray, k: int) -> np.ndarray:
    """ICC1 per row of totals (n, sum m_i, sum m_i^2, sum ssw_i) of row means and within SS."""
    n, sm, sm2, ssw = t[:, 0], t[:, 1], t[:, 2], t[:, 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        msb = k * (sm2 - sm * sm / n) / (n - 1.0)
        msw = ssw / (n * (k - 1.0))
        return np.where((n >= 2) & ((msb > 0) | (msw > 0)), (msb - msw) / (msb + (k - 1.0) * msw), np.nan)


def agreement_bootstrap(units: np.ndarray, unit_item: np.ndarray, x: np.ndarray, *, measure: str,
                        n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Point values and percentile bootstrap CIs (resampling items with their outputs) of
    Krippendorff's alpha (interval for numeric, nominal for categorical) and, for numeric
    criteria, the one-way ICC1 on the slot matrix.

    units: unit code per rating (0..U-1); unit_item: item code per unit; x: analysis value.
    """
    n_items = int(unit_item.max()) + 1 if unit_item.size else 0
    return agreement_bootstraps({"_": (units, unit_item, x, measure)}, n_items=n_items, n_boot=n_boot,
                                level=level, seed=seed)["_"]


def _bootstrap_features(units: np.ndarray, unit_item: np.ndarray, x: np.ndarray, measure: str,
                        n_items: int) -> tuple[np.ndarray, int, int, int]:
    """Per item, the sums of per-unit sufficient statistics (alpha's, then ICC1's for numeric):
    a resample of items is then a weighted sum. Returns (item features, alpha columns, k, ICC units)."""
    keep = ~np.isnan(x)
    units, x = units[keep], x[keep]
    n_units = int(unit_item.size)
    feats, _ = _unit_features(units, x, measure, n_units)
    parts = [feats]
    k = n_icc = 0
    if measure == "numeric":
        mat, rows_units, k = slot_matrix(units, x)
        icc_feats = np.zeros((n_units, 4))
        if k >= 2:
            mean = mat.mean(axis=1)
            icc_feats[rows_units] = np.column_stack(
                [np.ones(rows_units.size), mean, mean * mean, ((mat - mean[:, None]) ** 2).sum(axis=1)])
            n_icc = int(rows_units.size)
        parts.append(icc_feats)
    all_feats = np.column_stack(parts)
    item_feats = np.zeros((n_items, all_feats.shape[1]))
    np.add.at(item_feats, unit_item, all_feats)
    return item_feats, feats.shape[1], k, n_icc


def _count_rows(idx: np.ndarray, out: np.ndarray, n_items: int) -> None:
    """Each resample's item counts (a row of `idx`) into its row of `out`, one at a time: its counters stay in cache."""
    for r in range(idx.shape[0]):
        out[r] = np.bincount(idx[r], minlength=n_items)


def _wait(jobs: Sequence[Future]) -> None:
    for job in jobs:
        job.result()  # (raises what the thread raised)


# The most memory the bootstrap's resample counts may take at once (8 bytes a count).
PRODUCT_BYTES = 128 * 2**20


def agreement_bootstraps(specs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, str]], *, n_items: int,
                         n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> dict[str, dict[str, Any]]:
    """agreement_bootstrap for several criteria at once, on one set of item resamples: key ->
    (units, unit_item, x, measure) with item codes shared by all criteria (0..n_items-1). Each
    resample of the study's items is drawn once and weighs every criterion's sums, so the random
    draws (most of the cost) are paid once, not once per criterion."""
    blocks = {key: _bootstrap_features(u, ui, x, m, n_items) for key, (u, ui, x, m) in specs.items()}
    stacked = np.column_stack([b[0] for b in blocks.values()]) if blocks else np.zeros((n_items, 0))
    spans, start = {}, 0
    for key, (feats, _, _, _) in blocks.items():
        spans[key] = (start, start + feats.shape[1])
        start += feats.shape[1]

    def stats_of(key: str, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, a_cols, k, _ = blocks[key]
        alpha = _alpha_from_totals(totals[:, :a_cols], specs[key][3])
        icc1 = _icc1_from_totals(totals[:, a_cols:], k) if k >= 2 else np.full(totals.shape[0], np.nan)
        return alpha, icc1

    def weigh(w: np.ndarray) -> np.ndarray:
        """Every criterion's sums for the resamples whose item counts are the rows of `w`."""
        return (stacked_t @ w.T).T

    weighed: list[Future] = []  # in resample order
    if n_items >= 2 and n_boot > 0 and stacked.shape[1]:
        rng = np.random.default_rng(seed)
        batch = int(min(max(4_000_000 // n_items, 1), 256))
        # Features x items, contiguous: the product below is then a few long dot products per
        # feature, which BLAS does ten times faster than a wide-and-short product on a busy machine.
        stacked_t = np.ascontiguousarray(stacked.T)
        # The product reads all of stacked_t (features x items) once per call, so the counts of several
        # draw batches are weighed together: at 500,000 items a batch is 8 resamples and the reads of
        # stacked_t were most of the bootstrap. Each resample's row is the same, so are its totals.
        rows = max(batch, min(256, PRODUCT_BYTES // (8 * n_items)))
        # The draws stay on this thread, one generator in one order; two threads count them and weigh
        # the counts (numpy's bincount and BLAS release the GIL), into two buffers taken in turn, so
        # the three costs (about 1.3, 2.3 and 1.8 s at 500,000 items) share two cores.
        buffers = [np.empty((min(rows, n_boot), n_items)) for _ in range(2 if n_boot > rows else 1)]
        uses: list[list[Future]] = [[] for _ in buffers]  # what still reads or writes each buffer
        current, filled = 0, 0
        with one_blas_thread(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="concord-bootstrap") as pool:
            for begin in range(0, n_boot, batch):
                b = min(batch, n_boot - begin)
                idx = rng.integers(0, n_items, size=(b, n_items))  # the same draws, in the same order, as before
                if filled + b > buffers[current].shape[0]:
                    _wait(uses[current])
                    weighed.append(pool.submit(weigh, buffers[current][:filled]))
                    uses[current] = [weighed[-1]]
                    current, filled = (current + 1) % len(buffers), 0
                    _wait(uses[current])  # its counts may still be being weighed
                    uses[current] = []
                uses[current].append(pool.submit(_count_rows, idx, buffers[current][filled:filled + b], n_items))
                filled += b
                _wait(uses[current][:-2])  # at most two batches of draws held
            _wait(uses[current])
            weighed.append(pool.submit(weigh, buffers[current][:filled]))
            _wait(weighed)
    draws: dict[str, tuple[list, list]] = {key: ([], []) for key in blocks}
    for job in weighed:
        totals = job.result()
        for key, (lo, hi) in spans.items():
            a, i = stats_of(key, totals[:, lo:hi])
            draws[key][0].append(a)
            draws[key][1].append(i)
    tail = (1 - level) / 2 * 100

    def summary(point: float, found: list[np.ndarray]) -> dict[str, Any]:
        d = np.concatenate(found) if found else np.empty(0)
        d = d[np.isfinite(d)]
        ci = [float(v) for v in np.percentile(d, [tail, 100 - tail])] if d.size else None
        return {"value": float(point) if np.isfinite(point) else None, "bootstrap_ci": ci}

    out = {}
    for key, (lo, hi) in spans.items():
        point_alpha, point_icc = stats_of(key, stacked[:, lo:hi].sum(axis=0, keepdims=True))
        _, _, k, n_icc = blocks[key]
        out[key] = {"alpha": summary(point_alpha[0], draws[key][0]), "icc1": summary(point_icc[0], draws[key][1]),
                    "k": k, "n_units_icc": n_icc, "n_items": n_items}
    return out

