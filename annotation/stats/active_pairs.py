"""Active comparisons: the next pair chosen for what it tells about the ranking (issue 58 §3).

With probability `random_share` the next pair is drawn uniformly from all pairs; otherwise it is the
pair whose order is least settled under the current Bradley–Terry fit: the largest
P(their fitted order is wrong) x p(1 - p), the first factor the normal probability that the
difference of the two strengths has the other sign (Wald, from the fit's covariance), the second
the information one outcome carries (the Fisher information of a Bernoulli with p = P(i beats j)).
Pairs of neighbours in the ranking with overlapping intervals come first; pairs whose order is
already clear (most random pairs) are left alone. Every pair keeps a probability of at least
random_share / C(k, 2), recorded with the comparison, so that the uniformly drawn comparisons form
an unbiased sample and any estimate can be reweighted outside Concord. The likelihood of the
outcomes does not depend on how pairs were chosen from past outcomes (the design is ignorable),
so the Bradley–Terry fit on all comparisons stays consistent. Which system is shown first is the
one shown first less often so far: positions stay balanced.

    bt_fit(wins, ridge=) -> (theta, covariance)        # MAP with a weak normal prior: defined from the start
    choose_pairs(wins, balance, policy=, rng=, n=) -> PairChoice
    simulate_active_pairs(...) -> dict                   # against uniformly random pairs

Reference for the idea: Jamieson & Nowak (2011), Active ranking using pairwise comparisons;
Maystre & Grossglauser (2017), Just sort it!; Chen et al. (2013), Pairwise ranking aggregation in
a crowdsourced setting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, spearmanr


@dataclass(frozen=True)
class ActivePairsPolicy:
    random_share: float = 0.2
    batch: int = 1  # pairs chosen from one fit (a study refits after every comparison)

    def __post_init__(self):
        if not isinstance(self.random_share, (int, float)) or not 0 < float(self.random_share) <= 1:
            raise ValueError(f"random_share: must be a share above 0 and at most 1, got {self.random_share!r}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch: must be a whole number of at least 1, got {self.batch!r}")

    def as_dict(self) -> dict:
        return {"name": "active_pairs", "random_share": float(self.random_share)}


@dataclass(frozen=True)
class PairChoice:
    left: int
    right: int
    probability: float  # of this unordered pair under the policy, given the comparisons so far
    how: str             # "random" or "active"


def bt_fit(wins: np.ndarray, *, ridge: float = 0.1, theta: np.ndarray | None = None,
           iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Bradley–Terry log-strengths maximising the likelihood times a N(0, 1/ridge) prior on each
    (finite for any comparisons, none included), by Newton's method, and their covariance (the
    inverse of the penalised information). wins[i, j]: i's wins over j."""
    k = wins.shape[0]
    games = wins + wins.T
    theta = np.zeros(k) if theta is None else theta.copy()
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
        grad = (wins - games * p).sum(axis=1) - ridge * theta
        w = games * p * p.T
        info = np.diag(w.sum(axis=1)) - w + ridge * np.eye(k)
        step = np.linalg.solve(info, grad)
        theta = theta + step
        if np.abs(step).max() < 1e-9:
            break
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    w = games * p * p.T
    return theta, np.linalg.inv(np.diag(w.sum(axis=1)) - w + ridge * np.eye(k))


def pair_scores(theta: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """(k, k) score of each pair (upper triangle meaningful): P(order wrong) x the share of the
    difference's variance one more comparison of the pair removes, v·I / (1 + v·I) with
    I = p(1 - p) (a rank-one update of the information)."""
    diff = theta[:, None] - theta[None, :]
    var = np.maximum(np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov, 1e-12)
    wrong = norm.cdf(-np.abs(diff) / np.sqrt(var))
    p = 1.0 / (1.0 + np.exp(-diff))
    gain = var * p * (1 - p)
    return wrong * gain / (1 + gain)


def _orient(i: int, j: int, balance: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """The system shown first less often (net of times shown second) goes first; a tie at random."""
    if balance[i] != balance[j]:
        return (i, j) if balance[i] < balance[j] else (j, i)
    return (i, j) if rng.random() < 0.5 else (j, i)


def choose_pairs(wins: np.ndarray, balance: np.ndarray, *, policy: ActivePairsPolicy,
                 rng: np.random.Generator, n: int = 1, theta: np.ndarray | None = None) -> list[PairChoice]:
    """The next n pairs (distinct among the active ones) from one fit of the comparisons so far.
    balance[s]: times system s was shown first less times shown second; updated in place."""
    k = wins.shape[0]
    if k < 2:
        raise ValueError(f"wins: active comparisons need at least two systems, got {k}")
    n_pairs = k * (k - 1) // 2
    floor = policy.random_share / n_pairs
    upper = np.triu_indices(k, 1)
    scores = pair_scores(*bt_fit(wins, theta=theta))[upper]
    ranked = np.lexsort((rng.random(scores.size), -scores))  # best first, ties at random
    out, used = [], 0
    for _ in range(n):
        if rng.random() < policy.random_share or used >= n_pairs:
            idx, how = int(rng.integers(n_pairs)), "random"
        else:
            idx, how = int(ranked[used]), "active"
            used += 1
        i, j = int(upper[0][idx]), int(upper[1][idx])
        prob = floor + ((1 - policy.random_share) if how == "active" else 0.0)
        left, right = _orient(i, j, balance, rng)
        balance[left] += 1
        balance[right] -= 1
        out.append(PairChoice(left, right, float(prob), how))
    return out


def choose_pair(wins: np.ndarray, balance: np.ndarray, *, policy: ActivePairsPolicy,
                rng: np.random.Generator) -> PairChoice:
    return choose_pairs(wins, balance, policy=policy, rng=rng, n=1)[0]


def _run(strength: np.ndarray, budget: int, checkpoints: np.ndarray, policy: ActivePairsPolicy | None,
         rng: np.random.Generator) -> np.ndarray:
    """Spearman of the fitted ranking against the planted one at each checkpoint, for one study."""
    k = strength.size
    wins, balance = np.zeros((k, k)), np.zeros(k)
    upper = np.triu_indices(k, 1)
    rho, done, theta = [], 0, None
    for stop in checkpoints:
        while done < stop:
            n = min(policy.batch if policy else stop - done, stop - done)
            if policy is None:
                idx = rng.integers(upper[0].size, size=n)
                pairs = list(zip(upper[0][idx], upper[1][idx]))
            else:
                pairs = [(c.left, c.right) for c in choose_pairs(wins, balance, policy=policy, rng=rng, n=n,
                                                                 theta=theta)]
            for i, j in pairs:
                if rng.random() < 1.0 / (1.0 + np.exp(strength[j] - strength[i])):
                    wins[i, j] += 1
                else:
                    wins[j, i] += 1
            done += n
            if policy is not None:
                theta, _ = bt_fit(wins, theta=theta)
        theta_now, _ = bt_fit(wins, theta=theta)
        rho.append(spearmanr(theta_now, strength).statistic)
    return np.array(rho)


def simulate_active_pairs(*, policy: ActivePairsPolicy = ActivePairsPolicy(batch=5), n_systems: int = 12,
                          spread: float = 4.0, budget: int = 3000, step: int = 100, seeds=range(10),
                          goal: float = 0.99) -> dict:
    """Per seed one planted ranking (strengths evenly spaced over `spread` logits, in random order),
    run once with uniformly random pairs and once with the policy, each checked every `step`
    comparisons. Returns the mean Spearman at each checkpoint and the first budget from which the
    mean stays at `goal` or above, for both designs (None if not within `budget`)."""
    checkpoints = np.arange(step, budget + 1, step)
    uniform, active = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        strength = rng.permutation(np.linspace(-spread / 2, spread / 2, n_systems))
        uniform.append(_run(strength, budget, checkpoints, None, np.random.default_rng([seed, 1])))
        active.append(_run(strength, budget, checkpoints, policy, np.random.default_rng([seed, 2])))
    mean_u, mean_a = np.mean(uniform, axis=0), np.mean(active, axis=0)

    def needed(mean):
        ok = mean >= goal
        if not ok[-1]:
            return None
        bad = np.flatnonzero(~ok)
        return int(checkpoints[bad[-1] + 1]) if bad.size else int(checkpoints[0])

    n_u, n_a = needed(mean_u), needed(mean_a)
    return {"policy": policy.as_dict(), "n_systems": n_systems, "spread": spread, "seeds": list(seeds),
            "checkpoints": checkpoints.tolist(), "uniform_spearman": mean_u.tolist(),
            "active_spearman": mean_a.tolist(), "goal": goal, "uniform_needed": n_u, "active_needed": n_a,
            "ratio": (n_a / n_u) if n_u and n_a else None}
