"""The report's integer-code groupings (annotation.stats.grouping) give exactly what the plain
pandas groupbys they replace gave: same groups, same order, same floats to the last bit."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, wilcoxon

from annotation.reports.stats import output_scores_frame
from annotation.stats.consensus import combine_parts
from annotation.stats.grouping import group_agg, group_index
from annotation.stats.ranking import _mean_ci, compare_systems, holm
from rubrics.loader import load_preset

CODEGEN = load_preset("codegen-002")  # two groups of criteria


def pandas_output_scores_frame(df, rubric, *, level=0.95):
    """The groupby implementation output_scores_frame had before (the reference)."""
    means = df.groupby(["item", "output", "criterion"], sort=True, observed=True)["x"].mean()
    wide = means.unstack("criterion")
    wide.columns = [str(c) for c in wide.columns]
    groups, overall = combine_parts(wide, rubric)
    per_rater = df.groupby(["item", "output", "rater", "criterion"], sort=True, observed=True)["x"].mean()
    per_rater_wide = per_rater.unstack("criterion")
    per_rater_wide.columns = [str(c) for c in per_rater_wide.columns]
    own = combine_parts(per_rater_wide, rubric)[1].dropna()
    g = own.groupby(level=["item", "output"], sort=True)
    stats = pd.DataFrame({"mean": g.mean(), "sd": g.std(), "n": g.count()})
    half = float(norm.ppf((1 + level) / 2)) * stats["sd"] / np.sqrt(stats["n"])
    ok = stats["n"] >= 2
    out = wide.rename(columns=lambda k: f"criterion:{k}")
    for key, series in groups.items():
        out[f"group:{key}"] = series
    out["overall"] = overall
    out["ci_low"] = (stats["mean"] - half).where(ok)
    out["ci_high"] = (stats["mean"] + half).where(ok)
    out["vote_count"] = df.groupby(["item", "output"], sort=True, observed=True)["rater"].nunique()
    return out.reset_index()


def pandas_compare_systems(ratings, *, level=0.95):
    """compare_systems' numeric part as it was: a groupby on (criterion, system, item), unstacked."""
    numeric = ratings.assign(score=pd.to_numeric(ratings["score"], errors="coerce")).dropna(subset=["score"])
    means = numeric.groupby(["criterion", "system", "item"], sort=True)["score"].mean()
    criteria = {}
    for crit, per in means.groupby(level="criterion"):
        wide = per.droplevel("criterion").unstack("system")
        systems = {}
        for s in wide.columns:
            x = wide[s].dropna().to_numpy()
            mean, ci = _mean_ci(x, level)
            systems[str(s)] = {"mean": mean, "ci": ci, "n_items": int(x.size)}
        pairs = []
        for a, b in combinations(wide.columns, 2):
            both = wide[[a, b]].dropna().to_numpy()
            d = both[:, 0] - both[:, 1]
            p = float(wilcoxon(both[:, 0], both[:, 1]).pvalue) if d.size > 0 and np.any(d != 0) else None
            n = max(d.size, 1)
            pairs.append({"a": str(a), "b": str(b), "n_items": int(d.size), "win_a": float(np.sum(d > 0) / n),
                          "win_b": float(np.sum(d < 0) / n), "tie": float(np.sum(d == 0) / n), "p_value": p})
        for pair, adj in zip(pairs, holm([p["p_value"] for p in pairs])):
            pair["p_holm"] = adj
        criteria[str(crit)] = {"systems": systems, "pairs": pairs,
                               "ranking": sorted(systems, key=lambda s: -systems[s]["mean"])}
    return criteria


def random_ratings(seed: int, *, categorical: bool, n_items: int = 60, floats: bool = True) -> pd.DataFrame:
    """Several outputs per item, raters missing at random, some NaN scores, criteria and systems
    as categoricals whose categories are NOT sorted (as Arrow's dictionaries come), or as text."""
    rng = np.random.default_rng(seed)
    crits = ["technical_quality", "aesthetic_quality", "functionality", "code_quality"]
    systems = ["zeta", "alpha", "mid", "beta"]
    rows = []
    for i in range(n_items):
        for o in range(int(rng.integers(1, 4))):
            system = systems[int(rng.integers(0, len(systems)))]
            for r in range(6):
                if rng.random() < 0.3:
                    continue
                for c in crits:
                    if rng.random() < 0.1:
                        continue
                    x = float(rng.integers(1, 6)) + (float(rng.random()) / 7 if floats else 0.0)
                    rows.append({"item": int(rng.integers(0, 10**6)) * 0 + 1000 - i, "output": o,
                                 "rater": f"r{r}", "criterion": c, "system": system,
                                 "x": np.nan if rng.random() < 0.05 else x})
    df = pd.DataFrame(rows)
    if categorical:
        df["criterion"] = pd.Categorical(df["criterion"], categories=crits[::-1] + ["unused"])
        df["system"] = pd.Categorical(df["system"], categories=systems + ["unused"])
        df["rater"] = pd.Categorical(df["rater"], categories=[f"r{r}" for r in (3, 1, 0, 2, 5, 4)])
    return df


def test_group_index_numbers_groups_as_groupby_orders_them():
    df = random_ratings(0, categorical=True)
    group, parts, uniques = group_index(df["criterion"], df["system"], df["item"])
    ref = df.groupby(["criterion", "system", "item"], sort=True, observed=True)["x"].mean()
    assert group.max() + 1 == len(ref)
    keys = list(zip(*(u.take(p) for u, p in zip(uniques, parts))))
    assert keys == list(ref.index)
    means = group_agg(df["x"].to_numpy(), group, len(ref))
    assert np.array_equal(means, ref.to_numpy(), equal_nan=True)


@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_output_scores_frame_equals_the_groupby_computation(seed, categorical):
    df = random_ratings(seed, categorical=categorical)
    ours = output_scores_frame(df, CODEGEN)
    ref = pandas_output_scores_frame(df, CODEGEN)
    assert list(ours.columns) == list(ref.columns)
    assert len(ours) == len(ref) and list(ours["item"]) == list(ref["item"])
    for col in ref.columns:  # exact: no tolerance
        assert np.array_equal(ours[col].to_numpy(), ref[col].to_numpy(), equal_nan=True), col


@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_compare_systems_equals_the_groupby_computation(seed, categorical):
    df = random_ratings(seed, categorical=categorical).rename(columns={"x": "score"})
    ours = compare_systems(df[["item", "system", "criterion", "score"]])["criteria"]
    ref = pandas_compare_systems(df[["item", "system", "criterion", "score"]])
    assert list(ours) == list(ref)
    for crit in ref:
        assert list(ours[crit]["systems"]) == list(ref[crit]["systems"])  # the order too
    assert ours == ref


def pandas_distributions(df, by_key):
    """The report's distributions section as it was: a crosstab of system and point per criterion."""
    import math

    out = {}
    for key, c in by_key.items():
        sub = df[(df["criterion"] == key) & df["x"].notna()]
        if sub.empty:
            continue
        system = sub["system"].astype(object).fillna("(item)")  # (fillna on the categorical itself raises)
        if c["kind"] == "likert":
            lo = int(c.get("min", math.floor(sub["x"].min())))
            hi = int(c.get("max", math.ceil(sub["x"].max())))
            values = list(range(lo, hi + 1))
            point = np.clip(np.rint(sub["x"].to_numpy()), lo, hi).astype(int)
        else:
            values = [str(ch["value"]) for ch in c.get("choices", [])]
            point = sub["label"].astype(str).to_numpy()
        counts = pd.crosstab(system.to_numpy(), point)
        out[key] = {"values": [str(v) for v in values],
                    "systems": {str(s): [int(counts.loc[s].get(v, 0)) for v in values] for s in counts.index}}
    return out


@pytest.mark.parametrize("seed", [7, 8])
def test_distributions_equal_the_crosstab(seed):
    from annotation.reports.study import _distributions

    rng = np.random.default_rng(seed)
    n = 3000
    crit = rng.choice(["clarity", "verdict", "depth"], n)
    points = rng.integers(0, 8, n)
    label = np.where(crit == "verdict", rng.choice(["yes", "no"], n), points.astype(str))
    x = np.where(crit == "verdict", (label == "no").astype(float), points + rng.random(n) / 3)
    x[rng.random(n) < 0.05] = np.nan
    system = rng.choice(["zed", "Alpha", "beta", None], n)
    df = pd.DataFrame({"criterion": pd.Categorical(crit, categories=["verdict", "unused", "depth", "clarity"]),
                       "system": pd.Categorical(system, categories=["zed", "beta", "Alpha"]),
                       "label": pd.Categorical(label), "x": x})
    by_key = {"clarity": {"key": "clarity", "kind": "likert", "min": 1, "max": 5},
              "depth": {"key": "depth", "kind": "likert"},  # no min and max: from the data
              "verdict": {"key": "verdict", "kind": "binary", "choices": [{"value": "yes"}, {"value": "no"}]},
              "absent": {"key": "absent", "kind": "likert", "min": 1, "max": 5}}
    ours = _distributions(df, by_key)
    assert ours == pandas_distributions(df, by_key)
    assert list(ours["clarity"]["systems"]) == ["(item)", "Alpha", "beta", "zed"]


def test_common_items_equal_the_intersection_of_each_rater_s_items():
    from annotation.stats.kappa import common_items, rater_columns

    rng = np.random.default_rng(9)
    x = rng.integers(1, 6, (500, 5)).astype(float)
    x[rng.random(x.shape) < 0.4] = np.nan
    present = rater_columns(x)
    for i, j in combinations(range(5), 2):
        ref = np.intersect1d(np.flatnonzero(~np.isnan(x[:, i])), np.flatnonzero(~np.isnan(x[:, j])))
        assert np.array_equal(common_items(present, i, j), ref)


def test_sorted_codes_equal_pandas_factorize_sorted():
    from annotation.stats.grouping import _sorted_codes

    rng = np.random.default_rng(10)
    cat = pd.Series(pd.Categorical(rng.choice(["b", "a", None, "c"], 200), categories=["c", "z", "b", "a"]))
    for column in (cat, pd.Series(rng.integers(-5, 40, 300)), pd.Series(rng.integers(0, 2**40, 300)),
                   pd.Series(rng.integers(0, 9, 300).astype(np.int16))):
        codes, uniques = _sorted_codes(column)
        ref_codes, ref_uniques = pd.factorize(column, sort=True)
        assert np.array_equal(codes, ref_codes)
        assert list(uniques) == list(ref_uniques) and uniques.dtype == ref_uniques.dtype


def test_unique_ints_and_slot_matrix_equal_numpy_s_sorting():
    from annotation.reports.stats import slot_matrix
    from annotation.stats.grouping import unique_ints

    rng = np.random.default_rng(11)
    for values in (rng.integers(0, 50, 400), rng.integers(0, 2**40, 400), np.sort(rng.integers(0, 9, 60)),
                   np.zeros(0, dtype=np.int64)):
        uniq, inverse = unique_ints(values)
        ref_uniq, ref_inverse = np.unique(values, return_inverse=True)
        assert np.array_equal(uniq, ref_uniq) and uniq.dtype == ref_uniq.dtype
        assert np.array_equal(inverse, ref_inverse)
    units = rng.integers(0, 80, 500)
    x = rng.integers(1, 6, 500).astype(float)
    for u in (units, np.sort(units)):  # shuffled, and unit by unit (the sort skipped)
        mat, rows, k = slot_matrix(u, x)
        order = np.argsort(u, kind="stable")
        su, counts = u[order], np.bincount(u)
        slot = np.arange(su.size) - np.searchsorted(su, su)
        keep = (counts[su] >= k) & (slot < k)
        assert np.array_equal(rows, np.unique(su[keep]))
        assert np.array_equal(mat[np.searchsorted(rows, su[keep]), slot[keep]], x[order][keep])


def test_unique_ints_of_floats_equal_numpy_s_either_way():
    """Scale points as floats are counted in a table; other floats (fractions, negatives, -0.0,
    NaN, large) go to np.unique: the same values, places and types whichever way."""
    from annotation.stats import grouping
    from annotation.stats.grouping import unique_ints

    rng = np.random.default_rng(12)
    points = rng.integers(1, 8, 500).astype(float)
    tabled = [points, np.array([0.0, 3.0, 3.0, 65536.0]), np.zeros(0)]
    sorted_ = [points / 2, points - 4, np.array([-0.0, 0.0, 1.0]), np.array([1.0, np.nan, 2.0, np.nan]),
               np.array([1.0, 70000.0])]
    for values in tabled + sorted_:
        uniq, inverse = unique_ints(values)
        ref_uniq, ref_inverse = np.unique(values, return_inverse=True)
        assert np.array_equal(uniq, ref_uniq, equal_nan=True) and uniq.dtype == ref_uniq.dtype
        assert np.array_equal(np.signbit(uniq), np.signbit(ref_uniq))
        assert np.array_equal(inverse, ref_inverse) and inverse.dtype == ref_inverse.dtype
    assert all(grouping.small_whole_numbers(v) for v in tabled[:2])
    assert not any(grouping.small_whole_numbers(v) for v in sorted_)


def test_average_ranks_equal_scipy_s_rankdata_either_way():
    """Scale points are ranked by counting them, other values by scipy: the same floats."""
    from scipy.stats import rankdata

    from annotation.stats.pairwise import average_ranks, spearman

    rng = np.random.default_rng(13)
    points = rng.integers(1, 8, 1_000).astype(float)
    for values in (points, points.astype(np.int64), np.array([3.0, 3.0, 0.0, 7.0]), np.array([2.0]),
                   points / 3, points - 5, np.array([1.0, np.nan, 2.0]), rng.normal(size=50)):
        ranks, ref = average_ranks(values), rankdata(values)
        assert ranks.dtype == ref.dtype and np.array_equal(ranks, ref, equal_nan=True)
    other = rng.integers(1, 8, 1_000).astype(float)
    assert spearman(points, other).value == pytest.approx(float(np.corrcoef(rankdata(points), rankdata(other))[0, 1]))
