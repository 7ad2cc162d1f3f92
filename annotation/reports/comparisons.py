"""The raters' comparative answers (pairwise, ranking, best_worst) read back by system, and the
report's "Comparisons" section built from them.

    comparative_answers(study) -> [Answer]          # submitted, not ignored, no attention checks
    long_rows(answers, key) -> (header, rows)       # the `comparisons` command's CSV, per criterion
    comparisons_section(study) -> {key: {...}}      # report["comparisons"]

An answer is stored by output id (docs/rubric-format.md, "Comparative questions"); here each id
becomes its system's name, so the statistics (annotation.stats.comparisons) compare systems.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from annotation.models import Assignment, Output, Rating, Study
from annotation.stats import comparisons as cmp
from annotation.reports.pairwise_blocks import pairwise_sums_incremental
from annotation.reports.pairwise_sums import PairwiseSums
from annotation.stats.comparison_exports import add_answer
from annotation.stats.comparison_files import KINDS, Comparisons, comparisons_report, matrix_report
from rubrics.schema import COMPARATIVE_KINDS


@dataclass(frozen=True)
class Answer:
    item_id: int
    item: str  # external id
    rater: str
    criterion: str
    kind: str
    shown: tuple[str, ...]  # systems in the order shown
    positions: tuple[int, ...]  # their output positions, same order
    winner: str | None = None  # pairwise: a system or "tie"
    ranks: tuple[int, ...] = ()  # ranking: rank of each shown (1 = best)
    best: str | None = None
    worst: str | None = None


def comparative_criteria(rubric: dict) -> list[dict]:
    return [c for c in rubric["criteria"] if c["kind"] in COMPARATIVE_KINDS]


def comparative_answers(study: Study, keys: Sequence[str] | None = None) -> list[Answer]:
    """Every submitted comparative answer of the study's raters, by system (attention checks and
    ignored work left out, as in the other statistics)."""
    kinds = {c["key"]: c["kind"] for c in comparative_criteria(study.rubric)}
    keys = [k for k in (keys or kinds) if k in kinds]
    if not keys:
        return []
    rows = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                  assignment__ignored=False, assignment__is_attention_check=False,
                                  output__isnull=True, criterion__in=keys)
            .order_by("assignment__item_id", "assignment_id", "criterion")
            .values_list("assignment__item_id", "assignment__item__external_id", "assignment__rater__username",
                         "criterion", "value"))
    rows = list(rows.iterator(chunk_size=2000))
    outputs = {pk: (system, position) for pk, system, position in Output.objects.filter(
        item_id__in={r[0] for r in rows}).values_list("pk", "system", "position").iterator(chunk_size=2000)}
    out = []
    for item_id, item, rater, key, value in rows:
        answer = _answer(item_id, item, rater, key, kinds[key], value, outputs)
        if answer is not None:
            out.append(answer)
    return out


def _answer(item_id: int, item: str, rater: str, key: str, kind: str, value: Any,
            outputs: dict[int, tuple[str, int]]) -> Answer | None:
    if not isinstance(value, dict) or not all(pk in outputs for pk in value.get("shown") or []):
        return None  # not a comparative answer of this study's outputs (never stored so; skip, not guess)
    ids = list(value["shown"])
    shown = tuple(outputs[pk][0] for pk in ids)
    base = dict(item_id=item_id, item=item, rater=rater, criterion=key, kind=kind, shown=shown,
                positions=tuple(outputs[pk][1] for pk in ids))
    if kind == "pairwise":
        winner = value.get("winner")
        return Answer(**base, winner="tie" if winner == "tie" else outputs[winner][0]) if (
            winner == "tie" or winner in outputs) else None
    if kind == "ranking":
        return Answer(**base, ranks=tuple(int(r) for r in value.get("ranks") or ()))
    best, worst = value.get("best"), value.get("worst")
    if best in outputs and worst in outputs:
        return Answer(**base, best=outputs[best][0], worst=outputs[worst][0])
    return None


def long_rows(answers: Iterable[Answer], key: str) -> tuple[tuple[str, ...], list[tuple]]:
    """One criterion's answers as the `comparisons` command reads them (annotation.stats.comparison_files)."""
    answers = [a for a in answers if a.criterion == key]
    kind = answers[0].kind if answers else "pairwise"
    rows: list[tuple] = []
    for a in answers:
        if kind == "pairwise":
            rows.append((a.item, a.rater, a.shown[0], a.shown[1], a.winner))
        elif kind == "ranking":
            rows += [(a.item, a.rater, system, rank) for system, rank in zip(a.shown, a.ranks)]
        else:
            rows.append((a.item, a.rater, "|".join(a.shown), a.best, a.worst))
    return KINDS[kind], rows


def as_comparisons(answers: Sequence[Answer], kind: str) -> Comparisons:
    """Answers of one criterion as the statistics' input: the pairs each implies, and the raw forms."""
    data = Comparisons(kind)
    for a in answers:
        add_answer(data, kind, list(a.shown), winner=a.winner, ranks=a.ranks, best=a.best, worst=a.worst)
    return data


def comparisons_section(study: Study) -> dict[str, Any]:
    """Per comparative criterion: the command's statistics (Bradley–Terry with intervals, win
    rates, best–worst counts, Kendall's W, position bias) plus counts and the first-shown rate.

    Pairwise criteria are summed in bulk (annotation.reports.pairwise_sums: arena-sized studies hold
    millions of answers), from kept per-block sums where a block did not change
    (annotation.reports.pairwise_blocks); rankings and best–worst answers, and pairwise ones stored
    in another shape, are read answer by answer."""
    criteria = comparative_criteria(study.rubric)
    sums = pairwise_sums_incremental(study, [c["key"] for c in criteria if c["kind"] == "pairwise"])
    slow = [c["key"] for c in criteria if sums.get(c["key"]) is None]
    by_key: dict[str, list[Answer]] = defaultdict(list)
    for a in comparative_answers(study, slow) if slow else []:
        by_key[a.criterion].append(a)
    out = {}
    for c in criteria:
        if sums.get(c["key"]) is not None:
            out[c["key"]] = _pairwise_entry(c, sums[c["key"]])
            continue
        mine = by_key.get(c["key"], [])
        entry: dict[str, Any] = {"key": c["key"], "name": c.get("name", c["key"]), "kind": c["kind"],
                                 "n_answers": len(mine), "n_raters": len({a.rater for a in mine}),
                                 "n_items": len({a.item_id for a in mine})}
        if mine:
            entry.update(comparisons_report(as_comparisons(mine, c["kind"])))
            if c["kind"] == "ranking":
                entry["kendall_w"] = _kendall_w(mine)
            if c["kind"] != "pairwise":
                entry["position"] = cmp.first_shown_best(answers_first_best(mine))
        out[c["key"]] = entry
    return out


def _pairwise_entry(c: dict, sums: PairwiseSums) -> dict[str, Any]:
    """The section's entry of a pairwise criterion from its sums: what comparisons_report gives
    for the same answers (Bradley–Terry, win rates, position), with the counts."""
    entry: dict[str, Any] = {"key": c["key"], "name": c.get("name", c["key"]), "kind": c["kind"],
                             "n_answers": sums.n_answers, "n_raters": sums.n_raters, "n_items": sums.n_items}
    if sums.n_answers:
        entry.update(matrix_report("pairwise", sums.systems, sums.wins))
        entry["position"] = cmp.position_effect_counts(sums.first_wins, sums.decided)
    return entry


def _kendall_w(answers: Sequence[Answer]) -> dict[str, Any]:
    """Kendall's W over the systems when every ranking ranks the same systems; otherwise (tuples:
    raters of one item rank different subsets) the mean W of the groups of raters who ranked the
    same outputs of the same item, with how many groups it averages."""
    rankings = [dict(zip(a.shown, map(float, a.ranks))) for a in answers]
    if len({frozenset(r) for r in rankings}) == 1:
        return {**cmp.kendall_w(rankings), "scope": "systems"}
    groups: dict[tuple, list[dict[str, float]]] = defaultdict(list)
    for a in answers:
        groups[(a.item_id, frozenset(a.positions))].append(dict(zip(map(str, a.positions), map(float, a.ranks))))
    ws = [w["w"] for g in groups.values() if len(g) >= 2 and (w := cmp.kendall_w(g))["w"] is not None]
    if not ws:
        return {"w": None, "chi2": None, "df": None, "p": None, "scope": "items",
                "reason": "no two raters ranked the same outputs of an item"}
    return {"w": sum(ws) / len(ws), "chi2": None, "df": None, "p": None, "scope": "items", "groups": len(ws)}


def answers_first_best(answers: Sequence[Answer]) -> list[tuple[int, bool]]:
    """(K shown, whether the output shown first was picked or ranked best alone) per answer, for
    annotation.stats.comparisons.first_shown_best."""
    out = []
    for a in answers:
        if a.kind == "best_worst":
            out.append((len(a.shown), a.best == a.shown[0]))
        elif a.kind == "ranking":
            out.append((len(a.shown), a.ranks[0] == 1 and a.ranks.count(1) == 1))
    return out
