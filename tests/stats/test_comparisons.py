"""Comparative judgements: Bradley–Terry against choix, Kendall's W against pingouin and SciPy's
Friedman test, and the `comparisons` command's files."""

from __future__ import annotations

import json

import choix
import numpy as np
import pandas as pd
import pingouin
import pytest
from scipy.stats import friedmanchisquare

from annotation.stats import comparisons as cmp
from tests.offline_command import run_in_process, run_offline

SYSTEMS = ["alpha", "beta", "gamma", "delta"]


def _simulated_pairs(seed: int, n: int = 400, ties: float = 0.1):
    rng = np.random.default_rng(seed)
    strength = np.array([1.0, 0.4, -0.3, -1.1])
    rows = []
    for _ in range(n):
        i, j = rng.choice(4, 2, replace=False)
        u = rng.random()
        p = 1 / (1 + np.exp(strength[j] - strength[i]))
        winner = "tie" if u < ties else (SYSTEMS[i] if rng.random() < p else SYSTEMS[j])
        rows.append((SYSTEMS[i], SYSTEMS[j], winner))
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_bradley_terry_matches_choix_with_ties_as_half_wins(seed):
    rows = _simulated_pairs(seed)
    ours = cmp.bradley_terry(w for a, b, win in rows for w in cmp.pairs_from_pairwise(a, b, win))
    # choix has no weights: count every win twice and every tie as one win each way.
    index = {s: k for k, s in enumerate(SYSTEMS)}
    data = []
    for a, b, win in rows:
        if win == "tie":
            data += [(index[a], index[b]), (index[b], index[a])]
        else:
            loser = b if win == a else a
            data += [(index[win], index[loser])] * 2
    reference = choix.opt_pairwise(4, data, alpha=0, tol=1e-12)
    reference -= reference.mean()
    got = np.array([ours["systems"][s]["bt"] for s in SYSTEMS])
    np.testing.assert_allclose(got, reference, atol=1e-6)
    assert got.sum() == pytest.approx(0, abs=1e-9)
    for s in SYSTEMS:
        low, high = ours["systems"][s]["bt_ci"]
        assert low < ours["systems"][s]["bt"] < high
    assert got[0] > got[1] > got[2] > got[3]  # the planted order comes back


def test_bradley_terry_interval_is_the_fisher_information_of_two_systems():
    """Two systems, a beats b 30 of 40 times: θ = ±log(3)/2 and var(θa − θb) = 1/(n p (1 − p))."""
    wins = [("a", "b", 1.0)] * 30 + [("b", "a", 1.0)] * 10
    bt = cmp.bradley_terry(wins)["systems"]
    assert bt["a"]["bt"] == pytest.approx(np.log(3) / 2)
    se_diff = np.sqrt(1 / (40 * 0.75 * 0.25))
    half = 1.959964 * se_diff / 2  # each centred strength is half the difference
    assert bt["a"]["bt_ci"] == pytest.approx([np.log(3) / 2 - half, np.log(3) / 2 + half], rel=1e-5)
    assert bt["a"]["n"] == 40


def test_a_system_that_never_loses_has_no_finite_strength():
    bt = cmp.bradley_terry([("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 1.0), ("c", "b", 1.0)])
    assert bt["reason"].startswith("not estimable") and bt["systems"]["a"]["bt"] is None


def test_implied_pairs_of_rankings_and_best_worst():
    assert sorted(cmp.pairs_from_ranking({"a": 1, "b": 2, "c": 2})) == [
        ("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 0.5), ("c", "b", 0.5)]
    assert sorted(cmp.pairs_from_best_worst(["a", "b", "c", "d"], "b", "d")) == [
        ("a", "d", 1.0), ("b", "a", 1.0), ("b", "c", 1.0), ("b", "d", 1.0), ("c", "d", 1.0)]
    counts = cmp.best_worst_counts([(["a", "b", "c"], "a", "c"), (["a", "b", "d"], "b", "a")])
    assert counts == {"a": 0.0, "b": 0.5, "c": -1.0, "d": 0.0}


def test_kendall_w_with_ties_matches_friedman_and_pingouin():
    rng = np.random.default_rng(3)
    rankings = []
    for _ in range(12):
        noisy = np.array([4, 3, 2, 1]) + rng.normal(0, 1.2, 4)
        ranks = np.round(pd.Series(-noisy).rank(method="min").to_numpy())
        ranks[rng.random(4) < 0.2] = 2  # some ties
        rankings.append(dict(zip(SYSTEMS, ranks.astype(float))))
    w = cmp.kendall_w(rankings)
    mid = np.array([pd.Series([r[s] for s in SYSTEMS]).rank().to_numpy() for r in rankings])
    stat, p = friedmanchisquare(*mid.T)
    assert w["chi2"] == pytest.approx(stat) and w["p"] == pytest.approx(p) and w["df"] == 3
    long = pd.DataFrame([{"block": b, "system": s, "rank": r[s]} for b, r in enumerate(rankings) for s in SYSTEMS])
    reference = pingouin.friedman(long, dv="rank", within="system", subject="block")
    assert w["w"] == pytest.approx(float(reference["W"].iloc[0]))


def test_position_effect_counts_decided_pairs():
    rows = [("a", "b", "a")] * 7 + [("b", "a", "a")] * 3 + [("a", "b", "tie")] * 5
    assert cmp.position_effect(rows) == {"first_wins": 0.7, "n": 10, "p": pytest.approx(0.34375)}


def _run(tmp_path, text: str, *args: str):
    return run_in_process("comparisons", tmp_path, text, *args)


def test_command_pairwise_json(tmp_path):
    """In a fresh process with no database, as a user runs it."""
    rows = _simulated_pairs(4, n=200)
    text = "item,rater,system_a,system_b,winner\n" + "".join(
        f"i{k},r{k % 5},{a},{b},{w}\n" for k, (a, b, w) in enumerate(rows))
    done = run_offline("comparisons", tmp_path, text, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["kind"] == "pairwise" and set(out["systems"]) == set(SYSTEMS)
    expected = cmp.bradley_terry(w for a, b, win in rows for w in cmp.pairs_from_pairwise(a, b, win))
    for s in SYSTEMS:
        assert out["systems"][s]["bt"] == pytest.approx(expected["systems"][s]["bt"])
        assert len(out["systems"][s]["bt_ci"]) == 2
    decided = [(a, w) for a, b, w in rows if w != "tie"]
    assert out["position"]["n"] == len(decided)
    assert out["position"]["first_wins"] == pytest.approx(sum(a == w for a, w in decided) / len(decided))
    assert "kendall_w" not in out and "bws_count" not in out


def test_command_ranking_and_best_worst(tmp_path):
    ranking = "item,rater,system,rank\n" + "".join(
        f"i{i},r{r},{s},{rank}\n" for i in range(3) for r in range(2)
        for s, rank in zip(SYSTEMS, [1, 2, 3, 4] if (i + r) % 3 else [2, 1, 3, 4]))
    out = json.loads(_run(tmp_path, ranking, "--json").stdout)
    assert out["kind"] == "ranking" and 0 < out["kendall_w"]["w"] <= 1 and out["kendall_w"]["df"] == 3
    assert out["systems"]["delta"]["bt"] is None and out["bt_reason"].startswith("not estimable")  # always last
    assert out["systems"]["alpha"]["n"] == 6 * 3  # 6 rankings, 3 implied pairs each
    bws = ("item,rater,shown,best,worst\n" "i1,r1,alpha|beta|gamma|delta,alpha,delta\n"
           "i2,r1,alpha|beta|gamma|delta,beta,delta\n" "i3,r2,alpha|beta|gamma|delta,alpha,gamma\n"
           "i4,r2,alpha|beta|gamma|delta,gamma,beta\n")
    out = json.loads(_run(tmp_path, bws, "--json").stdout)
    assert out["kind"] == "best_worst"
    assert out["bws_count"] == {"alpha": 0.5, "beta": 0.0, "delta": -0.5, "gamma": 0.0}


def test_command_accepts_average_and_equal_ranks_for_ties(tmp_path):
    """Issue 25: ranks as R's and pandas' rank() write them (3.5 for a tie at places 3 and 4), or
    equal ranks (min method); Kendall's W from mid-ranks with the tie correction, as pingouin and
    scipy's Friedman test (tie-corrected) give it."""
    rng = np.random.default_rng(11)
    rankings = []
    for _ in range(10):
        scores = np.round(np.array([4, 3, 2, 1]) + rng.normal(0, 1.0, 4))  # rounding makes ties
        rankings.append(pd.Series(-scores, index=SYSTEMS))
    average = "item,rater,system,rank\n" + "".join(
        f"i{k},r{k % 3},{s},{rank:g}\n" for k, r in enumerate(rankings) for s, rank in r.rank(method="average").items())
    equal = "item,rater,system,rank\n" + "".join(
        f"i{k},r{k % 3},{s},{rank:g}\n" for k, r in enumerate(rankings) for s, rank in r.rank(method="min").items())
    assert ".5\n" in average  # the file really holds average ranks
    done = _run(tmp_path, average, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    long = pd.DataFrame([{"block": b, "system": s, "rank": v} for b, r in enumerate(rankings)
                         for s, v in r.rank(method="average").items()])
    reference = pingouin.friedman(long, dv="rank", within="system", subject="block")
    assert out["kendall_w"]["w"] == pytest.approx(float(reference["W"].iloc[0]))
    stat, p = friedmanchisquare(*np.array([r.rank().to_numpy() for r in rankings]).T)
    assert out["kendall_w"]["chi2"] == pytest.approx(stat) and out["kendall_w"]["p"] == pytest.approx(p)
    assert json.loads(_run(tmp_path, equal, "--json").stdout)["kendall_w"] == out["kendall_w"]
    bad = _run(tmp_path, "item,rater,system,rank\ni,r,a,1\ni,r,b,2.25\n")
    assert bad.returncode != 0 and "row 3, column 'rank': not a rank" in bad.stderr


@pytest.mark.parametrize("text,message", [
    ("item,rater,score\n1,a,3\n", "row 1: header 'item,rater,score' is none of the known kinds"),
    ("item,rater,system_a,system_b,winner\ni,r,a,b,c\n", "row 2, column 'winner': 'c' is neither 'a', 'b' nor 'tie'"),
    ("item,rater,system,rank\ni,r,a,1\ni,r,b,first\n", "row 3, column 'rank': not a rank"),
    ("item,rater,system,rank\ni,r,a,1\ni,r,a,2\n", "row 3, column 'system': rater 'r' ranked 'a' twice"),
    ("item,rater,shown,best,worst\ni,r,a|b|c,a,z\n", "row 2, column 'worst': 'z' was not shown"),
    ("item,rater,shown,best,worst\ni,r,a,a,a\n", "row 2, column 'shown': needs two or more"),
])
def test_command_names_the_line_and_column(tmp_path, text, message):
    done = _run(tmp_path, text)
    assert done.returncode != 0 and message in done.stderr, done.stderr


@pytest.mark.parametrize("wins,n", [(7, 10), (0, 5), (12.5, 20), (30, 30)])
def test_wilson_interval_matches_statsmodels(wins, n):
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(wins, n, alpha=0.05, method="wilson")
    assert cmp.wilson_interval(wins, n) == pytest.approx([lo, hi], abs=1e-12)


def test_item_pair_shares_count_ties_half_and_once():
    judgements = [("i1", w) for w in cmp.pairs_from_pairwise("b", "a", "b") + cmp.pairs_from_pairwise("a", "b", "tie")]
    judgements += [("i2", w) for w in cmp.pairs_from_ranking({"a": 1, "b": 2, "c": 3})]
    shares = cmp.item_pair_shares(judgements)
    assert shares[("i1", "a", "b")] == (0.5, 2.0)
    assert shares[("i2", "a", "c")] == (1.0, 1.0) and shares[("i2", "b", "c")] == (1.0, 1.0)


def test_bradley_terry_of_the_win_matrix_matches_choix_on_an_arena_subsample():
    """The aggregated path (judgements summed into a win matrix by bincount, Newton on it), on a
    subsample of an arena-like study (40 systems, 20,000 votes, 10% ties), against choix's ILSR
    and its optimiser. Ties as the module documents them, half a win each way: for choix, which
    has no weights, every win counts twice and a tie as one win each way."""
    rng = np.random.default_rng(7)
    k, n = 40, 20_000
    strength = rng.normal(0, 1.5, k)
    a = rng.integers(0, k, n)
    b = (a + 1 + rng.integers(0, k - 1, n)) % k
    tie = rng.random(n) < 0.1
    first = rng.random(n) < 1 / (1 + np.exp(strength[b] - strength[a]))
    winner, loser = np.where(first, a, b), np.where(first, b, a)
    wins = np.bincount(np.concatenate([(winner * k + loser)[~tie], (a * k + b)[tie], (b * k + a)[tie]]),
                       weights=np.concatenate([np.ones((~tie).sum()), np.full(2 * tie.sum(), 0.5)]),
                       minlength=k * k).reshape(k, k)
    systems = [f"s{i:02d}" for i in range(k)]
    ours = cmp.bradley_terry_matrix(systems, wins)
    got = np.array([ours["systems"][s]["bt"] for s in systems])
    data = [(int(w), int(l_)) for w, l_ in zip(winner[~tie], loser[~tie])] * 2
    data += [(int(x), int(y)) for x, y in zip(a[tie], b[tie])] + [(int(y), int(x)) for x, y in zip(a[tie], b[tie])]
    for reference in (choix.ilsr_pairwise(k, data, alpha=0, tol=1e-12, max_iter=10_000),
                      choix.opt_pairwise(k, data, alpha=0, tol=1e-12)):
        np.testing.assert_allclose(got, reference - reference.mean(), atol=1e-6)
    # The list path (tuples summed in order) gives the same matrix and so the same numbers.
    listed = [(systems[int(w)], systems[int(l_)], 1.0) for w, l_ in zip(winner[~tie], loser[~tie])]
    listed += [w for x, y in zip(a[tie], b[tie]) for w in cmp.pairs_from_pairwise(systems[x], systems[y], "tie")]
    assert np.array_equal(cmp.win_matrix(listed)[1], wins)
    assert cmp.bradley_terry(listed) == ours
    assert np.corrcoef(got, strength)[0, 1] > 0.99
    # Every interval holds its estimate; the Wald half-widths shrink as 1/sqrt(votes).
    half = np.array([ours["systems"][s]["bt_ci"][1] - ours["systems"][s]["bt"] for s in systems])
    assert (half > 0).all()
    quadrupled = cmp.bradley_terry_matrix(systems, 4 * wins)
    half4 = np.array([quadrupled["systems"][s]["bt_ci"][1] - quadrupled["systems"][s]["bt"] for s in systems])
    np.testing.assert_allclose(half4, half / 2, rtol=1e-6)


def test_win_rates_of_the_matrix_are_those_of_the_list():
    rows = _simulated_pairs(5, n=300)
    wins = [w for a, b, win in rows for w in cmp.pairs_from_pairwise(a, b, win)]
    rates = cmp.win_rates(wins)
    for a, row in rates.items():
        for b, rate in row.items():
            won = sum(x for w, l_, x in wins if (w, l_) == (a, b))
            assert rate == won / (won + sum(x for w, l_, x in wins if (w, l_) == (b, a)))
    assert cmp.win_rates_matrix(*cmp.win_matrix(wins)) == rates
