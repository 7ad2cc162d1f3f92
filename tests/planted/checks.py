"""The checks the figure inventory (tests/planted/figures.py) names: each compares the figures it covers
with the planted truth (tests/planted/truth.py) or with an independent computation from the exported
rows by a reference library, on what the routes showed (tests/planted/conftest.py `Seen`).

    CHECKS[id](seen)   raises AssertionError naming the figure that is wrong

Tolerances: 1e-9 where the same numbers are computed another way; the planted-truth checks state theirs.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from statistics import median
from typing import Callable

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.planted import truth

CHECKS: dict[str, Callable] = {}
EXACT = dict(rel=1e-9, abs=1e-9)


def check(name: str):
    def register(fn):
        CHECKS[name] = fn
        return fn
    return register


# ---------------------------------------------------------------------------- the exported rows

def ratings(seen) -> pd.DataFrame:
    """The export's analysed ratings of the numeric criterion: regular items, not ignored."""
    df = pd.read_csv(io.StringIO(seen.export_csv), dtype={"item": str, "rater": str})
    df = df[~df["is_attention_check"].astype(bool) & ~df["ignored"].astype(bool)]
    out = df[df["criterion"] == "helpfulness"].copy()
    out["score"] = out["score"].astype(float)
    out["output"] = out["output"].astype(int)
    out["unit"] = out["item"] + "#" + out["output"].astype(str)
    # the order the ratings were stored in, which "the first k ratings of an output" (ICC1) follows
    out["stored"] = [seen.stored[key] for key in zip(out["item"], out["output"], out["rater"])]
    return out.sort_values("stored", kind="stable")


def comparisons(seen) -> pd.DataFrame:
    """The export's pairwise answers of regular items: item, rater, first and second system shown,
    winner (None for a tie). The answer names outputs by id in the order shown; the same assignment's
    helpfulness rows say which output was shown where."""
    import json

    df = pd.read_csv(io.StringIO(seen.export_csv), dtype={"item": str, "rater": str})
    df = df[~df["is_attention_check"].astype(bool) & ~df["ignored"].astype(bool)]
    shown_at = {(r.item, r.rater, int(r.shown_position)): r.system
                for r in df[df["criterion"] == "helpfulness"].itertuples()}
    rows = []
    for r in df[df["criterion"] == "preference"].itertuples():
        v = json.loads(r.value)
        first, second = shown_at[(r.item, r.rater, 1)], shown_at[(r.item, r.rater, 2)]
        winner = {v["shown"][0]: first, v["shown"][1]: second}.get(v.get("winner"))
        rows.append({"item": r.item, "rater": r.rater, "first": first, "second": second, "winner": winner})
    return pd.DataFrame(rows)


def matrix(df: pd.DataFrame) -> pd.DataFrame:
    """units x raters, NaN where a rater did not rate the unit."""
    return df.pivot_table(index="unit", columns="rater", values="score", aggfunc="first")


def approx(value, expected, what: str, **tol) -> None:
    assert value == pytest.approx(expected, **(tol or EXACT)), f"{what}: shown {value}, expected {expected}"


# ---------------------------------------------------------------------------- report JSON: counts

@check("planted.counts")
def _(seen):
    c = seen.report["counts"]
    raters = [p for p in truth.PATHS if p.kind]
    regular = sum(truth.N_ITEMS if p.rated is None else p.rated for p in raters)
    checks = sum(_served_checks(seen, p.pid) for p in truth.PATHS)
    training = sum(2 for p in truth.PATHS if truth_training_answers(p))  # a retry replaces the first attempt's
    assert c["items"] == truth.N_ITEMS
    assert c["attention_items"] == len(truth.ATTENTION) + 2, "attention checks and the two training items"
    assert c["ignored_assignments"] == 0
    assert c["submitted_assignments"] == regular + checks + training, c
    assert seen.report["study"]["raters_per_item"] == truth.RATERS_PER_ITEM


def truth_training_answers(path: truth.Path) -> list[int]:
    """The training items each path answers: 2, or 2 + 2 for a failed first attempt and its retry."""
    return {"declined": [], "consent_only": [], "failed_training": [1, 2, 3, 4]}.get(path.steps, [1, 2])


@check("reference.counts_from_export")
def _(seen):
    df = ratings(seen)
    a = seen.report["agreement"]["helpfulness"]
    assert a["n_units"] == a["details"]["n_items"] == df["unit"].nunique()
    assert a["n_raters"] == a["details"]["n_raters"] == df["rater"].nunique()
    assert a["n_ratings"] == a["details"]["n_ratings"] == len(df)


# ---------------------------------------------------------------------------- agreement

@check("reference.ratings_analysed")
def _(seen):
    """The ratings the statistics use: regular items only (training and attention checks are left out)."""
    df = ratings(seen)
    assert seen.report["counts"]["ratings_analysed"] == len(df)
    assert seen.report["counts"]["raters"] == df["rater"].nunique() == len([p for p in truth.PATHS if p.kind])


@check("reference.krippendorff")
def _(seen):
    import krippendorff

    m = matrix(ratings(seen)).T.to_numpy()  # raters x units
    a = seen.report["agreement"]["helpfulness"]
    for level, value in a["details"]["krippendorff_alpha"].items():
        approx(value, krippendorff.alpha(reliability_data=m, level_of_measurement=level), f"alpha {level}")
    assert a["alpha_level"] == "interval"
    approx(a["alpha"]["value"], a["details"]["krippendorff_alpha"]["interval"], "alpha")
    approx(seen.report["summary"]["reliability"][0]["alpha"]["value"], a["alpha"]["value"], "summary alpha")


@check("reference.alpha_bootstrap_covers")
def _(seen):
    """The percentile bootstrap over items (all their outputs) by our own resampling, 200 draws:
    the report's interval ends within 0.1 of ours (bootstrap noise at 1,000 and 200 draws)."""
    import krippendorff

    df = ratings(seen)
    items = sorted(df["item"].unique())
    by_item = {i: matrix(df[df["item"] == i]) for i in items}
    raters = sorted(df["rater"].unique())
    rng = np.random.default_rng(0)
    draws = []
    for _ in range(200):
        pick = rng.choice(items, len(items))
        m = pd.concat([by_item[i].reindex(columns=raters) for i in pick]).T.to_numpy()
        draws.append(krippendorff.alpha(reliability_data=m, level_of_measurement="interval"))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    a = seen.report["agreement"]["helpfulness"]["alpha"]
    assert a["ci"] is None  # no analytic interval for alpha: the bootstrap one is given instead
    approx(a["bootstrap_ci"], [lo, hi], "alpha bootstrap CI", abs=0.1)
    approx(seen.report["summary"]["reliability"][0]["alpha"]["ci"], a["bootstrap_ci"], "summary alpha CI")


def _pairs(m: pd.DataFrame):
    for a, b in itertools.combinations(m.columns, 2):
        both = m[[a, b]].dropna()
        yield both[a].to_numpy(), both[b].to_numpy()


@check("reference.kappa_correlation")
def _(seen):
    from sklearn.metrics import cohen_kappa_score

    m = matrix(ratings(seen))
    d = seen.report["agreement"]["helpfulness"]["details"]
    for name, w in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
        kappas = [cohen_kappa_score(x, y, weights=w) for x, y in _pairs(m) if len(x) >= 2 and
                  len(set(x) | set(y)) > 1]
        approx(d["cohen_kappa"][name], np.mean(kappas), f"mean Cohen's kappa ({name})")
    for name, fn in (("mean_pairwise_pearson", stats.pearsonr), ("mean_pairwise_spearman", stats.spearmanr)):
        rs = [fn(x, y)[0] for x, y in _pairs(m) if len(x) >= 3 and np.std(x) > 0 and np.std(y) > 0]
        approx(d[name], np.mean(rs), name)
    # Fleiss (1971) with each unit's own number of ratings, and the mean pairwise agreement P-bar
    values = sorted(pd.unique(m.to_numpy().ravel()[~np.isnan(m.to_numpy().ravel())]))
    counts = np.array([[np.sum(row == v) for v in values] for row in m.to_numpy()], dtype=float)
    n = counts.sum(axis=1)
    keep = n >= 2
    counts, n = counts[keep], n[keep]
    p_i = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_bar = p_i.mean()
    p_j = counts.sum(axis=0) / counts.sum()
    p_e = (p_j ** 2).sum()
    approx(d["percent_agreement"], p_bar, "percent agreement")
    approx(d["fleiss_kappa"], (p_bar - p_e) / (1 - p_e), "Fleiss' kappa")


@check("missing.icc_incomplete_design")
def _(seen):
    """Each rater sees two of an item's four outputs: no output is rated by every rater, so the
    two-way ICCs cannot be computed; they are absent with a reason, never 0."""
    m = matrix(ratings(seen))
    complete = int(m.notna().all(axis=1).sum())
    d = seen.report["agreement"]["helpfulness"]["details"]
    assert d["icc_complete_items"] == complete == 0
    for form, value in d["icc"].items():
        assert value is None and d["icc_ci"][form] is None, form
        assert d["reasons"][f"icc.{form}"].strip(), f"ICC {form} has no reason"


def _icc1_first_k(df: pd.DataFrame, column: str = "score"):
    """pingouin's one-way ICC(1) over the units with the modal number k of ratings or more, their first k
    in the order they were stored (`stored`); returns (its row, k, units)."""
    import pingouin

    counts = df.groupby("unit").size()
    k = int(counts[counts >= 2].value_counts().idxmax())
    kept = df[df["unit"].isin(counts[counts >= k].index)].copy()
    kept["slot"] = kept.groupby("unit").cumcount()
    kept = kept[kept["slot"] < k]
    icc = pingouin.intraclass_corr(data=kept, targets="unit", raters="slot", ratings=column).set_index("Type")
    return icc.loc["ICC(1,1)"], k, kept["unit"].nunique()


@check("reference.icc1_oneway")
def _(seen):
    icc, k, n_units = _icc1_first_k(ratings(seen))
    a = seen.report["agreement"]["helpfulness"]["icc1"]
    assert a["k"] == k and a["n_units"] == n_units
    approx(a["value"], icc["ICC"], "ICC1")
    approx(a["ci"], list(icc["CI95"]), "ICC1 CI (F distribution)", abs=0.006)  # pingouin rounds to 2 digits
    lo, hi = a["bootstrap_ci"]
    assert lo < a["value"] < hi
    s = seen.report["summary"]["reliability"][0]["icc1"]
    approx(s["value"], a["value"], "summary ICC1")
    approx(s["ci"], a["bootstrap_ci"], "summary ICC1 CI")


@check("planted.settings")
def _(seen):
    r = seen.report
    s = r["settings"]
    assert s["ci_level"] == 0.95 and s["n_boot"] == 1000 and s["bootstrap_seed"] == 0 and s["icc_threshold"] == 0.7
    assert r["summary"]["reliability"][0]["threshold"] == 0.7
    assert r["study"]["rubric_version"] == seen.study.rubric_version.version
    assert r["study"]["consensus_min_raters"] == seen.study.consensus_min_raters
    assert [(c["min"], c["max"]) for c in r["criteria"] if c["key"] == "helpfulness"] == [(1, 7)]


# ---------------------------------------------------------------------------- consensus, raters

@check("reference.consensus")
def _(seen):
    df = ratings(seen)
    c = seen.report["consensus"]
    g = df.groupby(["item", "output"])["score"]
    n = g.size()
    shown = n[n >= c["min_raters"]]
    assert c["min_raters"] == seen.study.consensus_min_raters
    assert c["n_outputs"] == len(shown) and c["left_out"] == int((n < c["min_raters"]).sum())
    rows = {(r["item"], r["output"]): r for r in c["rows"]}
    assert set(rows) == set(shown.index)
    mean, sd = g.mean(), g.std(ddof=1)
    for key, row in rows.items():
        h = row["criteria"]["helpfulness"]
        half = stats.norm.ppf(0.975) * sd[key] / np.sqrt(n[key])
        approx(h["consensus"], mean[key], f"consensus {key}")
        approx(h["sd"], sd[key], f"sd {key}")
        approx(h["ci"], [mean[key] - half, mean[key] + half], f"ci {key}")
        assert h["n"] == row["vote_count"] == n[key]
        approx(row["overall"], mean[key], f"overall {key}")
        approx(row["overall_ci"], h["ci"], f"overall ci {key}")


def _leave_one_out(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby("unit")["score"]
    total, count = g.transform("sum"), g.transform("count")
    out = df[count > 1].copy()
    out["loo"] = (total[count > 1] - out["score"]) / (count[count > 1] - 1)
    return out


@check("reference.rater_stats")
def _(seen):
    df = ratings(seen)
    loo = _leave_one_out(df)
    for rater, info in seen.report["raters"].items():
        mine, paired = df[df["rater"] == rater], loo[loo["rater"] == rater]
        diff = paired["score"] - paired["loo"]
        assert info["n_ratings"] == len(mine) and info["n_items"] == mine["item"].nunique(), rater
        approx(info["bias"], diff.mean(), f"{rater} bias")
        approx(info["mae_vs_others"], diff.abs().mean(), f"{rater} MAE")
        approx(info["pearson_vs_others"], stats.pearsonr(paired["score"], paired["loo"])[0], f"{rater} Pearson")
        approx(info["exact_vs_others"], np.mean(np.rint(paired["score"]) == np.rint(paired["loo"])), f"{rater} exact")
        for pos, value in info["position_means"].items():
            approx(value, mine.loc[mine["shown_position"] == int(pos), "score"].mean(), f"{rater} position {pos}")


def _kind(rater: str) -> truth.Path:
    return next(p for p in truth.PATHS if rater.endswith(p.pid))


@check("planted.rater_seconds")
def _(seen):
    for rater, info in seen.report["raters"].items():
        assert info["median_seconds"] == truth.SECONDS_PER_ITEM[_kind(rater).kind], rater


@check("planted.rater_kinds")
def _(seen):
    """The planted kinds, found by the rater models: the strict rater's bias is the most negative and
    below −1 point (planted −1.5 z, about −1.8 points on 1–7 at the middle); the careless and the
    spammer are noisier than every rater planted without a bias, and at least 1.5x the median rater's
    (the strict rater is left out of that order: its scores pile up at the scale's floor, which the
    model can read as noise: one run in four put it above the careless rater); the oracle's is below
    the median; and the models' counts are the export's."""
    df = ratings(seen)
    rm = seen.report["rater_models"]["criteria"]["helpfulness"]
    by = {_kind(r["rater"]).pid: r for r in rm["raters"]}
    assert min(by, key=lambda p: by[p]["bias"]) == "p-strict" and by["p-strict"]["bias"] < -1.0
    noisy = {"p-careless", "p-spammer"}
    unbiased = max(by[p]["noise_sd"] for p in set(by) - noisy - {"p-strict"})
    assert all(by[p]["noise_sd"] > unbiased for p in noisy), {p: by[p]["noise_sd"] for p in by}
    med = median(r["noise_sd"] for r in rm["raters"])
    assert all(by[p]["noise_sd"] >= 1.5 * med for p in noisy), {p: by[p]["noise_sd"] for p in by}
    assert by["p-oracle"]["noise_sd"] < med  # measured against the crowd's consensus, not the truth
    assert (rm["n_raters"], rm["n_answers"], rm["n_units"]) == (df["rater"].nunique(), len(df), df["unit"].nunique())
    for r in rm["raters"]:
        assert r["n"] == int((df["rater"] == r["rater"]).sum())
        assert r["agreement"] is None and r["accuracy"] is None and r["competence"] is None  # categorical models only
    # the strict rater's bias, the spammer's speed flagged in the per-rater table too
    raters = seen.report["raters"]
    assert "bias" in raters["prolific-p-strict"]["flags"] and "fast" in raters["prolific-p-spammer"]["flags"]
    settings = seen.report["rater_models"]["settings"]
    assert settings["min_answers"] == 20 and 0 < settings["bias_share"] <= 1


@check("planted.gold_accuracy")
def _(seen):
    """Per-output gold: the oracle answers exactly the gold (1.0); every other rater's share of
    ratings equal to their output's gold, from the export."""
    gold = {(r["id"], pos): v for r in seen.items for pos, v in enumerate(r["gold"]["helpfulness"])}
    df = ratings(seen)
    df["right"] = [s == gold[(i, o)] for i, o, s in zip(df["item"], df["output"], df["score"])]
    truth_share = df.groupby("rater")["right"].mean()
    assert truth_share["prolific-p-oracle"] == 1.0
    for rater, info in seen.report["raters"].items():
        approx(info["gold_accuracy"], truth_share[rater], f"{rater} gold accuracy")


@check("reference.positions")
def _(seen):
    df = ratings(seen)
    for pos, e in seen.report["position_effects"]["helpfulness"].items():
        x = df.loc[df["shown_position"] == int(pos), "score"]
        assert e["n"] == len(x)
        approx(e["mean"], x.mean(), f"position {pos} mean")
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        approx(e["ci"], [x.mean() - half, x.mean() + half], f"position {pos} t interval")


def _item_means(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby(["item", "system"])["score"].mean().unstack()


@check("reference.systems")
def _(seen):
    from statsmodels.stats.multitest import multipletests

    wide = _item_means(ratings(seen))
    sys_ = seen.report["systems"]["criteria"]["helpfulness"]
    for system, e in sys_["systems"].items():
        x = wide[system].dropna()
        approx(e["mean"], x.mean(), f"{system} mean")
        assert e["n_items"] == len(x)
        lo, hi = e["ci"]
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        approx([lo, hi], [x.mean() - half, x.mean() + half], f"{system} t interval")
    ps = []
    for pair in sys_["pairs"]:
        both = wide[[pair["a"], pair["b"]]].dropna()
        d = both[pair["a"]] - both[pair["b"]]
        assert pair["n_items"] == len(both)
        approx([pair["win_a"], pair["win_b"], pair["tie"]], [(d > 0).mean(), (d < 0).mean(), (d == 0).mean()],
               f"{pair['a']} vs {pair['b']} wins")
        approx(pair["p_value"], stats.wilcoxon(both[pair["a"]], both[pair["b"]]).pvalue, "Wilcoxon p")
        ps.append(pair["p_value"])
    holm = multipletests(ps, method="holm")[1]
    approx([p["p_holm"] for p in sys_["pairs"]], list(holm), "Holm p")
    assert sys_["ranking"] == sorted(sys_["systems"], key=lambda s: -sys_["systems"][s]["mean"])
    summary = seen.report["summary"]["ranking"][0]
    assert [r["system"] for r in summary["ranking"]] == sys_["ranking"]
    for r in summary["ranking"]:
        approx(r["mean"], sys_["systems"][r["system"]]["mean"], "summary mean")
        approx(r["ci"], sys_["systems"][r["system"]]["ci"], "summary ci")
    by_pair = {frozenset((p["a"], p["b"])): p["p_holm"] for p in sys_["pairs"]}
    for group, significant in (("significant", True), ("not_significant", False)):
        for r in summary[group]:
            p = by_pair[frozenset((r["better"], r["worse"]))]
            approx(r["p_holm"], p, "summary p_holm")
            assert (p < summary["alpha"]) is significant
            assert r["n_items"] == len(wide[[r["better"], r["worse"]]].dropna())


@check("reference.distributions")
def _(seen):
    df = ratings(seen)
    d = seen.report["distributions"]["helpfulness"]
    for system, counts in d["systems"].items():
        x = df.loc[df["system"] == system, "score"]
        assert counts == [int((x == float(v)).sum()) for v in d["values"]], system


@check("reference.heatmap")
def _(seen):
    df = ratings(seen)
    h = seen.report["heatmap"]
    mean = df.groupby(["rater", "item"])["score"].mean()
    for rater, row in zip(h["raters"], h["matrix"]):
        for item, value in zip(h["items"], row):
            expected = mean.get((rater, item))
            assert (value is None) == (expected is None), (rater, item)
            if value is not None:
                approx(value, expected, f"heatmap {rater} {item}")
    assert (h["min"], h["max"]) == (1, 7)


# ---------------------------------------------------------------------------- comparisons

def _bt_data(c: pd.DataFrame, systems: list[str]) -> list[tuple[int, int]]:
    """choix's (winner, loser) pairs, a tie as half a win each way (each decided answer counted twice)."""
    idx = {s: i for i, s in enumerate(systems)}
    data = []
    for r in c.itertuples():
        if isinstance(r.winner, str):
            loser = r.second if r.winner == r.first else r.first
            data += [(idx[r.winner], idx[loser])] * 2
        else:
            data += [(idx[r.first], idx[r.second]), (idx[r.second], idx[r.first])]
    return data


def _wald(data: list[tuple[int, int]], bt: np.ndarray) -> np.ndarray:
    """95% Wald half-widths of centred Bradley–Terry strengths: the pseudo-inverse of the Fisher
    information, each (winner, loser) of `data` weighing one half (_bt_data counts every answer twice)."""
    info = np.zeros((bt.size, bt.size))
    for w, l in data:
        p = 1 / (1 + np.exp(bt[l] - bt[w]))
        e = np.zeros(bt.size)
        e[w], e[l] = 1, -1
        info += 0.5 * p * (1 - p) * np.outer(e, e)
    return stats.norm.ppf(0.975) * np.sqrt(np.diag(np.linalg.pinv(info)))


@check("reference.bradley_terry")
def _(seen):
    import choix

    c = comparisons(seen)
    rep = seen.report["comparisons"]["preference"]
    systems = sorted(rep["systems"])
    data = _bt_data(c, systems)
    bt = choix.opt_pairwise(len(systems), data)
    bt -= bt.mean()
    for s, value, half in zip(systems, bt, _wald(data, bt)):
        e = rep["systems"][s]
        approx(e["bt"], value, f"{s} Bradley–Terry", abs=1e-5)
        approx(e["bt_ci"], [value - half, value + half], f"{s} Wald interval", abs=1e-4)
        assert e["n"] == int(((c["first"] == s) | (c["second"] == s)).sum())
    for a, row in rep["win_rates"].items():
        for b, rate in row.items():
            sub = c[((c["first"] == a) & (c["second"] == b)) | ((c["first"] == b) & (c["second"] == a))]
            ties = (~sub["winner"].isin([a, b])).sum()
            approx(rate, ((sub["winner"] == a).sum() + ties / 2) / len(sub), f"win rate {a} over {b}")
    assert (rep["n_answers"], rep["n_raters"], rep["n_items"]) == (len(c), c["rater"].nunique(), c["item"].nunique())
    # planted: the best system (+0.7 z) above the worst (−0.7 z), whichever pairs the engine showed
    assert rep["systems"]["gpt-4o"]["bt"] > rep["systems"]["mistral-7b-instruct"]["bt"]


@check("reference.first_wins")
def _(seen):
    """The share of decided answers won by the response shown first, and its two-sided binomial p.
    Planted: the first picker alone always picks the first; without them the share is near 1/2."""
    c = comparisons(seen)
    decided = c[c["winner"].notna()]
    first = int((decided["winner"] == decided["first"]).sum())
    pos = seen.report["comparisons"]["preference"]["position"]
    assert pos["n"] == len(decided)
    approx(pos["first_wins"], first / len(decided), "first wins")
    approx(pos["p"], stats.binomtest(first, len(decided), 0.5).pvalue, "binomial p")
    picker = decided[decided["rater"] == "prolific-p-first-picker"]
    assert (picker["winner"] == picker["first"]).all() and len(picker) == truth.N_ITEMS
    rest = decided[decided["rater"] != "prolific-p-first-picker"]
    assert abs((rest["winner"] == rest["first"]).mean() - 0.5) < 0.25  # about 60 answers: 4 SD


@check("reference.rerate_and_more_raters")
def _(seen):
    df = ratings(seen)
    g = df.groupby(["item", "output"])["score"]
    # of the outputs with a consensus (enough raters: reference.consensus), the most disputed
    sd = g.std(ddof=1)[g.size() >= seen.study.consensus_min_raters]
    rerate = seen.report["summary"]["next"]["rerate"]
    for r in rerate:
        approx(r["sd"], sd[(r["item"], r["output"])], f"rerate sd {r['item']}#{r['output']}")
        approx(r["spread"], r["sd"] / 6, "sd as a share of the 1–7 scale")
    # (equal SDs computed in another order differ in the last digit: compared within EXACT)
    shown = [r["sd"] for r in rerate]
    assert all(a >= b - 1e-9 for a, b in zip(shown, shown[1:])), f"most disputed first: {shown}"
    approx(shown, sorted(sd.dropna(), reverse=True)[:len(shown)], "the most disputed outputs")
    more = seen.report["summary"]["next"]["more_raters"]
    icc = seen.report["agreement"]["helpfulness"]["icc1"]["value"]
    needed = int(np.ceil(0.7 * (1 - icc) / (icc * (1 - 0.7))))  # Spearman–Brown
    assert more["per_criterion"]["helpfulness"] == more["needed"] == needed
    assert more["raters_per_item"] == truth.RATERS_PER_ITEM and more["more"] == max(0, needed - truth.RATERS_PER_ITEM)


@check("reference.by_answer")
def _(seen):
    """Planted: every participant who reached the questionnaire gave the same answers (driver.PRE,
    driver.POST): each group holds everyone who answered, and its figures are the whole study's."""
    from tests.planted.driver import POST, PRE

    section = seen.report["sections"]["By participants' answers"]
    answered_pre = [p for p in truth.PATHS if p.steps not in ("declined", "consent_only")]
    groups = {("pre." + k): (str(v), len(answered_pre)) for k, v in PRE.items() if k != "age"}
    groups.update({("post." + k): (str(v), len(truth.FINISHERS)) for k, v in POST.items() if v != ""})
    df = ratings(seen)
    for key, (answer, n_raters) in groups.items():
        g = section[key][answer]
        raters = df["rater"].unique() if key.startswith("pre.") else [
            r for r in df["rater"].unique() if _kind(r).steps in ("finished", "break")]
        sub = df[df["rater"].isin(raters)]
        assert g["n_raters"] == n_raters, key
        assert g["n_ratings"] == len(sub), key
        import krippendorff
        alpha = g["criteria"]["helpfulness"]["alpha"]
        approx(alpha["value"], krippendorff.alpha(
            reliability_data=matrix(sub).T.to_numpy(), level_of_measurement="interval"), f"{key} alpha")
        assert alpha["ci"] is None and alpha["bootstrap_ci"][0] < alpha["value"] < alpha["bootstrap_ci"][1]
        for system, mean in g["criteria"]["helpfulness"]["system_means"].items():
            approx(mean, _item_means(sub)[system].mean(), f"{key} {system} mean")


# ---------------------------------------------------------------------------- judges

def _good(seen) -> dict:
    return seen.runs[truth.JUDGES[0].name]


@check("planted.judge_run")
def _(seen):
    """The good judge: every pair of every item asked in both orders, all scored; the tokens are what
    the loopback server counted and the cost is those tokens at the judge's prices."""
    j, run, served = truth.JUDGES[0], _good(seen), seen.served[truth.JUDGES[0].name]
    n_pairs = truth.N_ITEMS * 6  # four outputs: six pairs per item
    assert run["status"] == "done"
    assert (run["n_outputs"], run["n_expected"], run["n_scored"]) == (4 * truth.N_ITEMS, n_pairs, n_pairs)
    assert run["n_unparsed"] == run["n_refusal"] == run["n_error"] == run["n_truncated"] == run["n_rate_limited"] == 0
    assert served.completion_requests == 2 * n_pairs and served.paths == {"/v1/chat/completions": 2 * n_pairs}
    # and, before the calls, the workers' check of the endpoint and key (the models route; once per process)
    assert served.requests > served.completion_requests and served.statuses == {"200": served.requests}
    assert (run["tokens_in"], run["tokens_out"]) == (served.prompt_tokens, served.completion_tokens)
    approx(run["cost_usd"], (served.prompt_tokens * j.price_in_per_m + served.completion_tokens * j.price_out_per_m)
           / 1e6, "cost")
    assert run["cost_cap_usd"] is None  # none was set
    for r in seen.runs.values():  # each judge's own endpoint and prompts: nothing of another run taken over
        assert r["n_reused"] == 0 and r["reused_from"] is None, r
    p = run["progress"]
    assert (p["expected"], p["done"], p["scored"], p["error"], p["unparsed"], p["refusal"], p["truncated"]) == (
        n_pairs, n_pairs, n_pairs, 0, 0, 0, 0)
    assert (p["run_id"], p["tokens_in"], p["tokens_out"], p["percent"]) == (
        run["id"], run["tokens_in"], run["tokens_out"], 100.0)
    approx(p["cost_usd"], run["cost_usd"], "progress cost")
    assert p["eta_s"] is None and p["elapsed_s"] > 0  # nothing left to wait for
    approx(p["rate"], p["done"] / p["elapsed_s"], "judgements per second", rel=1e-3)


@check("planted.failed_run_state")
def _(seen):
    """The broken judge's endpoint refused every call: the run failed, and says so."""
    run = seen.runs[truth.JUDGES[1].name]
    assert run["n_scored"] == 0 and run["n_error"] == run["n_expected"] > 0
    assert run["status"] == "failed", f"a run in which every call failed is {run['status']!r}"


@check("planted.estimate")
def _(seen):
    j, est, served = truth.JUDGES[0], _good(seen)["estimate"], seen.served[truth.JUDGES[0].name]
    assert est["calls"] == served.completion_requests  # the run asked exactly what the estimate counted
    assert est["items"] == est["sampled_items"] == truth.N_ITEMS
    approx(est["input_cost_usd"], est["input_tokens"] * j.price_in_per_m / 1e6, "input cost")
    # the approximation (~4 characters per token) against the server's count of words
    assert 0.5 < est["input_tokens"] / served.prompt_tokens < 3
    assert est["time_s"] is None and any("no rpm/tpm limit" in n for n in est["notes"])  # absent, with its reason


@check("planted.estimate_output_bound")
def _(seen):
    """The estimate's "at most" holds against what the requests allowed the provider to bill."""
    j, est, served = truth.JUDGES[0], _good(seen)["estimate"], seen.served[truth.JUDGES[0].name]
    assert est["max_output_tokens"] >= served.output_caps > 0
    approx(est["max_cost_usd"], (est["input_tokens"] * j.price_in_per_m + est["max_output_tokens"] * j.price_out_per_m)
           / 1e6, "most cost")
    assert est["max_cost_usd"] >= _good(seen)["cost_usd"]


@check("same.estimate_html_as_json")
def _(seen):
    est = _good(seen)["estimate"]
    text = re.sub(r"\s+", " ", seen.estimate_html)
    for shown in (f"calls: {est['calls']}", f"input tokens: {est['input_tokens']}",
                  f"output tokens: at most {est['max_output_tokens']}", f"cost: at most ${est['max_cost_usd']:.4f}",
                  f"(input ${est['input_cost_usd']:.4f})"):
        assert shown in text, shown


@check("planted.judge_answers")
def _(seen):
    """The report's judge answers are the runs' counts; the failed run is left out, and says why."""
    section = seen.report["sections"]["Judges vs humans"]
    failed = seen.runs[truth.JUDGES[1].name]
    assert section["left_out"] == [{"id": failed["id"], "judge": truth.JUDGES[1].name, "status": "failed",
                                    "reason": failed["error"]}]
    assert failed["error"].startswith("no call succeeded")
    [shown], run = section["runs"], _good(seen)
    a = shown["answers"]
    assert shown["judge"] == truth.JUDGES[0].name and shown["id"] == run["id"]
    assert (a["expected"], a["scored"], a["unparsed"], a["refusal"], a["error"]) == (
        run["n_expected"], run["n_scored"], run["n_unparsed"], run["n_refusal"], run["n_error"])
    assert len(a["by_criterion"]) == 6 and all(sum(v.values()) == truth.N_ITEMS for v in a["by_criterion"].values())


@check("reference.judge_pairwise")
def _(seen):
    """The judge's verdicts (the study's judge scores download) against the report's judge section:
    Bradley–Terry strengths by choix, win rates, and the agreement with the humans' answers on the
    same pairs; against the planted truth (noise 0.2 z, no bias): the true best and worst systems in
    their places, every pair asked in both orders, no order effect."""
    import choix
    from sklearn.metrics import cohen_kappa_score

    t = next(r for r in seen.report["sections"]["Trusting the judges"]["pairwise"]
             if r["name"].startswith(truth.JUDGES[0].name))
    v = seen.judge_verdicts
    assert len(v) == truth.N_ITEMS * 6 == t["n_both"]
    decided = v[v["winner"].notna()]
    assert t["position"]["n"] == 2 * len(decided)  # both orders of each decided pair
    systems = sorted(t["strengths"]["systems"])
    data = _bt_data(v, systems)
    bt = choix.opt_pairwise(len(systems), data)
    bt -= bt.mean()
    for s, value, half in zip(systems, bt, _wald(data, bt)):
        e = t["strengths"]["systems"][s]
        approx(e["bt"], value, f"judge {s} BT", abs=1e-5)
        approx(e["bt_ci"], [value - half, value + half], f"judge {s} Wald interval", abs=1e-4)
        assert e["n"] == int(((v["first"] == s) | (v["second"] == s)).sum())
    for a, row in t["win_rates"].items():
        for b, rate in row.items():
            sub = v[((v["first"] == a) & (v["second"] == b)) | ((v["first"] == b) & (v["second"] == a))]
            ties = (~sub["winner"].isin([a, b])).sum()
            approx(rate, ((sub["winner"] == a).sum() + ties / 2) / len(sub), f"judge win rate {a} over {b}")
    strengths = t["strengths"]["systems"]
    assert max(strengths, key=lambda s: strengths[s]["bt"]) == "gpt-4o"
    assert min(strengths, key=lambda s: strengths[s]["bt"]) == "mistral-7b-instruct"
    assert t["position"]["p"] > 0.05 and abs(t["position"]["first_wins"] - 0.5) < 0.15 and t["flip_rate"] <= 0.2
    humans = comparisons(seen)
    verdict = {(r.item, frozenset((r.first, r.second))): r.winner if isinstance(r.winner, str) else "tie"
               for r in v.itertuples()}
    pairs = [(r.winner if isinstance(r.winner, str) else "tie", verdict[(r.item, frozenset((r.first, r.second)))])
             for r in humans.itertuples()]
    assert t["humans"]["n_answers"] == len(humans) and t["humans"]["n"] == len(pairs)
    approx(t["humans"]["agreement"], np.mean([h == j for h, j in pairs]), "judge-human agreement")
    # Cohen's kappa over three outcomes: the pair's first-named system (by name), a tie, the second
    named = [min(r.first, r.second) for r in humans.itertuples()]
    side = [[("tie" if w == "tie" else w == first) for w in pair] for pair, first in zip(pairs, named)]
    approx(t["humans"]["kappa"], cohen_kappa_score([str(h) for h, _ in side], [str(j) for _, j in side]), "kappa")
    assert t["humans"]["human_position"] == seen.report["comparisons"]["preference"]["position"]


# ---------------------------------------------------------------------------- CSV and paper kit

def _json_value(report: dict, section: str, criterion: str, subject: str, statistic: str):
    """The report JSON's figure for one CSV row (None: not a single JSON number)."""
    if section == "agreement":
        a = report["agreement"][criterion]
        if statistic in a["details"]:
            return a["details"][statistic]
        if "." in statistic:
            group, key = statistic.split(".", 1)
            return a["details"].get(group, {}).get(key)
        return {"krippendorff_alpha_interval": a["alpha"]["value"], "icc1": a["icc1"]["value"]}.get(statistic)
    if section == "raters":
        return report["raters"][subject].get(statistic)
    if section == "position_effects":
        return report["position_effects"][criterion][subject.removeprefix("position ")]["mean"]
    if section == "systems" and statistic == "mean":
        return report["systems"]["criteria"][criterion]["systems"][subject]["mean"]
    if section == "summary" and statistic in ("alpha", "icc1"):
        return report["summary"]["reliability"][0][statistic]["value"]
    return None


@check("same.csv_as_json")
def _(seen):
    """Every numeric row of the report CSV equals the JSON figure it repeats, where it repeats one."""
    rows = list(csv.DictReader(io.StringIO(seen.report_csv)))
    compared = 0
    for r in rows:
        try:
            value = float(r["value"])
        except ValueError:
            continue
        expected = _json_value(seen.report, r["section"], r["criterion"], r["subject"], r["statistic"])
        if isinstance(expected, (int, float)) and not isinstance(expected, bool):
            approx(value, expected, f"CSV {r['section']}/{r['statistic']} {r['subject']}")
            compared += 1
    assert compared >= 40, compared
    blank = [r for r in rows if r["value"] == "" and r["statistic"] != "flags"]
    assert all(r["reason"] for r in blank), "a figure left empty without its reason"


def _md_table(text: str) -> list[dict]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [h.strip() for h in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]


@check("same.paper_as_json")
def _(seen):
    r = seen.report
    agree = _md_table(seen.paper["tables/agreement.md"].decode())[0]
    a = r["agreement"]["helpfulness"]
    assert (int(agree["Units"]), int(agree["Raters"]), int(agree["Ratings"])) == (
        a["n_units"], a["n_raters"], a["n_ratings"])
    assert float(agree["α"]) == round(a["alpha"]["value"], 3) and float(agree["ICC(1)"]) == round(a["icc1"]["value"], 3)
    for row in _md_table(seen.paper["tables/raters.md"].decode()):
        info = r["raters"][row["Rater"]]
        assert int(row["Ratings"]) == info["n_ratings"]
        for col, key in (("Bias", "bias"), ("r vs others", "pearson_vs_others"), ("MAE vs others", "mae_vs_others")):
            assert float(row[col]) == round(info[key], 3), (row["Rater"], col)
    for row in _md_table(seen.paper["tables/systems.md"].decode()):
        e = r["systems"]["criteria"]["helpfulness"]["systems"][row["System"]]
        assert float(row["Mean"]) == round(e["mean"], 3) and int(row["Items"]) == e["n_items"]
    positions = r["position_effects"]["helpfulness"]
    shown = {row["Position shown"]: row for row in _md_table(seen.paper["tables/positions.md"].decode())}
    assert set(shown) == set(positions), f"positions shown {sorted(shown)}, the report's {sorted(positions)}"
    for pos, row in shown.items():
        assert float(row["Mean"]) == round(positions[pos]["mean"], 3) and int(row["Ratings"]) == positions[pos]["n"]
    for row in _md_table(seen.paper["tables/comparisons.md"].decode()):
        e = r["comparisons"][row["Question"]]["systems"][row["System"]]
        assert float(row["BT log-strength"]) == round(e["bt"], 3) and float(row["Judgements"]) == e["n"]


# ---------------------------------------------------------------------------- payments and progress

def _sheet_rows(seen) -> dict[str, dict]:
    return {r["participant_id"]: r for r in csv.DictReader(io.StringIO(seen.payments))}


def _served_checks(seen, pid: str) -> int:
    """Attention checks the engine handed this participant (its own choice of when): from the export."""
    df = pd.read_csv(io.StringIO(seen.export_csv), dtype={"item": str})
    mine = df[(df["rater"] == f"prolific-{pid}") & df["item"].str.startswith("check-")]
    return mine["item"].nunique()


def planted_row(seen, p: truth.Path) -> dict:
    """What the payment sheet must say of one participant, from the planted path alone (and the
    number of attention checks the engine chose to hand out)."""
    from annotation.payments import RULES
    training = truth_training_answers(p)
    checks = _served_checks(seen, p.pid)
    regular = 0 if p.kind is None else (truth.N_ITEMS if p.rated is None else p.rated)
    secs = [10.0] * len(training) + [float(truth.SECONDS_PER_ITEM[p.kind])] * (regular + checks) if p.kind else \
        [10.0] * len(training)
    payable = regular if p.decision == "approve" else 0
    pay = {"approve": f"{float(truth.PAY_PER_ITEM) * payable:.2f}", "screened_out": truth.SCREENED_OUT_PAY}
    # a training retry replaces the first attempt's answers (their time is still counted)
    stored = len(secs) - (2 if len(training) == 4 else 0)
    assert RULES[p.rule][0] == p.decision, p
    return {"items_submitted": str(stored), "attention_checks": str(checks),
            "phase_reached": p.reached, "rule": RULES[p.rule][1],
            "attention_failed": str(checks if p.kind == "spammer" else 0),
            "decision": p.decision, "payable_items": str(payable),
            "time_on_task_s": f"{sum(secs):.1f}", "median_s_per_item": f"{median(secs):.1f}" if secs else "",
            "pay_per_item": truth.PAY_PER_ITEM, "payment": pay.get(p.decision, "0.00"), "bonus": "",
            "training": {0: "", 2: "passed 2/2", 4: "failed 0/2, then 0/2"}[len(training)]}


@check("planted.payments")
def _(seen):
    rows = _sheet_rows(seen)
    assert set(rows) == {p.pid for p in truth.PATHS}
    assert _served_checks(seen, "p-spammer") == truth.REJECT_AFTER_FAILED  # the policy's number was reached
    for p in truth.PATHS:
        want = planted_row(seen, p)
        got = {k: rows[p.pid][k] for k in want}
        assert got == want, (p.pid, {k: (got[k], want[k]) for k in want if got[k] != want[k]})


@check("planted.retried_training_time")
def _(seen):
    """The participant who failed training answered each training item twice, 10 s each time."""
    p = next(p for p in truth.PATHS if p.steps == "failed_training")
    assert _sheet_rows(seen)[p.pid]["time_on_task_s"] == planted_row(seen, p)["time_on_task_s"] == "40.0"


@check("planted.consent_only_payment")
def _(seen):
    """Opened the consent page, agreed, did nothing more: nothing to approve or pay."""
    row = _sheet_rows(seen)["p-consent-only"]
    assert row["payable_items"] == "0" and row["payment"] == "0.00"
    assert row["decision"] not in ("approve", "reject"), f"consent only: {row['decision']} ({row['reason']})"


def _regular_submits(p: truth.Path) -> int:
    return 0 if p.kind is None else (truth.N_ITEMS if p.rated is None else p.rated)


@check("planted.progress")
def _(seen):
    g = seen.progress
    per_item = [sum(1 for p in truth.PATHS if p.kind and (p.rated is None or k < p.rated))
                for k in range(truth.N_ITEMS)]
    submitted = sum(_regular_submits(p) for p in truth.PATHS)
    assert (g["items"], g["slots"], g["submitted"], g["active"]) == (
        truth.N_ITEMS, truth.N_ITEMS * truth.RATERS_PER_ITEM, submitted, 0)
    # the participant who left rated three items: only those have every slot filled
    assert g["items_complete"] == sum(n == truth.RATERS_PER_ITEM for n in per_item) == 3
    approx(g["percent"], 100 * submitted / g["slots"], "percent", abs=0.01)


def _cell(html: str, rater: str) -> str:
    return re.sub(r"\s+", " ", html.split(f'data-rater="{rater}"')[1].split("</tr>")[0])


@check("planted.progress_page")
def _(seen):
    html = re.sub(r"\s+", " ", seen.progress_html)
    g = seen.progress
    done = re.search(r"(\d+) of (\d+) ratings done \(([0-9.]+)%\)", html)
    assert (int(done.group(1)), int(done.group(2))) == (g["submitted"], g["slots"])
    approx(float(done.group(3)), 100 * g["submitted"] / g["slots"], "percent done", abs=0.051)
    assert f"{g['items_complete']} of {g['items']} items complete" in html
    secs = [truth.SECONDS_PER_ITEM[p.kind] for p in truth.PATHS if p.kind for _ in range(_regular_submits(p))]
    assert f'<div class="v">{median(secs):.1f} s</div>' in html
    checks = sum(_served_checks(seen, p.pid) for p in truth.PATHS)
    failed = _served_checks(seen, "p-spammer")
    assert f"{checks - failed} / {checks}</div>" in html
    assert "<div class=\"v\" data-flags>0</div>" in html  # nobody flagged an item
    last_hour = sum(int(r["items_submitted"]) for r in _sheet_rows(seen).values())  # training and checks too
    assert f"<div class=\"v\" data-last-hour>{last_hour}</div>" in html
    sheet = _sheet_rows(seen)
    for p in truth.PATHS:
        cell = _cell(html, f"prolific-{p.pid}")
        nums = re.findall(r'<td class="num[^"]*">([^<]*)</td>', cell)
        assert nums[0] == str(_regular_submits(p)) and nums[1] == "0", (p.pid, nums)  # done, in progress
        assert nums[2] == sheet[p.pid]["items_submitted"], (p.pid, nums)  # in the last hour: everything
        n_checks = _served_checks(seen, p.pid)
        passed = n_checks - (n_checks if p.kind == "spammer" else 0)
        if p.kind:
            assert f"{float(truth.SECONDS_PER_ITEM[p.kind]):.1f} s" in nums[3], (p.pid, nums)
        if n_checks:
            assert nums[4] == f"{passed} / {n_checks}", (p.pid, nums)
        training = {"": "not started", "passed 2/2": "passed</span> 2 / 2",
                    "failed 0/2, then 0/2": "failed"}[planted_row(seen, p)["training"]]
        assert training in cell, (p.pid, cell)
        assert f'data-decision="{sheet[p.pid]["decision"]}"' in cell  # the sheet's decision, checked there


@check("missing.progress_page")
def _(seen):
    """A participant with no item has no median time: a dash, never 0."""
    html = re.sub(r"\s+", " ", seen.progress_html)
    for p in truth.PATHS:
        if p.kind is None:
            nums = re.findall(r'<td class="num[^"]*">([^<]*)</td>', _cell(html, f"prolific-{p.pid}"))
            assert nums[3] in ("–", "—"), (p.pid, nums)


# ---------------------------------------------------------------------------- plan page

def _plan_text(seen) -> str:
    return re.sub(r"\s+", " ", seen.plan_html)


@check("reference.plan_pilot")
def _(seen):
    html = _plan_text(seen)
    df = ratings(seen)
    assert f"helpfulness: {len(df)} ratings of {df['item'].nunique()} items by {df['rater'].nunique()} raters" in html
    # σ and ρ go together (issue 59: the plan's ICC is the report's): the report's ICC1 (pingouin's one-way
    # ICC(1) as in reference.icc1_oneway), which counts the systems' differences as true-score variance, with
    # the SD of single ratings over every system
    sd = df["score"].std(ddof=1)
    assert f"<td>σ</td><td>{sd:.3f}</td>" in html, f"SD of single ratings {sd:.3f}"
    rho = _icc1_first_k(df)[0]["ICC"]
    approx(rho, seen.report["agreement"]["helpfulness"]["icc1"]["value"], "the plan's ρ is the report's ICC1")
    assert f"<td>ρ</td><td>{rho:.3f}</td>" in html, f"the report's ICC1 {rho:.3f}"
    wide = _item_means(df)
    c_obs = np.mean([stats.pearsonr(wide[a], wide[b])[0] for a, b in itertools.combinations(wide.columns, 2)])
    k = len(df) / df["unit"].nunique()
    assert f"{c_obs:.3f} observed" in html
    assert f"<td>c</td><td>{min(0.99, c_obs / (k * rho / (1 + (k - 1) * rho))):.3f}</td>" in html
    c = comparisons(seen)
    ties = c["winner"].isna().mean()
    assert f"{len(c)} pairwise judgements, tie share {ties:.3f}" in html
    # the scores plan at the form's values: the paired t-test's variance, exact noncentral-t power (scipy)
    R, delta, power, alpha = 3, 0.5, 0.8, 0.05
    corr = float(re.search(r'name="corr" value="([0-9.]+)"', html).group(1))
    sigma = float(re.search(r'name="sd" value="([0-9.]+)"', html).group(1))
    rho_in = float(re.search(r'name="icc" value="([0-9.]+)"', html).group(1))
    for r in range(1, 7):
        v = 2 * sigma ** 2 * (rho_in * (1 - corr) + (1 - rho_in) / r)
        n_normal = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) ** 2 * v / delta ** 2
        def t_power(n: int) -> float:
            crit, nc = stats.t.ppf(1 - alpha / 2, n - 1), delta / np.sqrt(v / n)
            return stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)

        n = next(n for n in range(2, 100_000) if t_power(n) >= power)
        row = (f'<td class="num">{r}</td> <td class="num">{n}</td><td class="num">{n_normal:.1f}</td> '
               f'<td class="num">{t_power(n):.3f}</td><td class="num">{r * n * 2}</td>')
        assert row in html, f"plan row R={r}: {n} items, normal {n_normal:.1f}, power {t_power(n):.3f}"
    # the comparisons plan: the exact two-sided binomial test (scipy) of the decided judgements
    p = float(re.search(r"win probability of ([0-9.]+) from 0.5", html).group(1))
    decided = int(re.search(r"<strong>(\d+) decided judgements", html).group(1))

    def binomial_power(n: int) -> float:
        k = np.arange(n + 1)  # the exact two-sided test of 1/2 (symmetric): p = 2 min(P(X <= k), P(X >= k))
        reject = np.minimum(1, 2 * np.minimum(stats.binom.cdf(k, n, 0.5), stats.binom.sf(k - 1, n, 0.5))) <= alpha
        return float(stats.binom.pmf(k[reject], n, p).sum())

    enough = [binomial_power(n) >= power for n in range(2, decided + 22)]
    first = next(n for n in range(2, decided + 1) if all(enough[n - 2:n + 19]))
    assert decided == first, (decided, first)
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    normal = ((z_a * 0.5 + z_b * np.sqrt(p * (1 - p))) / (p - 0.5)) ** 2
    assert f"(normal approximation {normal:.1f}; power {binomial_power(decided):.3f})" in html
    # the pilot's win probability: of the pairs with 10 or more decided answers, the one closest to an even
    # split (the most decided first), as a probability above 1/2
    won = c[c["winner"].notna()]
    rates = {}
    for pair, sub in won.assign(pair=[frozenset(x) for x in zip(won["first"], won["second"])]).groupby("pair"):
        if len(sub) >= 10:
            a_, b_ = sorted(pair)
            rates[(a_, b_)] = ((sub["winner"] == a_).mean(), len(sub))
    if not rates:
        assert "no pair of systems has 10 decided judgements yet" in html
        return
    closest = min(sorted(rates), key=lambda k: (abs(rates[k][0] - 0.5), -rates[k][1]))  # first by name on a tie
    rate = max(rates[closest][0], 1 - rates[closest][0])
    assert f"closest pair {closest[0]} vs {closest[1]}, win rate {rate:.3f}" in html
    if rate == 0.5:  # no win probability to plan for: said, and the form's default is used
        assert "no pilot estimate: the closest pair splits evenly" in html and 'name="win_prob" value="0.6"' in html
    per_pair = int(re.search(r"<strong>(\d+) judgements per pair", html).group(1))
    t_in = float(re.search(r'name="ties" value="([0-9.]+)"', html).group(1))
    assert per_pair == int(np.ceil(decided / (1 - t_in) - 1e-9))


@check("planted.plan_raters")
def _(seen):
    """The plan starts from the pilot's raters per output, not from a default nor its raters per item:
    planted, RATERS_PER_ITEM raters each shown a pair of an item's four outputs (half of them), which the
    ratings per output the pilot got (146 of 40 outputs, 3.65) round to as well."""
    df = ratings(seen)
    planted = truth.RATERS_PER_ITEM * 2 / 4
    assert planted == round(len(df) / df["unit"].nunique()) == 4
    value = re.search(r'name="raters" value="([0-9.]+)"', _plan_text(seen)).group(1)
    assert float(value) == planted, f"raters per output: the form says {value}, the pilot has {planted}"


def judge_verdicts(seen) -> pd.DataFrame:
    """The good judge's verdicts from the study's judge scores download, one per pair of each item (its
    two orders combined): item, first and second system of the pair, winner (None: a tie)."""
    df = seen.judge_scores
    df = df[df["judge"] == truth.JUDGES[0].name]
    system = {(r["id"], pos): o["system"] for r in seen.items for pos, o in enumerate(r["outputs"])}
    rows = []
    for r in df.itertuples():
        a, b = (int(x) for x in r.criterion.rsplit(":", 1)[1].split("-"))
        value = str(r.value).strip('"')
        rows.append({"item": r.item, "first": system[(r.item, a)], "second": system[(r.item, b)],
                     "winner": None if value == "tie" else system[(r.item, int(value))]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- report page

def _shown(x: float, digits: int) -> str:
    """`x` as the page rounds it (Django's floatformat: half up, on the decimal value, never "-0.00")."""
    from decimal import ROUND_HALF_UP, Decimal

    shown = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return str(abs(shown) if shown == 0 else shown)


@check("same.html_as_json")
def _(seen):
    """The report page's tables show the JSON's figures (checked there), at the page's digits."""
    html = re.sub(r"\s+", " ", re.sub(r"<svg.*?</svg>", "", seen.report_html, flags=re.S))
    r = seen.report
    a = r["agreement"]["helpfulness"]
    alpha, icc = a["alpha"], a["icc1"]
    for shown in (f'<td class="num">{a["n_units"]}</td><td class="num">{a["n_raters"]}</td>'
                  f'<td class="num">{a["n_ratings"]}</td>',
                  f'{_shown(alpha["value"], 3)} <small class="muted">[{_shown(alpha["bootstrap_ci"][0], 3)}, '
                  f'{_shown(alpha["bootstrap_ci"][1], 3)}]</small>',
                  f'{_shown(icc["value"], 3)} <small class="muted">[{_shown(icc["bootstrap_ci"][0], 3)}, '
                  f'{_shown(icc["bootstrap_ci"][1], 3)}]</small> <small class="muted">k={icc["k"]}, '
                  f'{icc["n_units"]} units</small>'):
        assert shown in html, shown
    for system, e in r["systems"]["criteria"]["helpfulness"]["systems"].items():
        shown = (f'<td>{system}</td><td class="num">{_shown(e["mean"], 3)}</td> <td>[{_shown(e["ci"][0], 3)}, '
                 f'{_shown(e["ci"][1], 3)}]</td><td class="num">{e["n_items"]}</td>')
        assert shown in html, shown
    for system, e in r["comparisons"]["preference"]["systems"].items():
        shown = (f'<td>{system}</td><td class="num">{_shown(e["bt"], 3)}</td> <td>[{_shown(e["bt_ci"][0], 2)}, '
                 f'{_shown(e["bt_ci"][1], 2)}]</td><td class="num">{int(e["n"])}</td>')
        assert shown in html, shown
    for rater, e in r["raters"].items():
        shown = (f'<td>{rater}</td><td class="num">{e["n_items"]}</td><td class="num">{e["n_ratings"]}</td> '
                 f'<td>{_shown(e["bias"], 3)}</td> <td>{_shown(e["pearson_vs_others"], 3)}</td> '
                 f'<td>{_shown(e["gold_accuracy"], 3)}</td> <td class="num">{_shown(e["median_seconds"], 1)}</td>')
        assert shown in html, shown
    for row in r["consensus"]["rows"]:
        h = row["criteria"]["helpfulness"]
        shown = (f'<td class="nowrap">{row["item"]}</td><td class="num">{row["output"]}</td><td>{row["system"]}</td> '
                 f'<td class="num">{_shown(h["consensus"], 2)} <small class="muted">±'
                 f'{_shown(h["ci"][1] - h["consensus"], 2)}</small></td>')
        assert shown in html, shown


@check("reference.rater_model")
def _(seen):
    """The rater-effects model (score = output level + rater bias + the rater's own noise, REML) against
    statsmodels' REML mixed model with one noise for all, which weighs the noisy raters as much as the
    others: within 0.2 for the bias SD, 0.15 for the noise SD and 0.35 for the bias of each rater whose
    noise is not 1.5x the median (largest gaps over four runs: 0.13, 0.06, 0.22); from its own estimates and the
    export, each output's level is the noise-weighted mean of the scores less the raters' biases, so the
    shifts from the plain means are exact; the distance is each rater's mean |score − plain mean|."""
    import warnings

    import statsmodels.formula.api as smf

    df = ratings(seen)
    rm = seen.report["rater_models"]["criteria"]["helpfulness"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("score ~ 0 + C(unit)", df, groups=df["rater"]).fit(reml=True)
    approx(rm["bias_sd"], float(np.sqrt(fit.cov_re.iloc[0, 0])), "bias SD", abs=0.2)
    approx(rm["noise_sd"], float(np.sqrt(fit.scale)), "noise SD", abs=0.15)
    typical = median(r["noise_sd"] for r in rm["raters"])
    blup = {rater: float(v.iloc[0]) for rater, v in fit.random_effects.items()}
    bias = {r["rater"]: r["bias"] for r in rm["raters"]}
    weight = {r["rater"]: 1 / r["noise_sd"] ** 2 for r in rm["raters"]}
    plain = df.groupby("unit")["score"].transform("mean")
    for r in rm["raters"]:
        if r["noise_sd"] < 1.5 * typical:
            approx(r["bias"], blup[r["rater"]], f"{r['rater']} bias", abs=0.35)
        approx(r["distance"], float((df["score"] - plain)[df["rater"] == r["rater"]].abs().mean()),
               f"{r['rater']} distance")
    w = df["rater"].map(weight)
    level = ((df["score"] - df["rater"].map(bias)) * w).groupby(df["unit"]).sum() / w.groupby(df["unit"]).sum()
    shift = (level - df.groupby("unit")["score"].mean()).abs()
    approx(rm["max_shift"], float(shift.max()), "largest shift", rel=1e-6)
    assert rm["differs_from_majority"] == int((shift >= 0.5).sum())
    approx(rm["differs_share"], rm["differs_from_majority"] / rm["n_units"], "share moved")
