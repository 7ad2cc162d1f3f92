"""The report sections other apps add (annotation.reports.sections) are kept in the cache by what they
read: computed again when a rating changes, a judge run finishes or a participant answers, and not on
every view (each reads the study's ratings again: tens of seconds at ten million). A large study's are
computed by the worker, with its report or alone, and the page shows the earlier ones meanwhile."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import PhaseRecord, Rating
from annotation.reports import background
from annotation.reports.background import report_compute, sections_compute
from annotation.reports.facets import answers_inputs
from annotation.reports.sections import sections_cache_key
from judges.models import JudgeRun
from judges.report_section import finished_runs_inputs

pytestmark = pytest.mark.django_db

CALLS: list[int] = []


def counted(study, report):
    """A section that counts how often it is computed, and says so on the page."""
    CALLS.append(study.pk)
    return {"title": "Counted section", "template": "annotation/report_facets.html",
            "context": {"facets": []}, "data": {"computed": len(CALLS)}}


counted.inputs = lambda study: finished_runs_inputs(study) + answers_inputs(study)


def uncounted(study, report):
    """The same section, with no word on what it reads."""
    return counted(study, report)


@pytest.fixture
def counting(settings):
    CALLS.clear()
    settings.REPORT_SECTIONS = ["tests.reports.test_report_sections_cache.counted"]
    yield
    CALLS.clear()


def _json(client, study) -> dict:
    response = client.get(reverse("report", args=[study.slug]), {"download": "json"})
    assert response.status_code == 200, response
    return response.json()


def _finish_a_judge_run(study) -> JudgeRun:
    return JudgeRun.objects.create(study=study, config={"name": "j"}, criteria=[], status=JudgeRun.Status.DONE,
                                   finished_at=timezone.now())


def test_every_section_of_the_default_settings_names_what_it_reads(rated_study):
    assert sections_cache_key(rated_study) is not None


def test_sections_are_computed_again_only_when_what_they_read_changes(counting, client, rated_study, researcher, raters):
    client.force_login(researcher)
    assert _json(client, rated_study)["sections"] == {"Counted section": {"computed": 1}}
    client.get(reverse("report", args=[rated_study.slug]))
    assert _json(client, rated_study)["sections"] == {"Counted section": {"computed": 1}}
    assert len(CALLS) == 1
    run = _finish_a_judge_run(rated_study)
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 2}
    JudgeRun.objects.filter(pk=run.pk).update(finished_at=timezone.now(), n_scored=5)  # finished again
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 3}
    record = PhaseRecord.objects.create(study=rated_study, rater=raters[0], phase="pre", outcome="answered",
                                        answers={"native": "yes"})
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 4}
    PhaseRecord.objects.filter(pk=record.pk).update(answers={"native": "no"})  # an answer changed
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 5}
    rating = Rating.objects.filter(assignment__study=rated_study).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value)  # a rating edited: the triggers count it
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 6}
    assert _json(client, rated_study)["sections"]["Counted section"] == {"computed": 6}


def test_a_section_that_names_no_inputs_is_computed_on_every_view(client, rated_study, researcher, settings):
    CALLS.clear()
    settings.REPORT_SECTIONS = ["tests.reports.test_report_sections_cache.counted",
                                "tests.reports.test_report_sections_cache.uncounted"]
    assert sections_cache_key(rated_study) is None
    client.force_login(researcher)
    _json(client, rated_study)
    _json(client, rated_study)
    assert len(CALLS) == 4


def test_a_large_study_computes_its_sections_in_the_worker(counting, settings, client, rated_study, researcher,
                                                           monkeypatch, django_capture_on_commit_callbacks):
    settings.REPORT_BACKGROUND_RATINGS = 1
    client.force_login(researcher)
    report_compute(rated_study.pk)  # the report's task computes the sections after it
    assert len(CALLS) == 1
    page = client.get(reverse("report", args=[rated_study.slug])).content.decode()
    assert "Counted section" in page and 'id="report-out-of-date"' not in page
    assert len(CALLS) == 1  # none in the request
    _finish_a_judge_run(rated_study)
    with django_capture_on_commit_callbacks() as queued:
        data = _json(client, rated_study)
        page = client.get(reverse("report", args=[rated_study.slug])).content.decode()
    assert len(CALLS) == 1
    assert data["sections"]["Counted section"] == {"computed": 1} and data["out_of_date"] is True
    assert "Counted section" in page and 'id="report-out-of-date"' in page
    sent = []
    monkeypatch.setattr(background.current_app, "send_task", lambda name, args: sent.append((name, args)))
    for callback in queued:
        callback()
    assert sent == [("annotation.tasks.report_sections_compute", [rated_study.pk])]  # once, the sections alone
    sections_compute(rated_study.pk)
    assert len(CALLS) == 2
    data = _json(client, rated_study)
    assert data["sections"]["Counted section"] == {"computed": 2} and "out_of_date" not in data


def test_a_large_study_whose_sections_failed_shows_the_failure(counting, settings, client, rated_study, researcher,
                                                               monkeypatch):
    settings.REPORT_BACKGROUND_RATINGS = 1

    def fails(study, report):
        raise ValueError("the judge scores are unreadable")

    fails.inputs = counted.inputs
    settings.REPORT_SECTIONS = [fails]
    client.force_login(researcher)
    with pytest.raises(ValueError):
        report_compute(rated_study.pk)
    page = client.get(reverse("report", args=[rated_study.slug]))
    assert page.status_code == 500 and "the judge scores are unreadable" in page.content.decode()


def reads_ratings(study, report):
    """A section that reads the study's ratings as the judges' and the answers' sections do."""
    from annotation.reports.ratings import stats_frame

    READ.append(stats_frame(study, ["fluency"]))
    return None


READ: list = []


def test_the_sections_read_the_ratings_once_between_them(rated_study, settings, monkeypatch):
    """Each section reads the study's ratings; computed together they read them once, and the next
    computation reads them afresh."""
    from annotation.reports import ratings, sections

    reads = []
    real = ratings.stats_table  # patched where it is called: ratings imports it by name
    monkeypatch.setattr(ratings, "stats_table", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    settings.REPORT_SECTIONS = ["tests.reports.test_report_sections_cache.reads_ratings"] * 3
    READ.clear()
    sections.extra_sections(rated_study, {})
    assert len(reads) == 1 and len(READ) == 3 and READ[0] is READ[1] is READ[2]
    assert len(READ[0]) == Rating.objects.filter(assignment__study=rated_study, criterion="fluency",
                                                 assignment__ignored=False).count() > 0
    sections.extra_sections(rated_study, {})
    assert len(reads) == 2 and READ[3] is not READ[0]
