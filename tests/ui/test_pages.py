"""HTTP-level tests for the pages of issue 11: the annotator home, the study sub-navigation, the
items page (search, filters, keyset pages, blinded preview, delete/replace rules) and the progress
dashboard; each with who may not reach it."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, Item
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.conftest import make_user
from tests.workspace.conftest import items_jsonl, rrgen_answers

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------- home


def test_home_shows_status_progress_and_next_action_for_raters(make_study, annotator, client_for):
    open_study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(4), raters_per_item=1)
    a = assignment_next(study=open_study, rater=annotator)
    assignment_submit(assignment=a, answers=rrgen_answers(3))
    closed = make_study("feedback-000", annotators=[annotator], status="closed")
    draft = make_study("aqua-003", annotators=[annotator], status="draft")
    page = client_for(annotator).get("/").content.decode()
    assert open_study.name in page and "1 done · 3 left" in page and page.count("Continue rating") == 1
    assert f'href="/studies/{open_study.slug}/rate/"' in page
    assert closed.name in page and "Closed" in page and f'href="/studies/{closed.slug}/rate/"' not in page
    assert draft.name not in page  # a draft study is not offered at all


def test_home_for_an_annotator_with_nothing_left(make_study, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1), raters_per_item=1)
    assignment_submit(assignment=assignment_next(study=study, rater=annotator), answers=rrgen_answers(3))
    page = client_for(annotator).get("/").content.decode()
    assert "All done for now." in page and "1 done · 0 left" in page
    assert f'href="/studies/{study.slug}/rate/"' not in page


def test_workspace_refuses_draft_and_closed_studies(make_study, annotator, client_for):
    for status in ("draft", "closed"):
        study = make_study("rrgen-001", annotators=[annotator], status=status, items_text=items_jsonl(2, prefix=status),
                           slug=f"refuse-{status}")
        page = client_for(annotator).get(f"/studies/{study.slug}/rate/").content.decode()
        assert 'id="ws-form"' not in page and "This study is not open" in page
    assert not Assignment.objects.exists()


# ---------------------------------------------------------------- study navigation


def test_study_nav_links_follow_the_role(make_study, admin_user, researcher, client_for):
    study = make_study("rrgen-001", researchers=[researcher])
    as_admin = client_for(admin_user).get(f"/studies/{study.slug}/report/").content.decode()
    as_reader = client_for(researcher).get(f"/studies/{study.slug}/report/").content.decode()
    for href in ("/judges/studies/{s}/", "/judges/studies/{s}/gold/", "/judges/studies/{s}/doubt/",
                 "/studies/{s}/datasets/", "/studies/{s}/progress/", "/studies/{s}/report/", "/studies/{s}/plan/"):
        assert f'href="{href.format(s=study.slug)}"' in as_admin and f'href="{href.format(s=study.slug)}"' in as_reader
    for href in ("/studies/{s}/manage/", "/studies/{s}/items/"):
        assert f'href="{href.format(s=study.slug)}"' in as_admin
        assert f'href="{href.format(s=study.slug)}"' not in as_reader
    for path in ("datasets", "progress", "plan"):
        body = client_for(researcher).get(f"/studies/{study.slug}/{path}/").content.decode()
        assert 'class="subnav"' in body and 'aria-current="page"' in body
    for path in ("", "gold/", "doubt/"):
        assert 'class="subnav"' in client_for(researcher).get(f"/judges/studies/{study.slug}/{path}").content.decode()


# ---------------------------------------------------------------- items page


@pytest.fixture
def big_study(make_study, annotator):
    return make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(120), raters_per_item=1)


def test_items_page_is_for_its_managers_only(big_study, annotator, researcher, outsider, client_for):
    """Site admins and the study's owner manage its items (annotation.access: MANAGE); any other signed-in
    user gets 403, as on the manage pages."""
    for user in (annotator, researcher, outsider):
        assert client_for(user).get(f"/studies/{big_study.slug}/items/").status_code == 403
        item = big_study.items.first()
        assert client_for(user).get(f"/studies/{big_study.slug}/items/{item.pk}/preview/").status_code == 403
        assert client_for(user).post(f"/studies/{big_study.slug}/items/{item.pk}/delete/").status_code == 403
    assert Item.objects.filter(study=big_study).count() == 120


def test_items_keyset_pages_without_offset_or_full_count(big_study, admin_user, client_for):
    c = client_for(admin_user)
    with CaptureQueriesContext(connection) as queries:
        first = c.get(f"/studies/{big_study.slug}/items/")
    sql = " ".join(q["sql"].upper() for q in queries.captured_queries)
    assert "OFFSET" not in sql
    body = first.content.decode()
    assert "it-0000" in body and "it-0049" in body and "it-0050" not in body
    last_pk = Item.objects.get(study=big_study, external_id="it-0049").pk
    assert f"after={last_pk}" in body
    second = c.get(f"/studies/{big_study.slug}/items/?after={last_pk}").content.decode()
    assert "it-0050" in second and "it-0099" in second and "it-0049" not in second
    first_of_second = Item.objects.get(study=big_study, external_id="it-0050").pk
    back = c.get(f"/studies/{big_study.slug}/items/?before={first_of_second}").content.decode()
    assert "it-0000" in back and "it-0049" in back and "it-0050" not in back


def test_items_search_and_filters(big_study, admin_user, annotator, client_for):
    a = assignment_next(study=big_study, rater=annotator)
    assignment_submit(assignment=a, answers=rrgen_answers(3))
    rated = a.item.external_id
    c = client_for(admin_user)
    url = f"/studies/{big_study.slug}/items/"
    body = c.get(url, {"q": "it-0007"}).content.decode()
    assert "it-0007" in body and "it-0008" not in body
    body = c.get(url, {"q": "Review number 42:"}).content.decode()
    assert "it-0042" in body and "it-0041" not in body
    body = c.get(url, {"status": "complete"}).content.decode()
    assert rated in body and body.count('data-item="') == 1
    body = c.get(url, {"ratings": "1"}).content.decode()
    assert rated in body and body.count('data-item="') == 1
    assert c.get(url, {"system": "sys-z"}).content.decode().count('data-item="') == 0
    assert c.get(url, {"system": "sys-a"}).content.decode().count('data-item="') == 50
    assert c.get(url, {"flagged": "yes"}).content.decode().count('data-item="') == 0
    bad = c.get(url, {"ratings": "many"}).content.decode()
    assert "ratings: give a whole number" in bad
    fragment = c.get(url, {"q": "it-0003"}, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="results">') and "it-0003" in fragment


def test_preview_is_blinded_and_not_submittable(make_study, admin_user, client_for):
    pair = json.dumps({"id": "pair-1", "context": "Say hello.", "outputs": [
        {"system": "alpha-model", "content": "Hello there, friend."}, {"system": "beta-model", "content": "Hi."}]})
    study = make_study("rrgen-001", items_text=pair + "\n")
    item = study.items.get()
    body = client_for(admin_user).get(f"/studies/{study.slug}/items/{item.pk}/preview/").content.decode()
    assert "Hello there, friend." in body and "Response 1" in body and "Response 2" in body
    assert "alpha-model" not in body and "beta-model" not in body
    assert "data-preview" in body and "/submit/" not in body and "disabled" in body
    assert not Assignment.objects.exists()


def test_delete_and_replace_only_before_ratings(big_study, admin_user, annotator, client_for):
    c = client_for(admin_user)
    a = assignment_next(study=big_study, rater=annotator)
    taken = a.item
    free = Item.objects.filter(study=big_study).exclude(pk=taken.pk).first()
    r = c.post(f"/studies/{big_study.slug}/items/{taken.pk}/delete/", follow=True)
    assert "has been given to a rater" in r.content.decode() and Item.objects.filter(pk=taken.pk).exists()
    assignment_submit(assignment=a, answers=rrgen_answers(3))
    r = c.post(f"/studies/{big_study.slug}/items/{taken.pk}/replace/", {"context": "new"})
    assert r.status_code == 400 and "already has 1 rating" in r.content.decode()
    taken.refresh_from_db()
    assert taken.context.startswith("Review number")

    outputs = {o.position: o for o in free.outputs.all()}
    r = c.post(f"/studies/{big_study.slug}/items/{free.pk}/replace/",
               {"context": "A new review.", **{f"output-{p}": f"New response {p}." for p in outputs}})
    assert r.status_code == 302
    free.refresh_from_db()
    assert free.context == "A new review." and sorted(o.content for o in free.outputs.all())[0] == "New response 0."
    r = c.post(f"/studies/{big_study.slug}/items/{free.pk}/replace/", {"context": "x", "output-0": ""})
    assert r.status_code == 400 and "output 1: the response text may not be empty" in r.content.decode()
    r = c.post(f"/studies/{big_study.slug}/items/{free.pk}/delete/", follow=True)
    assert f"Item {free.external_id} deleted." in r.content.decode() and not Item.objects.filter(pk=free.pk).exists()


# ---------------------------------------------------------------- progress dashboard


def test_progress_dashboard_numbers_and_polling(make_study, admin_user, researcher, client_for):
    raters = [make_user(f"p{i}") for i in range(2)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(3),
                       raters_per_item=2)
    for rater, ms in ((raters[0], 4000), (raters[0], 8000), (raters[1], 6000)):
        a = assignment_next(study=study, rater=rater)
        assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=ms)
    a = assignment_next(study=study, rater=raters[1])
    assignment_submit(assignment=a, answers={"ignored": True, "ignore_reason": "The REVIEW text is deemed unsuitable"})
    body = client_for(researcher).get(f"/studies/{study.slug}/progress/").content.decode()
    assert 'hx-trigger="every 5s"' in body
    assert "4 of 6 ratings done" in body
    assert 'data-rater="p0"' in body and "6.0 s" in body  # p0's median of 4 s and 8 s
    assert "The REVIEW text is deemed unsuitable" in body
    fragment = client_for(admin_user).get(f"/studies/{study.slug}/progress/", HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="live"') and "<html" not in fragment


def test_progress_dashboard_is_not_for_raters_or_outsiders(make_study, annotator, outsider, client_for):
    study = make_study("rrgen-001", annotators=[annotator])
    for user in (annotator, outsider):
        assert client_for(user).get(f"/studies/{study.slug}/progress/").status_code == 404


def test_home_for_readers_shows_each_studys_progress(make_study, admin_user, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(4), raters_per_item=2)
    assignment_submit(assignment=assignment_next(study=study, rater=annotator), answers=rrgen_answers(3))
    page = client_for(admin_user).get("/").content.decode()
    assert "1 of 8 ratings done · 4 items" in page
    assert f'href="/studies/{study.slug}/progress/"' in page and f'href="/studies/{study.slug}/manage/"' in page


def test_home_tells_a_paused_rater_instead_of_offering_work(make_study, annotator, client_for):
    from annotation.models import StudyMember

    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(2))
    StudyMember.objects.filter(study=study, user=annotator).update(paused=True)
    page = client_for(annotator).get("/").content.decode()
    assert "Your work here is paused" in page and f'href="/studies/{study.slug}/rate/"' not in page
