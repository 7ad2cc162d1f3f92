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


def _strongly_connected(systems: list[str], wins: np.ndarray) -> bool:
    """Ford's condition for a finite MLE: every system can reach every other by 'beat' edges."""
    graph = wins > 0
    for start in range(len(systems)):
        seen, stack = {start}, [start]
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(graph[i]):
                if j not in seen:
                    seen.add(int(j))
                    stack.append(int(j))
        if len(seen) < len(systems):
            return False
    return True


def bradley_terry(comparisons: Iterable[Win], level: float = 0.95, tol: float = 1e-12,
                  max_iter: int = 100_000) -> dict[str, Any]:
    """Maximum-likelihood Bradley–Terry log-strengths, centred to mean 0, with Wald intervals from
    the Fisher information (its pseudo-inverse: the covariance under the centring constraint).

    Returns {"systems": {name: {"bt", "bt_ci", "n"}}, "reason": None | why undefined}. When some
    system never wins or never loses against the rest (the comparison graph is not strongly
    connected) the MLE is infinite: strengths are None with that reason, never a made-up number.

    Reference: Bradley & Terry (1952), Biometrika 39(3/4); Hunter (2004), Annals of Statistics 32(1).
    """
    comparisons = list(comparisons)
    systems = sorted({s for w, l_, _ in comparisons for s in (w, l_)})
    index = {s: i for i, s in enumerate(systems)}
    k = len(systems)
    wins = np.zeros((k, k))
    for w, l_, weight in comparisons:
        wins[index[w], index[l_]] += weight
    games = wins + wins.T  # comparisons between each pair (a tie counts once: 0.5 + 0.5)
    n = {s: float(games[index[s]].sum()) for s in systems}
    if k < 2 or not _strongly_connected(systems, wins):
        reason = ("fewer than two systems were compared" if k < 2 else
                  "not estimable: some system won or lost every comparison it had against a group of others")
        return {"systems": {s: {"bt": None, "bt_ci": None, "n": n[s]} for s in systems}, "reason": reason}
    total_wins = wins.sum(axis=1)
    p = np.ones(k)
    for _ in range(max_iter):  # Hunter's (2004) MM algorithm: monotone, converges to the MLE
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = total_wins / denom
        new /= np.exp(np.log(new).mean())
        if np.max(np.abs(np.log(new) - np.log(p))) < tol:
            p = new
            break
        p = new
    theta = np.log(p)
    theta -= theta.mean()
    prob = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
    weight = games * prob * prob.T
    info = np.diag(weight.sum(axis=1)) - weight
    cov = np.linalg.pinv(info)
    z = norm.ppf((1 + level) / 2)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    return {"systems": {s: {"bt": float(theta[i]), "bt_ci": [float(theta[i] - z * se[i]), float(theta[i] + z * se[i])],
                            "n": n[s]} for s, i in index.items()}, "reason": None}


def win_rates(comparisons: Iterable[Win]) -> dict[str, dict[str, float]]:
    """Row system's share of wins (ties half) against each column system it met.

    Reference: Chiang et al. (2024), Chatbot Arena, ICML (the win-fraction matrix).
    """
    won: dict[tuple[str, str], float] = defaultdict(float)
    for w, l_, weight in comparisons:
        won[(w, l_)] += weight
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (a, b) in list(won):
        total = won[(a, b)] + won.get((b, a), 0.0)
        out[a][b] = won[(a, b)] / total
        out[b][a] = won.get((b, a), 0.0) / total
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
    first = int(sum(decided))
    if not decided:
        return {"first_wins": None, "n": 0, "p": None}
    return {"first_wins": first / len(decided), "n": len(decided),
            "p": float(binomtest(first, len(decided), 0.5).pvalue)}


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
