"""The ranking and best-worst judges' part of the report's "Trusting the judges" section, beside the
pairwise runs (judges.report_trust): per run, the systems' Bradley–Terry strengths from the pairs
its answers imply (annotation.stats.comparisons), the win-rate heat map, for best-worst the
counting scores (best − worst) / shown, and the position bias: how often the output shown first
was ranked (or picked) best, against the 1/K a judge blind to position would give, with the exact
binomial test. Ranking runs asked in two orders also report how far the two rankings moved.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from annotation.models import Output, Study
from annotation.reports.comparisons import answers_first_best, as_comparisons, comparative_answers, comparative_criteria
from annotation.reports.plots import win_rate_heatmap
from annotation.stats import comparisons as cmp
from annotation.stats.kappa import cohen_kappa
from judges.models import JudgeRun, JudgeScore
from judges.services.engine import comparative_key

METHODS = ("ranking", "best_worst")


def _systems_by_index(study: Study) -> dict[int, list[str]]:
    """item pk -> its outputs' systems in position order (the index the judge's slots use)."""
    out: dict[int, list[str]] = {}
    for item_id, system in (Output.objects.filter(item__study=study).order_by("item_id", "position")
                            .values_list("item_id", "system")):
        out.setdefault(item_id, []).append(system or "")
    return out


def _ranking(rows, name: Callable[[int, int], str]) -> dict[str, Any]:
    wins, answers, distances = [], [], []
    for item_id, value, status, detail, doubt in rows:
        detail = detail or {}
        for order, ranks in zip(detail.get("orders") or [], detail.get("rankings") or []):
            if ranks:
                answers.append((len(order), ranks[0] == 1 and list(ranks).count(1) == 1))
        if (doubt or {}).get("swap_distance") is not None:
            distances.append(float(doubt["swap_distance"]))
        if status == "scored" and value:
            wins += [(item_id, w) for w in cmp.pairs_from_ranking(
                {name(item_id, i): r for i, r in zip(value["shown"], value["ranks"])})]
    swap = ({"n": len(distances), "mean_distance": sum(distances) / len(distances),
             "changed": sum(1 for d in distances if d > 0) / len(distances)} if distances else None)
    return {"wins": wins, "position": cmp.first_shown_best(answers), "swap": swap}


def _best_worst(rows, name: Callable[[int, int], str]) -> dict[str, Any]:
    wins, answers, tuples = [], [], []
    for item_id, value, status, detail, _ in rows:
        picked = (detail or {}).get("picked")
        if status != "scored" or not value or not picked:
            continue
        shown = [name(item_id, i) for i in value["shown"]]
        best, worst = name(item_id, value["best"]), name(item_id, value["worst"])
        wins += [(item_id, w) for w in cmp.pairs_from_best_worst(shown, best, worst)]
        tuples.append((shown, best, worst))
        answers.append((len(shown), picked["best"] == 1))
    return {"wins": wins, "position": cmp.first_shown_best(answers), "counts": cmp.best_worst_counts(tuples)}


def comparative_runs(study: Study, runs: Sequence[JudgeRun]) -> list[dict[str, Any]]:
    """One entry per ranking or best-worst run with a scored answer."""
    out = []
    systems = None
    for run in runs:
        method = run.config.get("method")
        if method not in METHODS:
            continue
        if systems is None:
            systems = _systems_by_index(study)

        def name(item_id: int, index: int) -> str:
            names = systems.get(item_id) or []
            return names[index] if 0 <= index < len(names) and names[index] else f"output {index}"

        rows = list(JudgeScore.objects.filter(run=run, output__isnull=True).values_list(
            "item_id", "value", "status", "detail", "doubt"))
        got = _ranking(rows, name) if method == "ranking" else _best_worst(rows, name)
        item_wins = got.pop("wins")
        if not item_wins:
            continue
        wins = [w for _, w in item_wins]
        rates = cmp.win_rates(wins)
        out.append({"name": f"{run.name} (run {run.pk})", "method": method,
                    "strengths": cmp.bradley_terry(wins), "win_rates": rates,
                    "heatmap": win_rate_heatmap(rates, f"{method.replace('_', '-')}-{run.pk}"),
                    "humans": human_agreement(study, comparative_key(run.config, study.rubric), item_wins), **got})
    return out


def _outcomes(item_wins: Iterable[tuple[int, cmp.Win]]) -> dict[tuple[int, str, str], str]:
    """(item, a, b) with a < b -> "a", "b" or "tie": the side most of the implied judgements chose."""
    return {k: "tie" if 2 * w == n else ("a" if 2 * w > n else "b")
            for k, (w, n) in cmp.item_pair_shares(item_wins).items()}


def human_agreement(study: Study, key: str, item_wins: Sequence[tuple[int, cmp.Win]]) -> dict[str, Any] | None:
    """The judge against the raters on the same comparisons: each rater's answer, as the pairs it
    implies on its item, against the judge's verdict on that pair of that item (agreement rate and
    Cohen's κ over the three outcomes first-named / tie / second-named), and the raters' own
    position bias on the question beside the judge's. The raters' question is the one the judge
    was asked (its key), or for "overall" the rubric's first comparative question."""
    criteria = comparative_criteria(study.rubric)
    crit = next((c for c in criteria if c["key"] == key), criteria[0] if criteria and key == "overall" else None)
    if crit is None:
        return None
    judged = _outcomes(item_wins)
    answers = comparative_answers(study, [crit["key"]])
    human, judge = [], []
    for a in answers:
        for pair, outcome in _outcomes((a.item_id, w) for w in as_comparisons([a], a.kind).wins).items():
            if pair in judged:
                human.append(outcome)
                judge.append(judged[pair])
    code = {"a": 0, "tie": 1, "b": 2}
    kappa = cohen_kappa(np.array([code[h] for h in human]), np.array([code[j] for j in judge]))
    position = (cmp.position_effect((a.shown[0], a.shown[1], a.winner) for a in answers) if crit["kind"] == "pairwise"
                else cmp.first_shown_best(answers_first_best(answers)))
    return {"criterion": crit["key"], "name": crit.get("name", crit["key"]), "n": len(human),
            "n_answers": len(answers), "agreement": sum(h == j for h, j in zip(human, judge)) / len(human) if human else None,
            "kappa": kappa.value, "kappa_reason": kappa.reason, "human_position": position}
