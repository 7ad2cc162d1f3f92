"""A large study's report computed by a Celery worker (annotation.reports.background): the page
shows a progress bar and polls, downloads and the API answer 202 with Retry-After, one computation
is queued per study, a failure is shown rather than queued again, and a report computed before is
served, marked out of date, while a newer one is computed. Large = REPORT_BACKGROUND_RATINGS
ratings; here it is set low so a small study counts as large."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from annotation.models import Rating
from annotation.reports import background
from annotation.reports.background import report_compute

pytestmark = pytest.mark.django_db


@pytest.fixture
def large(settings):
    settings.REPORT_BACKGROUND_RATINGS = 1


def _page(client, study, **params):
    return client.get(reverse("report", args=[study.slug]), params)


def test_a_small_study_is_computed_in_the_request(client, rated_study, researcher,
                                                  django_capture_on_commit_callbacks):
    client.force_login(researcher)
    with django_capture_on_commit_callbacks() as queued:
        page = _page(client, rated_study)
    assert page.status_code == 200 and 'id="agreement"' in page.content.decode()
    assert queued == []


def test_a_large_study_queues_one_computation_and_shows_its_progress(large, client, api_for, rated_study, researcher,
                                                                     django_capture_on_commit_callbacks):
    client.force_login(researcher)
    with django_capture_on_commit_callbacks() as first:
        page = _page(client, rated_study)
    html = page.content.decode()
    assert page.status_code == 200 and "Computing the report" in html and 'role="progressbar"' in html
    assert 'id="agreement"' not in html
    assert 'hx-get="/studies/' in html and "fragment=pending" in html and 'hx-trigger="every 2s"' in html
    assert len(first) == 1  # the task, sent once the request's transaction commits
    # Polls, downloads, the API and the paper kit queue nothing more while it is queued.
    with django_capture_on_commit_callbacks() as more:
        poll = _page(client, rated_study, fragment="pending")
        download = _page(client, rated_study, download="json")
        api = api_for(researcher).get(f"/api/studies/{rated_study.slug}/report/")
        kit = client.get(reverse("report-paper", args=[rated_study.slug]))
    assert more == []
    assert poll.status_code == 200 and 'id="report-pending"' in poll.content.decode()
    assert "<html" not in poll.content.decode()  # the fragment only
    for response in (download, api, kit):
        assert response.status_code == 202, response
        assert 2 <= int(response["Retry-After"]) <= 30
        assert "the report is being computed" in response.content.decode()


def test_the_page_shows_the_report_once_the_worker_has_computed_it(large, client, rated_study, researcher):
    client.force_login(researcher)
    assert "Computing the report" in _page(client, rated_study).content.decode()
    report_compute(rated_study.pk)  # what the task does
    poll = _page(client, rated_study, fragment="pending")
    assert poll.status_code == 204 and poll["HX-Refresh"] == "true"
    page = _page(client, rated_study)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="agreement"' in html and "report-out-of-date" not in html
    data = _page(client, rated_study, download="json").json()
    assert data["agreement"] and "out_of_date" not in data


def test_a_report_computed_before_is_served_out_of_date_while_the_current_one_is_computed(
        large, client, rated_study, researcher, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    report_compute(rated_study.pk)
    before = _page(client, rated_study, download="json").json()
    rating = Rating.objects.filter(assignment__study=rated_study).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value)  # an edit: the triggers count it
    with django_capture_on_commit_callbacks() as queued:
        page = _page(client, rated_study)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="agreement"' in html and 'id="report-out-of-date"' in html
    assert len(queued) == 1
    data = _page(client, rated_study, download="json").json()
    assert data["out_of_date"] is True and data["generated_at"] == before["generated_at"]
    report_compute(rated_study.pk)
    assert "out_of_date" not in _page(client, rated_study, download="json").json()


def test_a_failed_computation_is_shown_not_queued_on_every_poll(large, client, api_for, rated_study, researcher,
                                                                monkeypatch, django_capture_on_commit_callbacks):
    def fails(study, **kwargs):
        raise ValueError("the ratings table is unreadable")

    monkeypatch.setattr(background, "study_report", fails)
    client.force_login(researcher)
    _page(client, rated_study)
    with pytest.raises(ValueError):
        report_compute(rated_study.pk)
    poll = _page(client, rated_study, fragment="pending")  # htmx swaps no 500: the page reloads instead
    assert poll.status_code == 204 and poll["HX-Refresh"] == "true"
    with django_capture_on_commit_callbacks() as queued:
        page = _page(client, rated_study)
        api = api_for(researcher).get(f"/api/studies/{rated_study.slug}/report/")
    assert queued == []
    assert page.status_code == 500 and "the ratings table is unreadable" in page.content.decode()
    assert "fragment=pending" not in page.content.decode()  # no polling of a failure
    assert api.status_code == 500 and "ValueError: the ratings table is unreadable" in api.content.decode()


def test_after_a_failure_the_earlier_report_is_still_served(large, client, rated_study, researcher, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    client.force_login(researcher)
    report_compute(rated_study.pk)
    before = _page(client, rated_study, download="json").json()
    rating = Rating.objects.filter(assignment__study=rated_study).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value)

    def fails(study, **kwargs):
        raise MemoryError("out of memory")

    monkeypatch.setattr(background, "study_report", fails)
    with pytest.raises(MemoryError):
        report_compute(rated_study.pk)
    with django_capture_on_commit_callbacks() as queued:
        data = _page(client, rated_study, download="json").json()
    assert queued == []  # not queued again while the failure is kept
    assert data["out_of_date"] is True and data["generated_at"] == before["generated_at"]


def test_only_readers_reach_the_pending_page(large, client, rated_study, outsider):
    client.force_login(outsider)
    assert _page(client, rated_study).status_code == 404
    assert _page(client, rated_study, fragment="pending").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_computes_it_and_the_poll_sees_it(large, celery_worker_session, client, rated_study,
                                                        researcher):
    client.force_login(researcher)
    page = _page(client, rated_study)
    assert "Computing the report" in page.content.decode()
    deadline = time.monotonic() + 60
    while (poll := _page(client, rated_study, fragment="pending")).status_code != 204:
        assert time.monotonic() < deadline, poll.content.decode()[:500]
        time.sleep(0.2)
    assert 'id="agreement"' in _page(client, rated_study).content.decode()
