"""The workspace over HTTP: who may reach it, the rating flow, drafts, errors, revisions."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, Rating, StudyMember
from annotation.services.studies import study_set_status
from tests.conftest import make_user
from tests.workspace.conftest import items_jsonl

HTMX = {"HTTP_HX_REQUEST": "true"}
LIKERT = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]


def full_form(n_responses: int = 3, value: str = "6") -> dict:
    form = {"time_on_task_ms": "4321"}
    for n in range(1, n_responses + 1):
        for key in LIKERT:
            form[f"r{n}__{key}"] = value
        form[f"r{n}__decision"] = "ACCEPT" if n % 2 else "REJECT"
    return form


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher], raters_per_item=2)


def _urls(study, token) -> dict[str, tuple[str, str]]:
    base = f"/studies/{study.slug}/rate/"
    return {
        "workspace": ("get", base), "guidelines": ("get", base + "guidelines/"), "history": ("get", base + "history/"),
        "detail": ("get", f"{base}{token}/"), "draft": ("post", f"{base}{token}/draft/"),
        "submit": ("post", f"{base}{token}/submit/"),
    }


def _active(client, study) -> Assignment:
    client.get(f"/studies/{study.slug}/rate/")
    return Assignment.objects.filter(study=study, status="active").latest("id")


# ---------------------------------------------------------------- who may not

def test_anonymous_is_sent_to_login(client, study, annotator, client_for):
    a = _active(client_for(annotator), study)
    for name, (method, url) in _urls(study, a.token).items():
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), name


@pytest.mark.parametrize("who", ["outsider", "researcher", "other_annotator", "admin"])
def test_non_annotators_get_404_everywhere(who, study, annotator, outsider, researcher, admin_user, client_for,
                                           make_study):
    a = _active(client_for(annotator), study)
    if who == "other_annotator":
        user = make_user("elsewhere")
        make_study("aqua-003", annotators=[user])
    else:
        user = {"outsider": outsider, "researcher": researcher, "admin": admin_user}[who]
    c = client_for(user)
    for name, (method, url) in _urls(study, a.token).items():
        assert getattr(c, method)(url).status_code == 404, (who, name)
    assert not Rating.objects.exists()


def test_a_fellow_rater_cannot_open_my_assignment(study, annotator, client_for):
    fellow = make_user("fellow")
    StudyMember.objects.create(study=study, user=fellow, role="annotator")
    mine = _active(client_for(annotator), study)
    c = client_for(fellow)
    for name, (method, url) in _urls(study, mine.token).items():
        if name in ("detail", "draft", "submit"):
            assert getattr(c, method)(url, full_form() if method == "post" else None).status_code == 404, name
    assert not Rating.objects.exists()
    assert c.get(f"/studies/{study.slug}/rate/not-a-token/").status_code == 404


# ---------------------------------------------------------------- flow

def test_workspace_shows_one_item_with_numbered_responses(study, annotator, client_for):
    page = client_for(annotator).get(f"/studies/{study.slug}/rate/").content.decode()
    a = Assignment.objects.get(rater=annotator)
    for n in (1, 2, 3):
        assert f'id="response-{n}"' in page and f"Response {n}" in page
    assert 'name="r1__semantic_relevance"' in page and 'value="7"' in page
    assert "Not at all" in page and "Completely" in page
    assert "3 and 5 are reserved for difficult/borderline cases" in page
    assert "Ignore this example" in page
    assert str(a.token) in page
    shown = {o.position: o.content for o in a.item.outputs.all()}
    first = page.index(shown[a.permutation[0]][:30])
    second = page.index(shown[a.permutation[1]][:30])
    assert first < second  # shown in the stored order


def test_draft_then_reload_keeps_answers(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    response = c.post(f"/studies/{study.slug}/rate/{a.token}/draft/",
                      {"r2__fluency": "5", "r1__highlights": '[{"start": 0, "end": 4}]', "time_on_task_ms": "900"})
    assert response.status_code == 200
    page = c.get(f"/studies/{study.slug}/rate/").content.decode()
    assert 'id="r2-fluency-5" name="r2__fluency" value="5" checked' in page
    assert "&quot;start&quot;: 0" in page
    a.refresh_from_db()
    assert a.time_on_task_ms == 900 and not Rating.objects.exists()


def test_incomplete_submit_shows_errors_and_keeps_the_input(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    form = full_form()
    del form["r3__fluency"]
    response = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", form)
    page = response.content.decode()
    assert response.status_code == 400  # refused, with the form and its errors
    assert "Response 3: Fluency is required" in page and 'href="#f-r3__fluency"' in page
    assert 'name="r1__fluency" value="6" checked' in page
    assert not Rating.objects.exists()
    a.refresh_from_db()
    assert a.status == "active" and a.draft["responses"]["1"]["fluency"]["value"] == "6"


def test_a_form_with_a_nul_character_is_shown_again_with_the_field_named(study, annotator, client_for):
    """A NUL character (%00 in a form post) cannot be stored: the page names the field and keeps the
    earlier draft rather than failing on the database."""
    c = client_for(annotator)
    a = _active(c, study)
    assert c.post(f"/studies/{study.slug}/rate/{a.token}/draft/", {"r1__fluency": "5"}).status_code == 200
    form = full_form()
    form["comment"] = "fine\x00"
    response = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", form)
    assert response.status_code == 400
    assert "contains a NUL character" in response.content.decode()
    a.refresh_from_db()
    assert a.status == "active" and a.draft["responses"]["1"]["fluency"]["value"] == "5" and not Rating.objects.exists()


def test_submit_stores_ratings_once_and_moves_on(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    url = f"/studies/{study.slug}/rate/{a.token}/submit/"
    response = c.post(url, full_form())
    assert response.status_code == 302 and response.url == f"/studies/{study.slug}/rate/"
    assert c.post(url, full_form()).status_code == 302  # double click
    assert Rating.objects.filter(assignment=a).count() == 15
    a.refresh_from_db()
    assert a.status == "submitted" and a.time_on_task_ms == 4321
    nxt = _active(c, study)
    assert nxt.pk != a.pk


def test_htmx_submit_swaps_in_the_next_item(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    response = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", full_form(), **HTMX)
    assert response.status_code == 200
    assert response["HX-Push-Url"] == f"/studies/{study.slug}/rate/"
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="workspace"') and "<html" not in body
    assert "1 done" in body
    nxt = Assignment.objects.get(rater=annotator, status="active")
    assert str(nxt.token) in body


def test_done_screen_when_no_work_is_left(make_study, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1))
    c = client_for(annotator)
    a = _active(c, study)
    c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", full_form())
    page = c.get(f"/studies/{study.slug}/rate/").content.decode()
    assert "All done" in page and "ws-form" not in page
    assert "1 done · 0 left" in page


def test_paused_and_closed_screens(study, annotator, client_for):
    c = client_for(annotator)
    StudyMember.objects.filter(user=annotator).update(paused=True)
    assert "Your work here is paused" in c.get(f"/studies/{study.slug}/rate/").content.decode()
    StudyMember.objects.filter(user=annotator).update(paused=False)
    study_set_status(study=study, status="closed")
    assert "This study is not open" in c.get(f"/studies/{study.slug}/rate/").content.decode()


def test_revise_a_submitted_item_while_open(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", full_form(value="6"))
    history = c.get(f"/studies/{study.slug}/rate/history/").content.decode()
    assert f"/studies/{study.slug}/rate/{a.token}/" in history
    page = c.get(f"/studies/{study.slug}/rate/{a.token}/").content.decode()
    assert "You are revising" in page and 'name="r2__fluency" value="6" checked' in page
    response = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", full_form(value="2"))
    assert response.status_code == 302
    assert set(Rating.objects.filter(assignment=a, criterion="fluency").values_list("value", flat=True)) == {2}
    assert Rating.objects.filter(assignment=a).count() == 15
    study_set_status(study=study, status="closed")
    assert c.get(f"/studies/{study.slug}/rate/{a.token}/").status_code == 302
    c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", full_form(value="4"))
    assert set(Rating.objects.filter(assignment=a, criterion="fluency").values_list("value", flat=True)) == {2}


def test_ignore_with_a_reason(study, annotator, client_for):
    c = client_for(annotator)
    a = _active(c, study)
    url = f"/studies/{study.slug}/rate/{a.token}/submit/"
    page = c.post(url, {"ignored": "1"}).content.decode()
    assert "say why this example should be ignored" in page
    reason = "The REVIEW text is deemed unsuitable"
    assert c.post(url, {"ignored": "1", "ignore_reason": reason}).status_code == 302
    a.refresh_from_db()
    assert a.ignored and a.ignore_reason == reason and not Rating.objects.filter(assignment=a).exists()


def test_guidelines_fragment_and_page(study, annotator, client_for):
    c = client_for(annotator)
    fragment = c.get(f"/studies/{study.slug}/rate/guidelines/", **HTMX).content.decode()
    assert "RRGen Human Evaluation: HELP!" in fragment and "<html" not in fragment
    assert "More than partially" in fragment
    page = c.get(f"/studies/{study.slug}/rate/guidelines/").content.decode()
    assert "<html" in page and "Back to rating" in page
