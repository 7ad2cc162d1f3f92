"""Comparative questions for human raters: balanced dealing of pairs and tuples, answers by shown
number stored by output id (docs/rubric-format.md), validation by name, gold checks."""

from __future__ import annotations

import json
from collections import Counter
from itertools import permutations

import pytest

from annotation.models import Assignment, Rating
from annotation.services import comparative
from annotation.services.assignments import assignment_next
from annotation.services.ratings import AnswerError, answers_from_form, assignment_submit
from tests.conftest import make_user

# ---------------------------------------------------------------- designs (pure)


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_pairs_show_every_ordered_pair_once_per_round(n):
    for seed in range(20):
        round_ = [tuple(comparative.pair_order(n, slot=s, seed=seed)) for s in range(n * (n - 1))]
        assert sorted(round_) == sorted(permutations(range(n), 2))
        # the first C(n,2) slots already cover every unordered pair once
        firsts = {frozenset(p) for p in round_[: n * (n - 1) // 2]}
        assert len(firsts) == n * (n - 1) // 2


def test_pairs_balance_positions_over_items():
    """Over many items with fewer raters than a full round, each output is shown first about equally
    often (no output favoured by the design): a chi-square test cannot reject uniformity."""
    from scipy.stats import chisquare

    first = Counter(comparative.pair_order(4, slot=s, seed=seed)[0] for seed in range(2000) for s in range(3))
    assert chisquare(list(first.values())).pvalue > 0.001


@pytest.mark.parametrize("n,size", [(6, 4), (5, 4), (8, 4), (7, 3), (4, 4), (3, 4)])
def test_tuples_show_every_output_equally_often(n, size):
    rounds = comparative.slots_per_round(n, ("best_worst", size))
    for seed in range(10):
        tuples = [comparative.tuple_order(n, size, slot=s, seed=seed) for s in range(rounds)]
        assert all(len(t) == min(n, size) and len(set(t)) == len(t) for t in tuples)
        counts = Counter(o for t in tuples for o in t)
        assert set(counts) == set(range(n)) and len(set(counts.values())) == 1, counts


def test_shown_design_follows_the_rubric():
    assert comparative.shown_design({"criteria": [{"kind": "likert"}, {"kind": "pairwise"}]}) == ("pairwise", 2)
    assert comparative.shown_design({"criteria": [{"kind": "best_worst", "tuple_size": 5}]}) == ("best_worst", 5)
    assert comparative.shown_design({"criteria": [{"kind": "ranking"}]}) == ("all", 0)


# ---------------------------------------------------------------- answers (pure)

PAIR = {"key": "pref", "name": "Better", "kind": "pairwise", "ties": True, "strength": True}
RANK = {"key": "order", "name": "Ranking", "kind": "ranking"}
BWS = {"key": "bw", "name": "Best and worst", "kind": "best_worst"}


def test_pairwise_answer_is_stored_by_output_id():
    assert comparative.clean_comparative(PAIR, {"winner": "2", "strength": "clearly"}, [40, 30]) == \
        {"shown": [40, 30], "winner": 30, "strength": "clearly"}
    assert comparative.clean_comparative(PAIR, {"winner": "tie"}, [40, 30]) == \
        {"shown": [40, 30], "winner": "tie", "strength": None}


@pytest.mark.parametrize("criterion,value,message", [
    (PAIR, {"winner": "3", "strength": "clearly"}, "one of the responses shown, 1 to 2"),
    (PAIR, {"winner": "1"}, "slightly or clearly"),
    ({**PAIR, "ties": False}, {"winner": "tie"}, "allows no tie"),
    ({**PAIR, "strength": False}, {"winner": "1", "strength": "clearly"}, "asks for no strength"),
    (PAIR, {"winner": "1", "strength": "clearly", "why": "x"}, "unknown field"),
    (RANK, {"ranks": {"1": 1, "2": 2}}, "missing: Response 3"),
    (RANK, {"ranks": {"1": 1, "2": 1, "3": 2}}, "allows no ties"),
    (RANK, {"ranks": {"1": 1, "2": 2, "3": 4}}, r"from 1 \(best\) to 3"),
    (RANK, {"ranks": {"1": 1, "2": 2, "4": 3}}, "1 to 3"),
    (BWS, {"best": "1", "worst": "1"}, "must be different"),
    (BWS, {"best": "1"}, "both the best and the worst"),
    (BWS, {"best": "9", "worst": "1"}, "best must be one of the responses shown"),
])
def test_bad_comparative_answers_are_named(criterion, value, message):
    shown = [11, 12] if criterion["kind"] == "pairwise" else [11, 12, 13]
    with pytest.raises(ValueError, match=message):
        comparative.clean_comparative(criterion, value, shown)


def test_ranking_with_ties_allowed():
    stored = comparative.clean_comparative({**RANK, "ties": True}, {"ranks": {"1": 1, "2": 1, "3": 3}}, [5, 6, 7])
    assert stored == {"shown": [5, 6, 7], "ranks": [1, 1, 3]}


def test_gold_checks_name_systems():
    systems = {1: "good", 2: "mid", 3: "bad", 4: "worse"}
    assert comparative.gold_agrees(PAIR, {"shown": [3, 1], "winner": 1}, ["good", "mid", "bad"], systems)
    assert not comparative.gold_agrees(PAIR, {"shown": [3, 1], "winner": 3}, ["good", "mid", "bad"], systems)
    assert comparative.gold_agrees(PAIR, {"shown": [2, 1], "winner": 1}, "good", systems)  # one name: that one is best
    assert comparative.gold_agrees(RANK, {"shown": [3, 1, 2], "ranks": [3, 1, 2]}, ["good", "mid", "bad"], systems)
    assert not comparative.gold_agrees(RANK, {"shown": [3, 1, 2], "ranks": [1, 2, 3]}, ["good", "mid", "bad"], systems)
    assert comparative.gold_agrees(BWS, {"shown": [4, 2, 1, 3], "best": 1, "worst": 4},
                                   ["good", "mid", "bad", "worse"], systems)
    assert not comparative.gold_agrees(BWS, {"shown": [4, 2, 1, 3], "best": 1, "worst": 3},
                                       ["good", "mid", "bad", "worse"], systems)


# ---------------------------------------------------------------- through the services


def _study(admin, rubric: dict, *, n_items: int = 3, k: int = 4, rpi: int = 2, gold: dict | None = None):
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_members_add, study_set_status
    from rubrics.services import rubric_version_create

    version, _ = rubric_version_create(data=rubric)
    study = study_create(name=rubric["name"], rubric_version=version, user=admin, raters_per_item=rpi,
                         attention_check_rate=0.5 if gold else 0.0)
    rows = [{"id": f"it-{i}", "context": f"Question {i}",
             "outputs": [{"system": f"sys-{j}", "content": f"Answer {j} to {i}"} for j in range(k)]}
            for i in range(n_items)]
    if gold:
        rows.append({"id": "gold-1", "context": "Check", "attention_check": True, "gold": gold,
                     "outputs": [{"system": f"sys-{j}", "content": f"Gold answer {j}"} for j in range(k)]})
    items_import(study=study, text="\n".join(json.dumps(r) for r in rows), filename="items.jsonl")
    raters = [make_user(f"cmp-{i}") for i in range(rpi * 2)]
    study_members_add(study=study, usernames=[u.username for u in raters], role="annotator")
    study_set_status(study=study, status="open")
    return study, raters


PAIR_RUBRIC = {"slug": "pair-test", "name": "Pairwise test", "criteria": [
    {"key": "help", "name": "Helpfulness", "kind": "likert", "min": 1, "max": 5},
    {"key": "pref", "name": "Better answer", "kind": "pairwise", "ties": True, "strength": True,
     "reasoning": "optional"}]}
BWS_RUBRIC = {"slug": "bws-test", "name": "BWS test", "criteria": [
    {"key": "bw", "name": "Best and worst", "kind": "best_worst", "tuple_size": 3},
    {"key": "order", "name": "Ranking", "kind": "ranking"}]}


@pytest.mark.django_db(transaction=True)
def test_pairwise_study_shows_pairs_in_both_orders_and_stores_by_output(admin_user):
    study, raters = _study(admin_user, PAIR_RUBRIC, n_items=2, k=2, rpi=2)
    seen = Counter()
    for rater in raters[:2]:
        while (a := assignment_next(study=study, rater=rater)) is not None:
            assert len(a.permutation) == 2
            seen[(a.item_id, tuple(a.permutation))] += 1
            shown = {o.position: o for o in a.item.outputs.all()}
            form = {"r1__help": "4", "r2__help": "2", "item__pref": "1", "item__pref__strength": "clearly",
                    "item__pref__reasoning": "more complete"}
            answers = answers_from_form(form, rubric=study.rubric, n_responses=2)
            assignment_submit(assignment=a, answers=answers)
            stored = Rating.objects.get(assignment=a, criterion="pref")
            first, second = (shown[p].pk for p in a.permutation)
            assert stored.output_id is None and stored.reasoning == "more complete"
            assert stored.value == {"shown": [first, second], "winner": first, "strength": "clearly"}
            assert Rating.objects.filter(assignment=a, criterion="help").count() == 2
    # each item's two raters saw its pair in both orders
    for item_id in {i for i, _ in seen}:
        orders = {p for i, p in seen if i == item_id}
        assert orders == {(0, 1), (1, 0)}


@pytest.mark.django_db(transaction=True)
def test_a_bad_comparative_submit_stores_nothing(admin_user):
    study, raters = _study(admin_user, BWS_RUBRIC, n_items=1, k=5, rpi=1)
    a = assignment_next(study=study, rater=raters[0])
    assert len(a.permutation) == 3
    bad = {"item": {"bw": {"value": {"best": "2", "worst": "2"}},
                    "order": {"value": {"ranks": {"1": 1, "2": 2, "3": 3}}}}}
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers=bad)
    assert "item__bw" in exc.value.errors and "different" in exc.value.errors["item__bw"]
    assert not Rating.objects.filter(assignment=a).exists()
    assert Assignment.objects.get(pk=a.pk).status == "active"
    good = {"item": {"bw": {"value": {"best": "3", "worst": "1"}}, "order": {"value": {"ranks": {"1": 3, "2": 2, "3": 1}}}}}
    assignment_submit(assignment=a, answers=good)
    shown = {o.position: o.pk for o in a.item.outputs.all()}
    ids = [shown[p] for p in a.permutation]
    assert Rating.objects.get(assignment=a, criterion="bw").value == {"shown": ids, "best": ids[2], "worst": ids[0]}
    assert Rating.objects.get(assignment=a, criterion="order").value == {"shown": ids, "ranks": [3, 2, 1]}


@pytest.mark.django_db(transaction=True)
def test_tuples_over_a_study_show_every_output_equally_often(admin_user):
    study, raters = _study(admin_user, BWS_RUBRIC, n_items=1, k=6, rpi=4)
    counts = Counter()
    for rater in raters[:4]:
        a = assignment_next(study=study, rater=rater)
        counts.update(a.permutation)
    # 6 outputs in tuples of 3: every 2 slots show each once, so 4 slots show each twice
    assert counts == Counter({p: 2 for p in range(6)})


@pytest.mark.django_db(transaction=True)
def test_attention_checks_grade_comparative_answers_against_gold(admin_user):
    study, raters = _study(admin_user, PAIR_RUBRIC, n_items=4, k=3, rpi=1, gold={"pref": ["sys-0", "sys-1", "sys-2"]})
    graded = []
    for rater in raters:
        while (a := assignment_next(study=study, rater=rater)) is not None:
            shown = {o.position: o for o in a.item.outputs.all()}
            first, second = (shown[p] for p in a.permutation)
            better = "1" if first.system < second.system else "2"  # sys-0 beats sys-1 beats sys-2
            worse = "2" if better == "1" else "1"
            winner = better if rater.username.endswith(("0", "2")) else worse
            answers = {"responses": {"1": {"help": 3}, "2": {"help": 3}},
                       "item": {"pref": {"value": {"winner": winner, "strength": "slightly"}}}}
            done = assignment_submit(assignment=a, answers=answers)
            if done.is_attention_check:
                graded.append((rater.username, done.attention_passed))
    assert graded, "some rater got the attention check"
    for name, passed in graded:
        assert passed is name.endswith(("0", "2"))
