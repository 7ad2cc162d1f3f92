"""Rounds of an active_inference study draw themselves (issue 58 §1): the pilot when a judge run ends with
scores, each next round when the last item of the round before has its raters, through a real Celery
worker; two requests for the same round draw it once."""

from __future__ import annotations

import json
import threading
import time

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from annotation.models import Item
from annotation.services.active_inference import active_draw, next_round
from annotation.services.assignments import assignment_next
from annotation.services.items import items_import
from annotation.services.ratings import assignment_submit
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.simulation.items import items_for
from annotation.simulation.latent import Knobs
from annotation.simulation.raters import simulate_ratings
from judges.selectors import study_jury
from judges.simulation import simulated_judges_run
from judges.tasks import active_draw_next
from rubrics.services import rubric_presets_install, rubric_version_create
from tests.conftest import make_user

PRESET = "feedback-000"
RUBRIC = {"slug": "active-rounds-test", "name": "Active rounds test", "criteria": [
    {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 5}]}


def _drawn(study) -> int:
    return Item.objects.filter(study=study, sampling_probability__isnull=False).count()


def _settled(study, quiet_s: float = 1.5) -> int:
    """The number of drawn items once it has not changed for quiet_s."""
    seen = _drawn(study)
    while True:
        time.sleep(quiet_s)
        now = _drawn(study)
        if now == seen:
            return now
        seen = now


def _wait(what, limit_s: float = 60.0):
    deadline = time.monotonic() + limit_s
    while not (value := what()):
        assert time.monotonic() < deadline, "the worker did not draw the round"
        time.sleep(0.2)
    return value


@pytest.mark.django_db(transaction=True)
def test_the_worker_draws_the_pilot_when_the_judges_end_and_the_next_round_when_it_is_rated(
        celery_worker_session, admin_user):
    version = {v.rubric.slug: v for v in rubric_presets_install()}[PRESET]
    policy = {"name": "active_inference", "budget": 8, "pilot": 0.25, "rounds": 2}
    study = study_create(name="Rounds", slug="active-rounds", rubric_version=version, user=admin_user,
                         raters_per_item=1, sampling_policy=policy)
    items_import(study=study, filename="items.jsonl",
                 text="".join(json.dumps(r) + "\n" for r in items_for(PRESET, 24, seed=58)))
    rater = make_user("rounds-rater")
    study_members_add(study=study, usernames=[rater.username], role="annotator")
    study_set_status(study=study, status="open")
    assert next_round(study) == 0 and _drawn(study) == 0

    runs = simulated_judges_run(study=study, preset=PRESET, n_judges=2, knobs=Knobs(), seed=58, worker="yes")
    assert [r.status for r in runs] == ["done", "done"]
    # two runs ended, each asking for the pilot: it is drawn once (6 of 24 items), nothing by hand
    _wait(lambda: _drawn(study) >= 6)
    _settled(study)  # room for a second draw, were there one
    pilot = set(Item.objects.filter(study=study, sampling_probability__isnull=False).values_list("pk", flat=True))
    # 6 items, or 6 + 9 when no pilot item went to humans (no rating would ask: the task draws on)
    assert len(pilot) in (6, 15)

    simulate_ratings(study=study, raters=[rater], preset=PRESET, knobs=Knobs(), seed=58)
    # the round's last rating asked the worker for the next round
    _wait(lambda: _drawn(study) > len(pilot))
    # one more round (or two, when one sent nobody: each commits on its own), never a repeat
    assert _settled(study) in (15, 24)
    assert pilot <= set(Item.objects.filter(study=study, sampling_probability__isnull=False)
                        .values_list("pk", flat=True))


def _study(admin, name: str, n: int, **policy):
    version, _ = rubric_version_create(data=RUBRIC)
    study = study_create(name=name, rubric_version=version, user=admin, raters_per_item=1,
                         sampling_policy={"name": "active_inference", **policy})
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": f"x{k:02d}", "context": "c", "outputs": [{"system": "s", "content": f"a{k}"}]}) for k in range(n)))
    return study


@pytest.mark.django_db(transaction=True)
def test_two_requests_for_the_same_round_at_once_draw_it_once(admin_user):
    study = _study(admin_user, "Race", 40, budget=20, pilot=0.2, rounds=4)
    results, gate = [], threading.Barrier(2)

    def ask():
        try:
            gate.wait()
            results.append(active_draw_next(study.pk, 0))
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    drawn = [r for r in results if r is not None]
    # budget 20 of 40: each pilot item goes to humans with probability 1/2; the pilot is 8 items
    assert len(drawn) == 1 and drawn[0]["round"] == 0 and drawn[0]["items"] == 8 and _drawn(study) == 8
    assert active_draw_next(study.pk, 0) is None  # asked again later: drawn already
    assert active_draw_next(study.pk, 1) is None  # the pilot waits for its ratings
    Item.objects.filter(study=study).update(slots_wanted=0)  # as if nobody were drawn: the round is rated
    out = active_draw_next(study.pk, 1)
    # round 1, and on while a round sends nobody to humans (no rating would ask for the next)
    assert out["round"] >= 1 and (out["drawn"] > 0 or out["left"] == 0)
    assert _drawn(study) == 8 + 8 * out["round"]


@pytest.mark.django_db(transaction=True)
def test_the_last_two_ratings_of_a_round_submitted_at_once_draw_the_next_round_once(celery_worker_session,
                                                                                    admin_user):
    # budget = items: every item of a round goes to humans; a pilot of 2 items, then rounds of 5
    study = _study(admin_user, "Two at once", 12, budget=12, pilot=0.2, rounds=2)
    raters = [make_user(f"at-once-{k}") for k in range(2)]
    study_members_add(study=study, usernames=[r.username for r in raters], role="annotator")
    study_set_status(study=study, status="open")
    assert active_draw_next(study.pk, 0)["drawn"] == 2
    held = [assignment_next(study=study, rater=r) for r in raters]
    assert {a.item_id for a in held if a} == set(Item.objects.filter(study=study, slots_wanted=1)
                                                  .values_list("pk", flat=True))
    gate = threading.Barrier(2)

    def submit(a):
        try:
            gate.wait()
            assignment_submit(assignment=a, answers={"responses": {"1": {"quality": 3}}})
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(a,)) for a in held]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _wait(lambda: _drawn(study) > 2)
    assert _settled(study) == 7 and next_round(study) == 2  # round 1 once: its 5 items wait for their raters


@pytest.mark.django_db
def test_draw_humans_still_draws_by_hand(admin_user):
    study = _study(admin_user, "Hand", 10, budget=5, pilot=0.5, rounds=1)
    out = StringIO()
    call_command("draw_humans", "--study", study.slug, "--seed", "2", stdout=out)
    assert out.getvalue().startswith("round 0: 5 items") and next_round(study) == 1
    with pytest.raises(ValueError, match="round 0 of .* is drawn already"):
        active_draw(study=study, jury=study_jury(study), round_no=0)


@pytest.mark.django_db(transaction=True)
def test_a_round_whose_request_the_broker_lost_is_drawn_by_the_lost_work_sweep(admin_user):
    """The last rating of a round asks for the next; when that request is lost, the workers' lost-work sweep
    (config/celery.py) draws the round, once, and leaves a round that still waits for ratings alone."""
    from annotation.background_requests import no_background_requests
    from config.celery import LOST_WORK_SWEEPS
    from judges.tasks import requeue_lost_draws

    assert "judges.tasks.requeue_lost_draws" in LOST_WORK_SWEEPS
    study = _study(admin_user, "Lost request", 12, budget=12, pilot=0.2, rounds=2)
    rater = make_user("lost-request-rater")
    study_members_add(study=study, usernames=[rater.username], role="annotator")
    study_set_status(study=study, status="open")
    assert requeue_lost_draws() == [] and _drawn(study) == 0  # the pilot waits for the judges
    assert active_draw_next(study.pk, 0)["drawn"] == 2
    assert requeue_lost_draws() == []  # the pilot waits for its ratings
    with no_background_requests():  # the request the round's last rating makes is lost
        for _ in range(2):
            a = assignment_next(study=study, rater=rater)
            assignment_submit(assignment=a, answers={"responses": {"1": {"quality": 3}}})
    assert next_round(study) == 1 and _drawn(study) == 2
    assert requeue_lost_draws() == [study.pk] and _drawn(study) == 7
    assert requeue_lost_draws() == [] and _drawn(study) == 7  # round 1 waits for its ratings
