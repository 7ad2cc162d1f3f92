"""Statistics of comparative judgements: Bradley–Terry strengths, best–worst counts, Kendall's W
and position bias. Pure functions over plain lists.

A comparison is (winner, loser, weight); a tie enters as half a win to each side, i.e. as
(a, b, 0.5) and (b, a, 0.5). Rankings and best–worst answers enter as the pairs they imply.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import binomtest, chi2, norm

Win = tuple[str, str, float]  # winner, loser, weight


def pairs_from_pairwise(a: str, b: str, winner: str) -> list[Win]:
    """One A/B judgement; winner is a or b or 'tie'.

    Reference: Bradley & Terry (1952); ties as half wins, Davidson (1970).
    """
    if winner == "tie":
        return [(a, b, 0.5), (b, a, 0.5)]
    return [(winner, b if winner == a else a, 1.0)]


def pairs_from_ranking(ranks: dict[str, float]) -> list[Win]:
    """Every higher-ranked system beats every lower-ranked one (rank 1 = best); equal ranks tie.

    Reference: Azari Soufiani, Parkes & Xia (2013), rank breaking, NeurIPS.
    """
    out: list[Win] = []
    for a, b in combinations(sorted(ranks), 2):
        if ranks[a] == ranks[b]:
            out += [(a, b, 0.5), (b, a, 0.5)]
        else:
            out.append((a, b, 1.0) if ranks[a] < ranks[b] else (b, a, 1.0))
    return out


def pairs_from_best_worst(shown: Sequence[str], best: str, worst: str) -> list[Win]:
    """Best beats every other shown; every other shown beats worst (best over worst once).

    Reference: Louviere, Flynn & Marley (2015), Best-Worst Scaling.
    """
    out: list[Win] = [(best, s, 1.0) for s in shown if s != best]
    out += [(s, worst, 1.0) for s in shown if s not in (best, worst)]
    return out


def win_matrix(comparisons: Iterable[Win]) -> tuple[list[str], np.ndarray]:
    """The systems (sorted) and the k x k matrix of wins[i, j], the weight of i's wins over j
    (ties half each way), summed in the order given (so weights add exactly as one loop would)."""
    comparisons = list(comparisons)
    if not comparisons:
        return [], np.zeros((0, 0))
    winners, losers, weights = zip(*comparisons)
    systems = sorted(set(winners) | set(losers))
    k = len(systems)
    w = pd.Categorical(winners, categories=systems).codes.astype(np.int64)
    l_ = pd.Categorical(losers, categories=systems).codes.astype(np.int64)
    wins = np.bincount(w * k + l_, weights=np.asarray(weights, dtype=float), minlength=k * k).reshape(k, k)
    return systems, wins


def _strongly_connected(wins: np.ndarray) -> bool:
    """Ford's condition for a finite MLE: every system can reach every other by 'beat' edges."""
    n, _ = connected_components(csr_matrix(wins > 0), directed=True, connection="strong")
    return n == 1


def bradley_terry(comparisons: Iterable[Win], level: float = 0.95, tol: float = 1e-12,
                  max_iter: int = 100) -> dict[str, Any]:
    """Maximum-likelihood Bradley–Terry log-strengths, centred to mean 0, with Wald intervals from
    the Fisher information (its pseudo-inverse: the covariance under the centring constraint).

    Returns {"systems": {name: {"bt", "bt_ci", "n"}}, "reason": None | why undefined}. When some
    system never wins or never loses against the rest (the comparison graph is not strongly
    connected) the MLE is infinite: strengths are None with that reason, never a made-up number.
    The comparisons are summed into a win matrix first (bradley_terry_matrix): the fit's cost
    depends on the number of systems, not of judgements.

    Reference: Bradley & Terry (1952), Biometrika 39(3/4); Hunter (2004), Annals of Statistics 32(1).
    """
    systems, wins = win_matrix(comparisons)
    return bradley_terry_matrix(systems, wins, level=level, tol=tol, max_iter=max_iter)


def _log_likelihood(theta: np.ndarray, wins: np.ndarray) -> float:
    return float((wins * (theta[:, None] - np.logaddexp(theta[:, None], theta[None, :]))).sum())


def _fisher_information(theta: np.ndarray, games: np.ndarray) -> np.ndarray:
    prob = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
    weight = games * prob * prob.T
    return np.diag(weight.sum(axis=1)) - weight


def bradley_terry_matrix(systems: Sequence[str], wins: np.ndarray, level: float = 0.95, tol: float = 1e-12,
                         max_iter: int = 100) -> dict[str, Any]:
    """bradley_terry from the win matrix (win_matrix's): Newton's method on the concave
    log-likelihood, each step solving the Fisher information (the Laplacian of the expected
    games) under the centring constraint, halved while it does not raise the likelihood.
    Newton converges quadratically where Hunter's (2004) MM crawls when strengths are spread
    (its rate is the spread's); both reach the same maximum. The Wald intervals use the
    information at the maximum, as before.

    Reference: Bradley & Terry (1952); Agresti (2013), Categorical Data Analysis, 11.6 (Newton, Wald).
    """
    systems = list(systems)
    k = len(systems)
    games = wins + wins.T  # comparisons between each pair (a tie counts once: 0.5 + 0.5)
    n = {s: float(games[i].sum()) for i, s in enumerate(systems)}
    if k < 2 or not _strongly_connected(wins):
        reason = ("fewer than two systems were compared" if k < 2 else
                  "not estimable: some system won or lost every comparison it had against a group of others")
        return {"systems": {s: {"bt": None, "bt_ci": None, "n": n[s]} for s in systems}, "reason": reason}
    total_wins = wins.sum(axis=1)
    centre = np.full((k, k), 1.0 / k)  # adds the constant direction the Laplacian lacks; steps keep sum 0
    theta = np.zeros(k)
    loglik, last = _log_likelihood(theta, wins), np.inf
    for _ in range(max_iter):
        prob = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
        gradient = total_wins - (games * prob).sum(axis=1)
        step = np.linalg.solve(_fisher_information(theta, games) + centre, gradient)
        size = float(np.max(np.abs(step)))
        for _ in range(60):  # step halving: never lower the likelihood
            trial = theta + step
            trial_loglik = _log_likelihood(trial, wins)
            if trial_loglik >= loglik or float(np.max(np.abs(step))) < tol:
                break
            step = step / 2
        theta, loglik = trial - trial.mean(), max(trial_loglik, loglik)
        # Done when the step is below tol, or at rounding's floor (it stops shrinking once tiny).
        if size < tol or (size < 1e-9 and size >= last):
            break
        last = size
    cov = np.linalg.pinv(_fisher_information(theta, games))
    z = norm.ppf((1 + level) / 2)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    return {"systems": {s: {"bt": float(theta[i]), "bt_ci": [float(theta[i] - z * se[i]), float(theta[i] + z * se[i])],
                            "n": n[s]} for i, s in enumerate(systems)}, "reason": None}


def win_rates(comparisons: Iterable[Win]) -> dict[str, dict[str, float]]:
    """Row system's share of wins (ties half) against each column system it met.

    Reference: Chiang et al. (2024), Chatbot Arena, ICML (the win-fraction matrix).
    """
    return win_rates_matrix(*win_matrix(comparisons))


def win_rates_matrix(systems: Sequence[str], wins: np.ndarray) -> dict[str, dict[str, float]]:
    """win_rates from the win matrix: wins[a, b] / (wins[a, b] + wins[b, a]) for every pair that met."""
    games = wins + wins.T
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for i, j in zip(*np.nonzero(games)):
        out[systems[i]][systems[j]] = float(wins[i, j] / games[i, j])
    return {a: dict(sorted(row.items())) for a, row in sorted(out.items())}


def best_worst_counts(answers: Iterable[tuple[Sequence[str], str, str]]) -> dict[str, float]:
    """(times best − times worst) / times shown, per system.

    Reference: Louviere, Flynn & Marley (2015), Best-Worst Scaling; Kiritchenko & Mohammad (2017), ACL.
    """
    shown: dict[str, int] = defaultdict(int)
    score: dict[str, int] = defaultdict(int)
    for tup, best, worst in answers:
        for s in tup:
            shown[s] += 1
        score[best] += 1
        score[worst] -= 1
    return {s: score[s] / shown[s] for s in sorted(shown)}


def kendall_w(rankings: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Kendall's coefficient of concordance over rankings of the same systems (each ranking a
    'judge': one rater's ranking of one item), with the correction for tied ranks and the
    Friedman χ² test (χ² = m(n − 1)W, df = n − 1).

    Reference: Kendall & Babington Smith (1939), Annals of Mathematical Statistics 10(3); ties: Kendall (1948).
    """
    if not rankings:
        return {"w": None, "chi2": None, "df": None, "p": None, "reason": "no rankings"}
    systems = sorted(rankings[0])
    if any(sorted(r) != systems for r in rankings):
        return {"w": None, "chi2": None, "df": None, "p": None,
                "reason": "the rankings do not all rank the same systems"}
    m, n = len(rankings), len(systems)
    if m < 2 or n < 2:
        return {"w": None, "chi2": None, "df": None, "p": None, "reason": "needs at least 2 rankings of 2 systems"}
    ranks = np.array([_midranks([r[s] for s in systems]) for r in rankings])  # m x n
    totals = ranks.sum(axis=0)
    s = float(((totals - totals.mean()) ** 2).sum())
    ties = sum(float((c ** 3 - c).sum()) for c in (np.unique(row, return_counts=True)[1] for row in ranks))
    denom = m ** 2 * (n ** 3 - n) - m * ties
    if denom == 0:
        return {"w": None, "chi2": None, "df": None, "p": None, "reason": "every ranking ties all systems"}
    w = 12 * s / denom
    stat = m * (n - 1) * w
    return {"w": float(w), "chi2": float(stat), "df": n - 1, "p": float(chi2.sf(stat, n - 1))}


def _midranks(values: list[float]) -> np.ndarray:
    """Ranks 1..n with ties given their mean rank (so 1,1,3 -> 1.5,1.5,3)."""
    from scipy.stats import rankdata

    return rankdata(values, method="average")


def position_effect(judgements: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """How often the output shown first wins, over pairwise judgements that were not ties, with
    the exact binomial test against 0.5.

    Reference: Zheng et al. (2023), Judging LLM-as-a-Judge, NeurIPS (position bias); exact binomial test.
    """
    decided = [winner == a for a, b, winner in judgements if winner != "tie"]
    return position_effect_counts(int(sum(decided)), len(decided))


def position_effect_counts(first: int, decided: int) -> dict[str, Any]:
    """position_effect from its counts: decided (not tied) judgements, and those the first shown won."""
    if not decided:
        return {"first_wins": None, "n": 0, "p": None}
    return {"first_wins": first / decided, "n": decided, "p": float(binomtest(first, decided, 0.5).pvalue)}


def item_pair_shares(judgements: Iterable[tuple[Any, Win]]) -> dict[tuple[Any, str, str], tuple[float, float]]:
    """(item, a, b) with a < b -> (a's wins, judgements) over the pairs the answers imply on each
    item; a tie adds half a win and one judgement."""
    won: dict[tuple[Any, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for item, (w, l_, weight) in judgements:
        a, b = sorted((w, l_))
        slot = won[(item, a, b)]
        slot[0] += weight if w == a else 0.0
        slot[1] += weight  # a tie comes as two halves: one judgement in all
    return {k: (v[0], v[1]) for k, v in won.items()}


def wilson_interval(wins: float, n: float, level: float = 0.95) -> list[float] | None:
    """Wilson score interval of a share of wins (ties half).

    Reference: Wilson (1927), JASA 22(158).
    """
    if n <= 0:
        return None
    z = float(norm.ppf(0.5 + level / 2))
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [float(centre - half), float(centre + half)]
def first_shown_best(answers: Sequence[tuple[int, bool]]) -> dict[str, Any]:
    """(K shown, the first shown was best) per parsed answer -> its rate, the chance rate 1/K and,
    when every answer showed the same K, the exact binomial test against 1/K."""
    if not answers:
        return {"first_best": None, "chance": None, "n": 0, "p": None}
    hits = sum(1 for _, best in answers if best)
    ks = {k for k, _ in answers}
    chance = sum(1 / k for k, _ in answers) / len(answers)
    p = float(binomtest(hits, len(answers), 1 / ks.pop()).pvalue) if len(ks) == 1 else None
    return {"first_best": hits / len(answers), "chance": chance, "n": len(answers), "p": p}
