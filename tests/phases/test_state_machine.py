"""One state machine for the page and the API: rate/next/ names the participant's phase, each phase
is answered through its endpoint, and no call out of order reaches a later phase."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, CrowdParticipant, PhaseRecord, Study
from tests.phases.conftest import PHASES, enter, expected_winner, pair_answers

pytestmark = pytest.mark.django_db

PRE = {"native": "no", "age": 34, "langs": ["German", "English"]}


@pytest.fixture
def study(crowd_study):
    crowd_study.phases = PHASES
    crowd_study.save(update_fields=["phases"])
    return crowd_study


@pytest.fixture
def api(api_for, annotator, study):
    study.members.create(user=annotator, role="annotator")
    return api_for(annotator)


def nxt(api, study) -> dict:
    r = api.post(f"/api/studies/{study.slug}/rate/next/")
    assert r.status_code == 200, r.content
    return r.json()


def post(api, study, path: str, body: dict | None = None):
    return api.post(f"/api/studies/{study.slug}/{path}", body or {}, format="json")


def answer_training(api, study, state: dict, *, right: bool) -> dict:
    a = Assignment.objects.get(token=state["assignment"]["token"])
    a.item.load_outputs()
    good = expected_winner(a)
    winner = good if right else {"1": "2", "2": "1"}[good]
    r = api.post(f"/api/studies/{study.slug}/rate/{a.token}/submit/?next=1", {"answers": pair_answers(winner)},
                 format="json")
    assert r.status_code == 200, r.content
    assert r.json()["training"]["right"] is right and r.json()["training"]["explanation"]
    return r.json()["next"]


def through_instructions(api, study) -> dict:
    assert post(api, study, "consent/", {"agree": True}).json()["state"] == "questionnaire"
    assert post(api, study, "questionnaire/pre/", {"answers": PRE}).json()["state"] == "instructions"
    return post(api, study, "instructions/", {"answers": {"tie_ok": "yes"}}).json()


def test_every_phase_in_order_through_the_api(api, study, annotator):
    state = nxt(api, study)
    assert state["state"] == "consent" and "anonymous" in state["text"] and state["assignment"] is None
    assert post(api, study, "consent/", {"agree": True}).json()["state"] == "questionnaire"
    state = nxt(api, study)
    assert state["which"] == "pre" and [q["key"] for q in state["questions"]] == ["native", "age", "langs"]
    bad = post(api, study, "questionnaire/pre/", {"answers": {"native": "maybe", "age": 12, "extra": 1}})
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"native", "age", "extra"}
    assert "between 18 and 99" in bad.json()["errors"]["age"]
    assert not PhaseRecord.objects.filter(phase="pre").exists()  # nothing half-stored
    state = post(api, study, "questionnaire/pre/", {"answers": PRE}).json()
    assert state["state"] == "instructions" and state["attention_policy"]["reject_after_failed"] == 2
    assert "correct" not in state["check"][0]  # the check's answer is not given away
    wrong = post(api, study, "instructions/", {"answers": {"tie_ok": "no"}})
    assert wrong.status_code == 400 and "instructions" in wrong.json()["errors"]["tie_ok"]
    state = post(api, study, "instructions/", {"answers": {"tie_ok": "yes"}}).json()
    assert state["state"] == "training" and state["training"]["n_items"] == 2
    state = answer_training(api, study, state, right=True)
    state = answer_training(api, study, state, right=False)  # 1 of 2: the pass mark is 0.5
    assert state["state"] == "rate" and not Assignment.objects.get(token=state["assignment"]["token"]).item.is_training
    assert "system" not in str(state["assignment"])
    stored = PhaseRecord.objects.get(rater=annotator, phase="pre").answers
    assert stored == {"native": "no", "age": 34, "langs": ["English", "German"]}


def test_no_call_out_of_order_reaches_a_later_phase(api, study, annotator):
    # Before consent: no questionnaire, no instructions, no training retry, no post answers, no item.
    for path, body in (("questionnaire/pre/", {"answers": PRE}), ("instructions/", {"answers": {"tie_ok": "yes"}}),
                       ("questionnaire/post/", {"answers": {"difficulty": 2}}), ("training/retry/", {})):
        r = post(api, study, path, body)
        assert r.status_code == 409 and r.json()["state"] == "consent", (path, r.content)
    assert not PhaseRecord.objects.exists()
    # An item held from before (e.g. handed out before the phases were set) cannot be answered yet.
    study.phases, study.training_pass_mark = {}, None
    study.save(update_fields=["phases", "training_pass_mark"])
    held = nxt(api, study)["assignment"]["token"]
    study.phases, study.training_pass_mark = PHASES, 0.5
    study.save(update_fields=["phases", "training_pass_mark"])
    for what in ("submit", "draft"):
        r = api.post(f"/api/studies/{study.slug}/rate/{held}/{what}/", {"answers": pair_answers()}, format="json")
        assert r.status_code == 409 and r.json()["state"] == "consent"
    assert Assignment.objects.get(token=held).status == "active"
    # After consent, before the questionnaire: the instructions and the item are still out of reach.
    post(api, study, "consent/", {"agree": True})
    assert post(api, study, "instructions/", {"answers": {"tie_ok": "yes"}}).json()["state"] == "questionnaire"
    assert post(api, study, "consent/", {"agree": False}).status_code == 409  # consent is given once
    post(api, study, "questionnaire/pre/", {"answers": PRE})
    assert post(api, study, "questionnaire/pre/", {"answers": PRE}).json()["state"] == "instructions"
    r = api.post(f"/api/studies/{study.slug}/rate/{held}/submit/", {"answers": pair_answers()}, format="json")
    assert r.status_code == 409 and r.json()["state"] == "instructions"
    # In training: the regular item still cannot be answered, nor the post questionnaire.
    state = post(api, study, "instructions/", {"answers": {"tie_ok": "yes"}}).json()
    assert state["state"] == "training"
    r = api.post(f"/api/studies/{study.slug}/rate/{held}/submit/", {"answers": pair_answers()}, format="json")
    assert r.status_code == 409 and r.json()["state"] == "training"
    assert post(api, study, "questionnaire/post/", {"answers": {"difficulty": 2}}).json()["state"] == "training"
    assert post(api, study, "training/retry/").json()["state"] == "training"  # nothing failed yet
    # Failed training: no rating, no retry twice.
    state = answer_training(api, study, state, right=False)
    state = answer_training(api, study, state, right=False)
    assert state["state"] == "training_failed" and state["retry_left"] is True
    r = api.post(f"/api/studies/{study.slug}/rate/{held}/submit/", {"answers": pair_answers()}, format="json")
    assert r.status_code == 409 and r.json()["state"] == "training_failed"
    # While rating: the post questionnaire waits until no item is left.
    state = post(api, study, "training/retry/").json()
    state = answer_training(api, study, state, right=True)
    state = answer_training(api, study, state, right=True)
    assert state["state"] == "rate"
    assert post(api, study, "questionnaire/post/", {"answers": {"difficulty": 2}}).json()["state"] == "rate"
    assert not PhaseRecord.objects.filter(phase="post").exists()


def test_failed_training_says_so_with_the_retry_left_then_screens_out(api, study):
    """The reported bug: a rater who failed training got {"state": "done"} while the page offered a retry."""
    state = through_instructions(api, study)
    state = answer_training(api, study, state, right=False)
    state = answer_training(api, study, state, right=False)
    assert nxt(api, study) == {**state, "assignment": None}
    assert state["state"] == "training_failed" and state["retry_left"] is True and state["n_correct"] == 0
    state = post(api, study, "training/retry/").json()
    assert state["state"] == "training"
    state = answer_training(api, study, state, right=False)
    state = answer_training(api, study, state, right=False)
    assert state["state"] == "screened_out" and state["reason"] == "training_failed"
    assert state["training"]["retry_left"] is False
    assert post(api, study, "training/retry/").status_code == 409


def test_declining_consent_keeps_only_the_decline_and_returns_to_the_panel(link, study):
    client = enter(link, "decliner")
    page = client.get(f"/studies/{study.slug}/rate/").content.decode()
    assert 'data-testid="phase-consent"' in page and "anonymous" in page
    client.post(f"/studies/{study.slug}/rate/consent/", {"agree": "no"})
    user = CrowdParticipant.objects.get(participant_id="decliner").user
    assert list(PhaseRecord.objects.filter(rater=user).values_list("phase", "outcome", "answers")) == [
        ("consent", "declined", {})]
    assert not Assignment.objects.filter(rater=user).exists()
    page = client.get(f"/studies/{study.slug}/rate/").content.decode()
    assert 'data-reason="consent_declined"' in page
    assert "https://app.prolific.com/submissions/complete?cc=NOCONSENT" in page


def test_after_rating_the_post_questionnaire_then_done(api, study, annotator):
    study.raters_per_item = 1
    study.save(update_fields=["raters_per_item"])
    study.items.filter(is_training=False).exclude(external_id__in=list(
        study.items.filter(is_training=False).values_list("external_id", flat=True)[:1])).delete()
    state = through_instructions(api, study)
    state = answer_training(api, study, state, right=True)
    state = answer_training(api, study, state, right=True)
    r = api.post(f"/api/studies/{study.slug}/rate/{state['assignment']['token']}/submit/?next=1",
                 {"answers": pair_answers()}, format="json")
    state = r.json()["next"]
    assert state["state"] == "questionnaire" and state["which"] == "post"
    bad = post(api, study, "questionnaire/post/", {"answers": {"difficulty": 9}})
    assert bad.status_code == 400 and "1 to 5" in bad.json()["errors"]["difficulty"]
    state = post(api, study, "questionnaire/post/", {"answers": {"difficulty": 2}}).json()
    assert state == {"state": "done", "completion_text": "Thank you!", "assignment": None}


def test_a_passed_deadline_closes_the_study(api, study):
    from datetime import timedelta

    from django.utils import timezone

    study.deadline = timezone.now() - timedelta(minutes=1)
    study.save(update_fields=["deadline"])
    assert nxt(api, study)["state"] == "closed"
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED
    assert study.changes.filter(field="deadline", new__contains="closed").exists()


def test_the_manage_page_shows_a_study_past_its_deadline_closed(study, client_for, admin_user):
    from datetime import timedelta

    from django.utils import timezone

    study.deadline = timezone.now() - timedelta(seconds=1)
    study.save(update_fields=["deadline"])
    client_for(admin_user).get(f"/studies/{study.slug}/manage/")
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED


def test_a_paused_rater_is_told_so(api, study, annotator):
    study.phases = {}
    study.training_pass_mark = None
    study.save(update_fields=["phases", "training_pass_mark"])
    study.members.filter(user=annotator).update(paused=True)
    assert nxt(api, study)["state"] == "paused"


def test_the_schema_documents_each_phase_endpoint(api_for, admin_user):
    schema = api_for(admin_user).get("/api/schema/?format=json").json()
    for path in ("consent/", "questionnaire/{which}/", "instructions/", "training/retry/", "rate/next/"):
        assert f"/api/studies/{{slug}}/{path}" in schema["paths"], path


def test_an_attention_policy_alone_is_shown_before_rating(api, study):
    study.phases = {"attention_policy": {"reject_after_failed": 3, "text": "Checks look like ordinary items."}}
    study.training_pass_mark = None
    study.save(update_fields=["phases", "training_pass_mark"])
    state = nxt(api, study)
    assert state["state"] == "instructions" and state["attention_policy"]["reject_after_failed"] == 3
    assert state["check"] == []
    assert post(api, study, "instructions/").json()["state"] == "rate"


def test_a_page_form_out_of_order_shows_where_the_rater_is_in_the_studys_language(link, study):
    """The instructions' form posted before consent (Back, a second tab): nothing stored, the consent
    page again with a message in the study's language; the reason stays for the API."""
    study.language = "de"
    study.save(update_fields=["language"])
    client = enter(link, "early")
    page = client.post(f"/studies/{study.slug}/rate/instructions/", {"q_tie_ok": "yes"}, follow=True)
    text = page.content.decode()
    assert 'data-testid="phase-consent"' in text
    assert "Dieses Formular ist gerade nicht Ihr Schritt" in text and "Ich willige ein und fahre fort" in text
    assert not PhaseRecord.objects.filter(rater=CrowdParticipant.objects.get(participant_id="early").user).exists()
