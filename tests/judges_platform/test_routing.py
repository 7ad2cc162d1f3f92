"""Routing inside one study: doubtful items served first, a human budget, early stopping when the
named comparisons are decided; driven by real judge runs (fake OpenAI server, real worker) and
real submits through the workspace services."""

from __future__ import annotations

import pytest

from annotation.models import Item, Study, StudyChange
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from judges.models import StudyRouting
from judges.services.routing import RoutingError, parse_comparisons, routing_configure, routing_refresh
from judges.services.runs import judge_run_start
from tests.conftest import make_user
from tests.judges_platform.conftest import wait_for, wait_run_ends
from tests.reports.factories import items_jsonl

KEYS = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]


def rate(study, rater, value_for_system) -> Item:
    """Rate the rater's next item through the workspace services; value per shown response's system."""
    a = assignment_next(study=study, rater=rater)
    outputs = {o.position: o for o in a.item.outputs.all()}
    responses = {}
    for n, position in enumerate(a.permutation, start=1):
        v = value_for_system(outputs[position].system, a.item)
        responses[str(n)] = {**{k: v for k in KEYS}, "decision": "ACCEPT"}
    assignment_submit(assignment=a, answers={"responses": responses}, time_on_task_ms=1000)
    return a.item


def test_items_judges_disagree_on_are_served_first(make_study, make_judge, make_run, annotator):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(12), raters_per_item=1)
    a = {(f"it-{i:03d}", p, "fluency"): 4 for i in range(12) for p in range(3)}
    b = dict(a)
    b[("it-003", 1, "fluency")] = 7  # the judges are 3 apart on two items
    b[("it-009", 0, "fluency")] = 1
    make_run(study, make_judge("ja"), a)
    make_run(study, make_judge("jb"), b)
    routing_configure(study=study, enabled=True, human_budget=None, comparisons=[])
    state = routing_refresh(study=study)
    assert state["routed"]["reasons"] == {"judges_disagree": 2} and state["routed"]["still_open"] == 2
    assert state["routed"]["examples"] == [{"item": "it-003", "reasons": ["judges_disagree"]},
                                           {"item": "it-009", "reasons": ["judges_disagree"]}]
    routed = set(Item.objects.filter(study=study, priority__gt=0).values_list("external_id", flat=True))
    assert routed == {"it-003", "it-009"}
    served = [rate(study, annotator, lambda s, item: 5).external_id for _ in range(2)]
    assert set(served) == {"it-003", "it-009"}  # before the ten others, whatever the rater's random order


def test_human_disagreement_brings_the_third_rating_forward(make_study):
    raters = [make_user(f"r{k}") for k in range(3)]
    study = make_study("rrgen-001", annotators=raters, items_text=items_jsonl(8), raters_per_item=3)
    routing_configure(study=study, enabled=True, human_budget=None, comparisons=[])
    first = rate(study, raters[0], lambda s, item: 1)
    # the second rater gets `first` some time; rate until they do, agreeing elsewhere
    for _ in range(8):
        item = rate(study, raters[1], lambda s, it: 7 if it.pk == first.pk else 1)
        if item.pk == first.pk:
            break
    state = routing_refresh(study=study)
    assert state["routed"]["reasons"] == {"humans_disagree": 1}
    assert rate(study, raters[2], lambda s, item: 4).pk == first.pk  # the third rater is sent there first


def test_budget_pauses_the_study_and_says_why(make_study, annotator, client_for, admin_user):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(6), raters_per_item=1)
    routing_configure(study=study, enabled=True, human_budget=2, comparisons=[])
    rate(study, annotator, lambda s, item: 5)
    assert routing_refresh(study=study)["stopped"] is None
    rate(study, annotator, lambda s, item: 5)
    state = routing_refresh(study=study)
    study.refresh_from_db()
    assert state["stopped"] == "the budget of 2 human-rated items is spent"
    assert study.status == Study.Status.PAUSED and assignment_next(study=study, rater=annotator) is None
    assert StudyChange.objects.filter(study=study, field="routing", new__contains="budget").exists()
    page = client_for(admin_user).get(f"/judges/studies/{study.slug}/").content.decode()
    assert "2 / 2 human-rated items" in page and "Study paused:" in page


def test_decided_comparisons_stop_early_and_the_intervals_are_kept(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(30), raters_per_item=1)
    routing_configure(study=study, enabled=True, human_budget=None,
                      comparisons=parse_comparisons("sys-a vs sys-c", ["sys-a", "sys-b", "sys-c"]))
    widths = []
    for k in range(30):
        rate(study, annotator, lambda s, item: {"sys-a": 6, "sys-b": 4, "sys-c": 3}[s] - (item.pk % 2))
        study.refresh_from_db()
        state = routing_refresh(study=study)
        ci = state["comparisons"][0]["ci"]
        if ci:
            widths.append(ci[1] - ci[0])
        if state["stopped"]:
            break
    assert state["stopped"] == "every named comparison is decided (its interval excludes 0)"
    assert state["comparisons"][0]["decided"] and state["comparisons"][0]["diff"] == pytest.approx(3.0)
    assert k < 29  # stopped before every item was rated
    assert len(StudyRouting.objects.get(study=study).state["history"]) == k + 1


def test_comparisons_name_the_bad_line():
    with pytest.raises(RoutingError, match="line 2: no system 'sys-z'"):
        parse_comparisons("sys-a vs sys-b\nsys-a vs sys-z", ["sys-a", "sys-b"])
    with pytest.raises(RoutingError, match="line 1: write two systems as 'A vs B'"):
        parse_comparisons("sys-a, sys-b", ["sys-a", "sys-b"])


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_and_submits_refresh_routing_through_the_worker(celery_worker_session, make_study,
                                                                       make_judge, annotator):
    from judges.fakeserver import running_fake_server

    from django.core.cache import cache

    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(4), raters_per_item=1)
    cache.delete(f"routing-due:{study.pk}")  # ids restart with each test database; Redis does not
    routing_configure(study=study, enabled=True, human_budget=None, comparisons=[])
    with running_fake_server(garbage=True) as server:  # answers with no verdict: every slot fails
        run = wait_run_ends(judge_run_start(study=study, judge=make_judge(endpoint=server.base_url)))
    assert run.n_unparsed == run.n_expected

    def routed() -> int | None:  # items the stored state counts as routed (saved after the priorities)
        return ((StudyRouting.objects.get(study=study).state or {}).get("routed") or {}).get("items")

    # The refresh commits the priorities, then computes and saves the state: wait for both.
    wait_for(lambda: Item.objects.filter(study=study, priority__gt=0).count() == 4 and routed() == 4, 30,
             what="routing refresh")
    state = StudyRouting.objects.get(study=study).state
    assert state["routed"]["reasons"] == {"judge_failed": 4}
    assert {e["item"] for e in state["routed"]["examples"]} == {f"it-{i:03d}" for i in range(4)}
    before = len(StudyRouting.objects.get(study=study).state["history"])
    rate(study, annotator, lambda s, item: 5)
    wait_for(lambda: len(StudyRouting.objects.get(study=study).state["history"]) > before, 30,
             what="refresh after a submit")


def test_routing_form(make_study, client_for, admin_user, researcher):
    study = make_study("rrgen-001", researchers=[researcher], items_text=items_jsonl(3))
    url = f"/judges/studies/{study.slug}/routing/"
    bad = client_for(admin_user).post(url, {"enabled": "on", "comparisons": "sys-a vs nobody"}, follow=True)
    assert "Routing not changed: comparisons, line 1: no system &#x27;nobody&#x27;" in bad.content.decode()
    ok = client_for(admin_user).post(url, {"enabled": "on", "human_budget": "10", "comparisons": "sys-a vs sys-b"},
                                     follow=True).content.decode()
    assert "Routing on: 0 items served first" in ok and "0 / 10 human-rated items" in ok
    assert "sys-a vs sys-b" in ok
    assert client_for(researcher).post(url, {"enabled": "on"}).status_code == 404


def test_switched_on_mid_study_the_intervals_are_traced_back(make_study, annotator):
    """Routing turned on after 20 items were rated shows how the comparison's interval narrowed."""
    # Upload order: the differences alternate with the item ids from the first items on (in a random
    # order the first few could share one difference, an interval of width 0 to narrow from).
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(24), raters_per_item=1,
                       randomize_items=False)
    for _ in range(20):
        rate(study, annotator, lambda s, item: {"sys-a": 5, "sys-b": 4, "sys-c": 3}[s] + (item.pk % 3) - 1
             + (s == "sys-a") * (item.pk % 2))
    routing_configure(study=study, enabled=True, human_budget=None, comparisons=[["sys-a", "sys-b"]],
                      auto_pause=False)
    state = routing_refresh(study=study)
    history = state["history"]
    assert [h["n_rated"] for h in history] == sorted({h["n_rated"] for h in history}) and history[-1]["n_rated"] == 20
    assert len(history) >= 8
    widths = [ci[1] - ci[0] for h in history if (ci := h["comparisons"]["sys-a vs sys-b"])]
    assert widths[-1] < widths[0]  # more items, a narrower interval
    assert state["comparisons"][0]["ci"] == history[-1]["comparisons"]["sys-a vs sys-b"]
