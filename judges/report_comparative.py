"""The ranking and best-worst judges' part of the report's "Trusting the judges" section, beside the
pairwise runs (judges.report_trust): per run, the systems' Bradley–Terry strengths from the pairs
its answers imply (annotation.stats.comparisons), the win-rate heat map, for best-worst the
counting scores (best − worst) / shown, and the position bias: how often the output shown first
was ranked (or picked) best, against the 1/K a judge blind to position would give, with the exact
binomial test. Ranking runs asked in two orders also report how far the two rankings moved.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from scipy.stats import binomtest

from annotation.models import Output, Study
from annotation.stats import comparisons as cmp
from judges.models import JudgeRun, JudgeScore

METHODS = ("ranking", "best_worst")


def _systems_by_index(study: Study) -> dict[int, list[str]]:
    """item pk -> its outputs' systems in position order (the index the judge's slots use)."""
    out: dict[int, list[str]] = {}
    for item_id, system in (Output.objects.filter(item__study=study).order_by("item_id", "position")
                            .values_list("item_id", "system")):
        out.setdefault(item_id, []).append(system or "")
    return out


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
            wins += cmp.pairs_from_ranking({name(item_id, i): r for i, r in zip(value["shown"], value["ranks"])})
    swap = ({"n": len(distances), "mean_distance": sum(distances) / len(distances),
             "changed": sum(1 for d in distances if d > 0) / len(distances)} if distances else None)
    return {"wins": wins, "position": first_shown_best(answers), "swap": swap}


def _best_worst(rows, name: Callable[[int, int], str]) -> dict[str, Any]:
    wins, answers, tuples = [], [], []
    for item_id, value, status, detail, _ in rows:
        picked = (detail or {}).get("picked")
        if status != "scored" or not value or not picked:
            continue
        shown = [name(item_id, i) for i in value["shown"]]
        best, worst = name(item_id, value["best"]), name(item_id, value["worst"])
        wins += cmp.pairs_from_best_worst(shown, best, worst)
        tuples.append((shown, best, worst))
        answers.append((len(shown), picked["best"] == 1))
    return {"wins": wins, "position": first_shown_best(answers), "counts": cmp.best_worst_counts(tuples)}


def comparative_runs(study: Study, runs: Sequence[JudgeRun],
                     heatmap: Callable[[Mapping[str, Mapping[str, float]], str], str | None]) -> list[dict[str, Any]]:
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
        wins = got.pop("wins")
        if not wins:
            continue
        rates = cmp.win_rates(wins)
        out.append({"name": f"{run.name} (run {run.pk})", "method": method,
                    "strengths": cmp.bradley_terry(wins), "win_rates": rates,
                    "heatmap": heatmap(rates, f"{method.replace('_', '-')}-{run.pk}"), **got})
    return out
