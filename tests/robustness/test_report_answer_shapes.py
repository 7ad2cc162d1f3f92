"""One participant's questionnaire answers, of any valid shape, never break the study's report for its
readers: the report page, every report download, the paper kit, the report API and the answers download
answer 200 with a multiple-choice answer (a list) stored beside single-choice and Likert ones."""

from __future__ import annotations

import json

import pytest

from annotation.models import PhaseRecord
from annotation.reports.downloads import DOWNLOADS
from annotation.reports.facets import answer_facets
from tests.conftest import make_user
from tests.phases.conftest import PHASES
from tests.reports.factories import items_jsonl, rate_study

pytestmark = pytest.mark.django_db

# Every reader-facing address that reads the questionnaires' answers.
REPORT_URLS = ("/studies/{slug}/report/", *(f"/studies/{{slug}}/report/?download={d}" for d in DOWNLOADS),
               "/studies/{slug}/report/paper.zip", "/api/studies/{slug}/report/",
               "/studies/{slug}/phases/answers.csv")


def report_answers(client, study) -> dict[str, int]:
    return {url: client.get(url.format(slug=study.slug)).status_code for url in REPORT_URLS}


@pytest.fixture
def answered_study(make_study):
    raters = [make_user(name) for name in ("nat1", "nat2", "oth1", "oth2")]
    study = make_study("rrgen-001", items_text=items_jsonl(6), annotators=raters, phases=PHASES)
    rate_study(study, raters, lambda i, p, r, key, rng: 1 + (i + p * 2 + r * (key == "fluency")) % 7)
    return study, raters


def test_a_multiple_choice_answer_leaves_the_report_and_its_downloads_whole(answered_study, client_for, admin_user):
    study, raters = answered_study
    for i, rater in enumerate(raters):
        PhaseRecord.objects.create(study=study, rater=rater, phase="pre", outcome="answered", answers={
            "native": "yes" if i < 2 else "no", "age": 30 + i, "langs": ["English", "German"][: 1 + i % 2]})
        PhaseRecord.objects.create(study=study, rater=rater, phase="post", outcome="answered",
                                   answers={"difficulty": 1 + i, "comments": "fine"})
    assert report_answers(client_for(admin_user), study) == {url: 200 for url in REPORT_URLS}
    section = answer_facets(study, {})
    # The single-choice and Likert questions still split the raters; the multiple-choice one never does.
    assert set(section["data"]) == {"pre.native", "post.difficulty"}
    assert {a: g["n_raters"] for a, g in section["data"]["pre.native"].items()} == {"yes": 2, "no": 2}


def test_answers_stored_under_an_earlier_version_of_the_questions_are_left_out_of_the_split(
        answered_study, client_for, admin_user):
    """The admin may change a question's kind after answers came in (a multiple-choice question made
    single-choice): a stored list, object or number under a single-choice key is not a group."""
    study, raters = answered_study
    shapes = [["yes", "no"], {"yes": True}, 7.5, "yes"]
    for rater, native in zip(raters, shapes):
        PhaseRecord.objects.create(study=study, rater=rater, phase="pre", outcome="answered",
                                   answers={"native": native, "age": 30, "gone": [1, 2]})
    assert report_answers(client_for(admin_user), study) == {url: 200 for url in REPORT_URLS}
    groups = answer_facets(study, {})["data"]["pre.native"]
    assert {a: g["n_raters"] for a, g in groups.items()} == {"7.5": 1, "yes": 1}
    body = client_for(admin_user).get(f"/studies/{study.slug}/report/?download=json").content
    assert json.loads(body)  # the JSON download stays JSON
