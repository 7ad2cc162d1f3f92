"""A study with two raters who rated, one of them a Prolific participant, and a third who did not."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import CrowdParticipant
from annotation.services.crowd import crowd_link_create
from tests.manage.conftest import items_jsonl, rate_one


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher], items_text=items_jsonl(6),
                      raters_per_item=2)


@pytest.fixture
def crowd_rater(study, admin_user):
    """A Prolific participant who entered by the study's link; their rater account."""
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1X2Y3")
    resp = Client().get(f"/crowd/{link.token}/", {"PROLIFIC_PID": "5f1a2b3c4d", "STUDY_ID": "s1",
                                                   "SESSION_ID": "sess9"})
    assert resp.status_code == 302
    return CrowdParticipant.objects.get(participant_id="5f1a2b3c4d").user


@pytest.fixture
def rated(study, annotator, crowd_rater):
    """Each of the two rated two items; the crowd rater holds a third, open."""
    from annotation.services.assignments import assignment_next

    for rater in (annotator, crowd_rater, annotator, crowd_rater):
        rate_one(study, rater)
    assignment_next(study=study, rater=crowd_rater)
    return study
